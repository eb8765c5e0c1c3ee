package verdict

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// The evidence rule (docs/judgement.md) pools, over the minutes of a window,
// how many of each fleet's observations lie beyond each voting quantile
// (Config.VoteQuantiles) of the two fleets' merged histogram. If the fleets
// are identical, every one of
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
// three alternatives of every vote with equal weight (Components in all), so
// a large regression is caught about as quickly as by a test designed for
// it, at a cost of ln Components in the boundary. With every minute capped
// (Config.MinuteCap), a steeper alternative would add nothing: it is ahead
// of R^16 only in a minute where the canary holds nearly all of a handful
// of tail observations, which is what one paused pod also produces.
// Promotion is tested against PromoteTailIndex.
var TailIndices = [3]float64{4, 8, 16}

// PromoteTailIndex is the tail index promotion is tested against: "the
// canary's tail is not RollbackThreshold^PromoteTailIndex times as frequent"
// (PromoteAlternative). 2, the heaviest latency tails: a canary
// RollbackThreshold times slower whose tail has index 2 or more is promoted
// at most FalsePromote of the time. Against a steeper index (4, 1.46x) such
// a canary with a heavier tail showed less than the alternative and drifted
// towards promotion ("Promotion assumes the heaviest tails" in
// docs/judgement.md).
const PromoteTailIndex = 2.0

// PromoteAlternative is the promote test's alternative, the tail ratio a
// canary RollbackThreshold times slower shows if its tail has index
// PromoteTailIndex beyond the threshold.
func (c Config) PromoteAlternative() float64 {
	return math.Pow(c.RollbackThreshold, PromoteTailIndex)
}

// Vote is one quantile's part of a minute's evidence: the quantile of both
// fleets' merged histogram, each fleet's counted observations beyond it, and
// the log likelihood ratio for each of TailIndices.
type Vote struct {
	// Quantile voting (0: the vote is absent and its LLRs are 0, a likelihood
	// ratio of 1 that neither speaks for nor against the canary).
	Quantile float64
	// Threshold is Quantile of both fleets' merged histogram; for BoundVote
	// the bound of the bucket that holds it.
	Threshold float64
	// Baseline and Canary are the observations beyond Threshold, as counted
	// observations (increase() extrapolation removed, see Config.ScrapeScale).
	Baseline, Canary float64
	// DeepBaseline and DeepCanary are those beyond DeepFactor times
	// Threshold: the deep tail, where a stalled pod's requests land.
	DeepBaseline, DeepCanary float64
	// BoundBaseline and BoundCanary are those beyond the bound of the
	// merged histogram's bucket holding Threshold, at or above it
	// (histogram.BucketBound): whole buckets, nothing interpolated. The
	// promote test reads them (Promote).
	BoundBaseline, BoundCanary float64
	// LLR is the log likelihood ratio for each of TailIndices: a canary whose
	// tail beyond Threshold is RollbackThreshold^a times as frequent, over
	// identical fleets, at most Config.MinuteCap, and at most
	// Config.DeepMinuteCap beyond what the observations short of the deep
	// tail show alone (Config.voteLLR).
	LLR [len(TailIndices)]float64
	// Promote is the first tail index's log likelihood ratio without the
	// caps, of the observations beyond the bucket bound (BoundBaseline and
	// BoundCanary), held from below by Config.DeepPromoteCap: what the
	// promote statistic adds up. Inside a bucket
	// the counts are interpolated as if its observations were spread
	// evenly, which understates how much heavier a slower canary's tail
	// is (more so the wider the bucket); beyond a bound the counts are
	// exact, and a canary whose tail is RollbackThreshold^a times as
	// frequent beyond the threshold is at least as much so beyond the
	// bound when its tail grows heavier with depth, as a slower one's does.
	Promote float64
}

// PromoteExpected is how many of the observations beyond the bucket bound
// the canary would have if the fleets were identical: what the promote
// test is expected to read.
func (v Vote) PromoteExpected(f float64) float64 { return (v.BoundBaseline + v.BoundCanary) * f }

// Expected is how many of the vote's tail observations the canary would
// have if the fleets were identical, given the canary's share f.
func (v Vote) Expected(f float64) float64 { return (v.Baseline + v.Canary) * f }

// Residual is the canary's tail count standardized against identical
// fleets, (k - fK) / sqrt(f(1-f)K) for its k of the K observations beyond
// the threshold at share f: NaN when no observation lies beyond.
func (v Vote) Residual(f float64) float64 {
	k := v.Baseline + v.Canary
	if !(f*(1-f)*k > 0) {
		return math.NaN()
	}
	return (v.Canary - f*k) / math.Sqrt(f*(1-f)*k)
}

// NumVotes is how many votes there are (Config.VoteQuantiles), and
// Components how many alternatives the evidence rule mixes: each vote with
// each tail index.
const (
	NumVotes   = 3
	Components = NumVotes * len(TailIndices)
)

// Evidence is what one minute adds to the evidence rule's statistic.
type Evidence struct {
	// Valid is false when the minute carries no evidence: a fleet without
	// data, histograms that cannot be merged, or no verdict quantile.
	Valid bool
	// Votes are in Config.VoteQuantiles order: Votes[0] is the verdict
	// quantile's.
	Votes [NumVotes]Vote
	// BaselineCount and CanaryCount are all observations, counted.
	BaselineCount, CanaryCount float64
	// Share is the canary's share of the minute's observations.
	Share float64
}

// Expected is how many of the minute's tail observations beyond the verdict
// quantile the canary would have if the fleets were identical.
func (e Evidence) Expected() float64 { return e.Votes[0].Expected(e.Share) }

