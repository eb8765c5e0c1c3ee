package sim

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func mustNew(t *testing.T, c Config) *Sim {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type obs struct {
	lat float64
	err bool
}

func collect(s *Sim, fleet string, pods []int, from, to time.Time) []obs {
	var out []obs
	for _, p := range pods {
		s.Observe(fleet, p, from, to, func(l float64, e bool) { out = append(out, obs{l, e}) })
	}
	return out
}

func lats(o []obs) []float64 {
	out := make([]float64, len(o))
	for i, x := range o {
		out[i] = x.lat
	}
	slices.Sort(out)
	return out
}

func allPods(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig(t0)
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"every scenario", func(c *Config) { c.Scenario = ScenarioTrafficMix }, ""},
		{"unknown scenario", func(c *Config) { c.Scenario = "nope" }, "unknown scenario"},
		{"no start", func(c *Config) { c.Start = time.Time{} }, "start"},
		{"no pods", func(c *Config) { c.PodsPerFleet = 0 }, "pods"},
		{"share 0", func(c *Config) { c.CanaryShare = 0 }, "canary share"},
		{"share 1", func(c *Config) { c.CanaryShare = 1 }, "canary share"},
		{"rps", func(c *Config) { c.TotalRPS = 0 }, "total rps"},
		{"bad pod out of range", func(c *Config) { c.BadPod = 10 }, "bad pod"},
		{"error ratio", func(c *Config) { c.ErrorRatio = 2 }, "error ratio"},
		{"stalls", func(c *Config) { c.StallEveryMinutes, c.StallSeconds = 10, 0.5 }, ""},
		{"stall interval", func(c *Config) { c.StallEveryMinutes = -1 }, "stall interval"},
		{"stall too long", func(c *Config) { c.StallSeconds = 2 }, "stall must last"},
		{"ramp", func(c *Config) { c.CanaryShare, c.RampStep, c.RampEveryMinutes = 0.5, 0.05, 1 }, ""},
		{"ramp step above the share", func(c *Config) { c.RampStep, c.RampEveryMinutes = 0.1, 1 }, "ramp step"},
		{"ramp without interval", func(c *Config) { c.RampStep = 0.01 }, "ramp interval"},
		{"negative ramp period", func(c *Config) { c.RampPeriodMinutes = -1 }, "ramp period"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestValidateRefusesNonFinite: every float of the configuration, set to
// +Inf, -Inf or NaN, is refused as not finite (an infinite median latency
// passed and gave infinite sums; an infinite regression factor, a truth
// file JSON cannot hold).
func TestValidateRefusesNonFinite(t *testing.T) {
	typ := reflect.TypeFor[Config]()
	n := 0
	for i := range typ.NumField() {
		if typ.Field(i).Type.Kind() != reflect.Float64 {
			continue
		}
		n++
		for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
			c := DefaultConfig(t0)
			reflect.ValueOf(&c).Elem().Field(i).SetFloat(v)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "must be a finite number, got "+strconv.FormatFloat(v, 'g', -1, 64)) {
				t.Errorf("%s = %v: error %v", typ.Field(i).Name, v, err)
			}
		}
	}
	if n < 30 {
		t.Errorf("%d float fields", n)
	}
}

func TestDeterminism(t *testing.T) {
	c := DefaultConfig(t0)
	c.Scenario = ScenarioRegression
	a, b := mustNew(t, c), mustNew(t, c)
	from, to := t0.Add(5*time.Minute), t0.Add(7*time.Minute)
	whole := collect(a, FleetCanary, []int{3}, from, to)
	if len(whole) == 0 {
		t.Fatal("no observations")
	}
	// Same interval, other instance, split differently and in reverse order.
	var parts [][]obs
	for cut := to; cut.After(from); cut = cut.Add(-15 * time.Second) {
		parts = append(parts, collect(b, FleetCanary, []int{3}, cut.Add(-15*time.Second), cut))
	}
	var joined []obs
	for i := len(parts) - 1; i >= 0; i-- {
		joined = append(joined, parts[i]...)
	}
	if !slices.Equal(whole, joined) {
		t.Fatalf("split observation differs: %d vs %d observations", len(whole), len(joined))
	}
	// Sub-second parts of from/to are truncated.
	frac := collect(a, FleetCanary, []int{3}, from.Add(300*time.Millisecond), to.Add(900*time.Millisecond))
	if !slices.Equal(whole, frac) {
		t.Fatal("sub-second bounds changed the observations")
	}
	// Another seed, pod or fleet gives other observations.
	c2 := c
	c2.Seed = 2
	for name, other := range map[string][]obs{
		"seed":  collect(mustNew(t, c2), FleetCanary, []int{3}, from, to),
		"pod":   collect(a, FleetCanary, []int{4}, from, to),
		"fleet": collect(a, FleetBaseline, []int{3}, from, to),
	} {
		if slices.Equal(whole, other) {
			t.Errorf("changing the %s did not change the observations", name)
		}
	}
}

