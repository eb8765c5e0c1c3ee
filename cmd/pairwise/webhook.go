package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

func init() { extraCommands["webhook"] = webhook }

// envWebhookToken holds the webhook's bearer token when no file is given.
const envWebhookToken = "PAIRWISE_WEBHOOK_TOKEN"

// Limits of the webhook receiver.
const (
	defaultMaxBody = 4 << 20
	// rememberAlerts bounds the alerts whose state the receiver keeps.
	rememberAlerts = 10000
)

// amVersion is the version of Alertmanager's webhook payload the receiver
// reads (every Alertmanager since 0.9 sends it).
const amVersion = "4"

// amMessage is the part of Alertmanager's webhook payload (version 4) read.
type amMessage struct {
	Version  string    `json:"version"`
	Receiver string    `json:"receiver"`
	Status   string    `json:"status"`
	GroupKey string    `json:"groupKey"`
	Alerts   []amAlert `json:"alerts"`
}

type amAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`
}

// alertLine is one line of the webhook's output: a JSON object per alert,
// so no alert text can start a line of its own (json escapes line breaks).
type alertLine struct {
	Time string `json:"time"`
	// Event is what a hook acts on: "firing" the first time this alert
	// (Key) is seen firing, "resolved" the first time it is seen resolved,
	// "repeat" when it was already reported in that state (Alertmanager
	// re-sends every repeat_interval, and whole groups on every change).
	Event       string            `json:"event"`
	Status      string            `json:"status"`
	Alertname   string            `json:"alertname"`
	Key         string            `json:"key"`
	Labels      map[string]string `json:"labels"`
	Summary     string            `json:"summary,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	StartsAt    string            `json:"startsAt,omitempty"`
	EndsAt      string            `json:"endsAt,omitempty"`
	Receiver    string            `json:"receiver,omitempty"`
}

