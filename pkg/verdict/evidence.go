package verdict

import (
	"fmt"
	"math"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// The evidence rule (docs/judgement.md) pools, over the minutes of a window,
// how many of each fleet's observations lie beyond the verdict quantile of
// the two fleets' merged histogram. If the fleets are identical, every one of
// those K tail observations is the canary's with probability f, the canary's
// share of the minute's observations, whatever the latency distribution. If
// the canary is RollbackThreshold times slower, its tail is more frequent by
// a factor that depends on the tail's steepness (TailIndices). The log
// likelihood ratio of the two, summed over the window and over its recent
// runs, is tested against boundaries that hold at every look (Ville's
// inequality, and the Shiryaev-Roberts bound for the recent runs).

// TailIndices are the tails the evidence rule tests against: a canary
// RollbackThreshold (R) times slower whose tail falls like x^-a beyond the
// threshold lands there R^a times as often as the baseline. Latency tails at
// p99 have indices of about 2 to 6 (a lognormal of log-sd s has 2.67/s at
// p99) and steeper ones where a slow path ends sharply; the rule mixes the
// four alternatives with equal weight, so a large regression is caught as
// quickly as a test designed for it, at a cost of ln 4 in the boundary.
// Promotion is tested against the first, the mildest: "the canary's tail is
// not R^4 times as frequent".
var TailIndices = [4]float64{4, 8, 16, 32}

// Evidence is what one minute adds to the evidence rule's statistic.
type Evidence struct {
	// Valid is false when the minute carries no evidence: a fleet without
	// data, histograms that cannot be merged, or no quantile.
	Valid bool
	// Threshold is the verdict quantile of both fleets' merged histogram.
	Threshold float64
	// Baseline and Canary are the observations beyond Threshold, and
	// BaselineCount and CanaryCount all observations, as counted observations
	// (increase() extrapolation removed, see ScrapeScale).
	Baseline, Canary           float64
	BaselineCount, CanaryCount float64
	// Share is the canary's share of the minute's observations.
	Share float64
	// LLR is the minute's log likelihood ratio for each of TailIndices:
	// a canary whose tail is RollbackThreshold^a times as frequent over
	// identical fleets.
	LLR [len(TailIndices)]float64
}

// Expected is how many of the minute's tail observations the canary would
// have if the fleets were identical.
func (e Evidence) Expected() float64 { return (e.Baseline + e.Canary) * e.Share }

// MinuteEvidence reads one minute's evidence off both fleets' merged
// histograms (nil: no data). scaleB and scaleC turn each fleet's counts into
// counted observations: a one-minute increase() extrapolates the samples it
// covers to the whole minute, so a fleet scraped every 15 s reads 4/3 of the
// observations it counted (see ScrapeScale); 1 when counts are exact.
func MinuteEvidence(c Config, baseline, canary *histogram.Histogram, scaleB, scaleC float64) Evidence {
	e := Evidence{Threshold: math.NaN(), Share: math.NaN()}
	if baseline == nil || canary == nil || !(baseline.Count > 0) || !(canary.Count > 0) || !(scaleB > 0) || !(scaleC > 0) {
		return e
	}
	pooled, err := histogram.Merge(baseline, canary)
	if err != nil {
		return e
	}
	x := pooled.Quantile(c.VerdictQuantile)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return e
	}
	e.Threshold = x
	e.Baseline, e.Canary = baseline.CountAbove(x)*scaleB, canary.CountAbove(x)*scaleC
	e.BaselineCount, e.CanaryCount = baseline.Count*scaleB, canary.Count*scaleC
	e.Share = e.CanaryCount / (e.BaselineCount + e.CanaryCount)
	if math.IsNaN(e.Baseline+e.Canary) || !(e.Share > 0 && e.Share < 1) {
		return e
	}
	for i, a := range TailIndices {
		e.LLR[i] = LLR(e.Canary, e.Baseline, e.Share, math.Pow(c.RollbackThreshold, a))
	}
	e.Valid = true
	return e
}