// MinuteEvidence reads one minute's evidence off both fleets' merged
// histograms (nil: no data). scaleB and scaleC turn each fleet's counts into
// counted observations (see Config.ScrapeScale); 1 when counts are exact, as
// they are at the configured scrape interval.
func MinuteEvidence(c Config, baseline, canary *histogram.Histogram, scaleB, scaleC float64) Evidence {
	return CountMinute(c, baseline, canary).Evidence(c, scaleB, scaleC)
}

// MinuteCounts is the part of a minute's evidence read off the histograms
// alone: each vote's threshold and each fleet's counts, before they are
// scaled to counted observations. A reader computes it while the fleets'
// health (which gives the scales) is still being fetched.
type MinuteCounts struct {
	ok               bool // both fleets have observations and their histograms merge
	baseline, canary float64
	votes            [NumVotes]struct{ threshold, baseline, canary, deepBaseline, deepCanary, boundBaseline, boundCanary float64 }
}

// CountMinute reads the thresholds and counts of MinuteEvidence off both
// fleets' histograms.
func CountMinute(c Config, baseline, canary *histogram.Histogram) MinuteCounts {
	var m MinuteCounts
	if baseline == nil || canary == nil || !(baseline.Count > 0) || !(canary.Count > 0) {
		return m
	}
	// Both fleets are counted in the layout both have (a canary whose
	// release changed the buckets, or whose series kept a finer schema than
	// the baseline's), bucket for bucket, as the pack's a + b reads them.
	baseline, canary, err := histogram.Common(baseline, canary)
	if err != nil {
		return m
	}
	pooled, err := histogram.Merge(baseline, canary)
	if err != nil {
		return m
	}
	m.ok, m.baseline, m.canary = true, baseline.Count, canary.Count
	// The quantile votes (those before BoundVote) each have a threshold.
	const quantileVotes = BoundVote
	var ths [quantileVotes]float64
	qs := c.VoteQuantiles()
	for i, q := range qs[:quantileVotes] {
		if q == 0 {
			qs[i] = math.NaN() // no such vote: no threshold
		}
	}
	pooled.Quantiles(qs[:quantileVotes], ths[:])
	// Each fleet's buckets are read once for every quantile vote's
	// threshold, the start of its deep tail, DeepFactor times it, and the
	// bound of the bucket holding it.
	const n = quantileVotes
	var at, bs, cs [3 * n]float64
	for i := range n {
		at[i], at[n+i], at[2*n+i] = ths[i], ths[i]*DeepFactor, pooled.BucketBound(ths[i])
	}
	baseline.CountsAbove(at[:], bs[:])
	canary.CountsAbove(at[:], cs[:])
	for i := range n {
		v := &m.votes[i]
		v.threshold = ths[i]
		v.baseline, v.canary = bs[i], cs[i]
		v.deepBaseline, v.deepCanary = bs[n+i], cs[n+i]
		v.boundBaseline, v.boundCanary = bs[2*n+i], cs[2*n+i]
	}
	// The bound vote reads the verdict quantile's counts: beyond its bucket
	// bound, with its deep tail (as the rule pack records them once).
	v0 := m.votes[0]
	b := &m.votes[BoundVote]
	b.threshold, b.baseline, b.canary = at[2*n], v0.boundBaseline, v0.boundCanary
	b.deepBaseline, b.deepCanary = v0.deepBaseline, v0.deepCanary
	return m
}

// Evidence is the minute's evidence with each fleet's counts scaled to
// counted observations (see MinuteEvidence).
func (m MinuteCounts) Evidence(c Config, scaleB, scaleC float64) Evidence {
	e := Evidence{Share: math.NaN()}
	e.Votes[0].Threshold = math.NaN()
	if !m.ok || !(scaleB > 0) || !(scaleC > 0) {
		return e
	}
	e.BaselineCount, e.CanaryCount = m.baseline*scaleB, m.canary*scaleC
	e.Share = e.CanaryCount / (e.BaselineCount + e.CanaryCount)
	if !(e.Share > 0 && e.Share < 1) {
		return e
	}
	for i, q := range c.VoteQuantiles() {
		if q == 0 {
			continue
		}
		mv := m.votes[i]
		v := Vote{Quantile: q, Threshold: mv.threshold}
		v.Baseline, v.Canary = mv.baseline*scaleB, mv.canary*scaleC
		v.DeepBaseline, v.DeepCanary = mv.deepBaseline*scaleB, mv.deepCanary*scaleC
		v.BoundBaseline, v.BoundCanary = mv.boundBaseline*scaleB, mv.boundCanary*scaleC
		if !finite(v.BoundBaseline + v.BoundCanary) {
			// No populated bucket reaches below the threshold: nothing to
			// read beyond a bound, as the rule pack finds none (or a count
			// is not finite: nothing to read either).
			v.BoundBaseline, v.BoundCanary = 0, 0
		}
		// A vote whose threshold is not finite, or whose counts are not
		// finite numbers (a bucket's count was NaN or +Inf), abstains;
		// without the verdict quantile's the minute carries no evidence.
		if !finite(v.Threshold) || !finite(v.Baseline+v.Canary+v.DeepBaseline+v.DeepCanary) {
			if i == 0 {
				return e
			}
			continue
		}
		v.LLR, v.Promote = c.voteLLR(v, e.Share)
		e.Votes[i] = v
	}
	e.Valid = true
	return e
}

