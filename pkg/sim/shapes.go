package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Latency shapes. A request's latency is MedianLatency x the tick's factor
// (scenario, load) x CostlyFactor for a costly request x a draw from the
// shape:
//
//   - ShapeBimodal (the default, and the only model before shapes existed):
//     a log-normal body (log-sd BodySigma) and, with probability SlowShare, a
//     slow path (median SlowFactor x, log-sd SlowSigma).
//   - ShapeLognormal: one log-normal, log-sd LognormalSigma (no slow path).
//   - ShapeHeavy: a log-logistic of shape HeavyTailIndex (median 1): its
//     survival falls like x^-HeavyTailIndex, a Pareto tail (index 3: the
//     p99.9 is 4.6x the p99).
//
// LoadLatency couples latency to load: every request of a tick is
// (rate / TotalRPS)^LoadLatency slower, the rate being both fleets' request
// rate at that moment (the diurnal curve and the bursts), so both fleets slow
// down together at the daily peak and in bursts. 0 turns it off.
//
// ScenarioTail makes the canary's tail heavier from RegressionStartMinute on
// and leaves its body alone: with ShapeBimodal its slow path takes
// TailSlowShare of requests instead of SlowShare; with the other shapes the
// draw beyond the shape's TailPivot quantile is stretched, in log space, by
// TailStretch (x' = q (x/q)^TailStretch beyond the pivot q), so latencies
// below the pivot keep their distribution. Pivot 0.97, stretch 1.5 makes
// the share beyond the unchanged p99 about 1.45% instead of 1% for both the
// log-normal and the log-logistic, as a slow path going from 2% to 3% of
// requests does for the bimodal shape.
const (
	ShapeBimodal   = "bimodal"
	ShapeLognormal = "lognormal"
	ShapeHeavy     = "heavy"
)

// Shapes lists every latency shape.
var Shapes = []string{ShapeBimodal, ShapeLognormal, ShapeHeavy}

// shape is c.Shape, "" meaning ShapeBimodal.
func (s *Sim) shape() string {
	if s.c.Shape == "" {
		return ShapeBimodal
	}
	return s.c.Shape
}

func (c Config) validateShape() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Shape == "" || slices.Contains(Shapes, c.Shape), "unknown shape %q (known: %v)", c.Shape, Shapes)
	switch c.Shape {
	case ShapeLognormal:
		check(c.LognormalSigma > 0, "lognormal sigma must be > 0, got %v", c.LognormalSigma)
	case ShapeHeavy:
		check(c.HeavyTailIndex > 0, "heavy tail index must be > 0, got %v", c.HeavyTailIndex)
	}
	check(c.LoadLatency >= 0 && c.LoadLatency <= 4, "load latency exponent must be in [0,4], got %v", c.LoadLatency)
	if c.Scenario == ScenarioTail {
		check(c.TailSlowShare >= 0 && c.TailSlowShare <= 1, "tail slow share must be in [0,1], got %v", c.TailSlowShare)
		check(c.TailPivot > 0 && c.TailPivot < 1, "tail pivot must be a quantile in (0,1), got %v", c.TailPivot)
		check(c.TailStretch > 0, "tail stretch must be > 0, got %v", c.TailStretch)
		check(c.RegressionStartMinute >= 0, "regression start minute must be >= 0, got %d", c.RegressionStartMinute)
	}
	return errors.Join(errs...)
}

// deviation is the shape's draw in log space around the median: a normal of
// sd LognormalSigma, or a logistic of scale 1/HeavyTailIndex.
func (s *Sim) deviation(r *rand.Rand) float64 {
	if s.c.Shape == ShapeHeavy {
		// u in (0, 1): never 0, whose logit is -Inf.
		u := (float64(r.Uint64()>>11) + 0.5) / (1 << 53)
		return (math.Log(u) - math.Log1p(-u)) / s.c.HeavyTailIndex
	}
	return s.c.LognormalSigma * r.NormFloat64()
}

// deviationCDF is P(deviation <= d).
func (s *Sim) deviationCDF(d float64) float64 {
	if s.c.Shape == ShapeHeavy {
		return 1 / (1 + math.Exp(-s.c.HeavyTailIndex*d))
	}
	return normCDF(d, s.c.LognormalSigma)
}

