package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/sim"
)

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {0.5, 3}, {1, 5}, {0.25, 2}, {0.95, 4.8}} {
		if got := percentile(xs, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(median(nil)) || !math.IsNaN(maxOf(nil)) {
		t.Error("empty input must give NaN")
	}
	if xs[0] != 5 {
		t.Error("percentile sorted its input in place")
	}
}

func TestBounds(t *testing.T) {
	if got := nativeBound(3); math.Abs(got-0.0905077) > 1e-6 {
		t.Errorf("nativeBound(3) = %v, want 2^(1/8)-1", got)
	}
	b := []float64{0.1, 0.25, 1}
	if got := classicBound(b, 0.2); math.Abs(got-0.75) > 1e-12 { // (0.25-0.1)/0.2
		t.Errorf("classicBound = %v", got)
	}
	if got := classicBound(b, 0.25); math.Abs(got-0.6) > 1e-12 { // le is inclusive
		t.Errorf("classicBound at the upper bound = %v", got)
	}
	if got := classicBound(b, 0.05); math.Abs(got-2) > 1e-12 { // first bucket starts at 0
		t.Errorf("classicBound in the first bucket = %v", got)
	}
	if !math.IsInf(classicBound(b, 2), 1) {
		t.Error("+Inf bucket must have an infinite bound")
	}
}

func TestDashboardQueries(t *testing.T) {
	qs := dashboardQueries(prom.Native, []float64{0.5, 0.99, 0.999, 0.9999})
	if len(qs) != 10 {
		t.Fatalf("%d queries, want 10", len(qs))
	}
	if qs[1] != `histogram_quantile(0.99, sum(rate(http_request_duration_seconds{service="checkout",track="baseline"}[1m])))` {
		t.Errorf("native quantile query %q", qs[1])
	}
	cq := dashboardQueries(prom.Classic, []float64{0.99})
	if !strings.HasPrefix(cq[0], "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{") || !strings.HasPrefix(cq[3], "sum(rate(http_request_duration_seconds_count{") {
		t.Errorf("classic queries %q", cq)
	}
	if eq := engineQueries(prom.Native); len(eq) != 2 || !strings.HasPrefix(eq[0], "sum(increase(") {
		t.Errorf("engine queries %q", eq)
	}
}

func TestSeriesOf(t *testing.T) {
	s := "pairwise-gen: clean 2026-06-01T11:00:00Z..2026-06-01T12:00:00Z: 580 series, 139780 samples"
	if got := seriesOf(s); got != "580" {
		t.Errorf("seriesOf = %q", got)
	}
}

func TestLinkTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	for _, p := range []string{"01ABC/meta.json", "01ABC/chunks/000001", "wal/00000000", "lock"} {
		os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(src, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := linkTree(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "01ABC/chunks/000001")); err != nil || string(b) != "01ABC/chunks/000001" {
		t.Errorf("block file not linked: %v %q", err, b)
	}
	for _, p := range []string{"wal/00000000", "lock"} {
		if _, err := os.Stat(filepath.Join(dst, p)); err == nil {
			t.Errorf("%s must not be shared with Prometheus's copy", p)
		}
	}
}

func TestReportComplete(t *testing.T) {
	r := &report{Plan: smokePlan()}
	if r.complete() == nil {
		t.Fatal("an empty report must not pass the smoke check")
	}
	r.Eff = []effRow{{Pods: 10, Kind: prom.Native, Engine: 0.01, DashSeq: 0.05, DashConc: 0.03, Raw: 0.009}}
	r.Acc = []accRow{{N: 1, WithinBound: 1}}
	r.Avg = []avgRow{{N: 1}}
	r.Scale = []scaleRow{{Pods: 10, Minutes: 60, Engine: 0.01, Raw: 0.01, HWMKiB: 1}}
	r.Clean = []cleanCell{{Key: cellKey{"lognormal", 500, 0.05}, Kind: "native schema 3"}}
	r.Reg = []regCell{{Key: cellKey{"lognormal", 500, 0.05}, Regression: "uniform x1.2", Kind: "native schema 3", Deploys: 1, Oracle: delays{4}, Rules: [numRules]delays{{5}, {6}, {5}}}}
	r.Parity = []parityRow{{Kind: "native schema 3", Decisions: 10}}
	r.PanelNote = "not measured in smoke mode"
	if err := r.complete(); err != nil {
		t.Fatal(err)
	}
	md := r.markdown()
	for _, want := range []string{"| 1 efficiency 10 pods native: dashboard sequential / engine | 5.00x", "not measured in smoke mode", "## 5. Judgement"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Contains(md, "Changed in this run") {
		t.Error("the matrix's own model is reported as changed")
	}
	// A run on another model or layout says so beside the model it describes.
	r.Plan.Judge.Model = map[string]float64{"median": 0.05, "body-sigma": 0.5}
	r.Plan.Judge.ClassicBuckets = []float64{0.1, 1}
	if want := "body-sigma=0.5, median=0.05, classic buckets [0.1 1]"; !strings.Contains(r.markdown(), want) {
		t.Errorf("markdown lacks %q", want)
	}
	r.Plan.Judge.Stalls, r.Plan.Judge.Ramp = stalls{10, 1}, ramp{5, 1}
	for _, want := range []string{"every pod pauses 1 s about every 10 minutes", "in 5 equal steps, one every 1 minutes"} {
		if !strings.Contains(r.markdown(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	r.Plan.Judge.Model, r.Plan.Judge.ClassicBuckets, r.Plan.Judge.Stalls, r.Plan.Judge.Ramp = nil, nil, stalls{}, ramp{}
	// Each row says whether its target is met: 5x against >= 3x is, an
	// overhead of 1.11 against <= 1.10 is not.
	if row := lineWith(r.summary(), "1 efficiency 10 pods native: dashboard sequential / engine"); !strings.HasSuffix(strings.TrimSpace(row), "met") || strings.Contains(row, "NOT met") {
		t.Errorf("a target met, summary row %q", row)
	}
	if row := lineWith(r.summary(), "2 overhead 10 pods native: engine / raw HTTP"); !strings.Contains(row, "NOT met") {
		t.Errorf("a target missed, summary row %q", row)
	}
	// A regressed deployment the evidence rule promoted first fails its row.
	shipped := "5 regressions deployed fresh, 1 deployments: promoted before any rollback"
	if row := lineWith(r.summary(), shipped); row == "" || strings.Contains(row, "NOT met") {
		t.Errorf("no regression promoted, summary row %q", row)
	}
	r.Reg[0].Promoted[evidenceRule] = 1
	if row := lineWith(r.summary(), shipped); !strings.Contains(row, "NOT met") {
		t.Errorf("one regression promoted, summary row %q", row)
	}
}

// lineWith is the first line of text containing s, or "".
func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestParseStalls: --stalls takes minutes between a pod's pauses and their
// length, and refuses what the simulator cannot do.
func TestParseStalls(t *testing.T) {
	for text, want := range map[string]stalls{"": {}, "10,1": {10, 1}, "60,0.25": {60, 0.25}} {
		if got, err := parseStalls(text); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", text, got, err, want)
		}
	}
	for _, text := range []string{"10", "0,1", "-5,1", "10,0", "10,1.5", "x,1", "10,y", "10,1,2"} {
		if _, err := parseStalls(text); err == nil {
			t.Errorf("%q accepted", text)
		}
	}
}

// TestParseEpisodes: --episodes takes minutes between a pod's slow
// episodes, their length in seconds and the slowdown, and refuses what the
// simulator cannot do.
func TestParseEpisodes(t *testing.T) {
	for text, want := range map[string]episodes{"": {}, "30,90,1.5": {30, 90, 1.5}, "1,60,2": {1, 60, 2}} {
		if got, err := parseEpisodes(text); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", text, got, err, want)
		}
	}
	for _, text := range []string{"30,90", "0,90,1.5", "30,0,1.5", "1,61,1.5", "30,1.5,2", "30,90,0", "30,90,Inf", "x,90,2", "30,90,1.5,1"} {
		if _, err := parseEpisodes(text); err == nil {
			t.Errorf("%q accepted", text)
		}
	}
}

// TestParseRamp: --ramp takes a number of steps and the minutes between
// them, and refuses a ramp of one step or none.
func TestParseRamp(t *testing.T) {
	for text, want := range map[string]ramp{"": {}, "5,1": {5, 1}, "2,10": {2, 10}} {
		if got, err := parseRamp(text); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", text, got, err, want)
		}
	}
	for _, text := range []string{"5", "1,1", "0,1", "5,0", "-5,1", "x,1", "5,y", "5,1,2", "2.5,1"} {
		if _, err := parseRamp(text); err == nil {
			t.Errorf("%q accepted", text)
		}
	}
}

// TestRampStarts: with a ramp every deployment starts its own ramp and is
// judged before the next one starts it over.
func TestRampStarts(t *testing.T) {
	r := ramp{5, 1}
	if got := r.starts(59, 300, 60); !slices.Equal(got, []int{60, 120, 180, 240}) {
		t.Errorf("identical fleets: starts %v", got)
	}
	if got := r.starts(0, 480, 120); !slices.Equal(got, []int{0, 120, 240, 360}) {
		t.Errorf("regressions: starts %v", got)
	}
	if got, want := (ramp{}).starts(59, 59+240, 60), deployStarts(59, 59+240, 60); !slices.Equal(got, want) {
		t.Errorf("no ramp: starts %v, want %v", got, want)
	}
	c := sim.DefaultConfig(benchEnd)
	c.CanaryShare = 0.5
	r.apply(&c, 120)
	if c.RampStep != 0.1 || c.RampEveryMinutes != 1 || c.RampPeriodMinutes != 120 {
		t.Errorf("ramp applied as %v every %d minutes, period %d", c.RampStep, c.RampEveryMinutes, c.RampPeriodMinutes)
	}
}

// TestParseClassicBuckets: --classic-buckets takes finite, positive,
// strictly ascending bounds and refuses anything else.
func TestParseClassicBuckets(t *testing.T) {
	for text, want := range map[string][]float64{"": nil, "0.1": {0.1}, "0.005, 0.01,0.025": {0.005, 0.01, 0.025}} {
		if got, err := parseClassicBuckets(text); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", text, got, err, want)
		}
	}
	for _, text := range []string{"0.1,0.05", "0.1,0.1", "0,1", "-1,1", "1,+Inf", "1,NaN", "x", "1,,2"} {
		if _, err := parseClassicBuckets(text); err == nil {
			t.Errorf("%q accepted", text)
		}
	}
}

// TestParseModel: --judge-model sets the named sim.Config fields and
// refuses names it does not know and values that are not numbers.
func TestParseModel(t *testing.T) {
	m, err := parseModel("median=0.05, body-sigma=0.6,slow-share=0.01")
	if err != nil {
		t.Fatal(err)
	}
	c := sim.DefaultConfig(time.Unix(0, 0))
	applyModel(m, &c)
	if c.MedianLatency != 0.05 || c.BodySigma != 0.6 || c.SlowShare != 0.01 || c.SlowFactor != 5 {
		t.Errorf("applied: median %v, body sigma %v, slow share %v, slow factor %v", c.MedianLatency, c.BodySigma, c.SlowShare, c.SlowFactor)
	}
	if m, err := parseModel(""); m != nil || err != nil {
		t.Errorf("empty: %v, %v", m, err)
	}
	for _, text := range []string{"median", "median=x", "speed=2", "median=NaN", "median=0.05,,"} {
		if _, err := parseModel(text); err == nil {
			t.Errorf("%q accepted", text)
		}
	}
}
