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
	"slices"
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
		UID: "pairwise-canary", URL: promURL, JSONData: []byte(`{"timeout":20}`),
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
	t.Run("alerting shape", func(t *testing.T) { alertingShape(t, ds) })
	t.Run("a range ending now is settled", func(t *testing.T) { settledNow(t, promURL) })
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
		testenv.GetResource(t, ds, "metrics", &got)
		// Generated blocks carry no metadata, and the list is of the metrics
		// Prometheus has metadata for: none here, an empty list and not null.
		// A scraped Prometheus lists them (internal/e2e,
		// TestSimulatorScrapedAsNativeHistograms).
		if got == nil || len(got) != 0 {
			t.Fatalf("metrics %v, want [] (no metadata)", got)
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
	Decision     string
	DecisionCode int `json:"decision_code"`
	Reason       string
	Rule         string
	Bad          int
	Evidence     judgeEvidence
	Minutes      []struct {
		Time           string
		Verdict        string
		Ratio          *float64
		Baseline       struct{ Quantiles map[string]*float64 }
		Canary         struct{ Quantiles map[string]*float64 }
		Decision       string
		DecisionCode   int    `json:"decision_code"`
		DecisionReason string `json:"decision_reason"`
		Evidence       judgeEvidence
	}
}

type judgeEvidence struct {
	Minutes          int
	CanaryTail       *float64 `json:"canary_tail"`
	BaselineTail     *float64 `json:"baseline_tail"`
	ExpectedTail     *float64 `json:"expected_canary_tail"`
	Statistic        *float64
	PromoteStatistic *float64 `json:"promote_statistic"`
	RollbackBoundary *float64 `json:"rollback_boundary"`
	PromoteBoundary  *float64 `json:"promote_boundary"`
}