// webhook is a receiver for Alertmanager's webhook_configs that prints one
// JSON line per alert: the stand-in for whatever performs the rollback.
//
//	pairwise webhook --listen 127.0.0.1:9095 [--bearer-token-file FILE]
func webhook(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, webhookUsage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:9095", "address to receive Alertmanager webhook notifications on (any path)")
	tokenFile := fs.String("bearer-token-file", "", "require this bearer token (Alertmanager's http_config authorization credentials_file); else $"+envWebhookToken+"; else no authentication")
	maxBody := fs.Int64("max-body", defaultMaxBody, "largest notification accepted, in bytes (larger ones are answered 413)")
	readTimeout := fs.Duration("read-timeout", 10*time.Second, "time to read a whole request, headers and body (1s to 5m)")
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if *maxBody < 1<<10 || *maxBody > 256<<20 {
		return fail(stderr, fmt.Errorf("--max-body %d is not between 1 KiB (1024) and 256 MiB", *maxBody))
	}
	if *readTimeout < time.Second || *readTimeout > 5*time.Minute {
		return fail(stderr, fmt.Errorf("--read-timeout %s is not between 1s and 5m", *readTimeout))
	}
	opts := webhookOptions{MaxBody: *maxBody, TokenFile: *tokenFile, Log: stderr}
	if *tokenFile != "" {
		// Read now to fail at startup, and again on every request, so a
		// rotated secret is taken without a restart (as Alertmanager
		// reads its credentials_file).
		if _, err := readSecretFile("--bearer-token-file", *tokenFile); err != nil {
			return fail(stderr, fmt.Errorf("webhook: %w", err))
		}
	} else if env, set := os.LookupEnv(envWebhookToken); set {
		// Set but empty is a mistake (a secret with an empty key), not
		// a wish to run without authentication.
		opts.Token = strings.TrimSpace(env)
		switch {
		case opts.Token == "":
			return fail(stderr, fmt.Errorf("webhook: $%s is set but empty; unset it to receive without authentication", envWebhookToken))
		case hasControl(opts.Token):
			return fail(stderr, fmt.Errorf("webhook: $%s holds a control character", envWebhookToken))
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(stderr, fmt.Errorf("webhook: %w", err))
	}
	auth := "without authentication"
	if opts.Token != "" || opts.TokenFile != "" {
		auth = "requiring a bearer token"
	}
	fmt.Fprintf(stderr, "pairwise webhook: receiving Alertmanager notifications on http://%s/ (%s); one JSON line per alert on stdout\n", ln.Addr(), auth)
	srv := newWebhookServer(webhookHandler(stdout, opts), *readTimeout)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fail(stderr, fmt.Errorf("webhook: %w", err))
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return 0
}

const webhookUsage = `Usage: pairwise webhook [--listen ADDR] [--bearer-token-file FILE] [flags]

Receives Alertmanager webhook notifications and prints one JSON line per
alert on stdout (alert text is escaped: no alert can forge a line):

  {"time":"...","event":"firing","status":"firing","alertname":"PairwiseCanaryRollback","key":"...","labels":{...},"summary":"..."}

event tells the first notification of an alert from the rest: "firing" the
first time an alert (its key: fingerprint and start) is seen firing,
"resolved" the first time it is seen resolved, "repeat" for every later
notification of it in that state (Alertmanager re-sends firing alerts every
repeat_interval and whole groups on every change). A hook that rolls back
acts on every line whose status is firing, first or repeat: the re-sends are
the retries of a rollback that failed, so the rollback must be idempotent
(rolling back twice is a no-op). Act on "firing" alone only for what must
happen once, such as paging someone. The receiver remembers the last 10,000
alerts in memory only; key on "key" across restarts.
Answers: 200 accepted (a GET or HEAD: 200 and where to POST), 400 not a
notification, 401 missing or wrong bearer token, 405 another method, 413
larger than --max-body, 503 the lines could not be written or the token
file read (Alertmanager sends the notification again; nothing is marked
seen). --bearer-token-file is read on every request, so a rotated token
is taken at once.

`

// newWebhookServer bounds every stage of a request: a client that sends
// its headers or body slowly, or never reads the answer, is cut off.
func newWebhookServer(h http.Handler, readTimeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      readTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

type webhookOptions struct {
	Token     string // required bearer token; empty: none (unless TokenFile)
	TokenFile string // file holding the required bearer token, read on every request
	MaxBody   int64
	Now       func() time.Time
	Log       io.Writer // where failures to write or read are told; nil: io.Discard
}

// webhookHandler prints every alert of every notification, one JSON line
// each, and tells first notifications from repeats.
func webhookHandler(out io.Writer, opts webhookOptions) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = defaultMaxBody
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	// wantAuth is the digest of the Authorization header required, nil
	// for none.
	wantAuth := func() ([]byte, error) {
		token := opts.Token
		if opts.TokenFile != "" {
			var err error
			if token, err = readSecretFile("--bearer-token-file", opts.TokenFile); err != nil {
				return nil, err
			}
		}
		if token == "" {
			return nil, nil
		}
		sum := sha256.Sum256([]byte("Bearer " + token))
		return sum[:], nil
	}
	seen := newAlertMemory(rememberAlerts)
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
		case http.MethodGet, http.MethodHead:
			fmt.Fprintln(w, "pairwise webhook: POST Alertmanager webhook notifications here")
			return
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "POST Alertmanager webhook notifications here", http.StatusMethodNotAllowed)
			return
		}
		want, err := wantAuth()
		if err != nil {
			fmt.Fprintf(opts.Log, "pairwise webhook: %v; answering 503\n", err)
			http.Error(w, "the receiver cannot read its bearer token file", http.StatusServiceUnavailable)
			return
		}
		if want != nil {
			got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
			if subtle.ConstantTimeCompare(got[:], want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pairwise webhook"`)
				http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
				return
			}
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, opts.MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("notification larger than %d bytes", opts.MaxBody), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read the notification", http.StatusBadRequest)
			return
		}
		var msg amMessage
		if err := json.Unmarshal(body, &msg); err != nil || msg.Alerts == nil {
			http.Error(w, "not an Alertmanager webhook payload: not a JSON object with alerts", http.StatusBadRequest)
			return
		}
		if msg.Version != amVersion {
			http.Error(w, fmt.Sprintf("Alertmanager webhook payload version %q; this receiver reads version %q", msg.Version, amVersion), http.StatusBadRequest)
			return
		}
		for i, a := range msg.Alerts {
			if a.Status != "firing" && a.Status != "resolved" {
				http.Error(w, fmt.Sprintf("alert %d: status is neither firing nor resolved", i), http.StatusBadRequest)
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		now := opts.Now().UTC().Format(time.RFC3339)
		// The alerts are marked seen only once their lines are written:
		// a notification whose lines were lost is answered 503, and
		// Alertmanager's next attempt reports them as first seen.
		var lines []byte
		for _, a := range msg.Alerts {
			key := alertKey(a)
			line := alertLine{
				Time: now, Event: seen.peek(key, a.Status), Status: a.Status, Alertname: a.Labels["alertname"], Key: key,
				Labels: a.Labels, Summary: a.Annotations["summary"], Annotations: a.Annotations,
				StartsAt: formatTime(a.StartsAt), EndsAt: formatTime(a.EndsAt), Receiver: msg.Receiver,
			}
			if line.Labels == nil {
				line.Labels = map[string]string{}
			}
			b, err := json.Marshal(line)
			if err != nil {
				http.Error(w, "cannot encode the alert", http.StatusInternalServerError)
				return
			}
			lines = append(append(lines, b...), '\n')
		}
		if _, err := out.Write(lines); err != nil {
			fmt.Fprintf(opts.Log, "pairwise webhook: writing %d alert lines: %v; answering 503\n", len(msg.Alerts), err)
			http.Error(w, "the receiver could not write the alerts", http.StatusServiceUnavailable)
			return
		}
		for _, a := range msg.Alerts {
			seen.event(alertKey(a), a.Status)
		}
		w.WriteHeader(http.StatusOK)
	})
}

