package rulegen

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// fleetExprs are the per-minute figures of one fleet, each over the fleet's
// recorded minute (prom.MinuteHistogramRecord and prom.MinuteHealthRecord,
// which the group's first rules record from prom.NativeQuery or
// prom.ClassicQuery, and prom.HealthFromSamples): read in the evaluation that
// recorded it, it is the whole minute ending at the evaluation time
// truncated to the minute.
type fleetExprs struct {
	name string
	sel  selector.Selector
	// hist is the fleet-merged histogram of the minute.
	hist expr
	// count is the number of observations in the minute: histogram_count for
	// native, the +Inf bucket for classic (the count the engine reads).
	count expr
	// quantile returns histogram_quantile(q, hist).
	quantile func(q float64) expr
	// tail is the number of observations beyond the verdict quantile.
	tail expr
	// served is the number of observations over the window's recorded
	// minutes, to tell a fleet that left during the analysis from one that
	// is not deployed.
	served expr
	// reporting is the number of the fleet's series with a sample in the
	// minute: its pods are scraped, whether or not they serve.
	reporting expr
	// countAgo is count WarmupMinutes earlier (warm-up), nil without warm-up.
	countAgo expr
	// samplesPerSeries is the mean number of samples each series of the
	// fleet had in the minute, from the recorded health (samples / series).
	samplesPerSeries expr
	// incomplete holds when the minute cannot be read whole or a member of
	// the fleet that was serving did not report in it (verdict.Completeness
	// on prom.Health's figures): its series were scraped more often than the
	// configured interval (verdict.Config.ScrapedTooOften), one of its
	// targets was down (up == 0), or fewer of its series had a sample in the
	// minute than in one of the StableMinutes minutes before.
	incomplete expr
}

// recordedMinute reads the sample of a recorded per-minute series at the
// evaluation time, minutesAgo minutes earlier: the one-minute range holds
// exactly that sample when it was recorded (ranges are left-open), and
// nothing when it was not, so a minute nobody recorded is never filled in
// from an older one.
func recordedMinute(sel string, minutesAgo int) expr {
	if minutesAgo > 0 {
		return leaf(fmt.Sprintf("last_over_time(%s[1m] offset %dm)", sel, minutesAgo))
	}
	return leaf("last_over_time(" + sel + "[1m])")
}

// fleetRecord selects the fleet's series of a recorded minute series: by
// the canary and fleet labels its group gives them, or, when a generic group
// records them, by the canary's identifying labels and the fleet label.
func (r resolved) fleetRecord(fleet, name string, extra ...selector.Matcher) string {
	sel := selector.Selector{{Name: "canary", Op: selector.Equal, Value: r.Name}, {Name: "fleet", Op: selector.Equal, Value: fleet}}
	if g := r.generic; g != nil {
		value := g.Baseline
		if fleet == "canary" {
			value = g.Canary
		}
		sel = append(slices.Clone(r.identity), selector.Matcher{Name: g.FleetLabel, Op: selector.Equal, Value: value})
	}
	return append(sel, extra...).With(name)
}

var infBucket = selector.Matcher{Name: "le", Op: selector.Equal, Value: "+Inf"}

func (r resolved) fleet(name string, sel selector.Selector) fleetExprs {
	f := fleetExprs{name: name, sel: sel}
	q := func(q float64) expr { return fn("histogram_quantile", leaf(verdict.QuantileKey(q)), f.hist) }
	f.quantile = q
	hists := prom.MinuteHistogramRecord(r.Metric, r.kind)
	histSel, windowRange := r.fleetRecord(name, hists), fmt.Sprintf("[%dm]", r.config.WindowMinutes)
	// The count of the minute minutesAgo earlier.
	countOf := func(minutesAgo int) expr {
		if r.kind == prom.Native {
			return fn("histogram_count", r.agg("sum", recordedMinute(histSel, minutesAgo)))
		}
		return fn("sum", recordedMinute(r.fleetRecord(name, hists, infBucket), minutesAgo))
	}
	// The sums keep the labels of the minute's histogram (none, or le), as
	// the engine's queries return them.
	if r.kind == prom.Native {
		f.hist = r.agg("sum", recordedMinute(histSel, 0))
		f.served = fn("histogram_count", r.agg("sum", leaf("sum_over_time("+histSel+windowRange+")")))
	} else {
		f.hist = call{fn: "sum by (le) ", args: []expr{recordedMinute(histSel, 0)}}
		f.served = fn("sum", leaf("sum_over_time("+r.fleetRecord(name, hists, infBucket)+windowRange+")"))
	}
	f.count = countOf(0)
	if r.config.WarmupMinutes > 0 {
		f.countAgo = countOf(r.config.WarmupMinutes)
	}
	// Completeness and scrape counts, from the figures of prom.HealthFromSamples.
	health := func(figure string) string {
		return r.fleetRecord(name, prom.MinuteHealthRecord(r.Metric, r.kind), selector.Matcher{Name: prom.HealthLabel, Op: selector.Equal, Value: figure})
	}
	figure := func(name string) expr { return r.agg("sum", recordedMinute(health(name), 0)) }
	f.reporting = figure(prom.HealthReporting)
	before := r.agg("max", leaf(fmt.Sprintf("max_over_time(%s[%dm] offset 1m)", health(prom.HealthReporting), verdict.StableMinutes)))
	f.samplesPerSeries = op(figure(prom.HealthSamples), "/", figure(prom.HealthSeries))
	f.incomplete = op(op(op(f.samplesPerSeries, ">=", num(r.config.ScrapedTooOften())), "or", op(figure(prom.HealthDown), ">", leaf("0"))), "or", op(f.reporting, "<", before))
	// Observations beyond the verdict quantile: the fraction of the minute's
	// histogram above the quantile's value, times its count. This is
	// histogram.TailCount as Prometheus computes it (see rules/README.md for
	// where classic buckets can differ).
	f.tail = op(fn("histogram_fraction", fn("scalar", q(r.config.VerdictQuantile)), leaf("+Inf"), f.hist), "*", f.count)
	return f
}