// voteLLR is a vote's minute of evidence from its canary and baseline tail
// observations and the canary's share f: the LLR of every tail index, capped
// at MinuteCap and, beyond the LLR of the observations short of the deep
// tail alone (the band from the threshold to DeepFactor times it), at
// DeepMinuteCap; and PromoteAlternative's for promotion, of the
// observations beyond the bucket bound, without the caps but held from
// below at the smaller of -DeepPromoteCap and what those short of the deep
// tail show.
func (c Config) voteLLR(v Vote, f float64) (llr [len(TailIndices)]float64, promote float64) {
	limit, deep := c.MinuteCap(), c.DeepMinuteCap()
	pa := c.PromoteAlternative()
	promote = LLR(v.BoundCanary, v.BoundBaseline, f, pa)
	shallow := LLR(math.Max(v.BoundCanary-v.DeepCanary, 0), math.Max(v.BoundBaseline-v.DeepBaseline, 0), f, pa)
	promote = math.Max(promote, math.Min(shallow, -c.DeepPromoteCap()))
	for j, a := range TailIndices {
		alt := math.Pow(c.RollbackThreshold, a)
		l := LLR(v.Canary, v.Baseline, f, alt)
		// The bound vote's deep tail is the verdict quantile's, which can
		// begin below a bound far above the threshold: never fewer than none.
		band := LLR(math.Max(v.Canary-v.DeepCanary, 0), math.Max(v.Baseline-v.DeepBaseline, 0), f, alt)
		llr[j] = math.Min(math.Min(l, limit), math.Max(band, deep))
	}
	return llr, promote
}

// LLR is the log likelihood ratio of k canary and b baseline tail
// observations between "the canary's tail is alt times as frequent" and "the
// fleets are identical", given the canary's share f of all observations:
// each tail observation is the canary's with probability f under the second
// and theta = f alt / (f alt + 1 - f) under the first.
//
// It is computed as k ln alt - (k+b) ln(1 + f (alt-1)), the rule pack's
// form: theta/f = alt/(1 + f (alt-1)) and (1-theta)/(1-f) = 1/(1 + f
// (alt-1)). The form with theta became NaN where theta rounds to 1 (a
// large alt at a large share), losing the minutes where the baseline had
// no tail at all.
func LLR(k, b, f, alt float64) float64 {
	return k*math.Log(alt) - (k+b)*math.Log(1+f*(alt-1))
}

// MixtureLimit bounds every summed LLR the mixture reads, either way: exp
// overflows a float64 beyond 709.78. So the rule pack computes the mixture
// as ln(avg(exp(clamp(llr, -700, 700)))), reading its sums once, and the
// engine bounds them the same way. A sum that far out has decided long
// before (the boundaries are under 15), so the bound moves no decision; the
// evidence shown stops at 700.
const MixtureLimit = 700

// Mixture is ln of the mean of exp(llr[i]), each llr[i] first held within
// ±MixtureLimit: the log likelihood ratio of the equal-weight mixture of the
// alternatives; -Inf (no likelihood at all) for none.
func Mixture(llr ...float64) float64 {
	if len(llr) == 0 {
		return math.Inf(-1)
	}
	top := math.Inf(-1)
	for _, l := range llr {
		top = math.Max(top, l)
	}
	if math.IsNaN(top) {
		return top
	}
	bound := func(l float64) float64 { return math.Max(-MixtureLimit, math.Min(MixtureLimit, l)) }
	top = bound(top)
	var sum float64
	for _, l := range llr {
		sum += math.Exp(bound(l) - top)
	}
	return top + math.Log(sum/float64(len(llr)))
}

// VoteQuantiles are the quantiles whose tails vote in the evidence rule:
// the verdict quantile q, then the decade below it, the quantile with ten
// times its tail, 1 - 10(1-q) (p90 for p99), left out (0) when it would fall
// under the median. A change that slows every request shows ten times the
// observations beyond the decade below and is caught there first. There is
// no vote beyond the verdict quantile: the decade above holds a tenth of its
// observations, so one pod pausing for a second fills it (docs/judgement.md,
// "Clustered tails"). Third, at BoundVote, q again: the bound vote counts
// whole buckets beyond the bound of the bucket that holds it. The votes
// share one budget: the rule mixes every vote's alternatives with equal
// weight.
func (c Config) VoteQuantiles() [NumVotes]float64 {
	q := c.VerdictQuantile
	// Rounded to 12 digits: 1 - 10(1 - 0.99) is 0.8999999999999999 in floats.
	round := func(x float64) float64 { return math.Round(x*1e12) / 1e12 }
	below := round(1 - 10*(1-q))
	if below < 0.5 {
		below = 0
	}
	return [NumVotes]float64{q, below, q}
}

// BoundVote is the index of the vote that counts whole buckets: each
// fleet's observations beyond the bound of the merged histogram's bucket
// that holds the verdict quantile (histogram.BucketBound), nothing
// interpolated. Inside that bucket interpolation spreads observations
// evenly, so a tail made heavier inside a wide bucket (native schema 0's
// factor 2) reads as barely heavier beyond the threshold; beyond the bound
// it reads as it is. Its quantile is the verdict quantile's, its threshold
// the bound, its deep tail the verdict quantile's; it does not take part in
// promotion (the verdict quantile's Promote already reads those counts).
const BoundVote = 2

// VoteLabel names vote i of quantile q in reasons and in the rule pack's
// quantile label: "p99", "p90", and "p99 bound" for BoundVote.
func VoteLabel(i int, q float64) string {
	if i == BoundVote {
		return QuantileLabel(q) + " bound"
	}
	return QuantileLabel(q)
}

