package prom

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// TestFractionalTimeout: a client timeout that is not a whole number of
// seconds (--timeout 2.5s, a data source timeout of 2.5) is sent as
// Prometheus's query timeout in a form it reads. "2.5s", sent before, made
// a real Prometheus refuse every query (invalid parameter "timeout").
func TestFractionalTimeout(t *testing.T) {
	p := testenv.Prometheus(t, testenv.PromOptions{})
	sel, err := selector.Parse(`{track="canary"}`)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy in front of the real Prometheus notes the timeout each query
	// carries: accepted is not enough, it must be sent.
	target, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var sent []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		mu.Lock()
		sent = append(sent, form.Get("timeout"))
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	end := time.Now().Truncate(time.Minute)
	for _, tc := range []struct {
		timeout time.Duration
		want    string
	}{{30 * time.Second, "30000ms"}, {2500 * time.Millisecond, "2500ms"}, {1500*time.Millisecond + 250*time.Microsecond, "1500ms"}} {
		c, err := New(front.URL, tc.timeout)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		sent = nil
		mu.Unlock()
		if _, _, err := c.FleetHistograms(context.Background(), "http_request_duration_seconds", sel, Auto, Range{Start: end.Add(-time.Minute), End: end}); err != nil {
			t.Errorf("timeout %s: %v", tc.timeout, err)
		}
		mu.Lock()
		if len(sent) == 0 {
			t.Errorf("timeout %s: no query reached Prometheus", tc.timeout)
		}
		for _, got := range sent {
			if got != tc.want {
				t.Errorf("timeout %s: a query carried timeout=%q, want %q", tc.timeout, got, tc.want)
			}
		}
		mu.Unlock()
	}
}