func TestCanaryShare(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		share    float64
		want     float64
	}{
		{ScenarioClean, 0.05, 0.05},
		{ScenarioClean, 0.2, 0.2},
		{ScenarioTrafficMix, 0.05, 0.06 / 1.01},
	} {
		c := DefaultConfig(t0)
		c.Scenario, c.CanaryShare = tc.scenario, tc.share
		s := mustNew(t, c)
		from, to := t0, t0.Add(20*time.Minute)
		nb := len(collect(s, FleetBaseline, allPods(10), from, to))
		nc := len(collect(s, FleetCanary, allPods(10), from, to))
		got := float64(nc) / float64(nb+nc)
		if math.Abs(got-tc.want)/tc.want > 0.03 {
			t.Errorf("%s share %v: canary got %.4f of the traffic, want %.4f", tc.scenario, tc.share, got, tc.want)
		}
		// Total rate close to TotalRPS x diurnal x bursts; at least sane.
		rps := float64(nb+nc) / to.Sub(from).Seconds()
		if rps < 0.5*c.TotalRPS || rps > 3.5*c.TotalRPS {
			t.Errorf("rps %v far from %v", rps, c.TotalRPS)
		}
	}
}

func TestErrorsAndLatencyShape(t *testing.T) {
	c := DefaultConfig(t0)
	s := mustNew(t, c)
	o := collect(s, FleetBaseline, allPods(10), t0, t0.Add(10*time.Minute))
	errs := 0
	for _, x := range o {
		if x.err {
			errs++
		}
	}
	ratio := float64(errs) / float64(len(o))
	if math.Abs(ratio-c.ErrorRatio) > 0.001 {
		t.Errorf("error ratio %v, want about %v", ratio, c.ErrorRatio)
	}
	l := lats(o)
	p50, p99 := Quantile(l, 0.5), Quantile(l, 0.99)
	if p50 < 0.010 || p50 > 0.016 {
		t.Errorf("p50 %v, want about 12-14 ms", p50)
	}
	if p99 < 3*p50 {
		t.Errorf("p99 %v should be a heavy tail over p50 %v", p99, p50)
	}
}

// p99 of a fleet over [from, to).
func p99(s *Sim, fleet string, from, to time.Time) float64 {
	return Quantile(lats(collect(s, fleet, allPods(s.Config().PodsPerFleet), from, to)), 0.99)
}

func TestScenarioEffects(t *testing.T) {
	const window = 10 * time.Minute
	ratio := func(s *Sim, from time.Time) float64 {
		return p99(s, FleetCanary, from, from.Add(window)) / p99(s, FleetBaseline, from, from.Add(window))
	}
	cfg := func(scenario string, mod func(*Config)) *Sim {
		c := DefaultConfig(t0)
		c.Scenario = scenario
		c.CanaryShare = 0.3 // enough canary samples for a tight p99
		c.BurstProbability = 0
		if mod != nil {
			mod(&c)
		}
		return mustNew(t, c)
	}
	early, late := t0, t0.Add(40*time.Minute)
	cases := []struct {
		name    string
		sim     *Sim
		at      time.Time
		lo, hi  float64
		comment string
	}{
		{"clean early", cfg(ScenarioClean, nil), early, 0.9, 1.1, "identical fleets"},
		{"clean late", cfg(ScenarioClean, nil), late, 0.9, 1.1, "identical fleets"},
		{"regression before M", cfg(ScenarioRegression, nil), t0.Add(15 * time.Minute), 0.9, 1.1, "not before minute 30"},
		{"regression after M", cfg(ScenarioRegression, nil), late, 1.1, 1.3, "x1.20"},
		{"regression x1.5", cfg(ScenarioRegression, func(c *Config) { c.RegressionFactor = 1.5 }), late, 1.35, 1.65, "x1.5"},
		{"cold-start early", cfg(ScenarioColdStart, func(c *Config) { c.ColdStartMinutes = 20 }), early, 1.8, 3.2, "slow at first"},
		{"cold-start late", cfg(ScenarioColdStart, func(c *Config) { c.ColdStartMinutes = 20 }), late, 0.9, 1.1, "warm later"},
		{"bad-pod", cfg(ScenarioBadPod, nil), late, 1.2, 3.5, "one of ten pods 3x slower"},
		{"traffic-mix", cfg(ScenarioTrafficMix, nil), late, 0.5, 0.95, "cheaper mix looks faster"},
		{"gc-burst without bursts", cfg(ScenarioGCBurst, nil), late, 0.9, 1.1, "no bursts, no spikes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ratio(tc.sim, tc.at)
			if r < tc.lo || r > tc.hi {
				t.Errorf("canary/baseline p99 = %.3f, want in [%v, %v] (%s)", r, tc.lo, tc.hi, tc.comment)
			}
		})
	}
}