// PromoteVotes is how many of the votes, first in VoteQuantiles order, must
// show the canary not worse before it promotes: the verdict quantile and
// the decade below.
const PromoteVotes = 2

// ScrapeScale is the factor that turns a minute's histogram into counted
// observations, from the mean number of samples n each series has in the
// minute. The minute is read over a minute and one scrape interval, from the
// last sample before it to its own last sample: n+1 samples, n scrape
// intervals, the whole minute. increase() extrapolates them to the n+1
// intervals of its range, and the minute's histogram is that increase times
// 60 over the range's seconds (prom.NativeQuery): (n+1)/n times what was
// counted, times 60 over the range's seconds. So with the configured interval (n = 60 / interval) the
// scale is 1 and the histogram holds exactly the minute's observations; a
// scrape missed inside the minute or a pod that is new scales them. NaN
// without a sample in the minute.
func (c Config) ScrapeScale(samplesPerSeries float64) float64 {
	if !(samplesPerSeries > 0) || math.IsInf(samplesPerSeries, 0) {
		return math.NaN()
	}
	return samplesPerSeries / (samplesPerSeries + 1) * c.RangePerMinute()
}

// RangePerMinute is the length of the range a minute is read over, a
// minute and one scrape interval, in minutes: 1.25 at 15 s.
func (c Config) RangePerMinute() float64 {
	return float64(60+c.ScrapeIntervalSeconds) / 60
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
//   - a window anchored at a deployment's start: every minute since the
//     start is one sequential test (Ville's inequality: any look, however
//     late, crosses ln(2/FalseRollback) with probability at most
//     FalseRollback/2), and the recent runs over its WindowMinutes looks get
//     the other half: ln(2 WindowMinutes / FalseRollback); past those looks
//     the recent runs have the sliding boundary.

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

// DeepFactor is where a vote's deep tail begins, as a multiple of its
// threshold. A regression moves latencies by a factor (1.2, 2), so most of
// the canary's extra tail observations lie within a factor of a few of the
// threshold: of a tail falling like x^-a beyond the threshold, the band up to
// 4 times it holds 1 - 4^-a, at least 15/16 of the tail for the index 2 of
// the heaviest latency tails (TailIndices). A pod that stalls for a time T
// well beyond the threshold t (a long GC pause, CPU throttling) throws the
// requests it holds meanwhile far deeper: their delays spread over (0, T),
// and only about 3t/T of them land in the band.
const DeepFactor = 4

// DeepMinuteCap is the most evidence a minute carries from its deep tail
// alone: a minute's LLR for an alternative is held at the larger of this and
// the LLR its observations short of the deep tail give. A clump that a
// stalled pod throws into one minute's deep tail (which the null hypothesis,
// independent observations, does not allow for) then needs at least
// MinChanges + 1 minutes of such evidence to roll back an anchored window,
// the fewest minutes in which the dispersion can see clumps and discount
// them: ln(2/FalseRollback) / (MinChanges + 1), 1.9 with the defaults. A
// regression confined to the deep tail (timeouts) still rolls back, at its
// fourth minute at the soonest; promotion reads it in full (Vote.Promote).
// Like MinuteCap, it only lowers likelihood ratios (each minute's is at most
// its uncapped LLR, whatever the data), so the rollback bounds hold as they
// are.
func (c Config) DeepMinuteCap() float64 {
	return math.Log(2/c.FalseRollback) / (MinChanges + 1)
}

// DeepPromoteCap is DeepMinuteCap's mirror for promotion: the most a
// minute's deep tail moves its promote term towards promotion beyond what
// its observations short of the deep tail show alone, ln(1/FalsePromote) /
// (MinChanges + 1), 1.15 with the defaults. A stall of a baseline pod throws
// a clump into the baseline's deep tail that would otherwise count as
// evidence for the canary.
func (c Config) DeepPromoteCap() float64 {
	return math.Log(1/c.FalsePromote) / (MinChanges + 1)
}

// MinuteCap is the most evidence one minute carries for any alternative
// towards a rollback: what one alternative needs alone to roll back an
// anchored window, divided by MinRollbackMinutes, (ln(2/FalseRollback) +
// ln Components) / MinRollbackMinutes, 4.9 with the defaults. A rollback
// needs at least MinRollbackMinutes minutes of evidence, so a stall that
// throws a clump of one pod's requests into one minute's tail (which the
// null hypothesis, independent observations, does not allow for) cannot
// decide alone.
// Capping lowers every likelihood ratio, so the rollback bounds hold as
// they are. Promotion adds up the uncapped ratios (Vote.Promote): a
// regression's first minutes count in full against a promotion.
//
// k-1 minutes of every alternative at the cap stay below the boundary only
// while (k-1) ln Components < ln(2/FalseRollback), true for the defaults;
// a larger FalseRollback (a boundary under (k-1) ln 9) lowers the cap to
// just under the boundary divided by k-1, so that MinRollbackMinutes holds
// whatever the budget.
func (c Config) MinuteCap() float64 {
	a, k := math.Log(2/c.FalseRollback), float64(c.MinRollbackMinutes)
	return math.Min((a+math.Log(float64(Components)))/k, capMargin*a/(k-1))
}

// capMargin keeps k-1 capped minutes strictly below the boundary.
const capMargin = 0.999

// PromoteBoundary is the promote statistic's: at or below minus this, the
// window promotes; a canary whose tail is PromoteAlternative times as
// frequent is promoted with probability at most FalsePromote over
// all looks of an anchored window (Ville), or per canary-day when sliding.
func (c Config) PromoteBoundary(anchored bool) float64 {
	if anchored {
		return math.Log(1 / c.FalsePromote)
	}
	return math.Log(MinutesPerDay / c.FalsePromote)
}

// RecentLengths are the lengths of the recent runs of minutes the rule
// reads besides the whole window: 1, 2, 4, ... minutes, below the window
// (a deployment older than its window: below the deployment's length).
func (c Config) RecentLengths() []int {
	var out []int
	for l := 1; l < c.WindowMinutes; l *= 2 {
		out = append(out, l)
	}
	return out
}

// PromoteExpected is how many observations beyond the verdict quantile's
// bucket bound (those the promote test reads) the canary must be expected
// to show over a window (pooled VoteSums.PromoteExpected, what it would
// show if the fleets were identical) before the evidence rule promotes.
// With A = PromoteAlternative, each expected tail
// observation of a canary identical to its baseline adds on average at most
// A - 1 - ln A against the alternative to the promote statistic (the limit of
// a small share, where it adds most), so below PromoteBoundary / (A - 1 -
// ln A) even an identical canary reaches the promote boundary only by a
// lucky shortfall of tail observations: too little traffic to tell, and the
// window holds. 238 anchored and 613 sliding with the defaults.
func (c Config) PromoteExpected(anchored bool) float64 {
	a := c.PromoteAlternative()
	return c.PromoteBoundary(anchored) / (a - 1 - math.Log(a))
}

// PromoteMinutes is how many minutes of the window must carry evidence before
// the evidence rule promotes: half the window, so that a canary is watched
// for a while before it is called good however plentiful its traffic.
func (c Config) PromoteMinutes() int { return (c.WindowMinutes + 1) / 2 }

// VoteSums are one vote's pooled figures over a run of minutes.
type VoteSums struct {
	Quantile         float64
	Canary, Baseline float64
	Expected         float64
	LLR              [len(TailIndices)]float64
	Promote          float64
	// PromoteExpected sums Vote.PromoteExpected: how many observations
	// beyond the bucket bound the promote test was expected to read.
	PromoteExpected float64
	// Change sums the vote's capped squared changes of standardized
	// residual from each minute of the run to the next, and Changes counts
	// them (Dispersion).
	Change  float64
	Changes int
}

// Dispersion is how much more the vote's canary tail counts vary from
// minute to minute over the run than chance lets them, 1 when no more than
// chance does at confidence z. It reads each minute's standardized
// residual r = (k - fK) / sqrt(f(1-f)K), the canary's k of the K
// observations beyond the threshold against its share f. When the minutes'
// counts are binomial, each observation the canary's with probability
// theta, r varies by theta(1-theta) / (f(1-f)) (ChanceVariance): 1 for
// identical fleets, more for a canary whose tail is heavier at a small
// share (theta = 0.10 at f = 0.05 gives 1.9). The change (r - r of the
// minute before)^2 then has mean twice that, so phi = Change / (2 Changes
// ChanceVariance) is 1 give or take sqrt(3 / Changes) (each change shares
// a minute with the next). A change is capped at ChangeCap, so that a
// regression that begins within the run counts once, while clumps (a pod
// pausing, a noisy neighbour, bursts reaching one fleet) count in every
// minute they come.
func (v VoteSums) Dispersion(z float64) float64 {
	if v.Changes < MinChanges {
		return 1
	}
	phi := v.Change / (2 * float64(v.Changes) * v.ChanceVariance())
	if phi > 1+z*math.Sqrt(3/float64(v.Changes)) {
		return phi
	}
	return 1
}

// ChanceVariance is the variance binomial counts give a minute's
// standardized residual around the run's own ratio of the fleets' tails,
// at least 1: with C = Canary, B = Baseline and E = Expected over the run,
// theta = C / (C + B) and f = E / (C + B), theta(1-theta) / (f(1-f)) =
// C B / (E (C + B - E)). Never below 1, so that it only ever lowers the
// dispersion (a canary whose tail is lighter keeps chance's 1), and 1 when
// not finite (no tail observation at all), as the rule pack reads it.
func (v VoteSums) ChanceVariance() float64 {
	if r := v.Canary * v.Baseline / (v.Expected * (v.Canary + v.Baseline - v.Expected)); r > 1 && !math.IsInf(r, 0) {
		return r
	}
	return 1
}

// MinChanges is how many changes a dispersion other than 1 needs.
const MinChanges = 3

// DispersionZ is the confidence past which a window's dispersion discounts
// its evidence: the false-rollback budget's one-sided z (3.09 at 0.001).
// The discount only ever lowers the statistic, so no bound rests on it.
func (c Config) DispersionZ() float64 { return OneSidedZ(1 - c.FalseRollback) }

// ChangeCap bounds one minute's squared change of standardized residual in
// the dispersion, 2 DispersionZ^2 (19.1 at 0.001): a change that chance
// gives at most as often as the budget allows counts as it is, a larger
// one (a regression beginning, a clump) as that much.
func (c Config) ChangeCap() float64 { z := c.DispersionZ(); return 2 * z * z }

// discounted divides each vote's evidence by its dispersion phi: its
// positive LLR sums (evidence of a heavier tail) and its negative Promote
// sum (evidence that the tail is not heavier). Either way the evidence
// shrinks towards 0, so no bound, rollback or promote, depends on phi.
func discounted(votes [NumVotes]VoteSums, phi [NumVotes]float64) [NumVotes]VoteSums {
	for i := range votes {
		if !(phi[i] > 1) {
			continue
		}
		for j, l := range votes[i].LLR {
			if l > 0 {
				votes[i].LLR[j] = l / phi[i]
			}
		}
		if votes[i].Promote < 0 {
			votes[i].Promote /= phi[i]
		}
	}
	return votes
}

// WindowEvidence is the evidence rule's reading of one window; anchored, of
// every minute since the deployment's start.
type WindowEvidence struct {
	// Minutes carrying evidence, and each vote's pooled figures (in
	// Config.VoteQuantiles order; Quantile 0: the vote took no part).
	Minutes int
	Votes   [NumVotes]VoteSums
	// Canary, Baseline and Expected are the verdict quantile's: Votes[0].
	Canary, Baseline, Expected float64
	// Dispersion is each vote's VoteSums.Dispersion over the window at
	// Config.DispersionZ (1: its counts vary as chance lets them). Its
	// positive LLR sums, over the window and over every recent run, are
	// divided by it before they are mixed, and so is its negative Promote
	// sum over the window (discounted); Votes keep the sums undivided.
	Dispersion [NumVotes]float64
	// Statistic is the mixture of every vote's summed LLRs (rollback at
	// Statistic >= Rollback); PromoteStatistic the largest of the first
	// PromoteVotes votes' first tail index's sums (promote at
	// PromoteStatistic <= -Promote: each of them shows the canary not worse).
	Statistic, PromoteStatistic float64
	Rollback, Promote           float64
	// LastPromote is the window's last minute's part of PromoteStatistic
	// (the larger of its promoting votes' uncapped first tail index's, -Inf
	// when it carries no evidence). At or above Config.MinuteCap it holds a
	// promotion: that minute alone weighs against the canary more than one
	// minute counts towards a rollback.
	LastPromote float64
	// Recent is the run of the last RecentMinutes minutes whose statistic
	// stands highest above RecentBoundary (0 minutes: none shorter than
	// the window); rollback also at RecentStatistic >= RecentBoundary.
	// RecentVotes are its pooled figures.
	RecentMinutes                   int
	RecentStatistic, RecentBoundary float64
	RecentVotes                     [NumVotes]VoteSums
	Anchored                        bool
}

// runningSums are the minutes' evidence added up from the first minute:
// at k, the sums of minutes [0, k). The sums of any run of minutes [a, b)
// are the difference at b and a, so every window and recent run of a
// range is read in constant time, however long the window. Each sum is
// kept with the rounding error of its additions (compensated summation), so
// a difference is the run's sum rounded once, whichever minute the sums
// started at: the same for a window read alone and read in a day.
type runningSums struct {
	minutes []int
	votes   [][NumVotes]voteRun
}

// voteRun is one vote's running figures; n counts the minutes it took part
// in, and quantile is its quantile (0 until it takes part).
type voteRun struct {
	n                          int
	quantile                   float64
	canary, baseline, expected compensated
	llr                        [len(TailIndices)]compensated
	promote, promoteExpected   compensated
	// change sums the capped squared changes of standardized residual from
	// the minute before, changes counts them: a minute has one when it and
	// the minute before both carry the vote's residual.
	change  compensated
	changes int
}

// newRunningSums adds up the minutes' evidence; changeCap is
// Config.ChangeCap.
func newRunningSums(ev []Evidence, changeCap float64) runningSums {
	r := runningSums{minutes: make([]int, len(ev)+1), votes: make([][NumVotes]voteRun, len(ev)+1)}
	// residual[i] is vote i's standardized residual in the minute before,
	// NaN when that minute has none.
	var residual [NumVotes]float64
	for k, e := range ev {
		r.minutes[k+1], r.votes[k+1] = r.minutes[k], r.votes[k]
		before := residual
		for i := range residual {
			residual[i] = math.NaN()
		}
		// A minute whose figures are not all finite carries no evidence:
		// added to the running sums, it would make every later window's
		// difference of sums NaN, not only the windows that hold it.
		if !e.Valid || !e.finite() {
			continue
		}
		r.minutes[k+1]++
		for i, v := range e.Votes {
			if v.Quantile == 0 {
				continue
			}
			s := &r.votes[k+1][i]
			s.n++
			s.quantile = v.Quantile
			s.canary.add(v.Canary)
			s.baseline.add(v.Baseline)
			s.expected.add(v.Expected(e.Share))
			for j := range s.llr {
				s.llr[j].add(v.LLR[j])
			}
			s.promote.add(v.Promote)
			s.promoteExpected.add(v.PromoteExpected(e.Share))
			residual[i] = v.Residual(e.Share)
			if d := residual[i] - before[i]; !math.IsNaN(d) {
				s.change.add(math.Min(d*d, changeCap))
				s.changes++
			}
		}
	}
	return r
}

// run is the sums of minutes [a, b).
func (r runningSums) run(a, b int) (minutes int, votes [NumVotes]VoteSums) {
	for i := range votes {
		to, from := &r.votes[b][i], &r.votes[a][i]
		if to.n == from.n {
			continue // the vote took no part in the run
		}
		v := &votes[i]
		v.Quantile = to.quantile
		v.Canary, v.Baseline, v.Expected = to.canary.minus(from.canary), to.baseline.minus(from.baseline), to.expected.minus(from.expected)
		for j := range v.LLR {
			v.LLR[j] = to.llr[j].minus(from.llr[j])
		}
		v.Promote, v.PromoteExpected = to.promote.minus(from.promote), to.promoteExpected.minus(from.promoteExpected)
		// The run's changes are its minutes' after the first: the first
		// minute's is from a minute outside the run.
		second := &r.votes[a+1][i]
		v.Change, v.Changes = to.change.minus(second.change), to.changes-second.changes
	}
	return r.minutes[b] - r.minutes[a], votes
}

// compensated is a running sum with the rounding error of its additions
// (Neumaier's variant of Kahan summation): sum+err is the exact sum of
// what was added but for rounding errors of order 1e-32 of it.
type compensated struct{ sum, err float64 }

func (c *compensated) add(x float64) {
	t := c.sum + x
	if math.Abs(c.sum) >= math.Abs(x) {
		c.err += (c.sum - t) + x
	} else {
		c.err += (x - t) + c.sum
	}
	c.sum = t
}

// minus is c - d rounded once.
func (c compensated) minus(d compensated) float64 {
	var x compensated
	x.add(c.sum)
	x.add(-d.sum)
	return x.sum + (x.err + (c.err - d.err))
}

// statistic is the mixture of every vote's summed LLRs: each vote's
// alternatives weigh the same, an absent vote's as a likelihood ratio of 1.
func statistic(votes [NumVotes]VoteSums) float64 {
	var all [Components]float64
	for i, v := range votes {
		copy(all[i*len(TailIndices):], v.LLR[:])
	}
	return Mixture(all[:]...)
}

// readRun reads the window of minutes [a, b) of the running sums r.
func readRun(c Config, r runningSums, a, b int, anchored bool) WindowEvidence {
	var w WindowEvidence
	w.Minutes, w.Votes = r.run(a, b)
	w.Votes[0].Quantile = c.VerdictQuantile
	w.Canary, w.Baseline, w.Expected = w.Votes[0].Canary, w.Votes[0].Baseline, w.Votes[0].Expected
	for i, v := range w.Votes {
		w.Dispersion[i] = v.Dispersion(c.DispersionZ())
	}
	d := discounted(w.Votes, w.Dispersion)
	w.Statistic, w.PromoteStatistic = statistic(d), math.Inf(-1)
	for _, v := range d[:PromoteVotes] {
		if v.Quantile > 0 || w.PromoteStatistic == math.Inf(-1) {
			w.PromoteStatistic = math.Max(w.PromoteStatistic, v.Promote)
		}
	}
	w.LastPromote = math.Inf(-1)
	if b > a {
		_, last := r.run(b-1, b)
		for _, v := range last[:PromoteVotes] {
			if v.Quantile > 0 {
				w.LastPromote = math.Max(w.LastPromote, v.Promote)
			}
		}
	}
	w.Anchored = anchored
	w.Rollback, w.Promote = c.RollbackBoundary(anchored), c.PromoteBoundary(anchored)
	// The recent runs' anchored boundary is set for a window's looks; a
	// deployment older than its window is looked at every minute, as a
	// sliding window is.
	w.RecentBoundary, w.RecentStatistic = c.RecentBoundary(anchored && b-a <= c.WindowMinutes), math.Inf(-1)
	for l := 1; l < b-a; l *= 2 {
		// A run is discounted by the window's dispersion: its own few
		// minutes cannot tell clumps from chance.
		_, votes := r.run(b-l, b)
		if s := statistic(discounted(votes, w.Dispersion)); s > w.RecentStatistic {
			w.RecentMinutes, w.RecentStatistic, w.RecentVotes = l, s, votes
		}
	}
	return w
}

// tails says what the votes' pooled tails show, for reasons: "canary p99
// exceedances 41 vs 15.0 expected (p90 900 vs 700.0)"; a
// vote that took no part is left out.
func tails(votes [NumVotes]VoteSums) string {
	v := votes[0]
	b := make([]byte, 0, 96)
	b = append(append(append(b, "canary "...), QuantileLabel(v.Quantile)...), " exceedances "...)
	b = append(strconv.AppendFloat(b, v.Canary, 'f', 0, 64), " vs "...)
	b = append(strconv.AppendFloat(b, v.Expected, 'f', 1, 64), " expected"...)
	open := false
	for i, o := range votes[1:] {
		if !(o.Quantile > 0) {
			continue
		}
		if open {
			b = append(b, ", "...)
		} else {
			b, open = append(b, " ("...), true
		}
		b = strconv.AppendFloat(append(append(b, VoteLabel(i+1, o.Quantile)...), ' '), o.Canary, 'f', 0, 64)
		b = strconv.AppendFloat(append(b, " vs "...), o.Expected, 'f', 1, 64)
	}
	if open {
		b = append(b, ')')
	}
	return string(b)
}

// discount says which votes' evidence Dispersion divides, "" if none:
// ", the p99 evidence divided by its dispersion 2.3 (its counts vary more
// from minute to minute than chance lets them)", a clause per vote.
func (w WindowEvidence) discount() string {
	out := ""
	for i, d := range w.Dispersion {
		if d > 1 {
			out += DispersionClause(VoteLabel(i, w.Votes[i].Quantile), fmt.Sprintf("%.1f", d))
		}
	}
	return out
}

// DispersionClause is the clause of a reason saying that the evidence of
// the vote labelled label (VoteLabel) is divided by its dispersion, written
// as phi (the rule pack writes it as a template).
func DispersionClause(label, phi string) string {
	return fmt.Sprintf(", the %s evidence divided by its dispersion %s (its counts vary more from minute to minute than chance lets them)", label, phi)
}

// tooSmallFor says, for a window held below Config.PromoteExpected, when
// the canary would reach it at its traffic so far: a deployment keeps
// pooling its evidence for a day, a sliding window only holds its last
// WindowMinutes.
func (w WindowEvidence) tooSmallFor(c Config) string {
	need, expected := c.PromoteExpected(w.Anchored), w.Votes[0].PromoteExpected
	so := fmt.Sprintf("%.1f expected over %d minutes", expected, w.Minutes)
	if !(expected > 0) || w.Minutes == 0 {
		return so + ": give the canary more traffic"
	}
	rate := expected / float64(w.Minutes)
	if !w.Anchored {
		return so + fmt.Sprintf(", so a %d-minute window expects about %.0f at this traffic; judge the deployment from its start (since), where the evidence keeps pooling and %.0f suffice, or give the canary more traffic",
			c.WindowMinutes, rate*float64(c.WindowMinutes), math.Ceil(c.PromoteExpected(true)))
	}
	more := math.Ceil((need - expected) / rate)
	if w.Minutes+int(more) > MinutesPerDay {
		return so + fmt.Sprintf(": at this traffic it would take more than a day (%.0f more minutes); give the canary more traffic", more)
	}
	return so + fmt.Sprintf(": about %.0f more minutes at this traffic", more)
}

// nothingBeyond says, for a window whose verdict quantile had tail
// observations but none beyond the bound of the bucket holding it (the
// highest bucket with observations), that the promote test has nothing to
// read there; "" otherwise.
func (w WindowEvidence) nothingBeyond(c Config) string {
	if w.Votes[0].PromoteExpected > 0 || !(w.Expected > 0) {
		return ""
	}
	q := QuantileLabel(c.VerdictQuantile)
	return fmt.Sprintf(" (nothing lies beyond the bucket that holds the %s, the highest with observations, so the histogram cannot show the canary's tail not heavier there: give it buckets above the %s)", q, q)
}

// decide applies the evidence rule.
func (w WindowEvidence) decide(c Config) (Decision, string) {
	// The whole window's rollback comes first, then a recent run's, whose
	// reason does not use the window's tail text: it is built after.
	if !(w.Statistic >= w.Rollback) && w.RecentMinutes > 0 && w.RecentStatistic >= w.RecentBoundary {
		return Rollback, fmt.Sprintf("%s over the last %d minutes%s: evidence %.1f reached the rollback boundary %.1f (the canary's tail has become heavier than the baseline's)",
			tails(w.RecentVotes), w.RecentMinutes, w.discount(), w.RecentStatistic, w.RecentBoundary)
	}
	tail := tails(w.Votes) + " over " + strconv.Itoa(w.Minutes) + " minutes"
	if w.Anchored {
		tail += " since the deployment's start"
	}
	tail += w.discount()
	switch {
	case w.Statistic >= w.Rollback:
		return Rollback, fmt.Sprintf("%s: evidence %.1f reached the rollback boundary %.1f (the canary's tail is heavier than the baseline's)", tail, w.Statistic, w.Rollback)
	case !(w.PromoteStatistic <= -w.Promote):
		return Hold, fmt.Sprintf("%s: evidence %.1f, rollback at %.1f; promote evidence %.1f, promote at %.1f%s", tail, w.Statistic, w.Rollback, w.PromoteStatistic, -w.Promote, w.nothingBeyond(c))
	}
	// Past the promote boundary: promote unless one of its other
	// conditions holds the window.
	hold := func(but string, args ...any) (Decision, string) {
		return Hold, fmt.Sprintf("%s: evidence %.1f is past the promote boundary %.1f, but ", tail, w.PromoteStatistic, -w.Promote) + fmt.Sprintf(but, args...)
	}
	switch {
	case w.LastPromote >= c.MinuteCap():
		return hold("the last minute alone weighs %.1f against the canary, more than a minute counts towards a rollback (%.1f)", w.LastPromote, c.MinuteCap())
	case w.RecentMinutes > 0 && w.RecentStatistic >= c.MinuteCap():
		// Good minutes before a change outweigh its first bad ones in the
		// window's promote sum: a canary whose recent minutes speak against
		// it is not promoted while that evidence builds towards a rollback.
		return hold("its last %d minutes weigh %.1f against the canary, more than a minute counts towards a rollback (%.1f)", w.RecentMinutes, w.RecentStatistic, c.MinuteCap())
	case w.Minutes < c.PromoteMinutes():
		return hold("%d minutes carry evidence and promotion needs %d", w.Minutes, c.PromoteMinutes())
	case !(w.Votes[0].PromoteExpected >= c.PromoteExpected(w.Anchored)):
		return hold("promotion needs the canary to be expected to show %.0f observations beyond the %s's bucket bound, too few to tell a canary from luck below that; %s",
			math.Ceil(c.PromoteExpected(w.Anchored)), QuantileLabel(c.VerdictQuantile), w.tooSmallFor(c))
	default:
		return Promote, fmt.Sprintf("%s: evidence %.1f reached the promote boundary %.1f (the canary's tail is shown less than %.2fx as frequent as the baseline's)", tail, w.PromoteStatistic, -w.Promote, c.PromoteAlternative())
	}
}

// finite says whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// finite says whether every figure of the minute's votes is a finite
// number (MinuteEvidence gives no other; evidence built elsewhere might).
func (e Evidence) finite() bool {
	if !finite(e.Share) {
		return false
	}
	for _, v := range e.Votes {
		if v.Quantile == 0 {
			continue
		}
		sum := v.Canary + v.Baseline + v.DeepCanary + v.DeepBaseline + v.BoundCanary + v.BoundBaseline + v.Promote
		for _, l := range v.LLR {
			sum += l
		}
		if !finite(sum) {
			return false
		}
	}
	return true
}
