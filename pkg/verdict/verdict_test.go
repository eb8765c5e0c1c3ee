package verdict

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

func fleet(value, tail float64) FleetStats {
	return FleetStats{Present: true, Count: 1000, RPS: 1000.0 / 60, Value: value, Tail: tail}
}

// div divides at run time, as Judge does; constant division is exact.
func div(a, b float64) float64 { return a / b }

func TestJudge(t *testing.T) {
	c := Default()
	tests := []struct {
		name      string
		baseline  FleetStats
		canary    FleetStats
		want      Verdict
		wantRatio float64 // NaN for none
		reason    string
	}{
		{name: "ratio exactly 0.95 is good", baseline: fleet(1, 20), canary: fleet(0.95, 20), want: Good, wantRatio: 0.95},
		{name: "ratio just above 0.95 is neutral", baseline: fleet(1, 20), canary: fleet(0.9500001, 20), want: Neutral, wantRatio: 0.9500001},
		{name: "seed minute 2: 12.80/13.40 is neutral, not good", baseline: fleet(0.01340, 20), canary: fleet(0.01280, 20), want: Neutral, wantRatio: div(0.0128, 0.0134)},
		{name: "ratio exactly 1.10 is bad", baseline: fleet(1, 20), canary: fleet(1.1, 20), want: Bad, wantRatio: 1.1},
		{name: "ratio just below 1.10 is neutral", baseline: fleet(1, 20), canary: fleet(1.0999999, 20), want: Neutral, wantRatio: 1.0999999},
		{name: "seed minute 0 is bad", baseline: fleet(0.0142, 20), canary: fleet(0.0184, 20), want: Bad, wantRatio: div(0.0184, 0.0142)},
		{name: "canary missing", baseline: fleet(1, 20), canary: FleetStats{}, want: NoData, wantRatio: math.NaN(), reason: "canary fleet has no data"},
		{name: "baseline missing", baseline: FleetStats{}, canary: fleet(1, 20), want: NoData, wantRatio: math.NaN(), reason: "baseline fleet has no data"},
		{name: "both missing", want: NoData, wantRatio: math.NaN(), reason: "neither"},
		{name: "present with zero count", baseline: FleetStats{Present: true}, canary: fleet(1, 20), want: NoData, wantRatio: math.NaN()},
		{name: "NaN quantile", baseline: fleet(math.NaN(), 20), canary: fleet(1, 20), want: NoData, wantRatio: math.NaN(), reason: "not defined"},
		{name: "canary tail of 9 is insufficient", baseline: fleet(1, 20), canary: fleet(2, 9), want: Insufficient, wantRatio: 2, reason: "canary fleet has 9 observations"},
		{name: "baseline tail short", baseline: fleet(1, 3), canary: fleet(2, 90), want: Insufficient, wantRatio: 2, reason: "baseline fleet has 3"},
		{name: "tail of exactly 10 is enough", baseline: fleet(1, 10), canary: fleet(2, 10), want: Bad, wantRatio: 2},
		// 1,000 observations have 10 beyond the p99, which float arithmetic
		// may put an ulp below 10 (TailNeeded).
		{name: "tail an ulp below 10 is enough", baseline: fleet(1, 20), canary: fleet(2, math.Nextafter(10, 0)), want: Bad, wantRatio: 2},
		{name: "tail of 9.99 is insufficient", baseline: fleet(1, 20), canary: fleet(2, 9.99), want: Insufficient, wantRatio: 2, reason: "canary fleet has 9 observations"},
		{name: "both zero is neutral", baseline: fleet(0, 20), canary: fleet(0, 20), want: Neutral, wantRatio: 1},
		{name: "zero baseline, slow canary is bad", baseline: fleet(0, 20), canary: fleet(0.1, 20), want: Bad, wantRatio: math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ratio, reason := Judge(c, tt.baseline, tt.canary)
			if got != tt.want {
				t.Errorf("verdict = %s, want %s (reason %q)", got, tt.want, reason)
			}
			if !(ratio == tt.wantRatio || math.IsNaN(ratio) && math.IsNaN(tt.wantRatio)) {
				t.Errorf("ratio = %v, want %v", ratio, tt.wantRatio)
			}
			if reason == "" || !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", reason, tt.reason)
			}
		})
	}
}

// window builds minutes whose verdicts follow the given ratios; 0 means the
// canary has no data that minute.
func window(start time.Time, ratios ...float64) []Minute {
	ms := make([]Minute, len(ratios))
	for i, r := range ratios {
		ms[i] = Minute{Time: start.Add(time.Duration(i+1) * time.Minute), Baseline: fleet(1, 20), Canary: fleet(r, 20)}
		if r == 0 {
			ms[i].Canary = FleetStats{}
		}
	}
	return ms
}

