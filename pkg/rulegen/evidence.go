package rulegen

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// The evidence rule in PromQL. Every minute's evidence (verdict.MinuteEvidence)
// is recorded in two steps: its counts (evidenceCounts: for each voting
// quantile, each fleet's observations beyond it, and the canary's share),
// then from them one vector of terms, a series per term: for each vote, the
// log likelihood ratio for each tail index, the canary's observations beyond
// the pooled quantile and how many it would have if the fleets were
// identical, and 1 for the minute. Two recording rules sum the recorded terms
// over whole wall-clock minutes: over the window, and over each recent run of
// minutes (verdict.Config.RecentLengths). The statistics, the decision and
// the alerts are read off those series as the group recorded them earlier in
// the same evaluation, at the same evaluation time. The parity test queries
// the same derivations with the recorded series replaced by the expressions
// that record them (windowReads, inlineRows).

const (
	termLabel   = "term"
	recentLabel = "recent_minutes"

	termCanary   = "canary_beyond"   // verdict.Evidence.Canary
	termExpected = "expected_beyond" // verdict.Evidence.Expected()
	termMinutes  = "minutes"         // 1 per minute carrying evidence
	termLength   = "length"          // a recent run's length in minutes
	// quantileLabel tells the votes' residuals, changes and dispersions
	// apart, by their quantiles.
	quantileLabel = "quantile"
)

// VoteTerms are the names of one vote's terms (verdict.Evidence.Votes[i]):
// its log likelihood ratio for each tail index, its canary's observations
// beyond its threshold and how many it would have if the fleets were
// identical. The verdict quantile's vote (the first) has the plain names,
// llr_4, llr_8, llr_16, canary_beyond and expected_beyond; another vote's carry
// its quantile in front: p90_llr_4, p90_canary_beyond, p90_expected_beyond.
type VoteTerms struct {
	LLR [len(verdict.TailIndices)]string
	// Promote names the first tail index's LLR without the cap
	// (verdict.Vote.Promote): promote_llr_2, p90_promote_llr_2.
	Promote          string
	Canary, Expected string
	// Baseline names the baseline's observations beyond the threshold, a
	// term of the minute's counts (evidenceCounts) and of its evidence
	// (the window's dispersion reads its sum).
	Baseline string
	// DeepCanary and DeepBaseline name each fleet's observations beyond
	// verdict.DeepFactor times the threshold, terms of the minute's counts
	// only (verdict.Vote's DeepCanary and DeepBaseline).
	DeepCanary, DeepBaseline string
	// BoundCanary and BoundBaseline name each fleet's observations beyond
	// the bound of the merged histogram's bucket that holds the threshold,
	// terms of the minute's counts only (verdict.Vote's BoundCanary and
	// BoundBaseline): the promote test reads them. PromoteExpected names
	// how many of them an identical canary would have
	// (verdict.Vote.PromoteExpected), a term of the verdict quantile's
	// evidence that the too-small floor reads.
	BoundCanary, BoundBaseline, PromoteExpected string
	// Threshold and Bound name the vote's threshold and the bound of the
	// bucket that holds it among a minute's inputs (evidenceInputs):
	// threshold, threshold_bound, p90_threshold, p90_threshold_bound.
	Threshold, Bound string
}

// TermsOfVote names the terms of the vote at index vote of
// verdict.Config.VoteQuantiles, whose quantile is q. The bound vote
// (verdict.BoundVote) carries "bound_" in front: its counts are the verdict
// quantile's observations beyond its bucket bound, so the verdict quantile's
// BoundCanary, BoundBaseline and PromoteExpected are its Canary, Baseline
// and Expected (bound_canary_beyond, bound_baseline_beyond,
// bound_expected_beyond), and its deep tail is the verdict quantile's.
func TermsOfVote(vote int, q float64) VoteTerms {
	switch {
	case vote == 0:
		t, bound := termsWith(""), termsWith("bound_")
		t.BoundCanary, t.BoundBaseline, t.PromoteExpected = bound.Canary, bound.Baseline, bound.Expected
		return t
	case vote == verdict.BoundVote:
		t, verdictQ := termsWith("bound_"), termsWith("")
		t.DeepCanary, t.DeepBaseline = verdictQ.DeepCanary, verdictQ.DeepBaseline
		return t
	}
	return termsWith(verdict.QuantileLabel(q) + "_")
}

// termsWith is every term name with prefix in front.
func termsWith(prefix string) VoteTerms {
	t := VoteTerms{Canary: prefix + termCanary, Expected: prefix + termExpected, Baseline: prefix + "baseline_beyond",
		DeepCanary: prefix + "canary_deep", DeepBaseline: prefix + "baseline_deep",
		BoundCanary: prefix + "canary_bound", BoundBaseline: prefix + "baseline_bound", PromoteExpected: prefix + "promote_expected",
		Promote: prefix + "promote_llr_" + fmtNum(verdict.PromoteTailIndex), Threshold: prefix + "threshold", Bound: prefix + "threshold_bound"}
	for i, a := range verdict.TailIndices {
		t.LLR[i] = prefix + "llr_" + fmtNum(a)
	}
	return t
}

// vote is one voting quantile of a canary: its index in
// verdict.Config.VoteQuantiles, its quantile and its terms' names.
type vote struct {
	index int
	q     float64
	terms VoteTerms
}

// votes are the canary's voting quantiles, the verdict quantile's first.
func (r resolved) votes() []vote {
	var out []vote
	for i, q := range r.config.VoteQuantiles() {
		if q > 0 {
			out = append(out, vote{index: i, q: q, terms: TermsOfVote(i, q)})
		}
	}
	return out
}

// llrTerms names every vote's LLR terms: the components of the mixture.
func (r resolved) llrTerms() []string {
	var out []string
	for _, v := range r.votes() {
		out = append(out, v.terms.LLR[:]...)
	}
	return out
}

// voteEvidence is one vote's part of a minute: its threshold, the quantile
// of both fleets' histograms merged, present only when finite, and each
// fleet's counted observations beyond it (verdict.Vote's Baseline and
// Canary).
type voteEvidence struct {
	vote                         vote
	threshold                    expr
	beyondBaseline, beyondCanary expr
	// deepBaseline and deepCanary are those beyond verdict.DeepFactor
	// times the threshold (verdict.Vote's DeepBaseline and DeepCanary).
	deepBaseline, deepCanary expr
	// boundBaseline and boundCanary are those beyond the bound of the
	// merged histogram's bucket that holds the threshold (verdict.Vote's
	// BoundBaseline and BoundCanary), for a vote that promotes; nil in a
	// group that judges every canary (it does not decide promotion).
	boundBaseline, boundCanary expr
}