// logSE is the sampling standard error of ln(quantile q), as verdict.Stats
// estimates it: half the log distance between the quantiles at
// q -/+ sqrt(q(1-q)/count).
func (f fleetExprs) logSE(q float64) expr {
	d := fn("sqrt", op(num(q*(1-q)), "/", f.count))
	at := func(e expr) expr { return fn("histogram_quantile", fn("scalar", e), f.hist) }
	hi := at(fn("clamp_max", op(num(q), "+", d), leaf("1")))
	lo := at(fn("clamp_min", op(num(q), "-", d), leaf("0")))
	return op(op(fn("ln", hi), "-", fn("ln", lo)), "/", leaf("2"))
}

// minuteExprs are the paired figures of one minute, evaluated at its end.
type minuteExprs struct {
	base, canary fleetExprs
	// data holds when both fleets have observations and a defined verdict
	// quantile: a minute without it is no-data (verdict.Judge's first cases).
	data expr
	// ratio is canary / baseline verdict quantile; recordedRatio is 1
	// when both are 0, as verdict.Judge has it.
	ratio, recordedRatio expr
	// insufficient holds when the smaller tail is below MinTailObservations.
	insufficient expr
	// partial holds when both fleets have observations but one is
	// incomplete (verdict.Partial: neither good, bad nor evidence).
	partial expr
	// counted holds when the minute is judged good, neutral or bad and is
	// not warm-up: the minutes the reference rule counts.
	counted expr
	// good and bad are the counted good and bad minutes: present only then.
	good, bad expr
	// verdict is the verdict code, verdict.Verdict.Code().
	verdict expr
	// on matches the minute's figures of one canary: on() for one, on(<the
	// identifying labels>) for every canary of a generic group.
	on string
}

func num(v float64) expr { return leaf(strconv.FormatFloat(v, 'g', -1, 64)) }

func (r resolved) minute() minuteExprs {
	c := r.config
	m := minuteExprs{base: r.fleet("baseline", r.baseline), canary: r.fleet("canary", r.canary), on: r.on()}
	vq := c.VerdictQuantile
	qb, qc := m.base.quantile(vq), m.canary.quantile(vq)
	m.data = op(op(op(
		op(m.base.count, ">", leaf("0")), "and", op(m.canary.count, ">", leaf("0"))),
		"and", op(qb, "==", qb)), // NaN != NaN: a quantile Prometheus cannot compute
		"and", op(qc, "==", qc))
	// ratio is what verdict.Judge compares; 0/0 is NaN here and 1 there.
	// Judge compares 1 with the thresholds, so whether a 0/0 minute is good
	// or bad is known now: such a minute joins good (or bad) only when 1 is.
	m.ratio = op(qc, "/", qb)
	bothZero := op(op(qb, "==", leaf("0")), "and", op(qc, "==", leaf("0")))
	goodRatio := expr(op(m.ratio, "<=", num(c.PromoteThreshold)))
	if 1 <= c.PromoteThreshold {
		goodRatio = op(goodRatio, "or", bothZero)
	}
	badRatio := expr(op(m.ratio, ">=", num(c.RollbackThreshold)))
	if 1 >= c.RollbackThreshold {
		badRatio = op(badRatio, "or", bothZero)
	}
	if c.Significance > 0 {
		// The significance gate of verdict.Judge: |ln ratio| over the
		// combined standard error must reach the one-sided z.
		sig := op(op(fn("abs", fn("ln", m.ratio)), "/", fn("sqrt", op(op(m.base.logSE(vq), "^", leaf("2")), "+", op(m.canary.logSE(vq), "^", leaf("2"))))),
			">=", num(verdict.OneSidedZ(c.Significance)))
		goodRatio = op(goodRatio, "and", sig)
		badRatio = op(badRatio, "and", sig)
	}
	m.recordedRatio = op(op(m.ratio, "unless", bothZero), "or", op(bothZero, "+", leaf("1")))
	// min(tail baseline, tail canary) < TailNeeded (MinTailObservations), as verdict.Judge
	// (the canary first, so an alert's value is its tail when it is short).
	m.insufficient = op(op(m.canary.tail, "<", num(c.TailNeeded())), "or", op(m.base.tail, "<", num(c.TailNeeded())))
	present := op(op(m.base.count, ">", leaf("0")), "and", op(m.canary.count, ">", leaf("0")))
	m.partial = op(present, "and", op(m.base.incomplete, "or", m.canary.incomplete))
	m.counted = m.warm(op(op(m.data, "unless", m.insufficient), "unless", m.partial))
	m.good = op(goodRatio, "and", m.counted)
	m.bad = op(badRatio, "and", m.counted)
	code := func(v verdict.Verdict) expr { return leaf(fmt.Sprintf("vector(%d)", v.Code())) }
	judgedCode := op(op(op(
		op(code(verdict.Insufficient), "and", m.insufficient),
		"or", op(code(verdict.Good), "and", goodRatio)),
		"or", op(code(verdict.Bad), "and", badRatio)),
		"or", code(verdict.Neutral))
	// verdict.Judge's order: no-data when a fleet has no observations, then
	// partial, then no-data when a quantile is undefined, then the rest.
	m.verdict = op(op(op(code(verdict.Partial), "and", m.partial), "or", op(judgedCode, "and", m.data)), "or", code(verdict.NoData))
	return m
}

// warm keeps e only in minutes that are not warm-up: the canary had
// traffic WarmupMinutes earlier. Without warm-up, e itself.
func (m minuteExprs) warm(e expr) expr {
	if m.canary.countAgo == nil {
		return e
	}
	return op(e, "and "+m.on, op(m.canary.countAgo, ">", leaf("0")))
}

// lastMinute evaluates e at the end of the last complete wall-clock minute:
// a [1m:1m] subquery holds exactly one step, on a whole minute, whatever the
// group's evaluation offset. Only the rules that read raw series use it.
func lastMinute(e expr) expr { return fn("last_over_time", sub(e, "[1m:1m]")) }

