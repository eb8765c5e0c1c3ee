package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// The in-process histograms carry Prometheus's bucket bounds: the engine's
// parser recognises them as exponential of the right schema.
func TestInProcessBucketBounds(t *testing.T) {
	c := newCounts(classicBuckets)
	for _, v := range []float64{0.0123, 0.02, 0.5, 0.5000001, 1, 3.7} {
		if c.observe(v) < 0 {
			t.Fatalf("observe(%v) out of range", v)
		}
	}
	for _, schema := range []int{0, 3} {
		h, err := c.native(schema)
		if err != nil {
			t.Fatal(err)
		}
		if h.Kind != histogram.NativeExponential || int(h.Schema) != schema {
			t.Errorf("schema %d read back as %v schema %d", schema, h.Kind, h.Schema)
		}
		// Upper bounds are inclusive: 0.5 is the top of (0.25, 0.5] (schema
		// 0) or (0.4585, 0.5] (schema 3), and 0.5000001 is above it.
		for _, b := range h.Buckets {
			if b.Upper == 0.5 && b.Count != 1 {
				t.Errorf("schema %d: bucket %+v", schema, b)
			}
		}
		if h.Count != 6 {
			t.Errorf("count %v", h.Count)
		}
	}
	if got := cumulate(c.classic); got[len(got)-1] != 6 || got[slicesIndex(classicBuckets, 0.5)] != 3 {
		t.Errorf("classic cumulative counts %v", got)
	}
}

func slicesIndex(xs []float64, v float64) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

// promql's extrapolation of a one-minute increase() over 15 s scrapes, the
// last one shift seconds before the minute's end.
func TestExtrapolation(t *testing.T) {
	for _, c := range []struct {
		first, inc float64
		shift      int64
		want       float64
	}{
		{1000, 300, 0, 4.0 / 3},         // a long-running counter: 15 s to the range start
		{0, 300, 0, 1},                  // a counter starting at the first sample: no extrapolation
		{50, 300, 0, (45 + 7.5) / 45.0}, // it would reach zero 7.5 s before the first sample
		{100, 300, 0, 4.0 / 3},          // exactly 15 s
		{5, 0, 0, 4.0 / 3},              // no increase: the factor does not matter
		{1000, 300, 5, 4.0 / 3},         // 10 s to the range start, 5 s to its end
		{0, 300, 5, 50 / 45.0},          // only the end is extrapolated
		{50, 300, 9, (45 + 6 + 9) / 45.0},
		{50, 300, 5, (45 + 7.5 + 5) / 45.0}, // zero 7.5 s before the first sample, the start 10 s
	} {
		if got := extrapolation(c.first, c.inc, c.shift, 45); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("extrapolation(%v, %v, %v) = %v, want %v", c.first, c.inc, c.shift, got, c.want)
		}
	}
	// Over a minute and one interval, (T-75s, T], the samples span 60 s.
	for _, c := range []struct {
		first, inc float64
		shift      int64
		want       float64
	}{
		{1000, 400, 0, 5.0 / 4},
		{1000, 400, 7, 5.0 / 4},
		{20, 400, 0, (60 + 3) / 60.0}, // it would reach zero 3 s before the first sample
	} {
		if got := extrapolation(c.first, c.inc, c.shift, 60); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("extrapolation over 60 s (%v, %v, %v) = %v, want %v", c.first, c.inc, c.shift, got, c.want)
		}
	}
}

// With offsets, pods are scraped at different points of the interval, each
// always at the same one; without, all on the whole minute.
func TestScrapeShift(t *testing.T) {
	seen := map[int64]bool{}
	for pod := 0; pod < 20; pod++ {
		for _, fleet := range sim.Fleets {
			s := scrapeShift(true, 7, fleet, pod)
			if s < 0 || s > 14 || s != scrapeShift(true, 7, fleet, pod) || scrapeShift(false, 7, fleet, pod) != 0 {
				t.Fatalf("%s-%d: shift %d", fleet, pod, s)
			}
			seen[s] = true
		}
	}
	if len(seen) < 8 {
		t.Errorf("40 pods share %d shifts", len(seen))
	}
}