func repeat(r float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = r
	}
	return out
}

func TestDecide(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := Default()
	c.Rule = RuleReference
	tests := []struct {
		name   string
		ratios []float64
		want   Decision
		counts Counts
	}{
		{name: "exactly 5 bad rolls back", ratios: append(repeat(1.10, 5), repeat(0.9, 55)...), want: Rollback, counts: Counts{Good: 55, Bad: 5}},
		{name: "4 bad and 56 good promotes", ratios: append(repeat(1.5, 4), repeat(0.9, 56)...), want: Promote, counts: Counts{Good: 56, Bad: 4}},
		{name: "exactly 45 good promotes", ratios: append(repeat(0.95, 45), repeat(1, 15)...), want: Promote, counts: Counts{Good: 45, Neutral: 15}},
		{name: "44 good holds", ratios: append(repeat(0.95, 44), repeat(1, 16)...), want: Hold, counts: Counts{Good: 44, Neutral: 16}},
		{name: "rollback is checked before promote", ratios: append(repeat(0.5, 50), repeat(2, 10)...), want: Rollback, counts: Counts{Good: 50, Bad: 10}},
		{name: "gaps are neither good nor bad", ratios: append(repeat(0, 20), repeat(0.9, 40)...), want: Hold, counts: Counts{Good: 40, NoData: 20}},
		{name: "empty window holds", ratios: nil, want: Hold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Decide(c, window(start, tt.ratios...), Options{})
			if w.Decision != tt.want || w.Counts != tt.counts {
				t.Fatalf("decision %s %+v, want %s %+v (%s)", w.Decision, w.Counts, tt.want, tt.counts, w.Reason)
			}
		})
	}
}

func TestDecideWorstMinute(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ms := window(start, 0.9, 1.3, 0, 1.2)
	ms[2].Canary = fleet(9, 1) // insufficient with a huge ratio: not the worst judged minute
	w := Decide(Default(), ms, Options{})
	if w.Worst != 1 {
		t.Fatalf("worst = %d, want 1", w.Worst)
	}
	if w := Decide(Default(), window(start, 0, 0), Options{}); w.Worst != -1 {
		t.Fatalf("worst of an empty window = %d, want -1", w.Worst)
	}
}

func TestDecideWarmup(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := Default()
	c.WarmupMinutes = 3
	// The canary starts serving at minute 1; minutes 1..3 are warm-up.
	ms := window(start, 0, 2, 2, 2, 2, 0.9)
	firstTraffic := ms[1].Time
	had := func(at time.Time) bool { return !at.Before(firstTraffic) }
	w := Decide(c, ms, Options{CanaryHadTrafficAt: had})
	wantWarm := []bool{true, true, true, true, false, false}
	for i, m := range w.Minutes {
		if m.Warmup != wantWarm[i] {
			t.Errorf("minute %d warmup = %v, want %v", i, m.Warmup, wantWarm[i])
		}
	}
	if w.Counts != (Counts{Good: 1, Bad: 1, Warmup: 4}) {
		t.Fatalf("counts %+v", w.Counts)
	}
	if !strings.HasPrefix(w.Minutes[1].Reason, "warm-up") || w.Minutes[1].Verdict != Bad {
		t.Fatalf("warm-up minute keeps its verdict and says why: %s %q", w.Minutes[1].Verdict, w.Minutes[1].Reason)
	}
}

func TestFlags(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ref := Default()
	ref.Rule = RuleReference
	w := Decide(ref, window(start, repeat(0.6, 50)...), Options{})
	if w.Decision != Hold || !contains(w.Flags, FlagSuspiciousWin) || !strings.Contains(w.Reason, "would promote") {
		t.Fatalf("a 0.6x win holds, flagged: %s %v: %s", w.Decision, w.Flags, w.Reason)
	}
	ms := window(start, repeat(1, 10)...)
	ms[4].Canary.Count = 5000 // the canary suddenly gets five times its share
	ms[7].Canary = FleetStats{}
	w = Decide(Default(), ms, Options{})
	if !contains(w.Flags, FlagTrafficParity) || !contains(w.Flags, FlagFleetMissing) || contains(w.Flags, FlagSuspiciousWin) {
		t.Fatalf("flags %v notes %v", w.Flags, w.Notes)
	}
	if len(w.Flags) != len(w.Notes) {
		t.Fatal("every flag has a note")
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func TestConfigValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"verdict quantile above 1", func(c *Config) { c.VerdictQuantile = 1.5 }, "verdictQuantile"},
		{"thresholds crossed", func(c *Config) { c.RollbackThreshold = 0.9 }, "rollbackThreshold"},
		{"good needed beyond the reference rule's window", func(c *Config) { c.Rule, c.GoodNeeded = RuleReference, 61 }, "goodNeeded"},
		{"an unknown rule", func(c *Config) { c.Rule = "majority" }, "rule"},
		{"a false-rollback budget of 0", func(c *Config) { c.FalseRollback = 0 }, "falseRollback"},
		{"zero bad limit", func(c *Config) { c.BadLimit = 0 }, "badLimit"},
		{"negative warm-up", func(c *Config) { c.WarmupMinutes = -1 }, "warmupMinutes"},
		{"no quantiles", func(c *Config) { c.Quantiles = nil }, "quantiles"},
		{"quantile 1", func(c *Config) { c.Quantiles = []float64{1} }, "quantiles"},
		// Each is a column per fleet, its name the quantile's label.
		{"a quantile listed twice", func(c *Config) { c.Quantiles = []float64{0.5, 0.99, 0.99} }, "p99 is listed twice"},
		{"more quantiles than shown", func(c *Config) {
			c.Quantiles = nil
			for i := range MaxQuantiles + 1 {
				c.Quantiles = append(c.Quantiles, 0.5+float64(i)/100)
			}
			c.VerdictQuantile = 0.5
		}, "at most 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.field)
			}
		})
	}
}