// minuteNames are the per-minute series a group records from its fleets'
// recorded minutes, which the window's rules sum: a [<n>m] range over a
// series recorded once a minute holds the last n judged minutes, and a
// minute without a sample (no evaluation, Prometheus down) is a no-data
// minute.
type minuteNames struct {
	// good and bad are 1 in a counted good (bad) minute, else 0.
	good, bad string
	// countedRatio is the ratio of a counted minute; share the canary's
	// share of requests in a minute where both fleets served (not warm-up);
	// missing and partial are 1 in a minute where one fleet served alone,
	// or one was incomplete (not warm-up). Each is absent otherwise.
	countedRatio, share, missing, partial string
	// inputs are each vote's threshold and bucket bound and each fleet's
	// scrape scale (evidenceInputs), which the counts read; counts are each
	// vote's counts and the canary's share of a minute
	// carrying evidence, terms the evidence rule's terms computed from them,
	// residuals and changes each vote's standardized residual and its change
	// from the minute before (dispersionRules).
	inputs, counts, terms, residuals, changes string
}

func (r resolved) minuteNames() minuteNames {
	n := func(op string) string { return RecordName(r.Metric, op, false) }
	return minuteNames{good: n("good_1m"), bad: n("bad_1m"), countedRatio: n("counted_ratio_1m"), share: n("canary_share_1m"),
		missing: n("fleet_missing_1m"), partial: n("partial_1m"), inputs: n("evidence_inputs_1m"), counts: n("evidence_counts_1m"), terms: n("evidence_terms_1m"), residuals: n("evidence_residuals_1m"), changes: n("evidence_changes_1m")}
}

// overWindow is a range over the last minutes (the window when 0) of a
// per-minute series the group records.
func (r resolved) overWindow(name string, minutes int) expr {
	if minutes == 0 {
		minutes = r.config.WindowMinutes
	}
	return leaf(fmt.Sprintf("%s[%dm]", r.recordedSeries(name).flat(), minutes))
}

// goneMinutes is how long the canary fleet records no minute before its
// rollback alert stops: it is gone (rolled back, removed, renamed).
const goneMinutes = 5

// whileCanaryServes keeps a rollback alert's condition to the minutes the
// canary fleet still records minutes: once it is gone there is nothing left
// to roll back, so the alert resolves (keep_firing_for later) instead of
// firing on the window's old minutes for up to an hour. The window's
// decision itself stays what the engine decides: a canary deployed again
// under the same labels within the window is judged with the last one's
// minutes (the sliding pack knows no deployment start; the judge's --since
// does).
func (r resolved) whileCanaryServes(cond expr) expr {
	served := r.agg("count", leaf(fmt.Sprintf("present_over_time(%s[%dm])", r.fleetRecord("canary", prom.MinuteHistogramRecord(r.Metric, r.kind)), goneMinutes)))
	return op(cond, "and "+r.on(), served)
}

// rule is one recording or alerting rule.
type rule struct {
	record, alert string
	expr          expr
	forDur        string
	keepFiring    string
	labels        [][2]string
	annotations   [][2]string
	comment       string
}

// quantileOp names a quantile in a recording rule: 0.999 -> p99_9.
func quantileOp(q float64) string {
	return strings.ReplaceAll(verdict.QuantileLabel(q), ".", "_")
}

// RecordName returns the name of a recording rule of metric, for the
// operation op, at the per-fleet level (fleet true) or paired level.
func RecordName(metric, operation string, perFleet bool) string {
	level := "canary"
	if perFleet {
		level = "canary_fleet"
	}
	return level + ":" + prom.RecordMetric(metric) + ":" + operation
}