// minuteEvidence are the parts of verdict.MinuteEvidence for one minute,
// evaluated at its end T.
type minuteEvidence struct {
	// votes are in r.votes() order: the verdict quantile's first.
	votes []voteEvidence
	// share is the canary's share of the counted observations, present only
	// when strictly between 0 and 1 (both fleets have observations).
	share expr
	// present holds when the minute carries evidence: verdict.Evidence.Valid
	// (the verdict quantile's threshold is finite), and not a partial or
	// warm-up minute.
	present expr
}

// scrapeScale is verdict.Config.ScrapeScale of the fleet's mean samples per
// series in the minute (its health's samples over its series): n / (n + 1)
// times the range per minute, present only when n > 0.
func (r resolved) scrapeScale(f fleetExprs) expr {
	n := op(f.samplesPerSeries, ">", leaf("0"))
	return op(op(n, "/", op(n, "+", leaf("1"))), "*", num(r.config.RangePerMinute()))
}

// minuteInputs are the figures of a minute that its evidence counts read
// many times: each vote's threshold, the quantile of both fleets merged
// (present only when finite), the bound of the merged histogram's bucket
// that holds it (native histograms; classic buckets find it by rank), and
// each fleet's scrape scale. The group records them once a minute
// (evidenceInputs) and its counts read the records; the parity queries
// compute them inline. PromQL shares no subexpression, so each use inline
// evaluates the merged histogram's quantile again.
type minuteInputs struct {
	threshold, bound func(v vote) expr
	scale            func(f fleetExprs) expr
}

// inlineInputs computes a minute's inputs from its fleets' histograms.
func (r resolved) inlineInputs(m minuteExprs) minuteInputs {
	pooled := op(m.base.hist, "+", m.canary.hist)
	threshold := func(v vote) expr {
		x := fn("histogram_quantile", leaf(verdict.QuantileKey(v.q)), pooled)
		return op(op(x, ">", leaf("-Inf")), "<", leaf("+Inf"))
	}
	return minuteInputs{
		threshold: threshold,
		// The bound is histogram_quantile(1) of the merged histogram trimmed
		// below the threshold: its highest bucket with observations reaching
		// below it.
		bound: func(v vote) expr { return fn("histogram_quantile", leaf("1"), op(pooled, "</", r.cut(threshold(v)))) },
		scale: r.scrapeScale,
	}
}

// recordedInputs reads a minute's inputs from the group's record of them.
func (r resolved) recordedInputs() minuteInputs {
	read := func(term string) expr {
		return r.agg("sum", recordedMinute(r.recordedSeries(r.minuteNames().inputs, termMatcher(term)).flat(), 0))
	}
	return minuteInputs{
		threshold: func(v vote) expr { return read(v.terms.Threshold) },
		bound:     func(v vote) expr { return read(v.terms.Bound) },
		scale:     func(f fleetExprs) expr { return read(scaleTerm(f)) },
	}
}

// scaleTerm names a fleet's scrape scale among a minute's inputs:
// baseline_scale, canary_scale.
func scaleTerm(f fleetExprs) string { return f.name + "_scale" }

// countsBound tells whether a vote counts each fleet's observations beyond
// its bucket bound: the verdict quantile (the bound vote's counts), and a
// vote that promotes in one canary's group (a group that judges every
// canary does not decide promotion).
func (r resolved) countsBound(v vote) bool {
	return v.index == 0 || (r.every == nil && v.index < verdict.PromoteVotes)
}

// evidenceInputs is the record of a minute's inputs, a series per term:
// each vote's threshold and (native) bucket bound, each fleet's scrape
// scale, each present when its figure is (a bound is left out only when it
// is NaN).
func (r resolved) evidenceInputs(m minuteExprs) expr {
	in := r.inlineInputs(m)
	rows := op(labelled(in.scale(m.base), termLabel, scaleTerm(m.base)), "or", labelled(in.scale(m.canary), termLabel, scaleTerm(m.canary)))
	for _, v := range r.votes() {
		if v.index == verdict.BoundVote {
			continue // the verdict quantile's threshold and bound
		}
		rows = op(rows, "or", labelled(in.threshold(v), termLabel, v.terms.Threshold))
		if r.kind != prom.Classic && r.countsBound(v) {
			rows = op(rows, "or", labelled(op(in.bound(v), ">=", leaf("-Inf")), termLabel, v.terms.Bound))
		}
	}
	return rows
}

// cut is a threshold as a trim operator takes it: a scalar for one canary,
// with every canary at once each canary's, matched by its labels.
func (r resolved) cut(e expr) expr {
	if r.every != nil {
		return e
	}
	return fn("scalar", e)
}

func (r resolved) minuteEvidence(m minuteExprs, in minuteInputs) minuteEvidence {
	var e minuteEvidence
	counted := func(f fleetExprs) expr { return op(f.count, "*", in.scale(f)) }
	for _, v := range r.votes() {
		if v.index == verdict.BoundVote {
			// Its counts are the verdict quantile's bound counts, its deep
			// tail the verdict quantile's (TermsOfVote): no figure of its own.
			e.votes = append(e.votes, voteEvidence{vote: v})
			continue
		}
		ve := voteEvidence{vote: v, threshold: in.threshold(v)}
		// Without a finite threshold scalar() is NaN, and so is the count.
		beyond := func(f, other fleetExprs, factor float64) expr {
			hist := r.inCommonLayout(f, other)
			th := ve.threshold
			if factor != 1 {
				th = op(th, "*", num(factor))
			}
			if r.every != nil {
				// Every canary at once: the trim operator cuts each canary's
				// histogram at its own threshold (histogram_fraction takes a
				// scalar), interpolating inside the bucket as it does.
				return op(fn("histogram_count", op(hist, ">/", th)), "*", in.scale(f))
			}
			return op(op(fn("histogram_fraction", fn("scalar", th), leaf("+Inf"), hist), "*", f.count), "*", in.scale(f))
		}
		ve.beyondBaseline, ve.beyondCanary = beyond(m.base, m.canary, 1), beyond(m.canary, m.base, 1)
		ve.deepBaseline, ve.deepCanary = beyond(m.base, m.canary, verdict.DeepFactor), beyond(m.canary, m.base, verdict.DeepFactor)
		if r.countsBound(v) {
			pooled := op(m.base.hist, "+", m.canary.hist)
			ve.boundBaseline, ve.boundCanary = r.beyondBound(m.base, m.canary, pooled, v, in), r.beyondBound(m.canary, m.base, pooled, v, in)
		}
		e.votes = append(e.votes, ve)
	}
	e.share = op(op(op(counted(m.canary), "/", op(counted(m.base), "+", counted(m.canary))), ">", leaf("0")), "<", leaf("1"))
	e.present = m.warm(op(op(e.share, "and "+r.on(), e.votes[0].threshold), "unless "+r.on(), m.partial))
	return e
}