// A window that is itself out of range is reported alone: the numbers
// measured against it (warm-up, good needed, bad limit) are not also
// reported as out of a window that does not exist.
func TestConfigValidateInvalidWindowIsOneError(t *testing.T) {
	for _, w := range []int{0, -5, 100000} {
		c := Default()
		c.WindowMinutes = w
		err := c.Validate()
		if err == nil {
			t.Fatalf("window %d: Validate() = nil", w)
		}
		if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "windowMinutes:") {
			t.Errorf("window %d: Validate() = %q, want one line about windowMinutes", w, err)
		}
	}
}

func TestQuantileLabel(t *testing.T) {
	for q, want := range map[float64]string{0.5: "p50", 0.9: "p90", 0.99: "p99", 0.999: "p99.9", 0.9999: "p99.99", 0.95: "p95", 0.05: "p5", 0.995: "p99.5"} {
		if got := QuantileLabel(q); got != want {
			t.Errorf("QuantileLabel(%v) = %s, want %s", q, got, want)
		}
	}
	if QuantileKey(0.999) != "0.999" {
		t.Error(QuantileKey(0.999))
	}
}

func TestCheckMeasurement(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	nan := math.NaN()
	tests := []struct {
		name       string
		lbBaseline []float64
		lbCanary   []float64
		want       bool
	}{
		{name: "load balancer agrees within 20%", lbBaseline: []float64{1.1, 1.2, 1.0}, lbCanary: []float64{1.15, 1.2, 1.0}, want: false},
		{name: "exactly 20% is not beyond", lbBaseline: []float64{1.2, 1.2, 1.2}, lbCanary: []float64{1.2, 1.2, 1.2}, want: false},
		{name: "canary queueing the application does not see", lbBaseline: []float64{1.05, 1.05, 1.05}, lbCanary: []float64{1.05, 1.6, 1.05}, want: true},
		{name: "no load-balancer data", lbBaseline: []float64{nan, nan, nan}, lbCanary: []float64{nan, nan, nan}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := window(start, 1, 1, 1)
			for i := range ms {
				ms[i].LB = &LoadBalancerQuantiles{Baseline: tt.lbBaseline[i], Canary: tt.lbCanary[i]}
			}
			w := Decide(Default(), ms, Options{})
			if got := contains(w.Flags, FlagMeasurementDivergence); got != tt.want {
				t.Fatalf("flagged = %v, want %v (%v)", got, tt.want, w.Notes)
			}
		})
	}
}