// LLR is the log likelihood ratio of k canary and b baseline tail
// observations between "the canary's tail is alt times as frequent" and "the
// fleets are identical", given the canary's share f of all observations:
// each tail observation is the canary's with probability f under the second
// and theta = f alt / (f alt + 1 - f) under the first.
func LLR(k, b, f, alt float64) float64 {
	theta := f * alt / (f*alt + 1 - f)
	return k*math.Log(theta/f) + b*math.Log((1-theta)/(1-f))
}

// Mixture is ln of the mean of exp(llr[i]): the log likelihood ratio of the
// equal-weight mixture of the alternatives, computed without overflow.
func Mixture(llr [len(TailIndices)]float64) float64 {
	top := math.Inf(-1)
	for _, l := range llr {
		top = math.Max(top, l)
	}
	if math.IsInf(top, 0) || math.IsNaN(top) {
		return top
	}
	var sum float64
	for _, l := range llr {
		sum += math.Exp(l - top)
	}
	return top + math.Log(sum/float64(len(llr)))
}

// ScrapeScale is the factor that turns a one-minute increase() into counted
// observations, from the mean number of samples n each series has in the
// minute: increase() covers the (n-1) scrape intervals between them and
// extrapolates to n intervals, so it reads n/(n-1) of what was counted.
// NaN when fewer than two samples leave nothing to measure.
func ScrapeScale(samplesPerSeries float64) float64 {
	if !(samplesPerSeries > 1) || math.IsInf(samplesPerSeries, 0) {
		return math.NaN()
	}
	return (samplesPerSeries - 1) / samplesPerSeries
}

// MinutesPerDay is the number of looks a canary watched every minute gets in
// a day: the sliding boundaries are set for that many looks.
const MinutesPerDay = 24 * 60

// The boundaries (docs/judgement.md). The rule looks at the whole window and
// at the recent runs of minutes that end with it (RecentLengths), so that
// minutes before a change cannot outweigh the change. For any set of such
// runs, the sum over every start of the likelihood ratio since that start
// (the Shiryaev-Roberts statistic) has mean t after t minutes of identical
// fleets, so the chance that any run reaches e^A within t minutes is at most
// t e^-A. Hence:
//   - sliding windows, a canary watched every minute: A = ln(MinutesPerDay /
//     FalseRollback), at most FalseRollback false rollbacks per canary-day;
//   - a window anchored at a deployment's start: the whole window since the
//     start is one sequential test (Ville's inequality: any look crosses
//     ln(2/FalseRollback) with probability at most FalseRollback/2), and the
//     recent runs over its WindowMinutes looks get the other half:
//     ln(2 WindowMinutes / FalseRollback).

// RollbackBoundary is the whole window's statistic at or above which it rolls back.
func (c Config) RollbackBoundary(anchored bool) float64 {
	if anchored {
		return math.Log(2 / c.FalseRollback)
	}
	return math.Log(MinutesPerDay / c.FalseRollback)
}

// RecentBoundary is the same for the recent runs of minutes.
func (c Config) RecentBoundary(anchored bool) float64 {
	if anchored {
		return math.Log(2 * float64(c.WindowMinutes) / c.FalseRollback)
	}
	return math.Log(MinutesPerDay / c.FalseRollback)
}

// PromoteBoundary is the promote statistic's: at or below minus this, the
// window promotes; a canary whose tail is RollbackThreshold^TailIndices[0]
// times as frequent is promoted with probability at most FalsePromote over
// all looks of an anchored window (Ville), or per canary-day when sliding.
func (c Config) PromoteBoundary(anchored bool) float64 {
	if anchored {
		return math.Log(1 / c.FalsePromote)
	}
	return math.Log(MinutesPerDay / c.FalsePromote)
}

// RecentLengths are the lengths of the recent runs of minutes the rule
// reads besides the whole window: 1, 2, 4, ... minutes, below the window.
func (c Config) RecentLengths() []int {
	var out []int
	for l := 1; l < c.WindowMinutes; l *= 2 {
		out = append(out, l)
	}
	return out
}

// PromoteMinutes is how many minutes of the window must carry evidence before
// the evidence rule promotes: half the window, so that a canary is watched
// for a while before it is called good however plentiful its traffic.
func (c Config) PromoteMinutes() int { return (c.WindowMinutes + 1) / 2 }