// sameAsJudge: the data source and `pairwise judge --range` show the same
// minutes with the same verdicts, numbers and per-minute decisions, under
// both rules and with a deployment start, and decide the same.
func sameAsJudge(t *testing.T, ds *Datasource, promURL string) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "pairwise")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "pairwise")).CombinedOutput(); err != nil {
		t.Fatalf("build pairwise: %v\n%s", err, out)
	}
	// The canary turns 1.4x slower 15 minutes before the end: minute 11:45 is the first bad one.
	regressed := liveEnd.Add(-15 * time.Minute)
	for _, tt := range []struct {
		name, rule, since string
		rows              int
		// rollbackBy: the decision is rollback at this minute at the latest.
		rollbackBy time.Time
	}{
		// Five bad minutes roll back: 11:45 .. 11:49.
		{name: "reference rule", rule: "reference", rows: 60, rollbackBy: regressed.Add(4 * time.Minute)},
		// 45 healthy minutes before the regression are in the window; the
		// rule's recent runs keep them from masking it.
		{name: "evidence rule", rule: "evidence", rows: 60, rollbackBy: regressed.Add(10 * time.Minute)},
		// A deployment that starts with the regression: the window anchored
		// at its start is one test, and rolls back within minutes.
		// Since 11:44: minutes 11:45 .. 12:00 are shown.
		{name: "evidence rule since the regression", rule: "evidence", since: regressed.Add(-time.Minute).Format(time.RFC3339), rows: 16, rollbackBy: regressed.Add(4 * time.Minute)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"judge", "--prometheus", promURL, "--metric", "http_request_duration_seconds",
				"--baseline", `{service="checkout",track="baseline"}`, "--canary", `{service="checkout",track="canary"}`,
				"--at", liveEnd.Format(time.RFC3339), "--range", "60m", "--rule", tt.rule, "--output", "json"}
			extra := fmt.Sprintf(`,"queryType":"minutes","rule":%q`, tt.rule)
			if tt.since != "" {
				args = append(args, "--since", tt.since)
				extra += fmt.Sprintf(`,"since":%q`, tt.since)
			}
			out, err := exec.Command(bin, args...).Output()
			var doc judgeDoc
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("judge: %v (%s)", err, out)
			}
			if code := exitCode(err); code != doc.DecisionCode || doc.Rule != tt.rule {
				t.Fatalf("judge exit %d (%v) for decision %s (%d), rule %s", code, err, doc.Decision, doc.DecisionCode, doc.Rule)
			}
			minutes := dsFrame(t, ds, liveQuery("M", extra))
			decision := dsFrame(t, ds, liveQuery("D", strings.Replace(extra, `"minutes"`, `"decision"`, 1)))
			if minutes.Rows() != len(doc.Minutes) || len(doc.Minutes) != tt.rows {
				t.Fatalf("frame has %d rows, judge %d minutes, want %d", minutes.Rows(), len(doc.Minutes), tt.rows)
			}
			col := fieldOf(t, minutes)
			bad := 0
			var firstRollback string
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
				// The decision of the window ending at the minute, and its evidence.
				if d := col("decision").At(i).(string); d != m.Decision {
					t.Errorf("%s: data source decides %s, judge %s", m.Time, d, m.Decision)
				}
				if m.Decision == "rollback" && firstRollback == "" {
					firstRollback = m.Time
				}
				same(t, m.Time+" decision_code", col("decision_code").At(i).(*float64), ptr(float64(m.DecisionCode)))
				if r := col("decision_reason").At(i).(string); r != m.DecisionReason {
					t.Errorf("%s: data source reason %q, judge %q", m.Time, r, m.DecisionReason)
				}
				sameEvidence(t, m.Time, func(name string) *float64 { return col(name).At(i).(*float64) }, m.Evidence)
			}
			if bad != doc.Bad && tt.since == "" {
				t.Errorf("frame has %d bad minutes, judge %d", bad, doc.Bad)
			}
			if last := doc.Minutes[len(doc.Minutes)-1]; last.Decision != doc.Decision || last.DecisionReason != doc.Reason {
				t.Errorf("the judge's last minute decides %s (%s), its window %s (%s)", last.Decision, last.DecisionReason, doc.Decision, doc.Reason)
			}
			dcol := fieldOf(t, decision)
			if d, r := dcol("decision").At(0).(string), dcol("reason").At(0).(string); d != doc.Decision || r != doc.Reason || dcol("rule").At(0).(string) != tt.rule {
				t.Errorf("decision frame %s (%s), judge %s (%s)", d, r, doc.Decision, doc.Reason)
			}
			same(t, "decision_code", dcol("decision_code").At(0).(*float64), ptr(float64(doc.DecisionCode)))
			sameEvidence(t, "decision frame", func(name string) *float64 { return dcol(name).At(0).(*float64) }, doc.Evidence)
			if !tt.rollbackBy.IsZero() {
				if firstRollback == "" || firstRollback > tt.rollbackBy.Format(time.RFC3339) {
					t.Errorf("rollback first fires at %q, want by %s", firstRollback, tt.rollbackBy.Format(time.RFC3339))
				}
			}
			t.Logf("%s: %s, first rollback at %q: %s", tt.name, doc.Decision, firstRollback, doc.Reason)
		})
	}
}

func sameEvidence(t *testing.T, what string, field func(string) *float64, e judgeEvidence) {
	t.Helper()
	for name, want := range map[string]*float64{
		"evidence_statistic": e.Statistic, "rollback_boundary": e.RollbackBoundary,
		"promote_statistic": e.PromoteStatistic, "promote_boundary": e.PromoteBoundary,
		"canary_tail": e.CanaryTail, "expected_canary_tail": e.ExpectedTail, "baseline_tail": e.BaselineTail,
		"evidence_minutes": ptr(float64(e.Minutes)),
	} {
		same(t, what+" "+name, field(name), want)
	}
}

// dsFrame runs one query through QueryData and returns its only frame.
func dsFrame(t *testing.T, ds *Datasource, q backend.DataQuery) *data.Frame {
	t.Helper()
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses[q.RefID]
	if dr.Error != nil || len(dr.Frames) != 1 {
		t.Fatalf("%s: %v, %d frames", q.RefID, dr.Error, len(dr.Frames))
	}
	return dr.Frames[0]
}

