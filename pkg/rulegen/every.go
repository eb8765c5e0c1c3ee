package rulegen

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// A generic group with JudgeEvery judges every canary of its convention in
// one set of rules: the same expressions as one canary's (pack.go,
// evidence.go), but kept apart by the identifying labels instead of summed
// over them (resolved.every), so that a canary that appears is judged, and
// rolled back, without the pack being regenerated. What one canary's rules
// take as a scalar, the threshold of histogram_fraction, becomes Prometheus
// 3.11's trim operator `>/`, which takes a threshold per series. The group
// records the evidence rule's figures and raises the rollback alert; the
// promote decision and the minute verdicts (which need the flags and the
// verdict quantile of each fleet per canary) are the judge's and the data
// source's, which read the group's recorded minutes.

// genericLabel marks the series a generic group judging every canary
// records, with the group's name; one canary's carry the canary label.
const genericLabel = "pairwise_generic"

// agg is the aggregation name over e: over all of one canary's series, or
// for every canary of a generic group by its identifying labels; extra
// labels are kept besides.
func (r resolved) agg(name string, e expr, extra ...string) expr {
	by := append(slices.Clone(r.every), extra...)
	if len(by) == 0 {
		return fn(name, e)
	}
	return call{fn: name + " by (" + strings.Join(by, ", ") + ") ", args: []expr{e}}
}

// on is the vector matching of one canary's figures: on() for one canary,
// on(<identifying labels>) for every canary of a generic group.
func (r resolved) on() string { return "on(" + strings.Join(r.every, ", ") + ")" }

// judgeEvery is the generic group as the canary expressions see it: every
// canary of its convention at once, under the file's defaults.
func (g *resolvedGeneric) judgeEvery(defaults verdict.Config) resolved {
	r := resolved{Canary: Canary{Name: g.Name, Metric: g.Metric, Histogram: g.Histogram}, config: defaults, kind: g.kind, generic: g, every: slices.Clone(g.By), queryOffset: g.queryOffset}
	r.baseline, r.canary = g.fleet(nil, g.Baseline), g.fleet(nil, g.Canary)
	return r
}

// everyVoteTerms are voteTerms for every canary at once: each alternative's
// log likelihood ratio as its own expression with the alternative written
// as a number (one canary's rules multiply by a constant vector of the
// alternatives, which cannot be matched with many canaries).
func (r resolved) everyVoteTerms(v vote, k, b, kd, bd, share expr) expr {
	var out expr
	for i, a := range verdict.TailIndices {
		alt := math.Pow(r.config.RollbackThreshold, a)
		llr := r.held(llrOf(k, b, share, alt), llrOf(shallow(k, kd), shallow(b, bd), share, alt))
		if v.index > 0 {
			llr = op(llr, "or", op(share, "*", leaf("0")))
		}
		term := labelled(llr, termLabel, v.terms.LLR[i])
		if out == nil {
			out = term
		} else {
			out = op(out, "or", term)
		}
	}
	// No promote terms: this group does not decide promotion.
	return op(out, "or", countTerms(v, k, b, share))
}