// WindowEvidence is the evidence rule's reading of one window.
type WindowEvidence struct {
	// Minutes carrying evidence, and the pooled tail observations.
	Minutes          int
	Canary, Baseline float64
	Expected         float64
	// LLR sums each alternative's minute LLRs.
	LLR [len(TailIndices)]float64
	// Statistic is the mixture of the summed LLRs (rollback at Statistic >=
	// Rollback); PromoteStatistic the first alternative's sum (promote at
	// PromoteStatistic <= -Promote).
	Statistic, PromoteStatistic float64
	Rollback, Promote           float64
	// Recent is the run of the last RecentMinutes minutes whose statistic
	// stands highest above RecentBoundary (0 minutes: none shorter than
	// the window); rollback also at RecentStatistic >= RecentBoundary.
	RecentMinutes                   int
	RecentStatistic, RecentBoundary float64
	RecentCanary, RecentExpected    float64
	Anchored                        bool
}

// add counts one minute's evidence in.
func (w *WindowEvidence) add(e Evidence) {
	if !e.Valid {
		return
	}
	w.Minutes++
	w.Canary += e.Canary
	w.Baseline += e.Baseline
	w.Expected += e.Expected()
	for i := range w.LLR {
		w.LLR[i] += e.LLR[i]
	}
}

// readWindow reads the window whose minutes' evidence is ev (in time order).
func readWindow(c Config, ev []Evidence, anchored bool) WindowEvidence {
	var w WindowEvidence
	for _, e := range ev {
		w.add(e)
	}
	w.Statistic, w.PromoteStatistic = Mixture(w.LLR), w.LLR[0]
	w.Anchored = anchored
	w.Rollback, w.Promote = c.RollbackBoundary(anchored), c.PromoteBoundary(anchored)
	w.RecentBoundary, w.RecentStatistic = c.RecentBoundary(anchored), math.Inf(-1)
	for _, l := range c.RecentLengths() {
		if l >= len(ev) {
			break
		}
		var run WindowEvidence
		for _, e := range ev[len(ev)-l:] {
			run.add(e)
		}
		if s := Mixture(run.LLR); s > w.RecentStatistic {
			w.RecentMinutes, w.RecentStatistic, w.RecentCanary, w.RecentExpected = l, s, run.Canary, run.Expected
		}
	}
	return w
}

// decide applies the evidence rule.
func (w WindowEvidence) decide(c Config) (Decision, string) {
	label := QuantileLabel(c.VerdictQuantile)
	tail := fmt.Sprintf("canary %s exceedances %.0f vs %.1f expected over %d minutes", label, w.Canary, w.Expected, w.Minutes)
	notWorse := fmt.Sprintf("the canary's tail is shown less than %.2fx as frequent as the baseline's", math.Pow(c.RollbackThreshold, TailIndices[0]))
	switch {
	case w.Statistic >= w.Rollback:
		return Rollback, fmt.Sprintf("%s: evidence %.1f reached the rollback boundary %.1f (the canary's tail is heavier than the baseline's)", tail, w.Statistic, w.Rollback)
	case w.RecentMinutes > 0 && w.RecentStatistic >= w.RecentBoundary:
		return Rollback, fmt.Sprintf("canary %s exceedances %.0f vs %.1f expected over the last %d minutes: evidence %.1f reached the rollback boundary %.1f (the canary's tail has become heavier than the baseline's)",
			label, w.RecentCanary, w.RecentExpected, w.RecentMinutes, w.RecentStatistic, w.RecentBoundary)
	case w.PromoteStatistic <= -w.Promote && w.Minutes >= c.PromoteMinutes():
		return Promote, fmt.Sprintf("%s: evidence %.1f reached the promote boundary %.1f (%s)", tail, w.PromoteStatistic, -w.Promote, notWorse)
	case w.PromoteStatistic <= -w.Promote:
		return Hold, fmt.Sprintf("%s: evidence %.1f is past the promote boundary %.1f, but %d minutes carry evidence and promotion needs %d", tail, w.PromoteStatistic, -w.Promote, w.Minutes, c.PromoteMinutes())
	default:
		return Hold, fmt.Sprintf("%s: evidence %.1f, rollback at %.1f; promote evidence %.1f, promote at %.1f", tail, w.Statistic, w.Rollback, w.PromoteStatistic, -w.Promote)
	}
}
