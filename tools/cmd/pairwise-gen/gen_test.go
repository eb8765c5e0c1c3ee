package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/pairwise-canary/pairwise/pkg/sim"
)

var testStart = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

const testPods = 3

func generate(t *testing.T, minutes int, args ...string) (dir string, tr Truth) {
	t.Helper()
	tmp := t.TempDir()
	dir = filepath.Join(tmp, "data")
	truth := filepath.Join(tmp, "truth.json")
	all := append([]string{"--out", dir, "--truth", truth, "--quiet", "--start", testStart.Format(time.RFC3339),
		"--minutes", fmt.Sprint(minutes), "--pods", fmt.Sprint(testPods)}, args...)
	// run prints its summary line on stdout; keep the test output readable.
	stdout := os.Stdout
	devnull, _ := os.Open(os.DevNull)
	os.Stdout = devnull
	err := run(context.Background(), all)
	os.Stdout = stdout
	devnull.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(truth)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("truth file is not valid JSON: %v", err)
	}
	return dir, tr
}

type sample struct {
	t int64
	v float64
}

// rawSeries reads every float series matching the matchers.
func rawSeries(t *testing.T, q storage.Querier, ms ...*labels.Matcher) map[string][]sample {
	t.Helper()
	out := map[string][]sample{}
	ss := q.Select(context.Background(), true, nil, ms...)
	for ss.Next() {
		s := ss.At()
		var xs []sample
		it := s.Iterator(nil)
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			if typ != chunkenc.ValFloat {
				t.Fatalf("%s: unexpected value type %v", s.Labels(), typ)
			}
			ts, v := it.At()
			xs = append(xs, sample{ts, v})
		}
		out[s.Labels().String()] = xs
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// windowIncrease is the counter increase of the whole minute ending at T,
// from the last sample at or before T-60s to the last at or before T (the
// truth's coverage; without a scrape gap a minute and one scrape interval,
// as prom.MinuteRange reads it), with Prometheus's counter reset rule,
// without extrapolation.
func windowIncrease(xs []sample, T int64) float64 {
	var inc float64
	var prev *sample
	for i := range xs {
		x := &xs[i]
		if x.t > T {
			break
		}
		if prev != nil && x.t > T-60000 {
			if x.v < prev.v {
				inc += x.v
			} else {
				inc += x.v - prev.v
			}
		}
		prev = x
	}
	return inc
}

// openData opens a generated TSDB for reading; both close with the test.
func openData(t *testing.T, dir string) storage.Querier {
	t.Helper()
	db, err := tsdb.OpenDBReadOnly(dir, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// checkTruthCounts checks that every fleet's count and errors of every
// minute in the truth equal the stored counters' increases.
func checkTruthCounts(t *testing.T, q storage.Querier, tr Truth, minutes int) {
	t.Helper()
	for fi, fleet := range sim.Fleets {
		counts := rawSeries(t, q, labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_request_duration_seconds_count"),
			labels.MustNewMatcher(labels.MatchEqual, "track", fleet))
		errs := rawSeries(t, q, labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_requests_total"),
			labels.MustNewMatcher(labels.MatchEqual, "code", "500"), labels.MustNewMatcher(labels.MatchEqual, "track", fleet))
		for m := 0; m < minutes; m++ {
			row := tr.Minutes[2*m+fi]
			T := testStart.Add(time.Duration(m+1) * time.Minute)
			if row.Fleet != fleet || row.Time != T.Format(time.RFC3339) {
				t.Fatalf("row %d: %s %s", 2*m+fi, row.Fleet, row.Time)
			}
			var n, e float64
			for _, xs := range counts {
				n += windowIncrease(xs, T.UnixMilli())
			}
			for _, xs := range errs {
				e += windowIncrease(xs, T.UnixMilli())
			}
			if int(n) != row.Count || int(e) != row.Errors {
				t.Errorf("%s %s: data has %v requests, %v errors; truth %d, %d", fleet, row.Time, n, e, row.Count, row.Errors)
			}
		}
	}
}

func TestGenerateOpensAndMatchesTruth(t *testing.T) {
	const minutes = 40
	dir, tr := generate(t, minutes, "--scenario", "regression", "--regression-start-minute", "10",
		"--seed", "7", "--total-rps", "300", "--canary-share", "0.2", "--restart", "canary-1@12")

	// Truth header and shape.
	if tr.Scenario != "regression" || tr.Start != testStart.Format(time.RFC3339) || len(tr.Minutes) != 2*minutes {
		t.Fatalf("truth header: scenario %q start %q, %d minute rows", tr.Scenario, tr.Start, len(tr.Minutes))
	}
	if tr.Facts.RegressionStartMinute == nil || *tr.Facts.RegressionStartMinute != 10 || len(tr.Restarts) != 1 ||
		tr.Restarts[0].Pod != "checkout-canary-1" || !tr.Restarts[0].Time.Equal(testStart.Add(12*time.Minute+7*time.Second)) {
		t.Fatalf("truth facts: %+v restarts %+v", tr.Facts, tr.Restarts)
	}

	db, err := tsdb.OpenDBReadOnly(dir, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blocks, err := db.Blocks()
	if err != nil || len(blocks) == 0 {
		t.Fatalf("blocks: %v, %v", len(blocks), err)
	}
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()

	// Series: per pod 1 native + 24 classic buckets + _count + _sum + 2 request counters.
	all := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "job", "checkout"))
	byName := map[string]int{}
	for all.Next() {
		l := all.At().Labels()
		byName[l.Get("__name__")]++
		pod := l.Get("pod")
		if l.Get("instance") != pod+":8080" || l.Get("service") != "checkout" || !strings.HasPrefix(pod, "checkout-"+l.Get("track")+"-") {
			t.Errorf("labels %s", l)
		}
	}
	pods := 2 * testPods
	want := map[string]int{
		"http_request_duration_seconds":        pods,
		"http_request_duration_seconds_bucket": pods * (len(DefaultClassicBuckets) + 1),
		"http_request_duration_seconds_count":  pods,
		"http_request_duration_seconds_sum":    pods,
		"http_requests_total":                  2 * pods,
	}
	for name, n := range want {
		if byName[name] != n {
			t.Errorf("%s: %d series, want %d", name, byName[name], n)
		}
	}

	// Counts and errors per fleet and minute equal the truth, from raw samples.
	checkTruthCounts(t, q, tr, minutes)
	for _, row := range tr.Minutes {
		if row.Count > 0 && len(row.PodP99) == 0 {
			t.Errorf("%s %s: no pod p99", row.Fleet, row.Time)
		}
	}

	// The restarted pod's counter goes down once.
	rc := rawSeries(t, q, labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_request_duration_seconds_count"),
		labels.MustNewMatcher(labels.MatchEqual, "pod", "checkout-canary-1"))
	resets := 0
	for _, xs := range rc {
		for i := 1; i < len(xs); i++ {
			if xs[i].v < xs[i-1].v {
				resets++
				if xs[i].t != testStart.Add(12*time.Minute+15*time.Second).UnixMilli() {
					t.Errorf("reset at %v", time.UnixMilli(xs[i].t).UTC())
				}
			}
		}
	}
	if resets != 1 {
		t.Errorf("%d counter resets on the restarted pod, want 1", resets)
	}

	// Prometheus's own histogram_quantile on the data agrees with the truth:
	// the exact p99 and Prometheus's interpolated p99 are in the same bucket.
	// DBReadOnly.Querier reloads (and closes) its blocks on every call, which
	// would wait for q: share q instead.
	queryable := storage.QueryableFunc(func(int64, int64) (storage.Querier, error) { return nopClose{q}, nil })
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, Parser: parser.NewParser(parser.Options{})})
	instant := func(qs string, ts time.Time) float64 {
		t.Helper()
		qry, err := eng.NewInstantQuery(context.Background(), queryable, nil, qs, ts)
		if err != nil {
			t.Fatal(err)
		}
		defer qry.Close()
		res := qry.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s: %v", qs, res.Err)
		}
		v, err := res.Vector()
		if err != nil || len(v) != 1 {
			t.Fatalf("%s at %v: %v (%v)", qs, ts, res.Value, err)
		}
		return v[0].F
	}
	growth := math.Exp2(1.0 / 8)
	checked := 0
	for _, row := range tr.Minutes {
		T, _ := time.Parse(time.RFC3339, row.Time)
		truth := row.Quantiles["0.99"]
		if row.Count < 500 || T.Sub(testStart) <= 2*time.Minute || (row.Fleet == "canary" && T.Sub(testStart) >= 12*time.Minute && T.Sub(testStart) <= 14*time.Minute) {
			continue // too few requests, first minutes, or the restart
		}
		native := instant(fmt.Sprintf(`histogram_quantile(0.99, sum(increase(http_request_duration_seconds{track=%q}[75s])))`, row.Fleet), T)
		if r := native / truth; r <= 1/growth || r >= growth {
			t.Errorf("%s %s: native p99 %v, truth %v: not in the same schema-3 bucket", row.Fleet, row.Time, native, truth)
		}
		classic := instant(fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (increase(http_request_duration_seconds_bucket{track=%q}[75s])))`, row.Fleet), T)
		lo, hi := 0.0, math.Inf(1)
		for _, le := range DefaultClassicBuckets {
			if le >= truth {
				hi = le
				break
			}
			lo = le
		}
		if classic < lo || classic > hi {
			t.Errorf("%s %s: classic p99 %v, truth %v: not in bucket [%v, %v]", row.Fleet, row.Time, classic, truth, lo, hi)
		}
		checked++
	}
	if checked < minutes {
		t.Errorf("only %d minutes checked against PromQL", checked)
	}
	// The regression shows: canary p99 / baseline p99 after minute 10.
	var before, after []float64
	for m := 3; m < minutes; m++ {
		r := tr.Minutes[2*m+1].Quantiles["0.99"] / tr.Minutes[2*m].Quantiles["0.99"]
		if m < 10 {
			before = append(before, r)
		} else if m > 14 {
			after = append(after, r)
		}
	}
	if mb, ma := median(before), median(after); mb > 1.1 || ma < 1.1 || ma > 1.32 {
		t.Errorf("median canary/baseline p99: %.3f before, %.3f after the regression (x1.2)", mb, ma)
	}
}

// resetTimes are the times at which a pod's request count goes down.
func resetTimes(t *testing.T, q storage.Querier, pod string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, xs := range rawSeries(t, q, labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_request_duration_seconds_count"),
		labels.MustNewMatcher(labels.MatchEqual, "pod", pod)) {
		for i := 1; i < len(xs); i++ {
			if xs[i].v < xs[i-1].v {
				out = append(out, time.UnixMilli(xs[i].t).UTC())
			}
		}
	}
	return out
}

// TestRepeatedRestarts: every --restart of a pod resets its counters, not
// only the last one, and the truth's counts stay those of the data.
func TestRepeatedRestarts(t *testing.T) {
	const minutes = 10
	dir, tr := generate(t, minutes, "--restart", "canary-0@2", "--restart", "canary-0@6", "--restart", "baseline-1@4")
	if len(tr.Restarts) != 3 {
		t.Fatalf("truth restarts %+v, want 3", tr.Restarts)
	}
	q := openData(t, dir)
	for pod, want := range map[string][]time.Time{
		"checkout-canary-0":   {testStart.Add(2*time.Minute + 15*time.Second), testStart.Add(6*time.Minute + 15*time.Second)},
		"checkout-baseline-1": {testStart.Add(4*time.Minute + 15*time.Second)},
		"checkout-canary-1":   nil,
	} {
		if got := resetTimes(t, q, pod); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s: counter resets at %v, want %v", pod, got, want)
		}
	}
	checkTruthCounts(t, q, tr, minutes)
}

// TestRestartAfterTheLastScrape: a restart no scrape would see is refused,
// not listed in a truth whose data never shows it.
func TestRestartAfterTheLastScrape(t *testing.T) {
	out := filepath.Join(t.TempDir(), "data")
	// Scrapes at 00:45, 01:45 and 02:45; minute 2's restart would be at 03:15.
	err := run(context.Background(), []string{"--out", out, "--quiet", "--minutes", "3", "--scrape-interval", "60s", "--scrape-offset", "45s", "--restart", "canary-0@2"})
	if err == nil || !strings.Contains(err.Error(), "after the data's last scrape") {
		t.Fatalf("error %v, want one saying the restart is after the last scrape", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out was created before the restart was refused: %v", err)
	}
	// Minute 1's restart, at 02:15, is seen by the scrape at 02:45.
	if err := run(context.Background(), []string{"--out", out, "--quiet", "--minutes", "3", "--scrape-interval", "60s", "--scrape-offset", "45s", "--restart", "canary-0@1"}); err != nil {
		t.Fatal(err)
	}
}

// TestOutMustBeNewOrEmpty: a second run into the same --out is refused
// before it writes anything (its blocks would overlap the first run's, whose
// pods 5-9 would stay), and an existing empty directory is accepted.
func TestOutMustBeNewOrEmpty(t *testing.T) {
	dir, _ := generate(t, 2, "--pods", "10")
	before, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"--out", dir, "--quiet", "--minutes", "2", "--pods", "5", "--start", testStart.Format(time.RFC3339)})
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("error %v, want one saying --out is not empty", err)
	}
	after, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the refused run changed --out: %d entries, then %d", len(before), len(after))
	}
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull)
	defer func() { os.Stdout.Close(); os.Stdout = stdout }()
	if err := run(context.Background(), []string{"--out", t.TempDir(), "--quiet", "--minutes", "2"}); err != nil {
		t.Errorf("an existing empty --out: %v", err)
	}
}

// TestNoTruthKeepsNoObservations: without --truth no observation is kept
// (they are kept for the truth's exact quantiles, gigabytes over a week),
// and the summary is the same as with one.
func TestNoTruthKeepsNoObservations(t *testing.T) {
	var sums []Summary
	for _, truth := range []string{"", filepath.Join(t.TempDir(), "truth.json")} {
		o, _, err := parseFlags([]string{"--out", filepath.Join(t.TempDir(), "data"), "--truth", truth, "--quiet",
			"--start", testStart.Format(time.RFC3339), "--minutes", "3", "--pods", "2", "--restart", "canary-0@1"})
		if err != nil {
			t.Fatal(err)
		}
		g, err := newGenerator(o)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := g.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sum.Elapsed = 0
		sums = append(sums, sum)
		if truth != "" {
			continue
		}
		kept := 0
		for fi := range 2 {
			for _, vals := range g.fleetVals[fi] {
				kept += cap(vals)
			}
			kept += len(g.podP99[fi])
		}
		for _, p := range g.pods {
			kept += cap(p.vals)
		}
		if kept > 0 {
			t.Errorf("without --truth, %d values kept", kept)
		}
	}
	if sums[0] != sums[1] || sums[0].Observations == 0 {
		t.Errorf("summary without --truth %+v, with %+v", sums[0], sums[1])
	}
}

// TestScrapeGapCounts: a pod's observations during a scrape gap count in
// the minute of its first sample after the gap, where the stored counters
// show them (the truth put them in the minutes of the gap, which the data
// holds no sample of); none when the gap runs to the end, or when the pod
// restarts during the gap.
func TestScrapeGapCounts(t *testing.T) {
	const minutes = 8
	dir, tr := generate(t, minutes, "--scrape-gap", "canary-0@2-4", "--scrape-gap", "canary-1@2-4", "--restart", "canary-1@3",
		"--scrape-gap", "baseline-1@6-8", "--scrape-interval", "10s", "--scrape-offset", "5s")
	checkTruthCounts(t, openData(t, dir), tr, minutes)

	// Beside the same run without gaps or restarts, the gaps show: the
	// canary's minutes in its gap hold less and the minute after it more
	// (canary-0's gap observations), and it loses canary-1's observations
	// before its restart; the baseline loses baseline-1's from its gap to
	// the end, and no baseline minute gains.
	_, plain := generate(t, minutes, "--scrape-interval", "10s", "--scrape-offset", "5s")
	var less, more [2]int
	var total, plainTotal [2]int
	for i, row := range tr.Minutes {
		fi := i % 2
		total[fi] += row.Count
		plainTotal[fi] += plain.Minutes[i].Count
		switch {
		case row.Count < plain.Minutes[i].Count:
			less[fi]++
		case row.Count > plain.Minutes[i].Count:
			more[fi]++
		}
	}
	if less[1] == 0 || more[1] == 0 || total[1] >= plainTotal[1] {
		t.Errorf("canary: %d minutes hold less than without the gaps, %d more, %d observations against %d: the gaps do not show", less[1], more[1], total[1], plainTotal[1])
	}
	if less[0] == 0 || more[0] != 0 || total[0] >= plainTotal[0] {
		t.Errorf("baseline: %d minutes hold less than without the gap, %d more, %d observations against %d: want fewer, in its gap to the end only", less[0], more[0], total[0], plainTotal[0])
	}
}

type nopClose struct{ storage.Querier }

func (nopClose) Close() error { return nil }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func TestDeterministicOutput(t *testing.T) {
	_, a := generate(t, 5, "--seed", "3")
	_, b := generate(t, 5, "--seed", "3")
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Error("same seed, different truth")
	}
	_, c := generate(t, 5, "--seed", "4", "--workers", "1")
	if c.Minutes[0].Count == a.Minutes[0].Count && c.Minutes[0].Quantiles["0.99"] == a.Minutes[0].Quantiles["0.99"] {
		t.Error("other seed, same truth")
	}
	_, d := generate(t, 5, "--seed", "3", "--workers", "1")
	jd, _ := json.Marshal(d)
	if string(ja) != string(jd) {
		t.Error("worker count changed the truth")
	}
}

func TestMinuteCoverage(t *testing.T) {
	for _, tc := range []struct {
		interval, offset time.Duration
		perMinute        int // covered intervals per minute
	}{
		{15 * time.Second, 0, 4},
		{15 * time.Second, 5 * time.Second, 4},
		{10 * time.Second, 0, 6},
		{30 * time.Second, 0, 2},
		{60 * time.Second, 0, 1},
	} {
		c := sim.DefaultConfig(testStart)
		g, err := newGenerator(Options{Sim: c, Minutes: 5, ScrapeInterval: tc.interval, ScrapeOffset: tc.offset,
			Metric: "m", Service: "s", Job: "j", Schema: 3, ClassicBuckets: DefaultClassicBuckets})
		if err != nil {
			t.Fatal(err)
		}
		per := map[int]int{}
		for k := 1; k < len(g.scrape); k++ {
			if m := g.minuteOf(g.scrape[k-1], g.scrape[k]); m >= 0 {
				per[m]++
			}
		}
		for m := 0; m < 5; m++ {
			want := tc.perMinute
			if m == 0 && tc.offset > 0 {
				want-- // the data's first sample is inside its first minute: nothing before it
			}
			if per[m] != want {
				t.Errorf("interval %v offset %v: minute %d covers %d intervals, want %d", tc.interval, tc.offset, m, per[m], want)
			}
		}
	}
}

func TestNativeKeys(t *testing.T) {
	for _, schema := range []int32{-2, 0, 3, 8} {
		c := sim.DefaultConfig(testStart)
		g, err := newGenerator(Options{Sim: c, Minutes: 1, ScrapeInterval: 15 * time.Second, Metric: "m", Service: "s", Job: "j",
			Schema: schema, ClassicBuckets: DefaultClassicBuckets})
		if err != nil {
			t.Fatal(err)
		}
		base := math.Exp2(math.Exp2(-float64(schema)))
		for _, v := range []float64{1e-4, 0.0123, 0.5, 1, 2, 3.7, 1000} {
			k := g.layouts[0].key(v)
			lo, hi := math.Pow(base, float64(k-1)), math.Pow(base, float64(k))
			if !(v > lo*(1-1e-12) && v <= hi*(1+1e-12)) {
				t.Errorf("schema %d: %v in bucket %d = (%v, %v]", schema, v, k, lo, hi)
			}
		}
	}
}

func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{},
		{"--out", dir, "--scenario", "nope"},
		{"--out", dir, "--start", "2026-11-02T10:00:30Z"},
		{"--out", dir, "--restart", "canary-99@1"},
		{"--out", dir, "--restart", "canary-1"},
		{"--out", dir, "--scrape-interval", "1500ms"},
	} {
		if err := run(context.Background(), append(args, "--quiet", "--minutes", "2")); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestRefusedBeforeWriting: classic bounds that are not finite and strictly
// increasing, or that list +Inf, schemas Prometheus does not have and
// non-finite knobs are refused before --out is created.
func TestRefusedBeforeWriting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--buckets", "0.1,0.1,1"}, "--buckets 0.1,0.1,1: bound 0.1 follows 0.1"},
		{[]string{"--buckets", "0.1,+Inf"}, "--buckets 0.1,+Inf: +Inf"},
		{[]string{"--buckets", "NaN"}, "--buckets NaN: bound NaN"},
		{[]string{"--buckets", "0.1,+Inf", "--nhcb-metric", "nhcb_seconds"}, "--buckets 0.1,+Inf"},
		{[]string{"--canary-buckets", "0.5,0.1"}, "--canary-buckets 0.5,0.1"},
		{[]string{"--schema", "4294967299"}, "--schema 4294967299"},
		{[]string{"--schema", "9"}, "--schema 9"},
		{[]string{"--canary-schema", "-5"}, "--canary-schema -5"},
		{[]string{"--regression-factor", "Inf", "--scenario", "regression"}, "regression factor must be a finite number, got +Inf"},
		{[]string{"--median-latency", "Inf"}, "median latency must be a finite number, got +Inf"},
	} {
		out := filepath.Join(t.TempDir(), "data")
		err := run(context.Background(), append([]string{"--out", out, "--truth", filepath.Join(t.TempDir(), "truth.json"), "--quiet", "--minutes", "2"}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%q: --out created before the error: %v", tc.args, err)
		}
	}
}

// The latency shape, load coupling and tail scenario flags reach the
// simulation and the truth file.
func TestShapeFlags(t *testing.T) {
	_, heavy := generate(t, 3, "--shape", "heavy", "--costly-share", "0", "--load-latency", "0.25",
		"--scenario", "tail", "--regression-start-minute", "1", "--tail-pivot", "0.95", "--tail-stretch", "2")
	f := heavy.Facts
	if f.Shape != sim.ShapeHeavy || f.LoadLatency != 0.25 || f.TailPivot != 0.95 || f.TailStretch != 2 || f.RegressionStart == "" {
		t.Errorf("facts %+v", f)
	}
	_, logn := generate(t, 3, "--shape", "lognormal", "--costly-share", "0")
	if logn.Facts.Shape != sim.ShapeLognormal {
		t.Errorf("shape %q", logn.Facts.Shape)
	}
	// A Pareto tail of index 3 is heavier than a log-normal of sd 0.5 with
	// the same median: a larger p99.9 / p50 in every minute.
	for i, m := range heavy.Minutes {
		l := logn.Minutes[i]
		if m.Fleet != sim.FleetBaseline {
			continue
		}
		if m.Quantile(0.999)/m.Quantile(0.5) <= l.Quantile(0.999)/l.Quantile(0.5) {
			t.Errorf("minute %s: heavy p99.9/p50 %.2f, lognormal %.2f", m.Time, m.Quantile(0.999)/m.Quantile(0.5), l.Quantile(0.999)/l.Quantile(0.5))
		}
	}
	dir := t.TempDir()
	if err := run(context.Background(), []string{"--out", dir, "--quiet", "--minutes", "2", "--shape", "weibull"}); err == nil {
		t.Error("unknown shape accepted")
	}
}

// TestCanaryLayout: --canary-schema and --canary-buckets give the canary's
// series their own layout; the baseline keeps --schema and --buckets.
func TestCanaryLayout(t *testing.T) {
	dir, _ := generate(t, 3, "--schema", "1", "--canary-schema", "3", "--buckets", "0.1,0.25,1", "--canary-buckets", "0.1,0.5,1", "--nhcb-metric", "nhcb_seconds")
	db, err := tsdb.OpenDBReadOnly(dir, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for track, want := range map[string]struct {
		schema int32
		les    []string
	}{"baseline": {1, []string{"+Inf", "0.1", "0.25", "1.0"}}, "canary": {3, []string{"+Inf", "0.1", "0.5", "1.0"}}} {
		ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_request_duration_seconds"),
			labels.MustNewMatcher(labels.MatchEqual, "track", track))
		n := 0
		for ss.Next() {
			it := ss.At().Iterator(nil)
			for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
				if typ != chunkenc.ValHistogram {
					t.Fatalf("%s: value type %v", ss.At().Labels(), typ)
				}
				if _, h := it.AtHistogram(nil); h.Schema != want.schema {
					t.Fatalf("%s: schema %d, want %d", ss.At().Labels(), h.Schema, want.schema)
				}
				n++
			}
		}
		if ss.Err() != nil || n == 0 {
			t.Fatalf("%s: %d native samples, %v", track, n, ss.Err())
		}
		// The NHCB: the classic buckets' bounds, its counts the classic ones.
		ns := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "nhcb_seconds"),
			labels.MustNewMatcher(labels.MatchEqual, "track", track))
		n = 0
		for ns.Next() {
			it := ns.At().Iterator(nil)
			for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
				_, h := it.AtHistogram(nil)
				if h.Schema != histogram.CustomBucketsSchema || len(h.CustomValues) != 3 || h.CustomValues[1] != map[string]float64{"baseline": 0.25, "canary": 0.5}[track] {
					t.Fatalf("%s: NHCB schema %d, bounds %v", ns.At().Labels(), h.Schema, h.CustomValues)
				}
				var sum float64
				for bi := h.PositiveBucketIterator(); bi.Next(); {
					sum += float64(bi.At().Count)
				}
				if sum != float64(h.Count) {
					t.Fatalf("%s: buckets add up to %v, count %d", ns.At().Labels(), sum, h.Count)
				}
				n++
			}
		}
		if ns.Err() != nil || n == 0 {
			t.Fatalf("%s: %d NHCB samples, %v", track, n, ns.Err())
		}
		les := map[string]bool{}
		bs := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_request_duration_seconds_bucket"),
			labels.MustNewMatcher(labels.MatchEqual, "track", track))
		for bs.Next() {
			les[bs.At().Labels().Get("le")] = true
		}
		got := slices.Sorted(maps.Keys(les))
		if !slices.Equal(got, want.les) {
			t.Errorf("%s: le %v, want %v", track, got, want.les)
		}
	}
}