// beyondBound is the fleet's counted observations beyond the bound of the
// bucket of both fleets' merged histogram (pooled) that holds vote v's
// threshold (histogram.BucketBound): whole buckets, as the engine counts
// them. Native: the fleet's histogram is trimmed at the bound (minuteInputs).
// Classic: the merged histogram's lowest finite le whose cumulative count
// reaches the threshold's rank (q times the merged count), as
// histogram_quantile finds the bucket, or its highest finite le when only
// +Inf does (the threshold is then that le); the fleet's count less its
// cumulative count there.
func (r resolved) beyondBound(f, other fleetExprs, pooled expr, v vote, in minuteInputs) expr {
	hist := r.inCommonLayout(f, other)
	if r.kind != prom.Classic {
		return op(fn("histogram_count", op(hist, ">/", r.cut(in.bound(v)))), "*", in.scale(f))
	}
	inf := leaf(`label_replace(vector(0), "le", "+Inf", "", "")`)
	rank := fn("scalar", op(fn("max", pooled), "*", leaf(verdict.QuantileKey(v.q))))
	reached := op(op(hist, "and on(le)", op(pooled, ">=", rank)), "unless on(le)", inf)
	atBound := op(fn("min", reached), "or", fn("max", op(hist, "unless on(le)", inf)))
	return op(op(f.count, "-", atBound), "*", in.scale(f))
}

// inCommonLayout is the fleet's histogram of the minute in the layout both
// fleets have, as the threshold's a + b reads it and histogram.Common does:
// a native histogram plus none of the other's observations (0 * other) is
// reduced to the coarser schema; classic buckets are cut to the le bounds
// both have.
func (r resolved) inCommonLayout(f, other fleetExprs) expr {
	if r.kind == prom.Classic {
		return op(f.hist, "and", other.hist)
	}
	return op(f.hist, "+", op(leaf("0"), "*", other.hist))
}

// constants is a constant vector, one series per tail index valued
// value(a), labelled with the vote's term for that index.
func (r resolved) constants(v vote, value func(a float64) float64) expr {
	var out expr
	for i, a := range verdict.TailIndices {
		c := labelled(leaf("vector("+numText(value(a))+")"), termLabel, v.terms.LLR[i])
		if out == nil {
			out = c
		} else {
			out = op(out, "or", c)
		}
	}
	return out
}

// termShare names the canary's share among a minute's counts.
const termShare = "share"

// evidenceCounts is what a minute's evidence is computed from, a series per
// term: each vote's canary and baseline observations beyond its threshold
// (absent when the threshold is not finite) and the canary's share; nothing
// when the minute carries no evidence. Recorded once, so that the terms
// below read each figure instead of computing it again for every use.
func (r resolved) evidenceCounts(e minuteEvidence) expr {
	rows := labelled(e.share, termLabel, termShare)
	for _, v := range e.votes {
		if v.beyondCanary == nil {
			continue // the bound vote: the verdict quantile's rows
		}
		rows = op(op(rows, "or", labelled(v.beyondCanary, termLabel, v.vote.terms.Canary)), "or", labelled(v.beyondBaseline, termLabel, v.vote.terms.Baseline))
		rows = op(op(rows, "or", labelled(v.deepCanary, termLabel, v.vote.terms.DeepCanary)), "or", labelled(v.deepBaseline, termLabel, v.vote.terms.DeepBaseline))
		if v.boundCanary != nil {
			rows = op(op(rows, "or", labelled(v.boundCanary, termLabel, v.vote.terms.BoundCanary)), "or", labelled(v.boundBaseline, termLabel, v.vote.terms.BoundBaseline))
		}
	}
	// > -Inf drops NaN (the counts of a vote whose threshold is not finite).
	return op(op(rows, ">", leaf("-Inf")), "and "+r.on(), e.present)
}

// voteTerms are one vote's rows of a minute's evidence, from its counts k
// and b, those of them in the deep tail kd and bd, those beyond the bound
// of the bucket holding its threshold kb and bb (the promote test's), and
// the canary's share f.
// With A an alternative, verdict.LLR is k ln(theta/f) + b ln((1-theta)/(1-f))
// with theta = fA/(fA+1-f), which is k ln A - (k+b) ln(1 + f(A-1)), held as
// verdict's Config.voteLLR holds it (r.held). A vote other than the verdict
// quantile's without counts (its threshold was not finite) abstains: its
// LLRs are 0 (a likelihood ratio of 1, as verdict counts it in the mixture).
func (r resolved) voteTerms(v vote, k, b, kd, bd, kb, bb, share expr) expr {
	if r.every != nil {
		return r.everyVoteTerms(v, k, b, kd, bd, share)
	}
	alts := r.constants(v, func(a float64) float64 { return math.Pow(r.config.RollbackThreshold, a) })
	// "group_right()" with its parentheses: "group_right (" would read what
	// follows as label names.
	const each = "* on() group_right()"
	llrs := func(k, b expr) expr {
		return op(op(k, each, fn("ln", alts)), "-", op(op(k, "+", b), each, fn("ln", op(leaf("1"), "+", op(share, each, op(alts, "-", leaf("1")))))))
	}
	llr := r.held(llrs(k, b), llrs(shallow(k, kd), shallow(b, bd)))
	if v.index > 0 {
		llr = op(llr, "or", r.constants(v, func(float64) float64 { return 0 }))
	}
	return r.withPromote(v, kb, bb, kd, bd, share, op(llr, "or", countTerms(v, k, b, share)))
}

// beyondWhat says where the votes count observations, for descriptions:
// "the p99 and the p90 of both fleets merged, and the bound of the bucket
// that holds the p99".
func (r resolved) beyondWhat() string {
	var qs []string
	bound := ""
	for _, v := range r.votes() {
		if v.index == verdict.BoundVote {
			bound = ", and the bound of the bucket that holds the " + verdict.QuantileLabel(v.q)
		} else {
			qs = append(qs, "the "+verdict.QuantileLabel(v.q))
		}
	}
	return strings.Join(qs, " and ") + " of both fleets merged" + bound
}

// shallow is a fleet's observations beyond a vote's threshold short of the
// deep tail, never fewer than none (the bound vote's deep tail, the verdict
// quantile's, can begin below its bound).
func shallow(k, kd expr) expr { return fn("clamp_min", op(k, "-", kd), leaf("0")) }

// countTerms are a vote's counts among the minute's terms: the canary's and
// the baseline's observations beyond its threshold and how many of them an
// identical canary would have; the window's dispersion reads their sums
// (ChanceVariance).
func countTerms(v vote, k, b, share expr) expr {
	return op(op(labelled(k, termLabel, v.terms.Canary),
		"or", labelled(b, termLabel, v.terms.Baseline)),
		"or", labelled(op(op(k, "+", b), "*", share), termLabel, v.terms.Expected))
}

