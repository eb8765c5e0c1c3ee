package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite pkg/plugin/testdata/*.jsonc from the live results")

// liveEnd is the end of the generated data and of the dashboard range.
var liveEnd = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const liveSelectors = `"metric":"http_request_duration_seconds","baselineSelector":"{service=\"checkout\",track=\"baseline\"}","canarySelector":"{service=\"checkout\",track=\"canary\"}"`

// livePrometheus serves 70 minutes in which the canary turns 1.4x slower at
// minute 55, and one canary pod is restarted (a counter reset) at minute 30.
func livePrometheus(t *testing.T) string {
	t.Helper()
	dir, _ := testenv.Generate(t, "--end", liveEnd.Format(time.RFC3339), "--minutes", "70", "--pods", "4", "--seed", "5",
		"--total-rps", "2000", "--canary-share", "0.5", "--scenario", "regression",
		"--regression-factor", "1.4", "--regression-start-minute", "55", "--restart", "checkout-canary-1@30")
	return testenv.Prometheus(t, testenv.PromOptions{DataDir: dir}).URL
}

func newLiveDatasource(t *testing.T, promURL string) *Datasource {
	t.Helper()
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{
		UID: "pairwise-canary", JSONData: []byte(fmt.Sprintf(`{"prometheusUrl":%q,"timeoutSeconds":20}`, promURL)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*Datasource)
	t.Cleanup(ds.Dispose)
	return ds
}

func liveQuery(refID, extra string) backend.DataQuery {
	return backend.DataQuery{
		RefID:     refID,
		TimeRange: backend.TimeRange{From: liveEnd.Add(-60 * time.Minute), To: liveEnd},
		JSON:      json.RawMessage(`{` + liveSelectors + extra + `}`),
	}
}

func TestLiveDatasource(t *testing.T) {
	promURL := livePrometheus(t)
	ds := newLiveDatasource(t, promURL)
	t.Run("golden frames", func(t *testing.T) { goldenFrames(t, ds) })
	t.Run("same minutes as the judge", func(t *testing.T) { sameAsJudge(t, ds, promURL) })
	t.Run("concurrent queries", func(t *testing.T) { concurrentQueries(t, ds) })
	t.Run("cancelled queries stop", func(t *testing.T) { cancelledQueries(t, promURL) })
	t.Run("health", func(t *testing.T) {
		h, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
		if err != nil || h.Status != backend.HealthStatusOk || h.Message != "Prometheus 3.13.5 is reachable." {
			t.Fatalf("%v %+v", err, h)
		}
	})
	t.Run("metrics resource", func(t *testing.T) {
		var got []struct{ Name, Kind string }
		sender := backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
			if r.Status != http.StatusOK {
				return fmt.Errorf("status %d: %s", r.Status, r.Body)
			}
			return json.Unmarshal(r.Body, &got)
		})
		if err := ds.CallResource(context.Background(), &backend.CallResourceRequest{Path: "metrics", Method: http.MethodGet}, sender); err != nil {
			t.Fatal(err)
		}
		// Generated blocks carry no metadata, so only metrics Prometheus has
		// metadata for are listed; an empty list is the honest answer here.
		for _, m := range got {
			if m.Kind != "native" && m.Kind != "classic" {
				t.Fatalf("kind %q", m.Kind)
			}
		}
	})
}

func goldenFrames(t *testing.T, ds *Datasource) {
	for _, tt := range []struct{ name, extra string }{
		{"minutes", `,"queryType":"minutes"`},
		{"decision", `,"queryType":"decision"`},
		{"pods", `,"queryType":"pods"`},
		{"minutes-classic", `,"queryType":"minutes","histogramKind":"classic"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{liveQuery("A", tt.extra)}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error != nil {
				t.Fatal(dr.Error)
			}
			experimental.CheckGoldenJSONResponse(t, "testdata", tt.name, &dr, *updateGolden)
		})
	}
}

// judgeDoc is the part of `pairwise judge --output json` compared here.
type judgeDoc struct {
	Decision string
	Bad      int
	Minutes  []struct {
		Time     string
		Verdict  string
		Ratio    *float64
		Baseline struct{ Quantiles map[string]*float64 }
		Canary   struct{ Quantiles map[string]*float64 }
	}
}

func sameAsJudge(t *testing.T, ds *Datasource, promURL string) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "pairwise")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "pairwise")).CombinedOutput(); err != nil {
		t.Fatalf("build pairwise: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "judge", "--prometheus", promURL, "--metric", "http_request_duration_seconds",
		"--baseline", `{service="checkout",track="baseline"}`, "--canary", `{service="checkout",track="canary"}`,
		"--at", liveEnd.Format(time.RFC3339), "--output", "json").Output()
	if code := exitCode(err); code != 2 {
		t.Fatalf("judge exit %d (%v), want 2 (rollback)", code, err)
	}
	var doc judgeDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{liveQuery("M", `,"queryType":"minutes"`)}})
	if err != nil || resp.Responses["M"].Error != nil {
		t.Fatal(err, resp.Responses["M"].Error)
	}
	frame := resp.Responses["M"].Frames[0]
	if frame.Rows() != len(doc.Minutes) || len(doc.Minutes) != 60 {
		t.Fatalf("frame has %d rows, judge %d minutes", frame.Rows(), len(doc.Minutes))
	}
	col := func(name string) *data.Field {
		f, _ := frame.FieldByName(name)
		if f == nil {
			t.Fatalf("no field %s", name)
		}
		return f
	}
	bad := 0
	for i, m := range doc.Minutes {
		if ts := col("time").At(i).(time.Time).UTC().Format(time.RFC3339); ts != m.Time {
			t.Fatalf("row %d at %s, judge minute %s", i, ts, m.Time)
		}
		if v := col("verdict").At(i).(string); v != m.Verdict {
			t.Errorf("%s: data source %s, judge %s", m.Time, v, m.Verdict)
		}
		if m.Verdict == "bad" {
			bad++
		}
		same(t, m.Time+" ratio", col("ratio").At(i).(*float64), m.Ratio)
		for key, label := range map[string]string{"0.5": "p50", "0.99": "p99", "0.999": "p99.9", "0.9999": "p99.99"} {
			same(t, m.Time+" baseline "+label, col("baseline_"+label).At(i).(*float64), m.Baseline.Quantiles[key])
			same(t, m.Time+" canary "+label, col("canary_"+label).At(i).(*float64), m.Canary.Quantiles[key])
		}
	}
	if doc.Decision != "rollback" || bad != doc.Bad || bad < 5 {
		t.Fatalf("judge %s with %d bad; frame has %d bad", doc.Decision, doc.Bad, bad)
	}
}

func same(t *testing.T, what string, a, b *float64) {
	t.Helper()
	if (a == nil) != (b == nil) || a != nil && *a != *b && !(math.IsInf(*a, 0) && b == nil) {
		t.Errorf("%s: data source %v, judge %v", what, deref(a), deref(b))
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// concurrentQueries: 50 QueryData calls at once (run with -race in the test
// script) give the serial answer, and leave no goroutine behind.
func concurrentQueries(t *testing.T, ds *Datasource) {
	req := &backend.QueryDataRequest{Queries: []backend.DataQuery{liveQuery("D", `,"queryType":"decision"`), liveQuery("M", `,"queryType":"minutes"`)}}
	want, err := ds.QueryData(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	ds.Dispose()
	time.Sleep(200 * time.Millisecond)
	before := ownGoroutines()

	var wg sync.WaitGroup
	var mismatches atomic.Int32
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := ds.QueryData(context.Background(), req)
			if err != nil {
				mismatches.Add(1)
				return
			}
			if b, _ := json.Marshal(got); string(b) != string(wantJSON) {
				mismatches.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := mismatches.Load(); n > 0 {
		t.Fatalf("%d of 50 concurrent responses differ from the serial one", n)
	}
	ds.Dispose()
	deadline := time.Now().Add(5 * time.Second)
	for ownGoroutines() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if after := ownGoroutines(); after > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// ownGoroutines counts goroutines other than the HTTP transport's pooled
// keep-alive connections, which the transport bounds and reuses by design.
func ownGoroutines() int {
	buf := make([]byte, 4<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "net/http.(*persistConn)") {
			n++
		}
	}
	return n
}

// cancelledQueries: a proxy in front of Prometheus holds every query; when
// Grafana cancels the request, the query to Prometheus must be dropped at once.
func cancelledQueries(t *testing.T, promURL string) {
	target, _ := url.Parse(promURL)
	upstream := httputil.NewSingleHostReverseProxy(target)
	var started, dropped atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the form first: the server notices a closed connection only
		// once the request body is consumed.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		started.Add(1)
		select {
		case <-r.Context().Done():
			dropped.Add(1)
			return
		case <-time.After(10 * time.Second):
		}
		upstream.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	ds := newLiveDatasource(t, proxy.URL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan backend.DataResponse)
	go func() {
		resp, _ := ds.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{liveQuery("A", "")}})
		done <- resp.Responses["A"]
	}()
	for started.Load() < 2 { // both fleets' queries are in flight
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case dr := <-done:
		if dr.Error == nil {
			t.Fatal("a cancelled query returned data")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("QueryData did not return after its request was cancelled")
	}
	deadline := time.Now().Add(3 * time.Second)
	for dropped.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if dropped.Load() != 2 {
		t.Fatalf("%d of 2 Prometheus queries were dropped after the cancel", dropped.Load())
	}
}