func TestDelaysAndOracle(t *testing.T) {
	d := delays{3, 5, 0, 4}
	if m := d.median(); m != 4.5 {
		t.Errorf("median %v, want 4.5 (none counts as later than any)", m)
	}
	if d.missed() != 1 || d.max() != -1 {
		t.Errorf("missed %d max %d", d.missed(), d.max())
	}
	if m := (delays{0, 0, 3}).median(); !math.IsNaN(m) {
		t.Errorf("mostly none: median %v, want NaN", m)
	}
	// 1,000 canary observations a minute, 1% beyond the p99: z stays 0.
	n := []float64{1000, 1000, 1000, 1000}
	if z := oracleZ(n, []float64{10, 10, 10, 10}); z[3] != 0 {
		t.Errorf("z at the null %v", z)
	}
	// Twice as many: z = 10 k / sqrt(9.9 k) grows like sqrt(minutes).
	z := oracleZ(n, []float64{20, 20, 20, 20})
	if math.Abs(z[0]-10/math.Sqrt(9.9)) > 1e-12 || math.Abs(z[3]/z[0]-2) > 1e-12 {
		t.Errorf("z %v", z)
	}
	if got := oracleDelay(n, []float64{20, 20, 20, 20}, 5); got != 3 {
		t.Errorf("oracle fires at minute %d, want 3 (z %v)", got, z)
	}
	// The two-sample oracle: a canary holding its share of the tail stays
	// at 0 whatever the share; one holding twice its share grows like
	// sqrt(minutes), more slowly than the oracle that knows the 1%.
	cn, bn := []float64{1000, 1000, 1000, 1000}, []float64{3000, 3000, 3000, 3000}
	if z := twoSampleZ(cn, []float64{10, 10, 10, 10}, bn, []float64{30, 30, 30, 30}); z[3] != 0 {
		t.Errorf("two-sample z at the null %v", z)
	}
	two := twoSampleZ(cn, []float64{20, 20, 20, 20}, bn, []float64{30, 30, 30, 30})
	// K = 50, f = 1/4: (20 - 12.5) / sqrt(50 x 3/16) a minute.
	if want := 7.5 / math.Sqrt(50*3.0/16); math.Abs(two[0]-want) > 1e-12 || math.Abs(two[3]/two[0]-2) > 1e-12 || two[0] >= z[0] {
		t.Errorf("two-sample z %v, want %v growing like sqrt(minutes), below the oracle's %v", two, want, z[0])
	}
	if z := twoSampleZ([]float64{0}, []float64{0}, []float64{0}, []float64{0}); !math.IsInf(z[0], -1) {
		t.Errorf("two-sample z without observations %v, want -Inf", z)
	}
	if s := deployStarts(59, 59+60+60, 60); len(s) != 3 || s[0] != 59 || s[2] != 119 {
		t.Errorf("deployStarts %v", s)
	}
	for _, c := range []struct {
		rollback, promote int
		shipped           bool
	}{{0, 0, false}, {5, 0, false}, {0, 30, true}, {40, 30, true}, {5, 30, false}} {
		if got := promotedFirst(c.rollback, c.promote); got != c.shipped {
			t.Errorf("promotedFirst(rollback %d, promote %d) = %v, want %v", c.rollback, c.promote, got, c.shipped)
		}
	}
}