// withPromote adds to a promoting vote's rows (the first
// verdict.PromoteVotes) its first tail index's LLR without the cap of the
// observations beyond its bucket bound, kb and bb, held from below as
// verdict's Config.voteLLR holds it: at least the smaller of minus
// DeepPromoteCap and the LLR of those short of the deep tail (kd and bd
// are in it), series by series (verdict.Vote.Promote), 0 when it abstains.
// How many of the verdict quantile's an identical canary would have
// (verdict.Vote.PromoteExpected) is the bound vote's Expected term.
func (r resolved) withPromote(v vote, kb, bb, kd, bd, share, rows expr) expr {
	if v.index >= verdict.PromoteVotes {
		return rows
	}
	alt := r.config.PromoteAlternative()
	limit := fn("clamp_max", llrOf(shallow(kb, kd), shallow(bb, bd), share, alt), num(-r.config.DeepPromoteCap()))
	llr := seriesWise("max", llrOf(kb, bb, share, alt), limit)
	if v.index > 0 {
		llr = op(llr, "or", op(share, "*", leaf("0")))
	}
	return op(rows, "or", labelled(llr, termLabel, v.terms.Promote))
}

// llrOf is verdict.LLR of one alternative alt written with numbers,
// k ln alt - (k+b) ln(1 + share (alt-1)), for k, b and share of one series
// each (or of one series per canary, matched by their labels).
func llrOf(k, b, share expr, alt float64) expr {
	return op(op(k, "*", leaf(numText(math.Log(alt)))), "-", op(op(k, "+", b), "*", fn("ln", op(leaf("1"), "+", op(share, "*", leaf(numText(alt-1)))))))
}

// held is a minute's log likelihood ratios as verdict's Config.voteLLR holds
// them: at most MinuteCap, and at most the larger of DeepMinuteCap and the
// LLRs band of the observations short of the deep tail, series by series.
func (r resolved) held(llr, band expr) expr {
	return seriesWise("min", fn("clamp_max", llr, num(r.config.MinuteCap())), fn("clamp_min", band, num(r.config.DeepMinuteCap())))
}

// heldLabel tells apart the two figures seriesWise compares.
const heldLabel = "pairwise_held"

// seriesWise is the smaller (agg "min") or the larger ("max") of a and b,
// series by series: both told apart by a label of their own and aggregated
// without it, so that each is evaluated once (PromQL shares no
// subexpression, and a rule costs what its selectors read). a and b must
// have the same labels and be present together, as a vote's LLRs of all its
// observations beyond the threshold and of those short of the deep tail are:
// both are computed from the same minute's counts.
func seriesWise(agg string, a, b expr) expr {
	return call{fn: agg + " without (" + heldLabel + ") ", args: []expr{op(labelled(a, heldLabel, "a"), "or", labelled(b, heldLabel, "b"))}}
}

// terms is the minute's evidence, a series per term, computed from its
// counts (evidenceCounts, recorded or inline); nothing when the minute
// carries none.
func (r resolved) terms(counts termRows) expr {
	// sum() of the one series a term has drops its term label, so that the
	// figures combine.
	figure := func(term string) expr { return r.agg("sum", counts.rows(term)) }
	share := figure(termShare)
	one := expr(leaf("vector(1)"))
	if r.every != nil {
		one = op(op(share, "*", leaf("0")), "+", leaf("1"))
	}
	rows := labelled(one, termLabel, termMinutes)
	for _, v := range r.votes() {
		rows = op(rows, "or", r.voteTerms(v, figure(v.terms.Canary), figure(v.terms.Baseline), figure(v.terms.DeepCanary), figure(v.terms.DeepBaseline),
			figure(v.terms.BoundCanary), figure(v.terms.BoundBaseline), share))
	}
	return op(rows, "and "+r.on(), share)
}

// The dispersion (verdict.VoteSums.Dispersion) in PromQL, three series a
// vote each (label quantile): each minute's standardized residual, computed
// from its recorded counts (residuals); its capped squared change from the
// minute before (changes); and, from those changes over the window's minutes
// after its first, the window's dispersion (dispersions), which divides the
// vote's positive LLR sums over the window and over the recent runs
// (windowReads.discounted).

// dispersed reports whether a window can have a dispersion other than 1:
// its minutes after the first can hold verdict.MinChanges changes.
func (r resolved) dispersed() bool { return r.config.WindowMinutes-1 >= verdict.MinChanges }

// residuals are verdict.Vote.Residual of each vote of a minute's counts,
// present only when an observation lies beyond its threshold (> -Inf drops
// the NaN of none).
func (r resolved) residuals(counts termRows) expr {
	figure := func(term string) expr { return r.agg("sum", counts.rows(term)) }
	f := figure(termShare)
	var out expr
	for _, v := range r.votes() {
		k := op(figure(v.terms.Baseline), "+", figure(v.terms.Canary))
		res := op(op(op(figure(v.terms.Canary), "-", op(f, "*", k)), "/", fn("sqrt", op(op(f, "*", op(leaf("1"), "-", f)), "*", k))), ">", leaf("-Inf"))
		out = orOf(out, labelled(res, quantileLabel, verdict.VoteLabel(v.index, v.q)))
	}
	return out
}

// changes are each vote's capped squared change of residual from the minute
// before (verdict.VoteSums.Change), present when both minutes have one.
func (r resolved) changes() expr {
	res := r.recordedSeries(r.minuteNames().residuals).flat()
	return fn("clamp_max", op(op(recordedMinute(res, 0), "-", recordedMinute(res, 1)), "^", leaf("2")), num(r.config.ChangeCap()))
}

// dispersions are each vote's verdict.VoteSums.Dispersion over the window,
// read from the changes of its minutes after the first (a range one minute
// shorter than the window): the mean change over 2 and over the window's
// chance variance (verdict.VoteSums.ChanceVariance, from its sums of the
// vote's counts) when there are at least verdict.MinChanges and it is beyond
// chance, else 1 wherever the window carries evidence (the minutes term of
// its sums).
func (r resolved) dispersions(sums termRows) expr {
	changes := leaf(fmt.Sprintf("%s[%dm]", r.recordedSeries(r.minuteNames().changes).flat(), r.config.WindowMinutes-1))
	sum, n := fn("sum_over_time", changes), fn("count_over_time", changes)
	mean := r.agg("sum", op(op(sum, "/", op(leaf("2"), "*", n)), "and", op(n, ">=", leaf(strconv.Itoa(verdict.MinChanges)))), quantileLabel)
	beyond := r.agg("sum", op(leaf("1"), "+", op(num(r.config.DispersionZ()), "*", fn("sqrt", op(leaf("3"), "/", n)))), quantileLabel)
	figure := func(term string) expr { return r.agg("sum", sums.rows(term)) }
	one := op(op(figure(termMinutes), "*", leaf("0")), "+", leaf("1"))
	var chance, ones expr
	for _, v := range r.votes() {
		// verdict.VoteSums.ChanceVariance: C B / (E (C + B - E)), at least 1,
		// and 1 when not finite (< +Inf drops NaN too).
		c, b, e := figure(v.terms.Canary), figure(v.terms.Baseline), figure(v.terms.Expected)
		variance := op(fn("clamp_min", op(op(c, "*", b), "/", op(e, "*", op(op(c, "+", b), "-", e))), leaf("1")), "<", leaf("+Inf"))
		chance = orOf(chance, labelled(op(variance, "or", one), quantileLabel, verdict.VoteLabel(v.index, v.q)))
		ones = orOf(ones, labelled(one, quantileLabel, verdict.VoteLabel(v.index, v.q)))
	}
	return op(op(op(mean, "/", chance), ">", beyond), "or", ones)
}

