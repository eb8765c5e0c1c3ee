package verdict

import (
	"fmt"
	"math"
)

// Verdict of one wall-clock minute.
type Verdict string

// The five minute verdicts. Only good and bad minutes count towards a decision.
const (
	Good         Verdict = "good"
	Neutral      Verdict = "neutral"
	Bad          Verdict = "bad"
	Insufficient Verdict = "insufficient"
	NoData       Verdict = "no-data"
	// Partial: a fleet member that was serving did not report this minute
	// (its target is down, or its series stopped while the rest went on),
	// so the fleet's histogram is not the fleet's. See Completeness.
	Partial Verdict = "partial"
)

// Verdicts lists every verdict in code order.
var Verdicts = []Verdict{Good, Neutral, Bad, Insufficient, NoData, Partial}

// Code is the numeric form used in frames and alert rules: good 0, neutral 1,
// bad 2, insufficient 3, no-data 4, partial 5.
func (v Verdict) Code() int {
	for i, w := range Verdicts {
		if v == w {
			return i
		}
	}
	return -1
}

// Decision of a window.
type Decision string

// The three decisions; their codes are the judge's exit statuses.
const (
	Promote  Decision = "promote"
	Hold     Decision = "hold"
	Rollback Decision = "rollback"
)

// Code is 0 promote, 1 hold, 2 rollback.
func (d Decision) Code() int {
	switch d {
	case Promote:
		return 0
	case Hold:
		return 1
	case Rollback:
		return 2
	}
	return -1
}

// FleetStats is what one fleet looked like in one minute.
type FleetStats struct {
	Present bool // false when the fleet has no histogram for the minute
	// Count of observations in the minute, and RPS = Count/60.
	Count float64
	RPS   float64
	// Quantiles aligned with Config.Quantiles, in seconds.
	Quantiles []float64
	// Value of the verdict quantile, observations beyond it, and its bounds.
	Value        float64
	Tail         float64
	Lower, Upper float64
	// LogSE is the standard error of ln(Value) from sampling: half the log
	// distance between the quantiles one binomial standard error of rank
	// below and above. NaN when it cannot be told.
	LogSE float64
	// Incomplete says why the fleet's minute misses members that were
	// serving; empty when the fleet is complete (see Completeness).
	Incomplete string
}

// Judge gives a minute its verdict from the verdict quantile of both fleets.
// Boundaries are inclusive on both sides: ratio <= promote is good,
// ratio >= rollback is bad. The reason says why in one sentence.
func Judge(c Config, baseline, canary FleetStats) (v Verdict, ratio float64, reason string) {
	ratio = math.NaN()
	switch {
	case !baseline.Present && !canary.Present:
		return NoData, ratio, "neither fleet has data this minute"
	case !baseline.Present || baseline.Count <= 0:
		return NoData, ratio, "the baseline fleet has no data this minute"
	case !canary.Present || canary.Count <= 0:
		return NoData, ratio, "the canary fleet has no data this minute"
	case baseline.Incomplete != "":
		return Partial, ratio, "the baseline fleet is incomplete this minute: " + baseline.Incomplete
	case canary.Incomplete != "":
		return Partial, ratio, "the canary fleet is incomplete this minute: " + canary.Incomplete
	case math.IsNaN(baseline.Value) || math.IsNaN(canary.Value):
		return NoData, ratio, fmt.Sprintf("the %s is not defined for one fleet (no +Inf bucket or no observations)", QuantileLabel(c.VerdictQuantile))
	}
	ratio = canary.Value / baseline.Value
	if baseline.Value == 0 && canary.Value == 0 {
		ratio = 1
	}
	label := QuantileLabel(c.VerdictQuantile)
	// A tail that is not a number (a bucket's count was NaN) is not enough
	// to judge either: NaN < x is false, so the test is written the other way.
	if tail := math.Min(baseline.Tail, canary.Tail); !(tail >= c.TailNeeded()) {
		fleet, n := "canary", canary.Tail
		if math.IsNaN(baseline.Tail) || baseline.Tail < canary.Tail {
			fleet, n = "baseline", baseline.Tail
		}
		if math.IsNaN(n) {
			return Insufficient, ratio, fmt.Sprintf("the %s fleet's observations beyond its %s cannot be counted (a bucket's count is not a number)", fleet, label)
		}
		return Insufficient, ratio, fmt.Sprintf("the %s fleet has %.0f observations beyond its %s, fewer than the %.0f needed to judge it", fleet, math.Floor(n), label, c.MinTailObservations)
	}
	switch {
	case ratio <= c.PromoteThreshold:
		if z, ok := significant(c, baseline, canary, ratio); !ok {
			return Neutral, ratio, fmt.Sprintf("canary %s is %.3fx baseline, at or below %.2fx, but within sampling noise (z = %.2f)", label, ratio, c.PromoteThreshold, z)
		}
		return Good, ratio, fmt.Sprintf("canary %s is %.3fx baseline, at or below %.2fx", label, ratio, c.PromoteThreshold)
	case ratio >= c.RollbackThreshold:
		if z, ok := significant(c, baseline, canary, ratio); !ok {
			return Neutral, ratio, fmt.Sprintf("canary %s is %.3fx baseline, at or above %.2fx, but within sampling noise (z = %.2f)", label, ratio, c.RollbackThreshold, z)
		}
		return Bad, ratio, fmt.Sprintf("canary %s is %.3fx baseline, at or above %.2fx", label, ratio, c.RollbackThreshold)
	default:
		return Neutral, ratio, fmt.Sprintf("canary %s is %.3fx baseline, between %.2fx and %.2fx", label, ratio, c.PromoteThreshold, c.RollbackThreshold)
	}
}

// significant tells whether a ratio is beyond sampling noise when the
// significance gate is on: z = |ln ratio| / sqrt(se_b^2 + se_c^2) must reach
// the one-sided normal quantile of c.Significance. With the gate off, or a
// ratio of exactly 1, every ratio counts as it is.
func significant(c Config, baseline, canary FleetStats, ratio float64) (z float64, ok bool) {
	if c.Significance == 0 {
		return math.NaN(), true
	}
	se := math.Hypot(baseline.LogSE, canary.LogSE)
	z = math.Abs(math.Log(ratio)) / se
	if se == 0 {
		z = math.Inf(1)
	}
	if math.IsNaN(z) {
		return z, false
	}
	return z, z >= OneSidedZ(c.Significance)
}

// OneSidedZ is the standard normal quantile of p (p >= 0.5): 0.99 -> 2.326.
func OneSidedZ(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