// pivot is the deviation at the TailPivot quantile.
func (s *Sim) pivot() float64 {
	p := s.c.TailPivot
	if s.c.Shape == ShapeHeavy {
		return (math.Log(p) - math.Log1p(-p)) / s.c.HeavyTailIndex
	}
	return s.c.LognormalSigma * math.Sqrt2 * math.Erfinv(2*p-1)
}

// observeShape is observeTick's loop for the shapes without a slow path.
func (s *Sim) observeShape(r *rand.Rand, p tickParams, n int, logBody float64, fn func(float64, bool)) {
	c := &s.c
	logCostly := math.Log(c.CostlyFactor)
	pivot := 0.0
	if p.stretch > 0 {
		pivot = s.pivot()
	}
	for i := 0; i < n; i++ {
		l := logBody
		if r.Float64() < p.costly {
			l += logCostly
		}
		d := s.deviation(r)
		if p.stretch > 0 && d > pivot {
			d = pivot + (d-pivot)*p.stretch
		}
		isErr := r.Float64() < p.errorRatio
		fn(math.Exp(l+d), isErr)
	}
}

// normCDF is P(N(0, sigma^2) <= d); sigma 0 is a point mass at 0.
func normCDF(d, sigma float64) float64 {
	if sigma == 0 {
		if d >= 0 {
			return 1
		}
		return 0
	}
	return 0.5 * math.Erfc(-d/(sigma*math.Sqrt2))
}

// TickRate is the expected number of requests of a fleet's pod in the tick
// [sec, sec+1) (Unix seconds): the Poisson mean Observe draws from.
func (s *Sim) TickRate(fleet string, pod int, sec int64) float64 {
	return s.params(fleetIndex(fleet), pod, sec).rate
}

// CDF is the exact probability that one request of a fleet's pod in the tick
// [sec, sec+1) takes at most x seconds: the latency model itself, not a
// sample of it. A fleet's distribution over an interval is the mixture of its
// pods' ticks weighted by TickRate.
func (s *Sim) CDF(fleet string, pod int, sec int64, x float64) float64 {
	return s.cdf(s.params(fleetIndex(fleet), pod, sec), x)
}

func (s *Sim) cdf(p tickParams, x float64) float64 {
	if !(x > 0) {
		return 0
	}
	c := &s.c
	lx := math.Log(x) - math.Log(c.MedianLatency*p.factor)
	logCostly := math.Log(c.CostlyFactor)
	var f float64
	for _, class := range [2]struct{ w, shift float64 }{{1 - p.costly, 0}, {p.costly, logCostly}} {
		if class.w == 0 {
			continue
		}
		d := lx - class.shift
		if s.shape() == ShapeBimodal {
			f += class.w * ((1-p.slowShare)*normCDF(d, c.BodySigma) + p.slowShare*normCDF(d-math.Log(p.slowFactor), c.SlowSigma))
			continue
		}
		if p.stretch > 0 {
			if pv := s.pivot(); d > pv {
				d = pv + (d-pv)/p.stretch
			}
		}
		f += class.w * s.deviationCDF(d)
	}
	return f
}

// FleetQuantile is the exact q-quantile of a fleet's latency over the ticks
// [from, to): the rate-weighted mixture of its pods' tick distributions
// (CDF), found by bisection in log space to a relative 1e-12. NaN when the
// fleet has no traffic then.
func (s *Sim) FleetQuantile(fleet string, from, to time.Time, q float64) float64 {
	var ticks []tickParams
	var total float64
	for pod := 0; pod < s.c.PodsPerFleet; pod++ {
		for sec := from.Unix(); sec < to.Unix(); sec++ {
			p := s.params(fleetIndex(fleet), pod, sec)
			if p.rate > 0 {
				ticks = append(ticks, p)
				total += p.rate
			}
		}
	}
	if total == 0 || !(q > 0 && q < 1) {
		return math.NaN()
	}
	cdf := func(x float64) float64 {
		var f float64
		for _, t := range ticks {
			f += t.rate * s.cdf(t, x)
		}
		return f / total
	}
	lo, hi := math.Log(s.c.MedianLatency), math.Log(s.c.MedianLatency)
	for cdf(math.Exp(lo)) > q {
		lo -= 1
	}
	for cdf(math.Exp(hi)) < q {
		hi += 1
	}
	for hi-lo > 1e-12 {
		mid := (lo + hi) / 2
		if cdf(math.Exp(mid)) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp(hi)
}