// dispersionRules record each minute's residuals and changes, when the
// window can have a dispersion.
func (r resolved) dispersionRules(labels [][2]string) []rule {
	if !r.dispersed() {
		return nil
	}
	n := r.minuteNames()
	return []rule{
		{record: n.residuals, expr: r.residuals(lastRows{r, n.counts}), labels: labels,
			comment: "evidence rule: each vote's canary tail count of the minute standardized against identical fleets, (k - fK) / sqrt(f(1-f)K) of its k of the K observations beyond the threshold at share f (label " + quantileLabel + ")"},
		{record: n.changes, expr: r.changes(), labels: labels,
			comment: fmt.Sprintf("its squared change from the minute before, at most %s, when both minutes have one; the window's dispersion reads them", fmtBoundary(r.config.ChangeCap()))},
	}
}

// orOf is a or b, b when a is nil.
func orOf(a, b expr) expr {
	if a == nil {
		return b
	}
	return op(a, "or", b)
}

// windowSums sums the recorded terms over the window's minutes.
func (r resolved) windowSums() expr {
	return r.agg("sum", fn("sum_over_time", r.overWindow(r.minuteNames().terms, 0)), termLabel)
}

// recentSums sums the recorded terms over each recent run of minutes ending
// with the window, labelled with the run's length, plus the length itself.
func (r resolved) recentSums() expr {
	var out expr
	// Only the LLR terms: a run's statistic needs no more, and the one run
	// a description names has its counts summed by the template itself.
	llr := termMatcher(r.llrTerms()...)
	for _, l := range r.config.RecentLengths() {
		length := strconv.Itoa(l)
		terms := leaf(fmt.Sprintf("%s[%dm]", r.recordedSeries(r.minuteNames().terms, llr).flat(), l))
		sums := r.agg("sum", fn("sum_over_time", terms), termLabel)
		if r.every == nil {
			sums = op(sums, "or", labelled(leaf("vector("+length+")"), termLabel, termLength))
		}
		run := labelled(sums, recentLabel, length)
		if out == nil {
			out = run
		} else {
			out = op(out, "or", run)
		}
	}
	return out
}

// termRows picks terms out of a vector of sums.
type termRows interface{ rows(terms ...string) expr }

// recordedRows are a series the group records: terms picked by matchers.
type recordedRows struct {
	r    resolved
	name string
}

func (s recordedRows) rows(terms ...string) expr {
	return s.r.recordedSeries(s.name, termMatcher(terms...))
}

// termMatcher selects the terms by the term label.
func termMatcher(terms ...string) selector.Matcher {
	if len(terms) == 1 {
		return selector.Matcher{Name: termLabel, Op: selector.Equal, Value: terms[0]}
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = regexp.QuoteMeta(t) // p99.9_llr_4: the dot is a dot
	}
	return selector.Matcher{Name: termLabel, Op: selector.Regex, Value: strings.Join(quoted, "|")}
}

// lastRows are the sample a series the group records has at the
// evaluation time: terms picked by matchers.
type lastRows struct {
	r    resolved
	name string
}

func (s lastRows) rows(terms ...string) expr {
	return recordedMinute(s.r.recordedSeries(s.name, termMatcher(terms...)).flat(), 0)
}

// inlineRows are the expression itself: terms picked by joining a constant
// vector that holds them.
type inlineRows struct{ e expr }

func (s inlineRows) rows(terms ...string) expr {
	var pick expr
	for _, t := range terms {
		one := labelled(leaf("vector(1)"), termLabel, t)
		if pick == nil {
			pick = one
		} else {
			pick = op(pick, "or", one)
		}
	}
	return op(s.e, "and on("+termLabel+")", pick)
}

// windowReads are what the decision reads: recorded, or computed inline.
type windowReads struct {
	sums, recent termRows
	// last are the terms of the window's last minute.
	last  termRows
	flags expr
	// llr names every vote's LLR terms (the mixture's components), promote
	// the promoting votes' first tail index's, expectedTerm the verdict
	// quantile's expected observations beyond its bucket bound (verdict's
	// PromoteExpected floor reads its sum).
	llr, promote []string
	expectedTerm string
	// by are the identifying labels of every canary of a generic group
	// (resolved.every), nil for one canary.
	by []string
	// votes are the canary's votes and phi each one's dispersion over the
	// window; nil when the window is too short to have one.
	votes []vote
	phi   func(vote) expr
}

// discounted are the LLR rows of sums (the window's or the recent runs')
// with each vote's positive ones divided by its dispersion over the window,
// as verdict discounts them (promoteStatistic divides the negative promote
// sums).
func (w windowReads) discounted(sums termRows) expr {
	if w.phi == nil {
		return sums.rows(w.llr...)
	}
	var out expr
	for _, v := range w.votes {
		rows := sums.rows(v.terms.LLR[:]...)
		out = orOf(out, w.divided(rows, ">", "<=", w.phi(v)))
	}
	return out
}

// divided are rows with those that compare cmp to 0 divided by phi (one
// series a canary), the others (rest 0) as they are.
func (w windowReads) divided(rows expr, cmp, rest string, phi expr) expr {
	return op(op(op(rows, cmp, leaf("0")), "/ on("+strings.Join(w.by, ", ")+") group_left()", phi), "or", op(rows, rest, leaf("0")))
}

// mixture is verdict.Mixture of each group of summed LLRs (by labels): ln of
// the mean of exp, each sum held within ±verdict.MixtureLimit, so that no exp
// overflows and the sums are read once.
func mixture(llr expr, labels []string, terms int) expr {
	by := ""
	if len(labels) > 0 {
		by = " by (" + strings.Join(labels, ", ") + ")"
	}
	limit := strconv.Itoa(verdict.MixtureLimit)
	exp := fn("exp", fn("clamp", llr, leaf("-"+limit), leaf(limit)))
	if terms == verdict.Components {
		return fn("ln", call{fn: "avg" + by, args: []expr{exp}})
	}
	// A vote the config leaves out (the decade below of a verdict quantile
	// under p95) is verdict's likelihood ratio 1 in every minute: its
	// components, absent here, count as exp(0) = 1 in a mean over all
	// verdict.Components.
	sum := call{fn: "sum" + by, args: []expr{exp}}
	return fn("ln", op(op(sum, "+", leaf(strconv.Itoa(verdict.Components-terms))), "/", leaf(strconv.Itoa(verdict.Components))))
}