func TestRegressionStartsExactlyAtM(t *testing.T) {
	c := DefaultConfig(t0)
	c.Scenario = ScenarioRegression
	c.RegressionFactor = 2
	s := mustNew(t, c)
	c.Scenario = ScenarioClean
	clean := mustNew(t, c)
	m := t0.Add(time.Duration(c.RegressionStartMinute) * time.Minute)
	// Same seed: same arrivals and draws, only the factor differs.
	before := lats(collect(s, FleetCanary, allPods(10), m.Add(-time.Minute), m))
	cleanBefore := lats(collect(clean, FleetCanary, allPods(10), m.Add(-time.Minute), m))
	if !slices.Equal(before, cleanBefore) {
		t.Error("regression changed observations before its start minute")
	}
	after := lats(collect(s, FleetCanary, allPods(10), m, m.Add(time.Minute)))
	cleanAfter := lats(collect(clean, FleetCanary, allPods(10), m, m.Add(time.Minute)))
	if len(after) != len(cleanAfter) || len(after) == 0 {
		t.Fatalf("counts differ: %d vs %d", len(after), len(cleanAfter))
	}
	for i := range after {
		if math.Abs(after[i]/cleanAfter[i]-2) > 1e-9 {
			t.Fatalf("observation %d: %v vs clean %v, want exactly x2", i, after[i], cleanAfter[i])
		}
	}
}

func TestGCBurstSpikesDuringBursts(t *testing.T) {
	c := DefaultConfig(t0)
	c.Scenario = ScenarioGCBurst
	c.CanaryShare = 0.3
	s := mustNew(t, c)
	bursts := s.Bursts(t0, t0.Add(6*time.Hour))
	if len(bursts) == 0 {
		t.Fatal("no bursts in 6 hours")
	}
	b := bursts[0]
	in := p99(s, FleetCanary, b.Start.Add(time.Minute), b.End.Add(-time.Minute))
	base := p99(s, FleetBaseline, b.Start.Add(time.Minute), b.End.Add(-time.Minute))
	if in/base < 1.5 {
		t.Errorf("during burst canary p99 %v vs baseline %v: want a spike", in, base)
	}
}

func TestBursts(t *testing.T) {
	c := DefaultConfig(t0)
	s := mustNew(t, c)
	day := s.Bursts(t0, t0.Add(24*time.Hour))
	// 48 slots at probability 0.5.
	if len(day) < 12 || len(day) > 36 {
		t.Fatalf("%d bursts in a day, want about 24", len(day))
	}
	for _, b := range day {
		d := b.End.Sub(b.Start)
		if d < 3*time.Minute || d > 6*time.Minute || b.Peak < 2 || b.Peak > 3 {
			t.Errorf("burst %+v out of shape", b)
		}
		mid := b.Start.Add(d / 2)
		r, r0 := s.Rate(FleetBaseline, mid), s.Rate(FleetBaseline, b.Start.Add(-time.Second))
		if r/r0 < 1.8 {
			t.Errorf("burst at %v: rate %v vs %v before", mid, r, r0)
		}
	}
	// Observed traffic rises in a burst.
	b := day[0]
	n := func(from time.Time) int {
		return len(collect(s, FleetBaseline, allPods(10), from, from.Add(time.Minute)))
	}
	if in, out := n(b.Start.Add(90*time.Second)), n(b.Start.Add(-2*time.Minute)); float64(in) < 1.6*float64(out) {
		t.Errorf("burst minute has %d requests vs %d before", in, out)
	}
}

