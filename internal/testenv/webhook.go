package testenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// WebhookAlert is one alert of an Alertmanager webhook notification.
type WebhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// WebhookPayload is an Alertmanager webhook notification (version 4).
type WebhookPayload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"` // firing or resolved
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []WebhookAlert    `json:"alerts"`
	// Raw is the request body as received; Path the request path.
	Raw  json.RawMessage `json:"-"`
	Path string          `json:"-"`
}

// Webhook records the payloads POSTed to it (an httptest server on 127.0.0.1).
type Webhook struct {
	URL string // POST target, e.g. for an Alertmanager webhook_configs url
	srv *httptest.Server

	mu       sync.Mutex
	payloads []WebhookPayload
	changed  chan struct{} // closed and replaced on every new payload
}

// WebhookReceiver starts a recording webhook receiver, closed in t.Cleanup.
// Any path is accepted; bodies that are not JSON payloads answer 400.
func WebhookReceiver(t testing.TB) *Webhook {
	t.Helper()
	w := &Webhook{changed: make(chan struct{})}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(rw, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		var p WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		p.Raw, p.Path = body, r.URL.Path
		w.mu.Lock()
		w.payloads = append(w.payloads, p)
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	}))
	w.URL = w.srv.URL
	t.Cleanup(w.srv.Close)
	return w
}

// Payloads returns a copy of the payloads received so far, in order.
func (w *Webhook) Payloads() []WebhookPayload {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WebhookPayload(nil), w.payloads...)
}

// WaitFor waits until a received payload (earlier ones included) satisfies
// pred, and returns the first that does, or an error after timeout.
func (w *Webhook) WaitFor(pred func(WebhookPayload) bool, timeout time.Duration) (WebhookPayload, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		w.mu.Lock()
		ps := w.payloads[seen:]
		ch := w.changed
		seen = len(w.payloads)
		w.mu.Unlock()
		for _, p := range ps {
			if pred(p) {
				return p, nil
			}
		}
		select {
		case <-ch:
		case <-deadline.C:
			return WebhookPayload{}, fmt.Errorf("no matching webhook payload within %v (%d received)", timeout, seen)
		}
	}
}