func fieldOf(t *testing.T, frame *data.Frame) func(string) *data.Field {
	return func(name string) *data.Field {
		t.Helper()
		f, _ := frame.FieldByName(name)
		if f == nil {
			t.Fatalf("frame %s has no field %s", frame.Name, name)
		}
		return f
	}
}

func ptr(f float64) *float64 { return &f }

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

// TestPodsAtTheFleetsScrapeInterval: fleets scraped every 10 s, queried
// with the data source's default 15 s: the minutes are read again at 10 s
// (engine.Analyze), and the pods query reads the pods at 10 s too, so its
// frames equal those of a query that sets 10 s itself, but for the
// warning that names the interval.
func TestPodsAtTheFleetsScrapeInterval(t *testing.T) {
	dir, _ := testenv.Generate(t, "--end", liveEnd.Format(time.RFC3339), "--minutes", "70", "--pods", "4", "--seed", "5",
		"--total-rps", "2000", "--canary-share", "0.5", "--scrape-interval", "10s")
	ds := newLiveDatasource(t, testenv.Prometheus(t, testenv.PromOptions{DataDir: dir}).URL)
	query := func(extra string) (frames []byte, notices []string) {
		t.Helper()
		resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{liveQuery("A", `,"queryType":"pods"`+extra)}})
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.Responses["A"]
		if dr.Error != nil {
			t.Fatal(dr.Error)
		}
		for _, f := range dr.Frames {
			if f.Meta != nil {
				for _, n := range f.Meta.Notices {
					notices = append(notices, n.Text)
				}
				f.Meta.Notices = nil
			}
		}
		b, err := json.Marshal(dr.Frames)
		if err != nil {
			t.Fatal(err)
		}
		return b, notices
	}
	byDefault, notices := query("")
	set, _ := query(`,"scrapeIntervalSeconds":10`)
	want := "the fleets' series are scraped every 10 s, not every 15 s as scrapeIntervalSeconds says"
	if !slices.ContainsFunc(notices, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("notices %q, want one starting %q", notices, want)
	}
	if !bytes.Equal(byDefault, set) {
		t.Errorf("the pods read under the default differ from those read at 10 s:\n%.600s\n%.600s", byDefault, set)
	}
}

// settledNow: a range that ends less than engine.DefaultSettle (30 s) ago,
// as an alert rule's evaluation or a dashboard's "now" does, is read up to
// then, as the judge reads it: a minute is judged once its last scrape can
// have landed. In both window modes, at 10 s past the data's last minute
// the minute before it is the last shown; at 40 s, the last minute itself.
func settledNow(t *testing.T, promURL string) {
	ds := newLiveDatasource(t, promURL)
	for _, tt := range []struct {
		since time.Duration
		mode  string
		want  time.Time
	}{
		{10 * time.Second, "range", liveEnd.Add(-time.Minute)},
		{10 * time.Second, "last", liveEnd.Add(-time.Minute)},
		{40 * time.Second, "range", liveEnd},
		{40 * time.Second, "last", liveEnd},
	} {
		t.Run(fmt.Sprintf("%s %v after", tt.mode, tt.since), func(t *testing.T) {
			now := liveEnd.Add(tt.since)
			ds.clock = func() time.Time { return now }
			q := liveQuery("A", `,"queryType":"minutes","windowMode":"`+tt.mode+`"`)
			q.TimeRange = backend.TimeRange{From: now.Add(-10 * time.Minute), To: now}
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error != nil || len(dr.Frames) == 0 {
				t.Fatalf("%v, %d frames", dr.Error, len(dr.Frames))
			}
			var last time.Time
			for _, f := range dr.Frames[0].Fields {
				if f.Type() == data.FieldTypeTime && f.Len() > 0 {
					last = f.At(f.Len() - 1).(time.Time)
					break
				}
			}
			if !last.Equal(tt.want) {
				t.Errorf("last minute shown %s, want %s", last.UTC().Format(time.RFC3339), tt.want.Format(time.RFC3339))
			}
		})
	}
}
