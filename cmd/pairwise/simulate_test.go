package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/pairwise-canary/pairwise/pkg/exposition"
	"github.com/pairwise-canary/pairwise/pkg/sim"
)

// simStart is a fixed scenario start for the tests.
var simStart = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

// TestSchemaOfMatchesClientGolang: the schema the backfill is told to use is
// the one client_golang picks for the live histogram's bucket factor.
func TestSchemaOfMatchesClientGolang(t *testing.T) {
	for _, factor := range []float64{1.0001, 1.003, 1.01, 1.05, 1.1, 1.2, 1.5, 2, 3, 4.5, 16, 300, 70000} {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Help: "h", NativeHistogramBucketFactor: factor})
		h.Observe(1)
		var m dto.Metric
		if err := h.Write(&m); err != nil {
			t.Fatal(err)
		}
		got, ok := schemaOf(factor)
		if !ok || int32(got) != m.GetHistogram().GetSchema() {
			t.Errorf("schemaOf(%v) = %d, %v; client_golang uses schema %d", factor, got, ok, m.GetHistogram().GetSchema())
		}
	}
	if _, ok := schemaOf(1); ok {
		t.Error("schemaOf(1) must report no schema")
	}
}

// TestBackfillPassesEveryKnobToPairwiseGen: every argument the backfill
// passes is a flag pairwise-gen defines, and the knobs arrive unchanged.
func TestBackfillPassesEveryKnobToPairwiseGen(t *testing.T) {
	genMain, err := os.ReadFile(filepath.Join("..", "..", "tools", "cmd", "pairwise-gen", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	fake := filepath.Join(dir, "pairwise-gen")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >" + argsFile + "\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := simulate([]string{"--backfill", filepath.Join(dir, "data"), "--gen", fake, "--minutes", "45",
		"--end", "2026-11-21T15:00:00Z", "--scenario", "bad-pod", "--bad-pod", "3", "--seed", "7", "--pods", "4",
		"--canary-share", "0.25", "--bucket-factor", "1.2", "--truth", filepath.Join(dir, "truth.json")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("simulate --backfill exited %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSpace(string(b)), "\n")
	got := map[string]string{}
	for i := 0; i < len(args); i++ {
		name := strings.TrimPrefix(args[i], "--")
		if name == args[i] {
			t.Fatalf("argument %q is not a flag", args[i])
		}
		if !bytes.Contains(genMain, []byte(`"`+name+`"`)) {
			t.Errorf("pairwise-gen defines no flag %q", name)
		}
		if name == "quiet" {
			continue
		}
		i++
		got[name] = args[i]
	}
	want := map[string]string{
		"start": "2026-11-21T14:15:00Z", "minutes": "45", "scenario": "bad-pod", "bad-pod": "3",
		"seed": "7", "pods": "4", "canary-share": "0.25", "schema": "2", "out": filepath.Join(dir, "data"),
		"truth": filepath.Join(dir, "truth.json"), "metric": "http_request_duration_seconds", "service": "checkout",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("--%s = %q, want %q", k, got[k], v)
		}
	}
	if !strings.Contains(stdout.String(), "--start 2026-11-21T14:15:00Z") {
		t.Errorf("the backfill does not say how to continue live: %q", stdout.String())
	}
}

func TestSimulateRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"--backfill", "x", "--gen", "/bin/true", "--scenario", "nope"}, "unknown scenario"},
		{"start not on a minute", []string{"--backfill", "x", "--gen", "/bin/true", "--start", "2026-11-21T14:00:30Z"}, "not a whole minute"},
		{"far future", []string{"--backfill", "x", "--gen", "/bin/true", "--start", "2099-01-01T00:00:00Z"}, "ahead"},
		{"no minutes", []string{"--backfill", "x", "--gen", "/bin/true", "--minutes", "0"}, "--minutes"},
		{"stray argument", []string{"extra"}, "unexpected argument"},
		// client_golang panics on a repeated bound ("internal error").
		{"repeated bucket", []string{"--listen", "127.0.0.1:0", "--buckets", "0.1,0.1,1"}, "--buckets 0.1,0.1,1: bound 0.1 follows 0.1"},
		{"NaN bucket factor", []string{"--backfill", "x", "--gen", "/bin/true", "--bucket-factor", "NaN"}, "--bucket-factor must be > 1, got NaN"},
		{"infinite latency", []string{"--backfill", "x", "--gen", "/bin/true", "--median-latency", "Inf"}, "median latency must be a finite number"},
		{"decreasing buckets", []string{"--backfill", "x", "--gen", "/bin/true", "--buckets", "0.5,0.1"}, "strictly increasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := simulate(tt.args, &stdout, &stderr); code != exitError {
				t.Fatalf("exit %d, want %d", code, exitError)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestSimulateServesBothFleets runs the command's server on a free port and
// scrapes it as Prometheus does (protobuf): native and classic buckets in one
// histogram per pod, labelled like the backfill.
func TestSimulateServesBothFleets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	fs, f := newSimulateFlags(io.Discard)
	if err := fs.Parse([]string{"--listen", addr, "--scenario", "regression", "--pods", "3", "--start", simStart.Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return simStart.Add(40*time.Minute + 500*time.Millisecond) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.serve(ctx, now, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	var resp *http.Response
	for i := 0; i < 100; i++ {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		req.Header.Set("Accept", `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`)
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	families := map[string]*dto.MetricFamily{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		families[mf.GetName()] = &mf
	}
	h := families["http_request_duration_seconds"]
	if h == nil || h.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("no histogram http_request_duration_seconds in %v", keys(families))
	}
	if len(h.Metric) != 6 {
		t.Fatalf("%d histogram series, want 6 (3 pods per fleet)", len(h.Metric))
	}
	for _, m := range h.Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		pod := l["pod"]
		if l["job"] != "checkout" || l["service"] != "checkout" || l["instance"] != pod+":8080" ||
			!strings.HasPrefix(pod, "checkout-"+l["track"]+"-") {
			t.Errorf("labels %v are not pairwise-gen's job, service, track, pod, instance", l)
		}
		hist := m.GetHistogram()
		if hist.GetSchema() != 3 || len(hist.PositiveSpan) == 0 || hist.GetZeroThreshold() != 2.938735877055719e-39 {
			t.Errorf("%s: native schema %d, %d spans, zero threshold %g; want schema 3 with buckets and client_golang's zero threshold",
				pod, hist.GetSchema(), len(hist.PositiveSpan), hist.GetZeroThreshold())
		}
		if len(hist.Bucket) != len(exposition.DefaultClassicBuckets) {
			t.Errorf("%s: %d classic buckets, want %d", pod, len(hist.Bucket), len(exposition.DefaultClassicBuckets))
		}
		if hist.GetSampleCount() == 0 {
			t.Errorf("%s: no observations after 40 replayed minutes", pod)
		}
	}
	if c := families["http_requests_total"]; c == nil || len(c.Metric) != 12 {
		t.Errorf("http_requests_total: want 12 series (6 pods x code 200/500), got %v", c)
	}
}

// TestExpositionReplayIsDeterministic: counters from start are the same
// whether the past is replayed at once or advanced second by second, and
// equal what pkg/sim yields for the interval (what pairwise-gen writes).
func TestExpositionReplayIsDeterministic(t *testing.T) {
	cfg := sim.DefaultConfig(simStart)
	cfg.Scenario, cfg.PodsPerFleet, cfg.Seed = sim.ScenarioGCBurst, 2, 42
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	end := simStart.Add(3*time.Minute + 700*time.Millisecond)
	atOnce, err := exposition.New(exposition.Options{Sim: s}, end)
	if err != nil {
		t.Fatal(err)
	}
	stepped, err := exposition.New(exposition.Options{Sim: s}, simStart)
	if err != nil {
		t.Fatal(err)
	}
	for tm := simStart; !tm.After(end); tm = tm.Add(1300 * time.Millisecond) {
		stepped.AdvanceTo(tm)
	}
	stepped.AdvanceTo(end)
	if a, b := text(t, atOnce), text(t, stepped); a != b {
		t.Fatalf("replayed and stepped expositions differ:\n%s\n---\n%s", a[:min(len(a), 2000)], b[:min(len(b), 2000)])
	}
	var want uint64
	for _, fleet := range sim.Fleets {
		for pod := range cfg.PodsPerFleet {
			s.Observe(fleet, pod, simStart, end, func(float64, bool) { want++ })
		}
	}
	if got := atOnce.Observed(); got != want || want == 0 {
		t.Errorf("observed %d requests, pkg/sim yields %d", got, want)
	}
}

func text(t *testing.T, f *exposition.Fleets) string {
	t.Helper()
	srv := httptest.NewServer(f.Handler(func() time.Time { return time.Unix(0, 0) }))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func keys(m map[string]*dto.MetricFamily) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWebhookPrintsAlerts(t *testing.T) {
	var out bytes.Buffer
	srv := httptest.NewServer(webhookHandler(&out, webhookOptions{}))
	defer srv.Close()
	payload := `{"version":"4","status":"firing","receiver":"rollback-webhook","alerts":[
	  {"status":"firing","labels":{"alertname":"PairwiseCanaryRollback","canary":"checkout","action":"rollback","severity":"critical"},
	   "annotations":{"summary":"Canary checkout: roll back, 7 bad minutes in the last 60m"},"startsAt":"2026-11-21T14:00:00Z"}]}`
	resp, err := http.Post(srv.URL+"/rollback", "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := `","event":"firing","status":"firing","alertname":"PairwiseCanaryRollback","key":"`
	wantLabels := `"labels":{"action":"rollback","alertname":"PairwiseCanaryRollback","canary":"checkout","severity":"critical"},"summary":"Canary checkout: roll back, 7 bad minutes in the last 60m"`
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), wantLabels) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("printed %q, want a line with %q", out.String(), want)
	}
	resp, err = http.Post(srv.URL, "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad payload got status %d, want 400", resp.StatusCode)
	}
}