func TestJudgeSignificance(t *testing.T) {
	c := Default()
	c.Significance = 0.99 // one-sided z = 2.326
	noisy := func(value, logSE float64) FleetStats {
		s := fleet(value, 20)
		s.LogSE = logSE
		return s
	}
	tests := []struct {
		name     string
		baseline FleetStats
		canary   FleetStats
		gateOff  Verdict
		want     Verdict
	}{
		// ln 1.2 = 0.182; se = hypot(0.1, 0.1) = 0.141: z = 1.29, noise.
		{name: "1.2x within noise is neutral", baseline: noisy(1, 0.1), canary: noisy(1.2, 0.1), gateOff: Bad, want: Neutral},
		// se = hypot(0.03, 0.03) = 0.042: z = 4.3, a real regression.
		{name: "1.2x beyond noise is bad", baseline: noisy(1, 0.03), canary: noisy(1.2, 0.03), gateOff: Bad, want: Bad},
		{name: "0.8x within noise is neutral", baseline: noisy(1, 0.1), canary: noisy(0.8, 0.1), gateOff: Good, want: Neutral},
		{name: "0.8x beyond noise is good", baseline: noisy(1, 0.02), canary: noisy(0.8, 0.02), gateOff: Good, want: Good},
		{name: "unknown noise is not evidence", baseline: noisy(1, math.NaN()), canary: noisy(2, 0.01), gateOff: Bad, want: Neutral},
		{name: "no sampling noise at all", baseline: noisy(1, 0), canary: noisy(1.1, 0), gateOff: Bad, want: Bad},
		{name: "neutral stays neutral", baseline: noisy(1, 0.01), canary: noisy(1.05, 0.01), gateOff: Neutral, want: Neutral},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _, reason := Judge(Default(), tt.baseline, tt.canary); got != tt.gateOff {
				t.Fatalf("gate off: %s, want %s (%s)", got, tt.gateOff, reason)
			}
			got, _, reason := Judge(c, tt.baseline, tt.canary)
			if got != tt.want {
				t.Fatalf("gate at 0.99: %s, want %s (%s)", got, tt.want, reason)
			}
			if tt.want != tt.gateOff && !strings.Contains(reason, "within sampling noise") {
				t.Fatalf("reason %q does not say why", reason)
			}
		})
	}
}

func TestExpectedShare(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	// fleet() serves 1,000 requests a minute in each fleet: a 50% share.
	for _, tt := range []struct {
		name     string
		expected float64
		want     bool
	}{
		{"unknown share is not checked", 0, false},
		{"as configured", 0.5, false},
		{"within 10%", 0.46, false},
		{"canary gets more than it should", 0.4, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.ExpectedCanaryShare = tt.expected
			w := Decide(c, window(start, repeat(1, 10)...), Options{})
			if got := contains(w.Flags, FlagTrafficParity); got != tt.want {
				t.Fatalf("flagged %v, want %v: %v", got, tt.want, w.Notes)
			}
		})
	}
}

// TestNaNTailIsInsufficient: a fleet whose tail cannot be counted (one of
// its buckets' counts is NaN, as a pod exporting a NaN sample gives) makes
// the minute insufficient, naming that fleet, not a verdict on its ratio.
func TestNaNTailIsInsufficient(t *testing.T) {
	c := Default()
	c.Rule = RuleReference
	bounds := []float64{0.5, 1, 2, 4, math.Inf(1)}
	b, err := histogram.FromClassic(bounds, []float64{math.NaN(), 100, 109.5, 110, 110})
	if err != nil {
		t.Fatal(err)
	}
	// Enough canary observations beyond the p99 to judge, were the
	// baseline's countable, and a canary twice as slow.
	cn, err := histogram.FromClassic(bounds, []float64{0, 0, 0, 1000, 1100})
	if err != nil {
		t.Fatal(err)
	}
	bs, cs := Stats(c, b), Stats(c, cn)
	if !math.IsNaN(bs.Tail) || math.IsNaN(bs.Value) {
		t.Fatalf("the case needs a finite baseline p99 with a NaN tail: %v, %v", bs.Value, bs.Tail)
	}
	v, _, reason := Judge(c, bs, cs)
	if v != Insufficient || !strings.Contains(reason, "the baseline fleet's observations beyond its p99 cannot be counted") {
		t.Fatalf("%s: %s", v, reason)
	}
	if v, _, reason := Judge(c, cs, bs); v != Insufficient || !strings.Contains(reason, "the canary fleet's") {
		t.Fatalf("fleets swapped: %s: %s", v, reason)
	}
}

// The verdict quantile is always among the quantiles shown: every minute's
// figures, the panel's ratio chart and the judge's table read its column.
func TestOverridesShowTheVerdictQuantile(t *testing.T) {
	q := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		o    Overrides
		want []float64
	}{
		{"the default shows its own", Overrides{}, Default().Quantiles},
		{"a listed one is not repeated", Overrides{VerdictQuantile: q(0.999)}, Default().Quantiles},
		{"an unlisted one is inserted in order", Overrides{VerdictQuantile: q(0.97)}, []float64{0.5, 0.97, 0.99, 0.999, 0.9999}},
		{"and into a list of the query's", Overrides{Quantiles: []float64{0.5, 0.9}, VerdictQuantile: q(0.95)}, []float64{0.5, 0.9, 0.95}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.o.Apply(Default())
			if !slices.Equal(c.Quantiles, tt.want) {
				t.Errorf("Quantiles = %v, want %v", c.Quantiles, tt.want)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
	if d := Default().Quantiles; !slices.Equal(d, []float64{0.5, 0.99, 0.999, 0.9999}) {
		t.Errorf("Default().Quantiles = %v: Apply changed the default's slice", d)
	}
}