// statistic is verdict.WindowEvidence.Statistic: the mixture of the summed
// LLRs, 0 without evidence.
func (w windowReads) statistic() expr {
	if w.by != nil {
		return mixture(w.discounted(w.sums), w.by, len(w.llr))
	}
	return op(mixture(w.discounted(w.sums), nil, len(w.llr)), "or", leaf("vector(0)"))
}

// recentStatistics is the mixture of each recent run (label recent_minutes);
// a run without evidence has no series (its statistic, 0, rolls nothing back).
func (w windowReads) recentStatistics() expr {
	return mixture(w.discounted(w.recent), append(slices.Clone(w.by), recentLabel), len(w.llr))
}

// promoteStatistic is the largest of the promoting votes' (the first
// verdict.PromoteVotes) summed LLRs of the first tail index, each negative
// one divided by its vote's dispersion, 0 without evidence.
func (w windowReads) promoteStatistic() expr {
	if w.phi == nil {
		return op(fn("max", w.sums.rows(w.promote...)), "or", leaf("vector(0)"))
	}
	var rows expr
	for _, v := range w.votes {
		if v.index < verdict.PromoteVotes {
			sum := w.sums.rows(v.terms.Promote)
			rows = orOf(rows, w.divided(sum, "<", ">=", w.phi(v)))
		}
	}
	return op(fn("max", rows), "or", leaf("vector(0)"))
}

// lastPromote is verdict.WindowEvidence.LastPromote: the last minute's
// largest promoting term, nothing when it carries no evidence.
func (w windowReads) lastPromote() expr {
	return fn("max", w.last.rows(w.promote...))
}

// expected is the verdict quantile's pooled PromoteExpected over the window
// (verdict.VoteSums.PromoteExpected of its first vote), 0 without evidence.
func (w windowReads) expected() expr {
	return op(fn("sum", w.sums.rows(w.expectedTerm)), "or", leaf("vector(0)"))
}

// minutes counts the window's minutes carrying evidence.
func (w windowReads) minutes() expr {
	return op(fn("sum", w.sums.rows(termMinutes)), "or", leaf("vector(0)"))
}

// evidenceDecision is verdict's evidence rule: rollback when the window's
// statistic or a recent run's reaches its boundary; else promote when the
// promote statistic is at or below minus its boundary, PromoteMinutes minutes
// carry evidence, the canary was expected to show PromoteExpected tail
// observations, no flag is raised, and the last minute's promote terms and
// every recent run's statistic stay below verdict's MinuteCap; else hold. The rule pack never knows
// a deployment's start, so the boundaries are the sliding ones.
func (r resolved) evidenceDecision(statistic, recent, promote, lastPromote, minutes, expected, flags expr) expr {
	c := r.config
	code := func(d verdict.Decision) expr { return leaf(fmt.Sprintf("vector(%d)", d.Code())) }
	rollback := op(op(statistic, ">=", num(c.RollbackBoundary(false))), "or", op(recent, ">=", num(c.RecentBoundary(false))))
	promoteNow := op(op(op(op(op(code(verdict.Promote), "and on()", op(promote, "<=", num(-c.PromoteBoundary(false)))),
		"and on()", op(op(minutes, ">=", leaf(strconv.Itoa(c.PromoteMinutes()))), "and on()", op(expected, ">=", num(c.PromoteExpected(false))))), "unless on()", flags),
		"unless on()", op(lastPromote, ">=", num(c.MinuteCap()))), "unless on()", op(recent, ">=", num(c.MinuteCap())))
	return op(op(op(code(verdict.Rollback), "and on()", rollback), "or", promoteNow), "or", code(verdict.Hold))
}

// evidenceRollback is the rollback alert's condition: the window's statistic
// when it reached its boundary, else the highest recent run's that did.
func (r resolved) evidenceRollback(statistic, recent expr) expr {
	c := r.config
	if r.every != nil {
		return op(r.agg("max", op(statistic, ">=", num(c.RollbackBoundary(false)))), "or "+r.on(), r.agg("max", op(recent, ">=", num(c.RecentBoundary(false)))))
	}
	return op(op(statistic, ">=", num(c.RollbackBoundary(false))), "or on()", fn("max", op(recent, ">=", num(c.RecentBoundary(false)))))
}

// evidenceExprs are the evidence rule's expressions of one canary.
type evidenceExprs struct {
	minute minuteEvidence
	// terms is the minute's vector of terms; sums and recent their sums over
	// the window and the recent runs, flags the window's flags; dispersion
	// each vote's over the window (label quantile) from the recorded sums,
	// inlineDispersion the same from the inline ones, both nil when the
	// window is too short to have one.
	terms, sums, recent, flags, dispersion, inlineDispersion expr
	// inline reads the window from raw data, recorded from the series.
	inline, recorded windowReads
	names            evidenceNames
}

// evidenceNames are the names of the evidence rule's recording rules.
type evidenceNames struct {
	sums, recent, dispersion, flags, statistic, recentStatistic, promote, minutes, decision string
}

func (r resolved) evidenceExprs(m minuteExprs) evidenceExprs {
	window := strconv.Itoa(r.config.WindowMinutes) + "m"
	e := evidenceExprs{minute: r.minuteEvidence(m, r.inlineInputs(m)), flags: r.windowFlags()}
	e.terms = r.terms(inlineRows{r.evidenceCounts(e.minute)})
	e.sums, e.recent = r.windowSums(), r.recentSums()
	e.names = evidenceNames{
		sums:            RecordName(r.Metric, "evidence_sums_"+window, false),
		recent:          RecordName(r.Metric, "recent_evidence_sums", false),
		dispersion:      RecordName(r.Metric, "evidence_dispersion_"+window, false),
		flags:           RecordName(r.Metric, "flags_"+window, false),
		statistic:       RecordName(r.Metric, "evidence_"+window, false),
		recentStatistic: RecordName(r.Metric, "recent_evidence", false),
		promote:         RecordName(r.Metric, "promote_evidence_"+window, false),
		minutes:         RecordName(r.Metric, "evidence_minutes_"+window, false),
		decision:        RecordName(r.Metric, "decision_"+window, false),
	}
	llr := r.llrTerms()
	var promote []string
	for _, v := range r.votes() {
		if v.index < verdict.PromoteVotes {
			promote = append(promote, v.terms.Promote)
		}
	}
	expected := r.votes()[0].terms.PromoteExpected
	e.inline = windowReads{sums: inlineRows{e.sums}, recent: inlineRows{e.recent}, last: inlineRows{e.terms}, flags: e.flags, llr: llr, promote: promote, expectedTerm: expected, by: r.every}
	e.recorded = windowReads{sums: recordedRows{r, e.names.sums}, recent: recordedRows{r, e.names.recent}, last: lastRows{r, r.minuteNames().terms},
		flags: r.recordedSeries(e.names.flags), llr: llr, promote: promote, expectedTerm: expected, by: r.every}
	if r.dispersed() {
		e.inline.votes, e.recorded.votes = r.votes(), r.votes()
		e.dispersion = r.dispersions(recordedRows{r, e.names.sums})
		e.inlineDispersion = r.dispersions(inlineRows{e.sums})
		e.inline.phi = func(v vote) expr {
			return op(e.inlineDispersion, "and on("+quantileLabel+")", labelled(leaf("vector(1)"), quantileLabel, verdict.VoteLabel(v.index, v.q)))
		}
		e.recorded.phi = func(v vote) expr { return r.recordedSeries(e.names.dispersion, quantileOf(v)) }
	}
	return e
}