// everyRules are the rules of a generic group judging every canary: each
// minute's counts and terms, their sums over the window and the recent runs,
// the statistics, and the rollback alert, labelled with the identifying
// labels and the canary label (their values joined by "/").
func (r resolved) everyRules(runbookBase string) []rule {
	c := r.config
	m := r.minute()
	e := r.evidenceExprs(m)
	n, names := r.minuteNames(), e.names
	labels := [][2]string{{genericLabel, r.generic.Name}}
	window := fmt.Sprintf("%dm", c.WindowMinutes)
	rb, recentB := c.RollbackBoundary(false), c.RecentBoundary(false)
	by := strings.Join(r.every, ", ")
	var quantiles []string
	for _, v := range r.votes() {
		quantiles = append(quantiles, verdict.VoteLabel(v.index, v.q))
	}
	rollback := r.whileCanaryServes(r.evidenceRollback(r.recordedSeries(names.statistic), r.recordedSeries(names.recentStatistic)))
	joined := []expr{rollback, leaf(`"canary"`), leaf(`"/"`)}
	for _, l := range r.every {
		joined = append(joined, leaf(fmt.Sprintf("%q", l)))
	}
	g := r.generic
	// fleet is a fleet's selector as a single-quoted shell word's content.
	fleet := func(value string) string {
		var parts []string
		for _, l := range r.every {
			parts = append(parts, fmt.Sprintf("%s=\"{{ $labels.%s%s }}\"", l, l, shellPromQLEscape))
		}
		// The identifying labels' values are the alert's, escaped when the
		// alert is sent (a scraped service names them); the group's own
		// matchers are user text, escaped here.
		own := append(selector.Selector{{Name: g.FleetLabel, Op: selector.Equal, Value: value}}, g.sel[1:]...)
		parts = append(parts, shellSafe(templateSafe(strings.Trim(own.String(), "{}"))))
		return "{" + strings.Join(parts, ",") + "}"
	}
	out := []rule{
		{record: n.inputs, expr: r.evidenceInputs(m), labels: labels,
			comment: "evidence rule, every canary by " + by + ": the minute's inputs, each voting quantile's threshold and its bucket bound, each fleet's scrape scale, a series per term (label " + termLabel + ")"},
		{record: n.counts, expr: r.evidenceCounts(r.minuteEvidence(m, r.recordedInputs())), labels: labels,
			comment: "evidence rule, every canary by " + by + ": each voting quantile's counts of the minute and the canary's share, a series per term (label " + termLabel + ")"},
		{record: n.terms, expr: r.terms(lastRows{r, n.counts}), labels: labels,
			comment: "the minute's evidence, a series per term"},
	}
	out = append(out, r.dispersionRules(labels)...)
	out = append(out,
		rule{record: names.sums, expr: e.sums, labels: labels,
			comment: "the minutes' evidence summed over the last " + window + " of wall-clock minutes"},
		rule{record: names.recent, expr: e.recent, labels: labels,
			comment: "the LLR terms summed over the recent runs (label " + recentLabel + ")"})
	if e.dispersion != nil {
		out = append(out, rule{record: names.dispersion, expr: e.dispersion, labels: labels,
			comment: "each vote's dispersion over the window (label " + quantileLabel + "), which divides its evidence that the canary's tail is heavier"})
	}
	return append(out, []rule{
		{record: names.statistic, expr: e.recorded.statistic(), labels: labels,
			comment: fmt.Sprintf("evidence that the canary's tail is heavier, over the window (quantiles %s); rollback at %s", strings.Join(quantiles, ", "), fmtBoundary(rb))},
		{record: names.recentStatistic, expr: e.recorded.recentStatistics(), labels: labels,
			comment: fmt.Sprintf("the same for each recent run; rollback when one reaches %s", fmtBoundary(recentB))},
		{alert: "PairwiseCanaryRollback", expr: fn("label_join", joined...), keepFiring: "10m",
			labels: append(labels, [2]string{"severity", "critical"}, [2]string{"action", "rollback"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary {{ $labels.canary }}: roll back, its tail (%s) is heavier than the baseline's (evidence {{ $value | printf \"%%.1f\" }}, boundary %.1f over the window, %.1f over a recent run)", strings.Join(quantiles, ", "), rb, recentB)},
				{"description", fmt.Sprintf("Each wall-clock minute, the observations of %s beyond %s are the canary's in proportion to its share of requests if the fleets are identical; the evidence weighs the canary's part of them over the last %d minutes and their recent runs, and reached its boundary. A canary identical to its baseline, watched every minute, reaches one at most once in %s days (falseRollback %s). Judged by generic group %s, which judges every canary of its convention; `pairwise judge --metric %s --baseline '%s' --canary '%s'` prints the minutes.",
					g.Metric, r.beyondWhat(), c.WindowMinutes, fmtNum(1/c.FalseRollback), fmtNum(c.FalseRollback), g.Name,
					g.Metric, fleet(g.Baseline), fleet(g.Canary))},
				{"runbook_url", runbookBase + "#pairwisecanaryrollback"},
			}},
		{alert: "PairwiseCanaryScrapeInterval", expr: fn("label_join", append([]expr{r.scrapedOff(m)}, joined[1:]...)...), forDur: "10m",
			labels: append(labels, [2]string{"severity", "warning"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary {{ $labels.canary }}: the {{ $labels.scraped_fleet }} fleet is not scraped every %d s, as the pack's scrapeIntervalSeconds says ({{ $value | printf \"%%.1f\" }} samples a minute per series)", c.ScrapeIntervalSeconds)},
				{"description", r.scrapedOffText() + fmt.Sprintf(" Judged by generic group %s.", g.Name)},
				{"runbook_url", runbookBase + "#pairwisecanaryscrapeinterval"},
			}},
	}...)
}

// shellPromQLEscape, piped after a label's value in an annotation's
// template, escapes it for a PromQL string's content (backslash and double
// quote), then for a single-quoted shell word, where a quote would end the
// word (it is written as quote, backslash, quote, quote): a label value such
// as o'k$(id) must neither run in the shell of whoever pastes the command
// nor end the selector's string.
const shellPromQLEscape = ` | reReplaceAll "\\\\" "\\\\" | reReplaceAll "\"" "\\\"" | reReplaceAll "'" "'\\''"`

// shellSafe is s inside a single-quoted shell word.
func shellSafe(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }
