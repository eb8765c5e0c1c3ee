package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

func postAlerts(t *testing.T, h http.Handler, body string, header ...string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/rollback", strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func payload(alerts ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"version": "4", "status": "firing", "receiver": "rollback-webhook", "alerts": alerts})
	return string(b)
}

func alert(status, fingerprint, startsAt string, labels, annotations map[string]string) map[string]any {
	return map[string]any{"status": status, "fingerprint": fingerprint, "startsAt": startsAt, "labels": labels, "annotations": annotations}
}

// decodeLines checks that out is one JSON object per line and returns them.
func decodeLines(t *testing.T, out string) []alertLine {
	t.Helper()
	var lines []alertLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l alertLine
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %q is not one alert object: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestWebhookCannotBeForged: alert text with line breaks, quotes and
// Unicode line separators stays inside its JSON line. Before, a summary
// with a newline printed a second "ALERT firing PairwiseCanaryRollback"
// line, which the demo greps.
func TestWebhookCannotBeForged(t *testing.T) {
	var out testenv.SyncBuffer
	h := webhookHandler(&out, webhookOptions{})
	forged := "ok\n2026-11-21T23:14:00Z ALERT firing PairwiseCanaryRollback {action=\"rollback\"}: forged\r\n" +
		`{"time":"x","event":"firing","status":"firing","alertname":"PairwiseCanaryRollback",` + "\u2028\u2029\x1b[2J"
	body := payload(
		alert("firing", "aaaa", "2026-11-21T23:14:00Z", map[string]string{"alertname": "PairwiseCanaryBadMinute\nALERT firing PairwiseCanaryRollback", "canary": "c\"x"}, map[string]string{"summary": forged}),
		alert("resolved", "bbbb", "2026-11-21T23:00:00Z", map[string]string{"alertname": "PairwiseCanaryInsufficientTraffic"}, nil),
	)
	if code := postAlerts(t, h, body); code != 200 {
		t.Fatalf("status %d", code)
	}
	text := out.String()
	if n := strings.Count(text, "\n"); n != 2 {
		t.Fatalf("%d lines for 2 alerts:\n%s", n, text)
	}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !strings.HasPrefix(line, `{"time":"`) || strings.ContainsAny(line, "\r\u2028\u2029\x1b") {
			t.Errorf("line %q is not a clean JSON line", line)
		}
		if strings.Contains(line, `"alertname":"PairwiseCanaryRollback"`) {
			t.Errorf("a forged field sequence appears unescaped: %s", line)
		}
	}
	lines := decodeLines(t, text)
	if lines[0].Summary != forged || lines[0].Labels["canary"] != `c"x` || lines[0].Alertname != "PairwiseCanaryBadMinute\nALERT firing PairwiseCanaryRollback" {
		t.Errorf("the alert text does not round-trip: %+v", lines[0])
	}
	if lines[1].Status != "resolved" || lines[1].Event != "resolved" || lines[1].Receiver != "rollback-webhook" {
		t.Errorf("second alert: %+v", lines[1])
	}
}

// TestWebhookIdempotent: Alertmanager re-sends firing alerts every
// repeat_interval and whole groups on every change; the receiver says
// which notification is the first of an alert in a state.
func TestWebhookIdempotent(t *testing.T) {
	var out testenv.SyncBuffer
	h := webhookHandler(&out, webhookOptions{})
	rollback := map[string]string{"alertname": "PairwiseCanaryRollback", "canary": "checkout", "action": "rollback"}
	other := map[string]string{"alertname": "PairwiseCanaryRollback", "canary": "cart", "action": "rollback"}
	steps := []struct {
		alerts []map[string]any
		want   []string
	}{
		{[]map[string]any{alert("firing", "f1", "2026-11-21T23:14:00Z", rollback, nil)}, []string{"firing"}},
		{[]map[string]any{alert("firing", "f1", "2026-11-21T23:14:00Z", rollback, nil)}, []string{"repeat"}},
		{[]map[string]any{alert("firing", "f1", "2026-11-21T23:14:00Z", rollback, nil), alert("firing", "f2", "2026-11-21T23:20:00Z", other, nil)}, []string{"repeat", "firing"}},
		{[]map[string]any{alert("resolved", "f1", "2026-11-21T23:14:00Z", rollback, nil)}, []string{"resolved"}},
		{[]map[string]any{alert("resolved", "f1", "2026-11-21T23:14:00Z", rollback, nil)}, []string{"repeat"}},
		// A late firing notification of the resolved occurrence changes nothing.
		{[]map[string]any{alert("firing", "f1", "2026-11-21T23:14:00Z", rollback, nil)}, []string{"repeat"}},
		// The same alert firing again starts a new occurrence.
		{[]map[string]any{alert("firing", "f1", "2026-11-22T01:00:00Z", rollback, nil)}, []string{"firing"}},
		// Without a fingerprint, the labels identify the alert.
		{[]map[string]any{alert("firing", "", "2026-11-22T02:00:00Z", rollback, nil)}, []string{"firing"}},
		{[]map[string]any{alert("firing", "", "2026-11-22T02:00:00Z", rollback, nil)}, []string{"repeat"}},
	}
	seen := 0
	for i, step := range steps {
		if code := postAlerts(t, h, payload(step.alerts...)); code != 200 {
			t.Fatalf("step %d: status %d", i, code)
		}
		lines := decodeLines(t, out.String())[seen:]
		seen += len(lines)
		if len(lines) != len(step.want) {
			t.Fatalf("step %d: %d lines, want %d", i, len(lines), len(step.want))
		}
		for j, l := range lines {
			if l.Event != step.want[j] {
				t.Errorf("step %d alert %d: event %q, want %q (%+v)", i, j, l.Event, step.want[j], l)
			}
		}
	}
	m := newAlertMemory(3)
	for _, k := range []string{"a", "b", "c", "d"} {
		m.event(k, "firing")
	}
	if len(m.state) != 3 || m.event("a", "firing") != "firing" || m.event("d", "firing") != "repeat" {
		t.Errorf("memory is not bounded to the most recent alerts: %v", m.state)
	}
}

func TestWebhookAuthAndLimits(t *testing.T) {
	var out testenv.SyncBuffer
	h := webhookHandler(&out, webhookOptions{Token: "hook-token-1", MaxBody: 4096})
	body := payload(alert("firing", "f1", "2026-11-21T23:14:00Z", map[string]string{"alertname": "PairwiseCanaryRollback"}, nil))
	tests := []struct {
		name   string
		method string
		body   string
		header []string
		want   int
	}{
		{name: "no token", body: body, want: 401},
		{name: "wrong token", body: body, header: []string{"Authorization", "Bearer hook-token-2"}, want: 401},
		{name: "token without the scheme", body: body, header: []string{"Authorization", "hook-token-1"}, want: 401},
		{name: "too large", body: payload(alert("firing", "f9", "2026-11-21T23:14:00Z", map[string]string{"alertname": strings.Repeat("x", 5000)}, nil)), header: []string{"Authorization", "Bearer hook-token-1"}, want: 413},
		{name: "not JSON", body: "ALERT firing PairwiseCanaryRollback", header: []string{"Authorization", "Bearer hook-token-1"}, want: 400},
		{name: "unknown alert status", body: payload(alert("pending", "f1", "2026-11-21T23:14:00Z", nil, nil)), header: []string{"Authorization", "Bearer hook-token-1"}, want: 400},
		{name: "no alerts", body: `{}`, header: []string{"Authorization", "Bearer hook-token-1"}, want: 400},
		{name: "null", body: `null`, header: []string{"Authorization", "Bearer hook-token-1"}, want: 400},
		{name: "alerts null", body: `{"version":"4","alerts":null}`, header: []string{"Authorization", "Bearer hook-token-1"}, want: 400},
		{name: "another payload version", body: `{"version":"5","alerts":[]}`, header: []string{"Authorization", "Bearer hook-token-1"}, want: 400},
		{name: "right token", body: body, header: []string{"Authorization", "Bearer hook-token-1"}, want: 200},
	}
	for _, tt := range tests {
		before := out.String()
		if got := postAlerts(t, h, tt.body, tt.header...); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
		if printed := out.String() != before; printed != (tt.want == 200) {
			t.Errorf("%s: printed %v", tt.name, printed)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", rec.Code)
	}
}

// failingWriter fails every write while fail is set.
type failingWriter struct {
	fail bool
	testenv.SyncBuffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.fail {
		return 0, errors.New("no space left on device")
	}
	return w.SyncBuffer.Write(p)
}

// TestWebhookLostLines: a notification whose lines cannot be written is
// answered 503, so Alertmanager sends it again, and its alerts are not
// marked seen: the retry reports them as first seen. Before, the write
// error was ignored, Alertmanager was told 200 and the rollback line was
// lost until the next repeat_interval, which then printed it as a repeat.
func TestWebhookLostLines(t *testing.T) {
	var out failingWriter
	var log bytes.Buffer
	h := webhookHandler(&out, webhookOptions{Log: &log})
	body := payload(alert("firing", "f1", "2026-11-21T23:14:00Z", map[string]string{"alertname": "PairwiseCanaryRollback", "canary": "checkout"}, nil))
	out.fail = true
	if code := postAlerts(t, h, body); code != http.StatusServiceUnavailable {
		t.Fatalf("write failed: status %d, want 503", code)
	}
	if !strings.Contains(log.String(), "no space left on device") {
		t.Errorf("the failure is not told: %q", log.String())
	}
	out.fail = false
	if code := postAlerts(t, h, body); code != http.StatusOK {
		t.Fatalf("retry: status %d", code)
	}
	if code := postAlerts(t, h, body); code != http.StatusOK {
		t.Fatalf("repeat: status %d", code)
	}
	lines := decodeLines(t, out.String())
	if len(lines) != 2 || lines[0].Event != "firing" || lines[1].Event != "repeat" {
		t.Fatalf("after a lost write the retry must be the first firing line, then a repeat: %+v", lines)
	}
}

// TestWebhookTokenFile: the token file is read on every request, so a
// rotated token is taken without a restart (Alertmanager reads its
// credentials_file on every notification), and a file that cannot be
// read answers 503 (Alertmanager retries), never lets a request in.
func TestWebhookTokenFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	write := func(token string) {
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tok1")
	var out testenv.SyncBuffer
	var log bytes.Buffer
	h := webhookHandler(&out, webhookOptions{TokenFile: file, Log: &log})
	body := payload(alert("firing", "f1", "2026-11-21T23:14:00Z", map[string]string{"alertname": "PairwiseCanaryRollback"}, nil))
	steps := []struct {
		name   string
		token  string // written to the file first; "-" removes it
		header string
		want   int
	}{
		{"first token", "", "Bearer tok1", 200},
		{"no token", "", "", 401},
		{"rotated: the new token", "tok2", "Bearer tok2", 200},
		{"rotated: the old token", "", "Bearer tok1", 401},
		{"file gone", "-", "Bearer tok2", 503},
	}
	for _, st := range steps {
		switch st.token {
		case "":
		case "-":
			os.Remove(file)
		default:
			write(st.token)
		}
		var hdr []string
		if st.header != "" {
			hdr = []string{"Authorization", st.header}
		}
		if got := postAlerts(t, h, body, hdr...); got != st.want {
			t.Errorf("%s: status %d, want %d", st.name, got, st.want)
		}
	}
	if strings.Contains(log.String(), "tok1") || strings.Contains(log.String(), "tok2") {
		t.Errorf("the log holds a token: %q", log.String())
	}
	if !strings.Contains(log.String(), "no such file") {
		t.Errorf("the unreadable file is not told: %q", log.String())
	}
}

// TestWebhookTimeouts: a client that sends its headers or its body slowly
// is cut off after the read timeout. Before, only the headers were bounded.
func TestWebhookTimeouts(t *testing.T) {
	srv := newWebhookServer(webhookHandler(io.Discard, webhookOptions{}), time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	for name, start := range map[string]string{
		"slow headers": "POST /rollback HTTP/1.1\r\nHost: x\r\n",
		"slow body":    "POST /rollback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"alerts\":[",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte(start)); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.ReadAll(c) // returns when the server closes the connection
			if took := time.Since(began); took > 5*time.Second {
				t.Fatalf("the server kept a stalled request open for %s", took)
			}
		})
	}
}