func formatTime(t time.Time) string {
	if t.IsZero() || t.Year() <= 1 {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// alertKey identifies one occurrence of an alert: Alertmanager's
// fingerprint (a hash of its labels, else computed the same way here) and
// when it started firing. A resolved alert that fires again starts anew.
func alertKey(a amAlert) string {
	fp := a.Fingerprint
	if fp == "" || len(fp) > 64 {
		names := make([]string, 0, len(a.Labels))
		for k := range a.Labels {
			names = append(names, k)
		}
		sort.Strings(names)
		h := sha256.New()
		for _, k := range names {
			fmt.Fprintf(h, "%q=%q\n", k, a.Labels[k])
		}
		fp = fmt.Sprintf("%x", h.Sum(nil))[:16]
	}
	return fp + "@" + a.StartsAt.UTC().Format(time.RFC3339Nano)
}

// alertMemory remembers the last state reported for the most recent alerts.
type alertMemory struct {
	max   int
	state map[string]string
	order []string // insertion order, oldest first
}

func newAlertMemory(max int) *alertMemory {
	return &alertMemory{max: max, state: map[string]string{}}
}

// peek is the event of key in status, not remembered: event remembers it.
func (m *alertMemory) peek(key, status string) string {
	if prev, known := m.state[key]; known && (prev == status || prev == "resolved") {
		return "repeat"
	}
	return status
}

// event is "firing" or "resolved" when key is first reported in that state,
// "repeat" otherwise; once resolved, an alert stays resolved (a late
// firing notification of the same occurrence is a repeat).
func (m *alertMemory) event(key, status string) string {
	e := m.peek(key, status)
	if e == "repeat" {
		return e
	}
	if _, known := m.state[key]; !known {
		if len(m.order) >= m.max {
			delete(m.state, m.order[0])
			m.order = m.order[1:]
		}
		m.order = append(m.order, key)
	}
	m.state[key] = status
	return e
}