// The in-process path agrees with itself across kinds on what it counts, and
// its oracle sees the regression: a quick look without Prometheus, with every
// pod scraped on the whole minute and with pods at their own offsets, reading
// whole minutes and one-minute increases (--covered-minutes).
func TestSimulateFleets(t *testing.T) {
	for _, tt := range []struct{ offsets, covered bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		offsets, covered := tt.offsets, tt.covered
		t.Run(fmt.Sprintf("offsets=%v covered=%v", offsets, covered), func(t *testing.T) {
			start := benchEnd.Add(-40 * time.Minute)
			c := simConfig(cellKey{sim.ShapeLognormal, 500, 0.2}, start)
			c.Scenario, c.RegressionFactor, c.RegressionStartMinute = sim.ScenarioRegression, 1.5, 20
			d, err := simulateFleets(simSpec{Sim: c, Minutes: 40, Restarts: restartsFor(start, 200)[:0], Offsets: offsets, Covered: covered}, verdict.Default())
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Times) != 40 || len(d.Kinds[kindClassic]) != 40 {
				t.Fatalf("%d minutes", len(d.Times))
			}
			var before, after float64
			for i := range d.Times {
				frac := d.CanaryK[i] / d.CanaryN[i]
				if i < 20 {
					before += frac / 20
				} else {
					after += frac / 20
				}
				// Every kind counts the same observations (x 1: increase()
				// extrapolates a minute's intervals by 5/4 over a minute and
				// one scrape interval, and the minute's histogram is that
				// times 60/75, at any offset, but for the data's first
				// minute; x 4/3 over one-minute increases), and the evidence
				// counts exactly what was observed.
				extrapolated := 1.0
				if covered {
					extrapolated = 4.0 / 3
				}
				n0, n3 := d.Kinds[kindNative0][i].Canary.Count, d.Kinds[kindNative3][i].Canary.Count
				if math.Abs(n0-n3) > 1e-9*n0 || i > 0 && math.Abs(n3-d.CanaryN[i]*extrapolated) > 1e-9*n3 {
					t.Errorf("minute %d: canary count %v (schema 0), %v (schema 3), %v observed", i, n0, n3, d.CanaryN[i])
				}
				if e := d.Kinds[kindNative3][i].Evidence.CanaryCount; i > 0 && math.Abs(e-d.CanaryN[i]) > 1e-9*e {
					t.Errorf("minute %d: the evidence counts %v canary observations, %v observed", i, e, d.CanaryN[i])
				}
				// The whole minute holds the covered three quarters and the
				// quarter before the first scrape; read whole, all of it.
				lo, hi := 1.0, 1.0
				if covered {
					lo, hi = 1.2, 1.47
				}
				if r := d.WholeN[i] / d.CanaryN[i]; i > 0 && (r < lo || r > hi) || d.WholeK[i] < d.CanaryK[i] {
					t.Errorf("minute %d: %v observations in the whole minute, %v covered (%v and %v beyond the p99)", i, d.WholeN[i], d.CanaryN[i], d.WholeK[i], d.CanaryK[i])
				}
			}
			if before > 0.02 || after < 0.05 {
				t.Errorf("canary share beyond the baseline's p99: %.4f before, %.4f after a x1.5 regression", before, after)
			}
		})
	}
}

// TestSimulateRepeatedRestarts: a pod that restarts twice loses what it
// counted after its last scrape at each restart, as pairwise-gen's pod does
// (restartsFor restarts each pod about every 20 hours, so a day's cell
// restarts some pods twice); before, the in-process path kept only the last.
func TestSimulateRepeatedRestarts(t *testing.T) {
	start := benchEnd.Add(-40 * time.Minute)
	c := simConfig(cellKey{sim.ShapeLognormal, 500, 0.2}, start)
	at := func(m int) sim.Restart {
		return sim.Restart{Fleet: sim.FleetCanary, Index: 0, Pod: sim.PodName("checkout", sim.FleetCanary, 0), Time: start.Add(time.Duration(m)*time.Minute + 7*time.Second)}
	}
	run := func(rs ...sim.Restart) []float64 {
		t.Helper()
		d, err := simulateFleets(simSpec{Sim: c, Minutes: 40, Restarts: rs}, verdict.Default())
		if err != nil {
			t.Fatal(err)
		}
		return d.CanaryN
	}
	none, first, second, both := run(), run(at(10)), run(at(25)), run(at(10), at(25))
	var lostFirst, lostSecond float64
	for i := range none {
		lostFirst += none[i] - first[i]
		lostSecond += none[i] - second[i]
		if want := none[i] - (none[i] - first[i]) - (none[i] - second[i]); both[i] != want {
			t.Errorf("minute %d: %v canary observations with both restarts, want %v (%v without one, %v with the first, %v with the second)", i, both[i], want, none[i], first[i], second[i])
		}
	}
	if lostFirst <= 0 || lostSecond <= 0 {
		t.Fatalf("the restarts lost %v and %v observations: the test does not see them", lostFirst, lostSecond)
	}
}

// TestInProcessMatchesPrometheus is the parity check of the judgement
// benchmark: the same simulation through pairwise-gen, the pinned Prometheus
// and engine.Analyze gives every minute the verdict and every window the
// decision that the in-process path gives, for every rule and histogram kind.
func TestInProcessMatchesPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus three times")
	}
	e, err := newEnv("", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	rows, err := parity(context.Background(), e, paritySpec(100))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != int(numKinds) {
		t.Fatalf("%d kinds compared", len(rows))
	}
	for _, r := range rows {
		t.Logf("%s: %d decisions (%d rollback), %d differ; max rel. diff p99 %.1e, tail counts %.1e", r.Kind, r.Decisions, r.Rollbacks, r.Mismatches, r.MaxRelDiffP99, r.MaxRelDiffCounts)
		if r.Mismatches > 0 {
			t.Errorf("%s: %d of %d verdicts or decisions differ; first: %s", r.Kind, r.Mismatches, r.Decisions, r.FirstMismatch)
		}
		if r.Rollbacks == 0 || r.Rollbacks == r.Decisions {
			t.Errorf("%s: %d rollbacks of %d decisions: the comparison does not cover both outcomes", r.Kind, r.Rollbacks, r.Decisions)
		}
		if r.MaxRelDiffP99 > 1e-9 || r.MaxRelDiffCounts > 1e-9 {
			t.Errorf("%s: figures differ beyond rounding: p99 %.1e, tail counts %.1e", r.Kind, r.MaxRelDiffP99, r.MaxRelDiffCounts)
		}
		if !strings.Contains(r.Cell, "restarts 2") {
			t.Errorf("cell %q: the parity cell must restart pods", r.Cell)
		}
	}
}