func TestQuantile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	cases := []struct {
		in   []float64
		q    float64
		want float64
	}{
		{hundred, 0.99, 99},
		{hundred, 0.5, 50},
		{hundred, 0.999, 100},
		{hundred, 0, 1},
		{hundred, 1, 100},
		{[]float64{7}, 0.9999, 7},
		{[]float64{1, 2, 3}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.51, 3},
	}
	for _, tc := range cases {
		if got := Quantile(tc.in, tc.q); got != tc.want {
			t.Errorf("Quantile(n=%d, %v) = %v, want %v", len(tc.in), tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("empty: want NaN")
	}
}

func TestPoissonMean(t *testing.T) {
	c := DefaultConfig(t0)
	c.PodsPerFleet = 1
	c.BurstProbability = 0
	c.DiurnalAmplitude = 0
	c.TotalRPS = 1000 // 950/s on the baseline pod: the PTRS branch
	s := mustNew(t, c)
	n := len(collect(s, FleetBaseline, []int{0}, t0, t0.Add(time.Minute)))
	if math.Abs(float64(n)-950*60)/(950*60) > 0.01 {
		t.Errorf("%d requests in a minute at 950/s", n)
	}
	c.TotalRPS = 10 // 0.5/s on the canary pod: the small-lambda branch
	s = mustNew(t, c)
	n = len(collect(s, FleetCanary, []int{0}, t0, t0.Add(time.Hour)))
	if math.Abs(float64(n)-1800)/1800 > 0.08 {
		t.Errorf("%d requests in an hour at 0.5/s", n)
	}
}

func BenchmarkObserveSecond(b *testing.B) {
	s, _ := New(DefaultConfig(t0))
	n := 0
	for i := 0; i < b.N; i++ {
		s.ObserveSecond(FleetBaseline, i%10, t0.Unix()+int64(i), func(float64, bool) { n++ })
	}
	b.ReportMetric(float64(n)/float64(b.N), "obs/op")
}

// TestStalls: a stalled pod-second delays the requests that arrive during
// the pause until its end, about 1 pod-second in 60 StallEveryMinutes
// stalls, and every other second is what it is without stalls.
func TestStalls(t *testing.T) {
	c := DefaultConfig(t0)
	c.PodsPerFleet = 4
	plain := mustNew(t, c)
	c.StallEveryMinutes, c.StallSeconds = 1, 1
	stalls := mustNew(t, c)
	tick := func(s *Sim, fleet string, pod int, sec int64) []float64 {
		var out []float64
		s.ObserveSecond(fleet, pod, sec, func(l float64, _ bool) { out = append(out, l) })
		return out
	}
	mean := func(x []float64) float64 {
		var sum float64
		for _, v := range x {
			sum += v
		}
		return sum / float64(len(x))
	}
	var ticks, stalled int
	var extra, n float64
	for _, fleet := range []string{FleetBaseline, FleetCanary} {
		for pod := range c.PodsPerFleet {
			for sec := t0.Unix(); sec < t0.Unix()+3600; sec++ {
				ticks++
				a, b := tick(plain, fleet, pod, sec), tick(stalls, fleet, pod, sec)
				if len(a) != len(b) {
					t.Fatalf("%s pod %d second %d: %d requests with stalls, %d without", fleet, pod, sec, len(b), len(a))
				}
				if !stalls.stalled(fleetIndex(fleet), pod, sec) {
					if !slices.Equal(a, b) {
						t.Fatalf("%s pod %d second %d is not stalled but differs", fleet, pod, sec)
					}
					continue
				}
				stalled++
				if len(a) > 0 {
					extra += (mean(b) - mean(a)) * float64(len(a))
					n += float64(len(a))
				}
			}
		}
	}
	// Binomial(28800, 1/60): 480 expected, sd 22.
	if stalled < 400 || stalled > 560 {
		t.Errorf("%d of %d pod-seconds stalled, want about %d", stalled, ticks, ticks/60)
	}
	// A 1 s pause delays a request arriving at a uniform time by 0.5 s on average.
	if got := extra / n; got < 0.45 || got > 0.55 {
		t.Errorf("stalled requests %.3f s slower on average, want about 0.5", got)
	}
}

// TestSlowEpisodes: with slow episodes, each pod of either fleet is
// EpisodeFactor times slower for whole slots of EpisodeSeconds, about once
// every EpisodeEveryMinutes, serving as many requests; outside them it is
// as without.
func TestSlowEpisodes(t *testing.T) {
	c := DefaultConfig(t0)
	c.PodsPerFleet = 4
	plain := mustNew(t, c)
	c.EpisodeEveryMinutes, c.EpisodeSeconds, c.EpisodeFactor = 10, 60, 1.5
	slowed := mustNew(t, c)
	slots, slow := 0, map[string]int{}
	for _, fleet := range []string{FleetBaseline, FleetCanary} {
		for pod := range c.PodsPerFleet {
			for slot := range int64(24 * 60) {
				slots++
				var ratios []float64
				for sec := t0.Unix() + 60*slot; sec < t0.Unix()+60*slot+60; sec++ {
					var a, b []float64
					plain.ObserveSecond(fleet, pod, sec, func(l float64, _ bool) { a = append(a, l) })
					slowed.ObserveSecond(fleet, pod, sec, func(l float64, _ bool) { b = append(b, l) })
					if len(a) != len(b) {
						t.Fatalf("%s pod %d second %d: %d requests with episodes, %d without", fleet, pod, sec, len(b), len(a))
					}
					for i := range a {
						ratios = append(ratios, b[i]/a[i])
					}
				}
				if len(ratios) == 0 {
					continue
				}
				r := ratios[0]
				for _, x := range ratios {
					if math.Abs(x-r) > 1e-9 {
						t.Fatalf("%s pod %d slot %d: a slot is slowed whole or not at all, got ratios %v and %v", fleet, pod, slot, r, x)
					}
				}
				switch {
				case math.Abs(r-1.5) < 1e-9:
					slow[fleet]++
				case math.Abs(r-1) > 1e-9:
					t.Fatalf("%s pod %d slot %d: %vx slower, want 1 or 1.5", fleet, pod, slot, r)
				}
			}
		}
	}
	// Binomial(4 pods x 1440 slots, 1/10) per fleet: 576 expected, sd 23.
	for _, fleet := range []string{FleetBaseline, FleetCanary} {
		if n := slow[fleet]; n < 480 || n > 672 {
			t.Errorf("%s: %d of %d pod-minutes slowed, want about %d", fleet, n, slots/2, slots/20)
		}
	}
}

// TestRampedShare: a canary whose weight is raised step by step serves its
// step's share in each minute, and CanaryShare once the ramp is over.
func TestRampedShare(t *testing.T) {
	c := DefaultConfig(t0)
	c.CanaryShare, c.RampStep, c.RampEveryMinutes = 0.5, 0.1, 2
	s := mustNew(t, c)
	for _, tc := range []struct {
		minute int
		want   float64
	}{{0, 0.1}, {1, 0.1}, {2, 0.2}, {5, 0.3}, {8, 0.5}, {30, 0.5}} {
		from := t0.Add(time.Duration(tc.minute) * time.Minute)
		nb := len(collect(s, FleetBaseline, allPods(10), from, from.Add(time.Minute)))
		nc := len(collect(s, FleetCanary, allPods(10), from, from.Add(time.Minute)))
		if got := float64(nc) / float64(nb+nc); math.Abs(got-tc.want)/tc.want > 0.05 {
			t.Errorf("minute %d: canary served %.3f of the traffic, want %.2f", tc.minute, got, tc.want)
		}
	}
}

// TestRampedShareStartsOver: with a ramp period the weight falls back to
// the first step at every period's start, as each new deployment's would.
func TestRampedShareStartsOver(t *testing.T) {
	c := DefaultConfig(t0)
	c.CanaryShare, c.RampStep, c.RampEveryMinutes, c.RampPeriodMinutes = 0.5, 0.1, 2, 30
	s := mustNew(t, c)
	for _, tc := range []struct {
		minute int
		want   float64
	}{{0, 0.1}, {29, 0.5}, {30, 0.1}, {33, 0.2}, {61, 0.1}, {-1, 0.5}, {-30, 0.1}} {
		if got := s.canaryShare(float64(t0.Add(time.Duration(tc.minute)*time.Minute).Unix()) + 30); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("minute %d: canary weight %.3f, want %.2f", tc.minute, got, tc.want)
		}
	}
}