// quantileOf selects a vote's series of the recorded dispersion.
func quantileOf(v vote) selector.Matcher {
	return selector.Matcher{Name: quantileLabel, Op: selector.Equal, Value: verdict.VoteLabel(v.index, v.q)}
}

// recordedSeries selects a series this canary's group records.
func (r resolved) recordedSeries(name string, extra ...selector.Matcher) expr {
	sel := append(selector.Selector{{Name: "canary", Op: selector.Equal, Value: r.Name}}, extra...)
	if r.every != nil {
		sel[0] = selector.Matcher{Name: genericLabel, Op: selector.Equal, Value: r.generic.Name}
	}
	return leaf(sel.With(name))
}

// evidenceRules are the evidence rule's recording rules and its rollback and
// promote alerts, in evaluation order: a rule reads only series recorded
// above it in the group.
func (r resolved) evidenceRules(m minuteExprs, labels [][2]string, runbook func(string) [2]string) (records, alerts []rule) {
	c := r.config
	e := r.evidenceExprs(m)
	n := e.names
	window := strconv.Itoa(c.WindowMinutes) + "m"
	vq := verdict.QuantileLabel(c.VerdictQuantile)
	indices := make([]string, len(verdict.TailIndices))
	for i, a := range verdict.TailIndices {
		indices[i] = fmtNum(a)
	}
	lengths := make([]string, 0, len(c.RecentLengths()))
	for _, l := range c.RecentLengths() {
		lengths = append(lengths, strconv.Itoa(l))
	}
	rb, recentB, pb := c.RollbackBoundary(false), c.RecentBoundary(false), c.PromoteBoundary(false)
	rec := e.recorded
	votes := r.votes()
	var voteNames, promoteNames []string
	for _, v := range votes {
		voteNames = append(voteNames, verdict.VoteLabel(v.index, v.q))
		if v.index < verdict.PromoteVotes {
			promoteNames = append(promoteNames, verdict.VoteLabel(v.index, v.q))
		}
	}
	quantiles := strings.Join(voteNames, ", ")
	terms := fmt.Sprintf("term %s: the log likelihood ratio of a canary tail %sx^a as frequent as the baseline's against identical fleets (a = %s) beyond the %s of both fleets merged, each minute's at most %s (the verdict quantile's terms unprefixed, the decade below's prefixed with its quantile, the bound vote's, beyond the bound of the bucket that holds the verdict quantile, with bound_); %s: tail index %s's without that cap, for promotion; %s: the canary's observations beyond it; %s: how many it would have if the fleets were identical; %s: minutes carrying evidence",
		strings.Join(r.llrTerms(), ", "), fmtNum(c.RollbackThreshold), strings.Join(indices, ", "), quantiles, fmtBoundary(c.MinuteCap()), votes[0].terms.Promote, indices[0], termCanary, termExpected, termMinutes)
	records = []rule{
		{record: n.sums, expr: e.sums, labels: labels,
			comment: fmt.Sprintf("evidence rule: each minute's evidence summed over the last %s of wall-clock minutes, by %s", window, terms)},
		{record: n.recent, expr: e.recent, labels: labels,
			comment: fmt.Sprintf("the same over the recent runs of the last %s minutes (label %s; term %s: the run's length)", strings.Join(lengths, ", "), recentLabel, termLength)},
	}
	if e.dispersion != nil {
		records = append(records, rule{record: n.dispersion, expr: e.dispersion, labels: labels,
			comment: fmt.Sprintf("how much more each vote's canary tail counts vary from minute to minute over the window than chance lets them (label %s): the mean of its changes after the window's first minute over 2, when there are at least %d and it is beyond 1 + %s sqrt(3 / changes), else 1; its evidence either way (that the canary's tail is heavier, that it is not) is divided by it",
				quantileLabel, verdict.MinChanges, fmtBoundary(c.DispersionZ()))})
	}
	records = append(records, []rule{
		{record: n.statistic, expr: rec.statistic(), labels: labels,
			comment: fmt.Sprintf("evidence that the canary's tail is heavier, over the window: ln of the mean likelihood ratio of every quantile's tail indices (%s), each quantile's evidence divided by its dispersion; rollback at %s", quantiles, fmtBoundary(rb))},
		{record: n.recentStatistic, expr: rec.recentStatistics(), labels: labels,
			comment: fmt.Sprintf("the same for each recent run; rollback when one reaches %s", fmtBoundary(recentB))},
		{record: n.promote, expr: rec.promoteStatistic(), labels: labels,
			comment: fmt.Sprintf("evidence for promotion: the larger of the summed log likelihood ratios of tail index %s beyond the %s, without the minutes' cap; promote at or below %s", indices[0], strings.Join(promoteNames, " and the "), fmtBoundary(-pb))},
		{record: n.minutes, expr: rec.minutes(), labels: labels,
			comment: fmt.Sprintf("minutes of the window carrying evidence; promotion needs %d", c.PromoteMinutes())},
		{record: n.decision, labels: labels,
			expr:    r.evidenceDecision(r.recordedSeries(n.statistic), r.recordedSeries(n.recentStatistic), r.recordedSeries(n.promote), rec.lastPromote(), r.recordedSeries(n.minutes), rec.expected(), rec.flags),
			comment: fmt.Sprintf("window decision: 0 promote, 1 hold, 2 rollback (evidence rule; rollback checked first; a flagged window never promotes, nor one whose last minute alone, or one of whose recent runs, weighs the cap or more against the canary, nor one where the canary was expected to show fewer than %s observations beyond the %s)", fmtBoundary(c.PromoteExpected(false)), vq)},
	}...)

	// The first sentence of each description is the Go engine's reason for
	// the decision (verdict's evidence rule), word for word.
	name := templateSafe(r.Name)
	fleets := fmt.Sprintf("Canary %s, baseline %s.", templateSafe(r.canary.String()), templateSafe(r.baseline.String()))
	method := fmt.Sprintf("Each wall-clock minute, the observations of %s beyond %s are the canary's in proportion to its share of requests if the fleets are identical; the evidence weighs the canary's part of them against tails %sx^a as frequent (a = %s), over the last %d minutes and over their last %s minutes.",
		r.Metric, r.beyondWhat(), fmtNum(c.RollbackThreshold), strings.Join(indices, ", "), c.WindowMinutes, strings.Join(lengths, ", "))
	sumsOf := func(term string) selector.Matcher {
		return selector.Matcher{Name: termLabel, Op: selector.Equal, Value: term}
	}
	// tails is verdict's "canary p99 exceedances A vs B expected (p90 C vs
	// D)" with value(term, format) printing a term's value.
	// (verdict leaves out a vote that abstained in every minute of the
	// window; here its figures print as "?". A vote abstains only when its
	// threshold is not finite, which a histogram with a finite highest
	// bucket never gives.)
	tails := func(value func(term, format string) string) string {
		out := fmt.Sprintf("canary %s exceedances %s vs %s expected", vq, value(votes[0].terms.Canary, "%.0f"), value(votes[0].terms.Expected, "%.1f"))
		var others []string
		for _, v := range votes[1:] {
			others = append(others, fmt.Sprintf("%s %s vs %s", verdict.VoteLabel(v.index, v.q), value(v.terms.Canary, "%.0f"), value(v.terms.Expected, "%.1f")))
		}
		if len(others) > 0 {
			out += " (" + strings.Join(others, ", ") + ")"
		}
		return out
	}
	windowTail := fmt.Sprintf("%s over %s minutes",
		tails(func(term, format string) string { return templateValue(r.recordedSeries(n.sums, sumsOf(term)), format) }),
		templateValue(r.recordedSeries(n.minutes), "%.0f"))
	// verdict reports the recent run with the highest statistic, the
	// shortest of equals.
	recentStats := r.recordedSeries(n.recentStatistic).flat()
	best := fmt.Sprintf("min(%s and on(%s) (%s == on() group_left() max(%s)))", r.recordedSeries(n.recent, sumsOf(termLength)).flat(), recentLabel, recentStats, recentStats)
	// A term summed over the run's minutes, by a printf format of its
	// length (names of metrics and canaries hold no %): the recent runs'
	// sums keep only the LLRs.
	// The template's query runs at the evaluation time, not query_offset
	// before it as the rules do: the run's minutes end that far back.
	offset := ""
	if r.queryOffset > 0 {
		offset = fmt.Sprintf(" offset %ds", r.queryOffset)
	}
	runValue := func(term, format string) string {
		sum := fmt.Sprintf("sum(sum_over_time(%s[%%sm]%s))", r.recordedSeries(r.minuteNames().terms, sumsOf(term)).flat(), offset)
		return fmt.Sprintf("{{ with printf %s $run | query }}{{ . | first | value | printf %q }}{{ else }}?{{ end }}", strconv.Quote(sum), format)
	}
	recentTail := fmt.Sprintf("{{ with query %s }}{{ $run := . | first | value | printf \"%%.0f\" }}%s over the last {{ $run }} minutes{{ else }}?{{ end }}",
		strconv.Quote(best), tails(runValue))
	// verdict's discount clauses, a vote's when its dispersion is beyond 1.
	discount := ""
	if e.dispersion != nil {
		for _, v := range votes {
			discount += fmt.Sprintf("{{ with query %s }}%s{{ end }}", strconv.Quote(op(r.recordedSeries(n.dispersion, quantileOf(v)), ">", leaf("1")).flat()),
				verdict.DispersionClause(verdict.VoteLabel(v.index, v.q), "{{ . | first | value | printf \"%.1f\" }}"))
		}
	}
	windowTail += discount
	recentTail += discount
	rollbackReason := fmt.Sprintf("{{ if query %s }}%s: evidence {{ $value | printf \"%%.1f\" }} reached the rollback boundary %.1f (the canary's tail is heavier than the baseline's)"+
		"{{ else }}%s: evidence {{ $value | printf \"%%.1f\" }} reached the rollback boundary %.1f (the canary's tail has become heavier than the baseline's){{ end }}",
		strconv.Quote(op(r.recordedSeries(n.statistic), ">=", num(rb)).flat()), windowTail, rb, recentTail, recentB)
	alerts = []rule{
		{alert: "PairwiseCanaryRollback", expr: r.whileCanaryServes(r.evidenceRollback(r.recordedSeries(n.statistic), r.recordedSeries(n.recentStatistic))), keepFiring: "10m",
			labels: r.alertLabels([2]string{"severity", "critical"}, [2]string{"action", "rollback"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: roll back, its tail (%s) is heavier than the baseline's (evidence {{ $value | printf \"%%.1f\" }}, boundary %.1f)", name, quantiles, rb)},
				{"description", fmt.Sprintf("%s. %s A canary identical to its baseline, watched every minute, reaches a boundary at most once in %s days (falseRollback %s). %s",
					rollbackReason, method, fmtNum(1/c.FalseRollback), fmtNum(c.FalseRollback), fleets)},
				runbook("PairwiseCanaryRollback"),
			}},
		{alert: "PairwiseCanaryPromotable", expr: op(r.recordedSeries(n.promote), "and on()", op(r.recordedSeries(n.decision), "==", leaf(strconv.Itoa(verdict.Promote.Code())))),
			labels: r.alertLabels([2]string{"severity", "info"}, [2]string{"action", "promote"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: promotable, its tail (%s) is shown not heavier than the baseline's (promote evidence {{ $value | printf \"%%.1f\" }}, boundary %.1f)", name, strings.Join(promoteNames, ", "), -pb)},
				{"description", fmt.Sprintf("%s: evidence {{ $value | printf \"%%.1f\" }} reached the promote boundary %.1f (the canary's tail is shown less than %.2fx as frequent as the baseline's). %s At least %d minutes carry evidence, the canary was expected to show at least %.0f observations beyond the bound of the bucket that holds the %s (counted in whole buckets, as the promote evidence is), and no flag is raised; at most %s of canaries %sx slower in the tail are promoted per day of looks. %s",
					windowTail, -pb, c.PromoteAlternative(), method, c.PromoteMinutes(), math.Ceil(c.PromoteExpected(false)), vq, fmtNum(c.FalsePromote), fmtNum(c.RollbackThreshold), fleets)},
				runbook("PairwiseCanaryPromotable"),
			}},
	}
	return records, alerts
}

// templateValue is annotation template text printing the value of a query
// with format, or "?" when it has none.
func templateValue(query expr, format string) string {
	return fmt.Sprintf("{{ with query %s }}{{ . | first | value | printf %q }}{{ else }}?{{ end }}", strconv.Quote(query.flat()), format)
}

// numText writes a number so that PromQL reads back the same float64.
func numText(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// fmtBoundary writes a boundary for people.
func fmtBoundary(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