func (r resolved) rules(runbookBase string) []rule {
	c := r.config
	m := r.minute()
	canaryLabel := [2]string{"canary", r.Name}
	window := strconv.Itoa(c.WindowMinutes) + "m"
	vq := verdict.QuantileLabel(c.VerdictQuantile)
	out := r.rawRules()

	quantiles := append([]float64(nil), c.Quantiles...)
	found := false
	for _, q := range quantiles {
		found = found || q == c.VerdictQuantile
	}
	if !found {
		quantiles = append(quantiles, c.VerdictQuantile)
	}
	for _, f := range []fleetExprs{m.base, m.canary} {
		fleetLabels := [][2]string{canaryLabel, {"fleet", f.name}}
		for _, q := range quantiles {
			out = append(out, rule{record: RecordName(r.Metric, quantileOp(q)+"_1m", true), expr: f.quantile(q), labels: fleetLabels})
		}
		out = append(out,
			rule{record: RecordName(r.Metric+"_count", "rate1m", true), expr: op(f.count, "/", leaf("60")), labels: fleetLabels},
			rule{record: RecordName(r.Metric, "beyond_"+quantileOp(c.VerdictQuantile)+"_1m", true), expr: f.tail, labels: fleetLabels},
		)
	}
	labels := [][2]string{canaryLabel}
	// The minute counts are the reference rule's; the evidence rule records
	// them for dashboards but does not decide on them.
	flagsName := RecordName(r.Metric, "flags_"+window, false)
	goodName, badName := RecordName(r.Metric, "good_minutes_"+window, false), RecordName(r.Metric, "bad_minutes_"+window, false)
	// The reference rule's decision and alerts read the counts and flags
	// recorded above them in the same evaluation.
	good, bad, flags := r.recordedSeries(goodName), r.recordedSeries(badName), r.recordedSeries(flagsName)
	countsNote := ""
	if c.Rule != verdict.RuleReference {
		countsNote = " (the reference rule's count; the evidence rule does not decide on it)"
	}
	out = append(out, r.minuteRules(m, labels)...)
	out = append(out,
		rule{record: goodName, expr: r.minuteCount(r.minuteNames().good), labels: labels,
			comment: "good minutes among the last " + window + " of recorded wall-clock minutes" + countsNote},
		rule{record: badName, expr: r.minuteCount(r.minuteNames().bad), labels: labels,
			comment: "bad minutes among the last " + window + " of recorded wall-clock minutes" + countsNote},
		rule{record: flagsName, expr: r.windowFlags(), labels: labels,
			comment: fmt.Sprintf("flags raised over the last %s (label flag: %s; %s over its last %dm), 1 while raised; a flagged window never promotes",
				window, strings.Join(r.flagNames(), ", "), verdict.FlagTrafficParity, c.ShareMinutes())},
	)

	runbook := func(alert string) [2]string {
		return [2]string{"runbook_url", runbookBase + "#" + strings.ToLower(alert)}
	}
	if c.Rule != verdict.RuleReference {
		records, alerts := r.evidenceRules(m, labels, runbook)
		out = append(out, records...)
		out = append(out, alerts[0], r.fleetMissingAlert(m, runbook), r.scrapeIntervalAlert(m, runbook))
		out = append(out, r.sharedSeriesAlerts(runbook)...)
		out = append(out, r.errorRatioAlerts(runbook)...)
		return append(out, alerts[1:]...)
	}
	out = append(out,
		rule{record: RecordName(r.Metric, "decision_"+window, false), labels: labels, expr: r.referenceDecision(good, bad, flags),
			comment: "window decision: 0 promote, 1 hold, 2 rollback (reference rule; rollback checked first; a flagged window never promotes)"},
	)
	thresholds := fmt.Sprintf("good at or below %sx, bad at or above %sx the baseline %s", fmtNum(c.PromoteThreshold), fmtNum(c.RollbackThreshold), vq)
	// Annotations are Go templates: user text must not open an action.
	name := templateSafe(r.Name)
	canarySel, baselineSel := templateSafe(r.canary.String()), templateSafe(r.baseline.String())
	out = append(out,
		rule{alert: "PairwiseCanaryRollback", expr: r.whileCanaryServes(r.referenceRollback(bad)), keepFiring: "10m",
			labels: r.alertLabels([2]string{"severity", "critical"}, [2]string{"action", "rollback"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: roll back, {{ $value }} bad minutes in the last %s", name, window)},
				{"description", fmt.Sprintf("{{ $value }} of the last %d wall-clock minutes had a canary %s of %s at or above %sx the baseline's (limit %d bad minutes; %s). Canary %s, baseline %s.",
					c.WindowMinutes, vq, r.Metric, fmtNum(c.RollbackThreshold), c.BadLimit, thresholds, canarySel, baselineSel)},
				runbook("PairwiseCanaryRollback"),
			}},
		rule{alert: "PairwiseCanaryBadMinute", expr: m.bad,
			labels: r.alertLabels([2]string{"severity", "warning"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: the last minute was bad ({{ $value | printf \"%%.3f\" }}x the baseline %s)", name, vq)},
				{"description", fmt.Sprintf("In the last complete wall-clock minute the canary's %s of %s was {{ $value | printf \"%%.3f\" }}x the baseline's, at or above %sx. %d such minutes in %d roll back. Canary %s, baseline %s.",
					vq, r.Metric, fmtNum(c.RollbackThreshold), c.BadLimit, c.WindowMinutes, canarySel, baselineSel)},
				runbook("PairwiseCanaryBadMinute"),
			}},
		rule{alert: "PairwiseCanaryInsufficientTraffic", expr: op(op(m.insufficient, "and", m.data), "unless", m.partial), forDur: "10m",
			labels: r.alertLabels([2]string{"severity", "warning"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: too little traffic to judge its %s", name, vq)},
				{"description", fmt.Sprintf("For 10 minutes a fleet has had only {{ $value | printf \"%%.1f\" }} observations beyond its %s of %s in a minute, fewer than the %s needed: those minutes are insufficient and count neither good nor bad, so the canary can neither promote nor roll back. Send the canary more traffic or judge a lower quantile. Canary %s, baseline %s.",
					vq, r.Metric, fmtNum(c.MinTailObservations), canarySel, baselineSel)},
				runbook("PairwiseCanaryInsufficientTraffic"),
			}},
		r.fleetMissingAlert(m, runbook),
		r.scrapeIntervalAlert(m, runbook),
	)
	out = append(out, r.sharedSeriesAlerts(runbook)...)
	out = append(out, r.errorRatioAlerts(runbook)...)
	out = append(out,
		rule{alert: "PairwiseCanaryPromotable", expr: op(op(op(good, ">=", leaf(strconv.Itoa(c.GoodNeeded))), "unless on()", r.referenceRollback(bad)), "unless on()", flags),
			labels: r.alertLabels([2]string{"severity", "info"}, [2]string{"action", "promote"}),
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: promotable, {{ $value }} good minutes in the last %s", name, window)},
				{"description", fmt.Sprintf("{{ $value }} of the last %d wall-clock minutes were good (%s; %d needed), fewer than %d were bad and no flag is raised. Canary %s, baseline %s.",
					c.WindowMinutes, thresholds, c.GoodNeeded, c.BadLimit, canarySel, baselineSel)},
				runbook("PairwiseCanaryPromotable"),
			}},
	)
	return out
}

// rawRules are the only rules that read raw series: each fleet's merged
// histogram of the minute and its health, as the engine queries them, once
// a minute.
func (r resolved) rawRules() []rule {
	if r.generic != nil {
		return nil // the generic group records them
	}
	var out []rule
	for _, f := range []struct {
		name string
		sel  selector.Selector
	}{{"baseline", r.baseline}, {"canary", r.canary}} {
		labels := [][2]string{{"canary", r.Name}, {"fleet", f.name}, {prom.RecordedSelectorLabel, f.sel.String()}, {prom.RecordedScrapeLabel, prom.RecordedScrape(r.config.ScrapeInterval())}}
		hist := prom.NativeQuery(r.Metric, f.sel, r.config.ScrapeInterval())
		if r.kind == prom.Classic {
			hist = prom.ClassicQuery(r.Metric, f.sel, r.config.ScrapeInterval())
		}
		samples := recordedMinute(r.fleetRecord(f.name, prom.MinuteSamplesRecord(r.Metric, r.kind)), 0)
		out = append(out,
			rule{record: prom.MinuteHistogramRecord(r.Metric, r.kind), expr: lastMinute(leaf(hist)), labels: labels,
				comment: "the " + f.name + " fleet's merged histogram of the last complete minute (the raw series are read here only)"},
			rule{record: prom.MinuteSamplesRecord(r.Metric, r.kind), expr: lastMinute(leaf(prom.SamplesQuery(r.Metric, f.sel, r.kind, nil))), labels: labels,
				comment: "its samples and its series in that minute, packed as samples + 2^32 x series"},
			rule{record: prom.MinuteHealthRecord(r.Metric, r.kind), expr: leaf(prom.HealthFromSamples(samples.flat(), f.sel, nil, r.config.ScrapeInterval())), labels: labels,
				comment: "its health in that minute, a series per figure (label " + prom.HealthLabel + "), from those samples and its targets' up"},
		)
		if r.failed != nil {
			out = append(out, rule{record: r.requestsName(), expr: lastMinute(leaf(prom.RequestsQuery(r.ErrorsMetric, f.sel, r.failed, r.config.ScrapeInterval()))), labels: labels,
				comment: "its requests and failed requests in that minute, off " + r.ErrorsMetric + " (label " + prom.PartLabel + ": requests, errors; a native histogram's minute is recorded as a histogram, whose count is read)"})
		}
	}
	if r.mayShare() {
		out = append(out, rule{record: r.sharedName(), expr: lastMinute(leaf(prom.SharedSeriesQuery(r.Metric, r.baseline, r.canary))), labels: [][2]string{{"canary", r.Name}},
			comment: "the series both fleets' selectors select at the whole minute, as the judge counts them, absent when none: the selectors do not tell the fleets apart by themselves, so the series must (flag " + verdict.FlagSharedSeries + ")"})
	}
	return out
}

// mayShare reports whether the canary's own group must watch for series
// that both its fleets select: the judge refuses such fleets
// (engine.ErrSharedSeries), and asks Prometheus exactly when the selectors
// do not already keep the fleets apart (selector.Disjoint), as here. The
// fleets of a generic group differ by its fleet label.
func (r resolved) mayShare() bool {
	return r.generic == nil && r.every == nil && !selector.Disjoint(r.baseline, r.canary)
}

// sharedName is the record of the series both fleets select (mayShare).
func (r resolved) sharedName() string { return RecordName(r.Metric, "shared_series", false) }

// sharedSeriesAlerts is the alert that fires while some series are in both
// fleets, which the judge refuses to judge (the pack holds promotion, flag
// shared-series, and says so); none where the fleets cannot share one.
func (r resolved) sharedSeriesAlerts(runbook func(string) [2]string) []rule {
	if !r.mayShare() {
		return nil
	}
	canarySel, baselineSel := templateSafe(r.canary.String()), templateSafe(r.baseline.String())
	return []rule{{alert: "PairwiseCanarySharedSeries", expr: r.recordedSeries(r.sharedName()),
		labels: r.alertLabels([2]string{"severity", "warning"}),
		annotations: [][2]string{
			{"summary", "Canary " + templateSafe(r.Name) + ": {{ $value }} series of " + r.Metric + " are in both fleets"},
			{"description", fmt.Sprintf("{{ $value }} series of %s are selected by both the baseline selector %s and the canary selector %s, so those pods' requests count on both sides of the comparison. The window cannot promote while it holds such a minute (flag %s), and the judge refuses these fleets. Make the selectors exclusive, e.g. with track=\"baseline\" and track=\"canary\".",
				r.Metric, baselineSel, canarySel, verdict.FlagSharedSeries)},
			runbook("PairwiseCanarySharedSeries"),
		}}}
}

// rules are a generic group's rules: each fleet's merged histogram of the
// minute and its health for every canary at once, kept apart by the
// identifying labels and the fleet label.
func (g *resolvedGeneric) rules() []rule {
	mark := [][2]string{{genericLabel, g.Name}}
	// A reader must know the interval the minutes were read at, and the
	// group's matchers beyond its fleet label (g.sel[0]), which select the
	// series it records (prom.labelDriven).
	others := [][2]string{{prom.RecordedScrapeLabel, prom.RecordedScrape(g.defaults.ScrapeInterval())}}
	if len(g.sel) > 1 {
		others = append(others, [2]string{prom.RecordedMatchersLabel, prom.RecordedMatchers(g.sel[1:])})
	}
	samples := recordedMinute(selector.Selector{{Name: genericLabel, Op: selector.Equal, Value: g.Name}}.With(prom.MinuteSamplesRecord(g.Metric, g.kind)), 0)
	return []rule{
		{record: prom.MinuteHistogramRecord(g.Metric, g.kind), expr: lastMinute(leaf(prom.GroupedHistogramQuery(g.Metric, g.raw(), g.kind, g.by(), g.defaults.ScrapeInterval()))), labels: others,
			comment: "each fleet's merged histogram of the last complete minute, by " + strings.Join(g.by(), ", ") + " (the raw series are read here only)"},
		{record: prom.MinuteSamplesRecord(g.Metric, g.kind), expr: lastMinute(leaf(prom.SamplesQuery(g.Metric, g.raw(), g.kind, g.by()))), labels: mark,
			comment: "each fleet's samples and series in that minute, packed as samples + 2^32 x series"},
		{record: prom.MinuteHealthRecord(g.Metric, g.kind), expr: leaf(prom.HealthFromSamples(samples.flat(), g.raw(), g.by(), g.defaults.ScrapeInterval())), labels: others,
			comment: "each fleet's health in that minute, a series per figure (label " + prom.HealthLabel + "), from those samples and its targets' up"},
	}
}

// alertLabels are an alert's labels: the canary's, its identifying labels
// when a generic group records it (so Alertmanager can route and inhibit by
// them), then extra.
func (r resolved) alertLabels(extra ...[2]string) [][2]string {
	out := [][2]string{{"canary", r.Name}}
	for _, m := range r.identity {
		out = append(out, [2]string{m.Name, templateSafe(m.Value)}) // Prometheus expands alert labels as templates too
	}
	return append(out, extra...)
}

// minuteRules record the paired figures of each minute that the window's
// rules sum, from the fleets' recorded minutes.
func (r resolved) minuteRules(m minuteExprs, labels [][2]string) []rule {
	c := r.config
	n := r.minuteNames()
	vq := verdict.QuantileLabel(c.VerdictQuantile)
	f := r.flagMinutes(m)
	zeroOne := func(e expr) expr { return op(fn("count", e), "or", leaf("vector(0)")) }
	ratioName, verdictName := RecordName(r.Metric, quantileOp(c.VerdictQuantile)+"_ratio_1m", false), RecordName(r.Metric, "verdict_1m", false)
	// The counted minutes are read off the verdict just recorded (a verdict
	// of good, neutral or bad, after warm-up): one series read instead of
	// the verdict's whole expression again, which costs the group most.
	now := func(name string) expr { return fn("sum", recordedMinute(r.recordedSeries(name).flat(), 0)) }
	verdictIs := func(cmp string, v verdict.Verdict) expr {
		return m.warm(op(now(verdictName), cmp, leaf(strconv.Itoa(v.Code()))))
	}
	out := []rule{
		{record: ratioName, expr: op(m.recordedRatio, "and", m.data), labels: labels,
			comment: "canary / baseline " + vq + " of the last complete minute; absent when a fleet has no data"},
		{record: verdictName, expr: m.verdict, labels: labels,
			comment: "verdict code of the last complete minute: 0 good, 1 neutral, 2 bad, 3 insufficient, 4 no-data, 5 partial"},
		{record: n.bad, expr: zeroOne(verdictIs("==", verdict.Bad)), labels: labels,
			comment: "1 if the last complete minute is a counted bad minute, else 0"},
		{record: n.good, expr: zeroOne(verdictIs("==", verdict.Good)), labels: labels,
			comment: "1 if the last complete minute is a counted good minute, else 0"},
		{record: n.countedRatio, expr: op(now(ratioName), "and", verdictIs("<=", verdict.Bad)), labels: labels,
			comment: "the ratio of a counted minute (the suspicious-win flag's median)"},
		{record: n.share, expr: f.share, labels: labels,
			comment: "the canary's share of requests in a minute both fleets served, after warm-up (the traffic-parity flag)"},
		{record: n.missing, expr: f.missing, labels: labels,
			comment: "1 in a minute where one fleet served and the other did not, after warm-up (the fleet-missing flag)"},
		{record: n.partial, expr: f.partial, labels: labels,
			comment: "1 in a minute where a serving fleet was incomplete, after warm-up (the partial-fleet flag)"},
	}
	if r.failed != nil {
		llr, residual := r.errorLLR(m)
		out = append(out,
			rule{record: r.errorLLRName(), expr: llr, labels: labels,
				comment: fmt.Sprintf("the minute's failed requests weighed against a canary failing %gx as often as its baseline, at its share of the requests, after warm-up and not partial (the traffic-parity flag)", verdict.ErrorRatioAlternative)},
			rule{record: r.errorResidualName(), expr: residual, labels: labels,
				comment: "the minute's standardized residual: the canary's failed requests less those expected at its share, over their standard deviation"},
			rule{record: r.errorChangeName(), expr: r.errorChange(), labels: labels,
				comment: "the squared change of that residual from the minute before: the failed requests' dispersion reads it"})
	}
	if c.Rule != verdict.RuleReference {
		out = append(out,
			rule{record: n.inputs, expr: r.evidenceInputs(m), labels: labels,
				comment: "evidence rule: the minute's inputs, a series per term (label " + termLabel + "): each voting quantile's threshold (the quantile of both fleets merged) and the bound of the merged histogram's bucket that holds it, each fleet's scrape scale (n/(n+1) x the range's minutes, n its series' mean samples in the minute); the counts below read them"},
			rule{record: n.counts, expr: r.evidenceCounts(r.minuteEvidence(m, r.recordedInputs())), labels: labels,
				comment: "evidence rule: each voting quantile's threshold counts of the minute (the fleets' observations beyond it) and the canary's share, a series per term (label " + termLabel + "); absent when the minute carries none"},
			rule{record: n.terms, expr: r.terms(lastRows{r, n.counts}), labels: labels,
				comment: "evidence rule: the minute's evidence, a series per term (label " + termLabel + "); absent when the minute carries none"})
		out = append(out, r.dispersionRules(labels)...)
	}
	return out
}

// minuteCount counts the window's recorded minutes where the 0-or-1 series
// name is 1, 0 if none.
func (r resolved) minuteCount(name string) expr {
	return op(fn("sum", fn("sum_over_time", r.overWindow(name, 0))), "or", leaf("vector(0)"))
}

// referenceDecision is the reference rule's window decision on the window's
// good and bad minute counts and flags: rollback at BadLimit bad minutes,
// else promote at GoodNeeded good ones unless a flag is raised, else hold.
func (r resolved) referenceDecision(good, bad, flags expr) expr {
	c := r.config
	return op(op(
		op(leaf(fmt.Sprintf("vector(%d)", verdict.Rollback.Code())), "and on()", r.referenceRollback(bad)),
		"or", op(op(leaf(fmt.Sprintf("vector(%d)", verdict.Promote.Code())), "and on()", op(good, ">=", leaf(strconv.Itoa(c.GoodNeeded)))), "unless on()", flags)),
		"or", leaf(fmt.Sprintf("vector(%d)", verdict.Hold.Code())))
}

// referenceRollback is the reference rule's rollback condition on the
// window's bad minute count.
func (r resolved) referenceRollback(bad expr) expr {
	return op(bad, ">=", leaf(strconv.Itoa(r.config.BadLimit)))
}

// fleetMissingAlert fires when one fleet has stopped serving while the other
// serves, under either rule: such minutes carry no verdict and no evidence.
// Only while the silent fleet is still scraped: its pods run and serve
// nothing (traffic no longer routed to them), and the analysis is stalled.
// A fleet whose pods are gone (a rollout that ended, promoted or rolled
// back) is not reported: that is how every rollout ends.
func (r resolved) fleetMissingAlert(m minuteExprs, runbook func(string) [2]string) rule {
	window := strconv.Itoa(r.config.WindowMinutes) + "m"
	canarySel, baselineSel := templateSafe(r.canary.String()), templateSafe(r.baseline.String())
	missing := func(present, absent fleetExprs) expr {
		return op(op(
			fn("label_replace", op(op(present.count, ">", leaf("0")), "unless", op(absent.count, ">", leaf("0"))),
				leaf(`"missing_fleet"`), leaf(strconv.Quote(absent.name)), leaf(`""`), leaf(`""`)),
			"and on()", op(absent.served, ">", leaf("0"))),
			"and on()", op(absent.reporting, ">", leaf("0")))
	}
	return rule{alert: "PairwiseCanaryFleetMissing", expr: op(missing(m.base, m.canary), "or", missing(m.canary, m.base)), forDur: "5m",
		labels: r.alertLabels([2]string{"severity", "warning"}),
		annotations: [][2]string{
			{"summary", "Canary " + templateSafe(r.Name) + ": the {{ $labels.missing_fleet }} fleet has stopped serving"},
			{"description", fmt.Sprintf("For 5 minutes the {{ $labels.missing_fleet }} fleet has had no %s observations while the other fleet served, although it served within the last %s and its series are still scraped: its pods run, but receive no requests. Those minutes are no-data and the analysis is stalled. Canary %s, baseline %s.",
				r.Metric, window, canarySel, baselineSel)},
			runbook("PairwiseCanaryFleetMissing"),
		}}
}

// scrapeAlertMinutes is how many recorded minutes scrapeIntervalAlert
// averages a fleet's samples per series over.
const scrapeAlertMinutes = 15

// scrapeIntervalAlert fires when a fleet's series have had, on average over
// the last scrapeAlertMinutes recorded minutes, half a sample a minute more
// or fewer than scrapeIntervalSeconds gives, the thresholds the engine uses
// (verdict.Config.ScrapedTooOften, engine's slow-scrape warning): more, and
// every minute of the fleet is partial; fewer, and each minute reads less
// than it holds. The judge and the data source read such fleets at the
// interval their samples show; the pack reads at its setting and can only
// say so.
func (r resolved) scrapeIntervalAlert(m minuteExprs, runbook func(string) [2]string) rule {
	c := r.config
	canarySel, baselineSel := templateSafe(r.canary.String()), templateSafe(r.baseline.String())
	return rule{alert: "PairwiseCanaryScrapeInterval", expr: r.scrapedOff(m), forDur: "10m",
		labels: r.alertLabels([2]string{"severity", "warning"}),
		annotations: [][2]string{
			{"summary", fmt.Sprintf("Canary %s: the {{ $labels.scraped_fleet }} fleet is not scraped every %d s, as the pack's scrapeIntervalSeconds says ({{ $value | printf \"%%.1f\" }} samples a minute per series)", templateSafe(r.Name), c.ScrapeIntervalSeconds)},
			{"description", r.scrapedOffText() + fmt.Sprintf(" Canary %s, baseline %s.", canarySel, baselineSel)},
			runbook("PairwiseCanaryScrapeInterval"),
		}}
}

// scrapedOff is scrapeIntervalAlert's condition: each fleet whose mean
// samples a minute per series over the last scrapeAlertMinutes recorded
// minutes is half a sample or more off the configured interval's, labelled
// scraped_fleet with the fleet's name, by the group's canary labels.
func (r resolved) scrapedOff(m minuteExprs) expr {
	c := r.config
	span := fmt.Sprintf("[%dm]", scrapeAlertMinutes)
	off := func(f fleetExprs) expr {
		total := func(figure string) expr {
			sel := r.fleetRecord(f.name, prom.MinuteHealthRecord(r.Metric, r.kind), selector.Matcher{Name: prom.HealthLabel, Op: selector.Equal, Value: figure})
			return r.agg("sum", leaf("sum_over_time("+sel+span+")"))
		}
		mean := op(total(prom.HealthSamples), "/", total(prom.HealthSeries))
		return fn("label_replace", op(op(mean, ">=", num(c.ScrapedTooOften())), "or", op(mean, "<=", num(c.ScrapesPerMinute()-0.5))),
			leaf(`"scraped_fleet"`), leaf(strconv.Quote(f.name)), leaf(`""`), leaf(`""`))
	}
	return op(off(m.base), "or", off(m.canary))
}

// scrapedOffText is scrapeIntervalAlert's description, without the fleets.
func (r resolved) scrapedOffText() string {
	c := r.config
	return fmt.Sprintf("Over the last %d minutes the {{ $labels.scraped_fleet }} fleet's %s series have had {{ $value | printf \"%%.1f\" }} samples a minute on average, where a %d s scrape interval gives %s. Each minute is read over a minute and %d s: with more samples every minute of the fleet is partial (part of it would count twice), so the canary can neither promote nor roll back; with fewer, each minute reads less than it holds. Set scrapeIntervalSeconds to the fleets' scrape interval (60 s divided by the samples a minute) and load the pack again.",
		scrapeAlertMinutes, r.Metric, c.ScrapeIntervalSeconds, fmtNum(c.ScrapesPerMinute()), c.ScrapeIntervalSeconds)
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// templateSafe escapes text for an alert annotation, which Prometheus expands
// as a Go template: a literal "{{" is written as an action printing it.
func templateSafe(s string) string { return strings.ReplaceAll(s, "{{", `{{ "{{" }}`) }

// requestsName is the record of a fleet's requests and failed requests in
// a minute (Canary.ErrorsMetric).
func (r resolved) requestsName() string { return RecordName(r.Metric, "requests_1m", true) }

// errorLLRName is the record of a minute's error evidence.
func (r resolved) errorLLRName() string { return RecordName(r.Metric, "error_llr_1m", false) }

// errorResidualName and errorChangeName are the records of a minute's
// standardized residual of failed requests and its squared change from
// the minute before (verdict's errorResidual and errorRuns.dispersion).
func (r resolved) errorResidualName() string { return RecordName(r.Metric, "error_residual_1m", false) }
func (r resolved) errorChangeName() string   { return RecordName(r.Metric, "error_change_1m", false) }

// errorLLR is verdict's errorEvidence of the last complete minute: k ln R -
// (k + b) ln(1 + f (R - 1)) for the canary's k and the baseline's b failed
// requests, f the canary's share of the requests and R
// verdict.ErrorRatioAlternative; and verdict's errorResidual, (k - f n) /
// sqrt(n f (1 - f)) with n = k + b, absent when n is 0. Both are absent
// where a fleet served no request, in warm-up and in a partial minute.
func (r resolved) errorLLR(m minuteExprs) (llr, residual expr) {
	part := func(fleet, p string) expr {
		minute := recordedMinute(r.fleetRecord(fleet, r.requestsName(), selector.Matcher{Name: prom.PartLabel, Op: selector.Equal, Value: p}), 0)
		// A native histogram's minute is recorded as a histogram: its count.
		return fn("sum", op(fn("histogram_count", minute), "or", minute))
	}
	served := func(fleet string) expr { return op(part(fleet, "requests"), ">", leaf("0")) }
	failed := func(fleet string) expr { return op(part(fleet, "errors"), "or", leaf("vector(0)")) }
	R := verdict.ErrorRatioAlternative
	share := op(served("canary"), "/", op(served("baseline"), "+", served("canary")))
	both := op(failed("canary"), "+", failed("baseline"))
	llr = op(op(failed("canary"), "*", num(math.Log(R))), "-", op(both, "*", fn("ln", op(leaf("1"), "+", op(share, "*", num(R-1))))))
	residual = op(op(failed("canary"), "-", op(share, "*", both)), "/",
		fn("sqrt", op(op(op(both, ">", leaf("0")), "*", share), "*", op(leaf("1"), "-", share))))
	gate := func(e expr) expr { return m.warm(op(e, "unless on()", m.partial)) }
	return gate(llr), gate(residual)
}

// errorChange is the squared change of the minute's recorded residual from
// the minute before's, absent unless both are recorded.
func (r resolved) errorChange() expr {
	now := fn("sum", recordedMinute(r.recordedSeries(r.errorResidualName()).flat(), 0))
	before := fn("sum", recordedMinute(r.recordedSeries(r.errorResidualName()).flat(), 1))
	return op(op(now, "-", before), "^", leaf("2"))
}

// errorRuns is the condition by which failed requests raise traffic-parity
// (verdict's errorRuns.strongest and errorNote): a run of the last 1, 2,
// 4, ... minutes or the window whose evidence, divided by the window's
// dispersion, reaches verdict's ErrorBoundary; its value is the first such
// run's.
func (r resolved) errorRuns() expr {
	c := r.config
	phi := r.errorDispersion()
	var out expr
	for _, l := range append(c.RecentLengths(), c.WindowMinutes) {
		run := op(op(fn("sum", fn("sum_over_time", r.overWindow(r.errorLLRName(), l))), "/", phi), ">=", num(c.ErrorBoundary()))
		if out == nil {
			out = run
		} else {
			out = op(out, "or", run)
		}
	}
	return out
}

// errorRatioAlerts is the alert that fires while the canary is shown to
// fail more often than its baseline (the error part of traffic-parity): the
// window holds, and nothing else would say why; none without a request
// counter.
func (r resolved) errorRatioAlerts(runbook func(string) [2]string) []rule {
	if r.failed == nil {
		return nil
	}
	c := r.config
	canarySel, baselineSel := templateSafe(r.canary.String()), templateSafe(r.baseline.String())
	return []rule{{alert: "PairwiseCanaryErrorRatio", expr: r.whileCanaryServes(r.errorRuns()),
		labels: r.alertLabels([2]string{"severity", "warning"}),
		annotations: [][2]string{
			{"summary", fmt.Sprintf("Canary %s: fails more often than its baseline (error evidence {{ $value | printf \"%%.1f\" }}, boundary %.1f)", templateSafe(r.Name), c.ErrorBoundary())},
			{"description", fmt.Sprintf("Over the window's last minutes (the last 1, 2, 4, ... or %d), the canary's failed requests of %s (%s) are more than its share of the requests lets chance give: the evidence that it fails %gx as often as its baseline, divided by how much the failures clump, reached %.1f. The window is flagged %s and does not promote; nothing rolls back on it. A canary that fails fast can look faster. Canary %s, baseline %s.",
				c.WindowMinutes, r.ErrorsMetric, templateSafe(r.failed.String()), verdict.ErrorRatioAlternative, c.ErrorBoundary(), verdict.FlagTrafficParity, canarySel, baselineSel)},
			runbook("PairwiseCanaryErrorRatio"),
		}}}
}

// errorDispersion is verdict's errorRuns.dispersion over the window: half
// the mean squared change, at least 1, and 1 below verdict.MinChanges
// changes.
func (r resolved) errorDispersion() expr {
	changes := r.overWindow(r.errorChangeName(), 0)
	n := fn("sum", fn("count_over_time", changes))
	phi := fn("clamp_min", op(fn("sum", fn("sum_over_time", changes)), "/", op(leaf("2"), "*", n)), leaf("1"))
	return op(op(phi, "and on()", op(n, ">=", num(verdict.MinChanges))), "or on()", leaf("vector(1)"))
}