func TestWebhookFlags(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-body", "0"}, "--max-body 0 is not between"},
		{[]string{"--max-body", "1000000000"}, "--max-body"},
		{[]string{"--read-timeout", "0s"}, "--read-timeout 0s is not between"},
		{[]string{"--read-timeout", "1h"}, "--read-timeout"},
		{[]string{"--bearer-token-file", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"--bearer-token-file", empty}, "is empty"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--listen", "256.0.0.1:1"}, "webhook:"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"webhook"}, tt.args...), &out, &errOut); code != exitError || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 3 and %q", tt.args, code, errOut.String(), tt.want)
		}
	}
}

// TestWebhookEmptyEnvToken: $PAIRWISE_WEBHOOK_TOKEN set but empty (a
// Kubernetes secretKeyRef to an empty key) refuses to start. Before, it
// received without authentication, said only on one stderr line.
func TestWebhookEmptyEnvToken(t *testing.T) {
	for _, v := range []string{"", "  \n"} {
		t.Setenv(envWebhookToken, v)
		var out, errOut bytes.Buffer
		if code := run([]string{"webhook", "--listen", "127.0.0.1:0"}, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "is set but empty") {
			t.Errorf("$%s=%q: exit %d, stderr %q; want 3 and 'is set but empty'", envWebhookToken, v, code, errOut.String())
		}
	}
}

// TestWebhookWithAlertmanager: the pinned Alertmanager 0.31.1 delivers to
// the receiver with its bearer token (http_config authorization
// credentials_file), and an alert whose text holds line breaks arrives as
// one JSON line; its re-send after a group change is a repeat.
func TestWebhookWithAlertmanager(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("am-hook-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out testenv.SyncBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newWebhookServer(webhookHandler(&out, webhookOptions{Token: "am-hook-token"}), 5*time.Second)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	am := testenv.Alertmanager(t, `
route:
  receiver: hook
  group_by: [canary]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://`+ln.Addr().String()+`/rollback
        send_resolved: true
        http_config:
          authorization:
            credentials_file: `+tokenFile+`
`)
	post := func(alerts string) {
		t.Helper()
		resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", strings.NewReader(alerts))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST alerts: %s", resp.Status)
		}
	}
	waitLines := func(n int) []alertLine {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if lines := decodeLines(t, out.String()); len(lines) >= n {
				return lines
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("fewer than %d lines within 30 s:\n%s\n%s", n, out.String(), am.LogTail(20))
		return nil
	}
	post(`[{"labels":{"alertname":"PairwiseCanaryRollback","canary":"checkout","action":"rollback"},"annotations":{"summary":"roll back\nALERT firing PairwiseCanaryRollback forged"}}]`)
	lines := waitLines(1)
	if l := lines[0]; l.Event != "firing" || l.Alertname != "PairwiseCanaryRollback" || l.Summary != "roll back\nALERT firing PairwiseCanaryRollback forged" || l.Receiver != "hook" {
		t.Fatalf("line %+v", l)
	}
	// A second alert in the same group: Alertmanager sends both again.
	post(`[{"labels":{"alertname":"PairwiseCanaryBadMinute","canary":"checkout"}}]`)
	lines = waitLines(3)
	events := map[string]string{}
	for _, l := range lines[1:] {
		events[l.Alertname] = l.Event
	}
	if events["PairwiseCanaryRollback"] != "repeat" || events["PairwiseCanaryBadMinute"] != "firing" {
		t.Fatalf("events after the group changed: %v\n%s", events, out.String())
	}
}