func TestSetShares(t *testing.T) {
	tests := []struct {
		name, text string
		want       []float64
		wantErr    bool
	}{
		{name: "three shares", text: "0.02, 0.1,0.33", want: []float64{0.02, 0.1, 0.33}},
		{name: "a percentage is not a share", text: "5", wantErr: true},
		{name: "zero", text: "0,0.1", wantErr: true},
		{name: "the whole traffic", text: "1", wantErr: true},
		{name: "not a number", text: "0.1,half", wantErr: true},
		{name: "empty item", text: "0.1,", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jp := quickJudge()
			err := jp.setShares(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if !slices.Equal(jp.Shares, quickJudge().Shares) {
					t.Fatalf("a refused --judge-shares changed the plan's shares to %v", jp.Shares)
				}
				return
			}
			if !slices.Equal(jp.Shares, tt.want) || !slices.Equal(jp.RegShares, tt.want) {
				t.Fatalf("shares %v, regression shares %v; want %v for both", jp.Shares, jp.RegShares, tt.want)
			}
		})
	}
}

func TestSetRPS(t *testing.T) {
	tests := []struct {
		name, text  string
		plan        judgePlan
		wantRPS     []float64
		wantMinutes []int
		wantErr     bool
	}{
		{name: "quick at two levels", text: "50,5000", plan: quickJudge(), wantRPS: []float64{50, 5000}, wantMinutes: []int{360, 360}},
		{name: "full keeps each level's length", text: "5000, 50", plan: fullJudge(), wantRPS: []float64{5000, 50}, wantMinutes: []int{360, 0}},
		{name: "a new level under full gets the whole day", text: "200", plan: fullJudge(), wantRPS: []float64{200}, wantMinutes: []int{0}},
		{name: "not a number", text: "50,fast", plan: quickJudge(), wantErr: true},
		{name: "zero", text: "0", plan: quickJudge(), wantErr: true},
		{name: "empty item", text: "50,", plan: quickJudge(), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jp := tt.plan
			err := jp.setRPS(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if !slices.Equal(jp.RPS, tt.wantRPS) || !slices.Equal(jp.RegRPS, tt.wantRPS) || !slices.Equal(jp.RegMinutes, tt.wantMinutes) {
				t.Fatalf("rps %v, regressions %v for %v minutes; want %v for %v", jp.RPS, jp.RegRPS, jp.RegMinutes, tt.wantRPS, tt.wantMinutes)
			}
		})
	}
}

// TestSimulateClassicLayout: simSpec.Classic gives the classic minutes
// another layout (client_golang's DefBuckets), which counts every
// observation as the native buckets do, and places the p99 otherwise than
// pairwise-gen's finer layout does.
func TestSimulateClassicLayout(t *testing.T) {
	start := benchEnd.Add(-5 * time.Minute)
	c := simConfig(cellKey{sim.ShapeLognormal, 500, 0.2}, start)
	def := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	var p99 [2][]float64
	for li, les := range [][]float64{nil, def} {
		d, err := simulateFleets(simSpec{Sim: c, Minutes: 5, Classic: les}, verdict.Default())
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(d.Times); i++ {
			cl, n3 := d.Kinds[kindClassic][i].Canary, d.Kinds[kindNative3][i].Canary
			if math.Abs(cl.Count-n3.Count) > 1e-9*n3.Count {
				t.Errorf("layout %d, minute %d: classic count %v, native %v", li, i, cl.Count, n3.Count)
			}
			p99[li] = append(p99[li], d.Kinds[kindClassic][i].Evidence.Votes[0].Threshold)
		}
	}
	if slices.Equal(p99[0], p99[1]) {
		t.Errorf("the classic p99 thresholds are the same in both layouts: %v", p99[0])
	}
}
