package sim

import (
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

func shapeConfig(shape string) Config {
	c := DefaultConfig(t0)
	c.Shape = shape
	c.PodsPerFleet = 4
	c.TotalRPS = 2000
	c.CanaryShare = 0.5
	if shape != ShapeBimodal {
		c.CostlyShare = 0
	}
	return c
}

// The model's CDF is the distribution Observe draws from: at the model's
// quantiles, the share of observations at or below is q within 4 binomial
// standard errors.
func TestShapeCDFMatchesObservations(t *testing.T) {
	for _, shape := range Shapes {
		for _, load := range []float64{0, 0.5} {
			c := shapeConfig(shape)
			c.LoadLatency = load
			s := mustNew(t, c)
			from, to := t0, t0.Add(10*time.Minute)
			xs := lats(collect(s, FleetBaseline, allPods(c.PodsPerFleet), from, to))
			for _, q := range []float64{0.1, 0.5, 0.9, 0.99, 0.999} {
				x := s.FleetQuantile(FleetBaseline, from, to, q)
				below := float64(sort.SearchFloat64s(xs, x)) / float64(len(xs))
				se := math.Sqrt(q * (1 - q) / float64(len(xs)))
				if math.Abs(below-q) > 4*se {
					t.Errorf("%s load %v: %.4f of %d observations at or below the model's q%v = %.5gs, want %v +/- %.4f", shape, load, below, len(xs), q, x, q, 4*se)
				}
			}
		}
	}
}

func TestShapesDiffer(t *testing.T) {
	from, to := t0, t0.Add(time.Minute)
	ratio := map[string]float64{}
	for _, shape := range Shapes {
		s := mustNew(t, shapeConfig(shape))
		ratio[shape] = s.FleetQuantile(FleetBaseline, from, to, 0.999) / s.FleetQuantile(FleetBaseline, from, to, 0.99)
	}
	// A Pareto tail of index 3 puts p99.9 at 10^(1/3) = 2.15x the p99; a
	// log-normal of sd 0.5 at exp(0.5 (3.09 - 2.33)) = 1.46x.
	if r := ratio[ShapeHeavy]; math.Abs(r-2.15) > 0.05 {
		t.Errorf("heavy p99.9/p99 = %.3f, want about 2.15", r)
	}
	if r := ratio[ShapeLognormal]; math.Abs(r-1.46) > 0.02 {
		t.Errorf("lognormal p99.9/p99 = %.3f, want about 1.46", r)
	}
	if ratio[ShapeHeavy] <= ratio[ShapeLognormal] {
		t.Errorf("the heavy tail must be heavier than the log-normal: %v", ratio)
	}
}

// The tail scenario leaves the body alone and makes the share of requests
// beyond the baseline's p99 about 1.45% (about 1.4-1.5x).
func TestTailScenario(t *testing.T) {
	for _, shape := range Shapes {
		c := shapeConfig(shape)
		c.Scenario = ScenarioTail
		c.RegressionStartMinute = 1
		s := mustNew(t, c)
		from, to := t0.Add(time.Minute), t0.Add(11*time.Minute)
		sec := from.Unix()
		q99 := s.FleetQuantile(FleetBaseline, from, to, 0.99)
		tailB := 1 - s.CDF(FleetBaseline, 0, sec, q99)
		tailC := 1 - s.CDF(FleetCanary, 0, sec, q99)
		if r := tailC / tailB; r < 1.3 || r > 1.6 {
			t.Errorf("%s: canary/baseline share beyond the p99 = %.3f, want 1.3-1.6", shape, r)
		}
		if shape != ShapeBimodal {
			q90 := s.FleetQuantile(FleetBaseline, from, to, 0.90)
			if b, cc := s.CDF(FleetBaseline, 0, sec, q90), s.CDF(FleetCanary, 0, sec, q90); b != cc {
				t.Errorf("%s: the body moved: CDF at p90 %v vs %v", shape, b, cc)
			}
		}
		// Before the start minute the canary is the baseline.
		if b, cc := s.CDF(FleetBaseline, 0, t0.Unix(), q99), s.CDF(FleetCanary, 0, t0.Unix(), q99); b != cc {
			t.Errorf("%s: tail regression before its start minute", shape)
		}
		// Observations agree with the model.
		xs := lats(collect(s, FleetCanary, allPods(c.PodsPerFleet), from, to))
		above := 1 - float64(sort.SearchFloat64s(xs, q99))/float64(len(xs))
		if se := math.Sqrt(tailC / float64(len(xs))); math.Abs(above-tailC) > 4*se {
			t.Errorf("%s: %.4f of canary observations beyond the p99, model %.4f", shape, above, tailC)
		}
	}
}

// Load-coupled latency: both fleets slow down together in a burst.
func TestLoadLatency(t *testing.T) {
	c := shapeConfig(ShapeLognormal)
	c.LoadLatency = 0.5
	c.BurstProbability = 1
	s := mustNew(t, c)
	b := s.Bursts(t0, t0.Add(time.Hour))[0]
	peak := b.Start.Add(b.End.Sub(b.Start) / 2).Unix()
	calm := b.Start.Add(-2 * time.Minute).Unix()
	q := func(fleet string, sec int64) float64 {
		return s.FleetQuantile(fleet, time.Unix(sec, 0), time.Unix(sec+1, 0), 0.99)
	}
	rate := s.totalRate(float64(peak)+0.5) / s.totalRate(float64(calm)+0.5)
	if got, want := q(FleetBaseline, peak)/q(FleetBaseline, calm), math.Sqrt(rate); math.Abs(got/want-1) > 1e-9 {
		t.Errorf("p99 peak/calm = %v, want (rate ratio %v)^0.5 = %v", got, rate, want)
	}
	if q(FleetBaseline, peak) != q(FleetCanary, peak) {
		t.Error("identical fleets must slow down together")
	}
}

// The bimodal shape is the model as it was: Shape "" and "bimodal" draw the
// same observations.
func TestBimodalIsTheDefault(t *testing.T) {
	a := DefaultConfig(t0)
	b := a
	b.Shape = ""
	oa := collect(mustNew(t, a), FleetCanary, []int{0, 1}, t0, t0.Add(2*time.Minute))
	ob := collect(mustNew(t, b), FleetCanary, []int{0, 1}, t0, t0.Add(2*time.Minute))
	if len(oa) != len(ob) {
		t.Fatalf("%d vs %d observations", len(oa), len(ob))
	}
	for i := range oa {
		if oa[i] != ob[i] {
			t.Fatalf("observation %d differs", i)
		}
	}
}

func TestShapeValidation(t *testing.T) {
	c := DefaultConfig(t0)
	c.Shape = "weibull"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "unknown shape") {
		t.Errorf("unknown shape: %v", err)
	}
	c = DefaultConfig(t0)
	c.Shape, c.HeavyTailIndex = ShapeHeavy, 0
	if err := c.Validate(); err == nil {
		t.Error("heavy tail index 0 must be rejected")
	}
	c = DefaultConfig(t0)
	c.Scenario, c.TailPivot = ScenarioTail, 1
	if err := c.Validate(); err == nil {
		t.Error("tail pivot 1 must be rejected")
	}
}
