package rulegen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// fleetExprs are the per-minute figures of one fleet, each over the exact
// fleet-merged histogram the Go engine fetches (prom.NativeQuery or
// prom.ClassicQuery), evaluated at the end of a minute.
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
	// served is the number of observations over the whole window, to tell a
	// fleet that left during the analysis from one that is not deployed.
	served expr
	// countAgo is count WarmupMinutes earlier (warm-up), nil without warm-up.
	countAgo expr
	// incomplete holds when a member of the fleet that was serving did not
	// report in the minute (verdict.Completeness on prom.HealthQuery's
	// figures): one of its targets was down (up == 0), or fewer of its
	// series had the two samples a one-minute increase() reads than in one
	// of the StableMinutes minutes before.
	incomplete expr
}

func (r resolved) fleet(name string, sel selector.Selector) fleetExprs {
	f := fleetExprs{name: name, sel: sel}
	q := func(q float64) expr { return fn("histogram_quantile", leaf(verdict.QuantileKey(q)), f.hist) }
	f.quantile = q
	window := strconv.Itoa(r.config.WindowMinutes) + "m"
	switch r.kind {
	case prom.Native:
		f.hist = leaf(prom.NativeQuery(r.Metric, sel))
		f.count = fn("histogram_count", f.hist)
		f.served = fn("histogram_count", leaf("sum(increase("+sel.With(r.Metric)+"["+window+"]))"))
		if r.config.WarmupMinutes > 0 {
			f.countAgo = fn("histogram_count", leaf(fmt.Sprintf("sum(increase(%s[1m] offset %dm))", sel.With(r.Metric), r.config.WarmupMinutes)))
		}
	default:
		inf := append(append(selector.Selector(nil), sel...), selector.Matcher{Name: "le", Op: selector.Equal, Value: "+Inf"})
		f.hist = leaf(prom.ClassicQuery(r.Metric, sel))
		f.count = leaf("sum(increase(" + inf.With(r.Metric+"_bucket") + "[1m]))")
		f.served = leaf("sum(increase(" + inf.With(r.Metric+"_bucket") + "[" + window + "]))")
		if r.config.WarmupMinutes > 0 {
			f.countAgo = leaf(fmt.Sprintf("sum(increase(%s[1m] offset %dm))", inf.With(r.Metric+"_bucket"), r.config.WarmupMinutes))
		}
	}
	// Completeness, from the series prom.HealthQuery counts.
	series := sel.With(r.Metric)
	if r.kind != prom.Native {
		series = append(append(selector.Selector(nil), sel...), selector.Matcher{Name: "le", Op: selector.Equal, Value: "+Inf"}).With(r.Metric + "_bucket")
	}
	reporting := fn("count", op(leaf("count_over_time("+series+"[1m])"), ">=", leaf("2")))
	before := fn("max_over_time", sub(reporting, fmt.Sprintf("[%dm:1m] offset 1m", verdict.StableMinutes)))
	down := fn("count", op(leaf("min_over_time("+sel.With("up")+"[1m])"), "==", leaf("0")))
	f.incomplete = op(op(down, ">", leaf("0")), "or", op(reporting, "<", before))
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
}

func num(v float64) expr { return leaf(strconv.FormatFloat(v, 'g', -1, 64)) }

func (r resolved) minute() minuteExprs {
	c := r.config
	m := minuteExprs{base: r.fleet("baseline", r.baseline), canary: r.fleet("canary", r.canary)}
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
	// min(tail baseline, tail canary) < MinTailObservations, as verdict.Judge
	// (the canary first, so an alert's value is its tail when it is short).
	m.insufficient = op(op(m.canary.tail, "<", num(c.MinTailObservations)), "or", op(m.base.tail, "<", num(c.MinTailObservations)))
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
	return op(e, "and on()", op(m.canary.countAgo, ">", leaf("0")))
}

// lastMinute evaluates e at the end of the last complete wall-clock minute:
// a [1m:1m] subquery holds exactly one step, on a whole minute.
func lastMinute(e expr) expr { return fn("last_over_time", sub(e, "[1m:1m]")) }

// overWindow counts the minutes of the window where e has a sample: the
// subquery steps fall on whole minutes, the minutes the panel and judge show.
func (r resolved) overWindow(e expr) expr {
	return fn("count_over_time", sub(e, fmt.Sprintf("[%dm:1m]", r.config.WindowMinutes)))
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
	return level + ":" + metric + ":" + operation
}

func (r resolved) rules(runbookBase string) []rule {
	c := r.config
	m := r.minute()
	canaryLabel := [2]string{"canary", r.Name}
	window := strconv.Itoa(c.WindowMinutes) + "m"
	vq := verdict.QuantileLabel(c.VerdictQuantile)
	var out []rule

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
			out = append(out, rule{record: RecordName(r.Metric, quantileOp(q)+"_1m", true), expr: lastMinute(f.quantile(q)), labels: fleetLabels})
		}
		out = append(out,
			rule{record: RecordName(r.Metric+"_count", "rate1m", true), expr: lastMinute(op(f.count, "/", leaf("60"))), labels: fleetLabels},
			rule{record: RecordName(r.Metric, "beyond_"+quantileOp(c.VerdictQuantile)+"_1m", true), expr: lastMinute(f.tail), labels: fleetLabels},
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
	out = append(out,
		rule{record: RecordName(r.Metric, quantileOp(c.VerdictQuantile)+"_ratio_1m", false), expr: lastMinute(op(m.recordedRatio, "and", m.data)), labels: labels,
			comment: "canary / baseline " + vq + " of the last complete minute; absent when a fleet has no data"},
		rule{record: RecordName(r.Metric, "verdict_1m", false), expr: lastMinute(m.verdict), labels: labels,
			comment: "verdict code of the last complete minute: 0 good, 1 neutral, 2 bad, 3 insufficient, 4 no-data"},
		rule{record: RecordName(r.Metric, "bad_1m", false), expr: op(fn("count_over_time", sub(m.bad, "[1m:1m]")), "or", leaf("vector(0)")), labels: labels,
			comment: "1 if the last complete minute is a counted bad minute, else 0"},
		rule{record: goodName, expr: r.minuteCount(m.good), labels: labels,
			comment: "good minutes among the last " + window + " of wall-clock minutes" + countsNote},
		rule{record: badName, expr: r.minuteCount(m.bad), labels: labels,
			comment: "bad minutes among the last " + window + " of wall-clock minutes" + countsNote},
		rule{record: flagsName, expr: r.windowFlags(m), labels: labels,
			comment: fmt.Sprintf("flags raised over the last %s (label flag: %s, %s, %s, %s), 1 while raised; a flagged window never promotes",
				window, verdict.FlagSuspiciousWin, verdict.FlagTrafficParity, verdict.FlagFleetMissing, verdict.FlagPartialFleet)},
	)

	runbook := func(alert string) [2]string {
		return [2]string{"runbook_url", runbookBase + "#" + strings.ToLower(alert)}
	}
	if c.Rule != verdict.RuleReference {
		records, alerts := r.evidenceRules(m, labels, runbook)
		out = append(out, records...)
		out = append(out, alerts[0], r.fleetMissingAlert(m, runbook))
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
		rule{alert: "PairwiseCanaryRollback", expr: r.referenceRollback(bad), keepFiring: "10m",
			labels: [][2]string{canaryLabel, {"severity", "critical"}, {"action", "rollback"}},
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: roll back, {{ $value }} bad minutes in the last %s", name, window)},
				{"description", fmt.Sprintf("{{ $value }} of the last %d wall-clock minutes had a canary %s of %s at or above %sx the baseline's (limit %d bad minutes; %s). Canary %s, baseline %s.",
					c.WindowMinutes, vq, r.Metric, fmtNum(c.RollbackThreshold), c.BadLimit, thresholds, canarySel, baselineSel)},
				runbook("PairwiseCanaryRollback"),
			}},
		rule{alert: "PairwiseCanaryBadMinute", expr: lastMinute(m.bad),
			labels: [][2]string{canaryLabel, {"severity", "warning"}},
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: the last minute was bad ({{ $value | printf \"%%.3f\" }}x the baseline %s)", name, vq)},
				{"description", fmt.Sprintf("In the last complete wall-clock minute the canary's %s of %s was {{ $value | printf \"%%.3f\" }}x the baseline's, at or above %sx. %d such minutes in %d roll back. Canary %s, baseline %s.",
					vq, r.Metric, fmtNum(c.RollbackThreshold), c.BadLimit, c.WindowMinutes, canarySel, baselineSel)},
				runbook("PairwiseCanaryBadMinute"),
			}},
		rule{alert: "PairwiseCanaryInsufficientTraffic", expr: lastMinute(op(op(m.insufficient, "and", m.data), "unless", m.partial)), forDur: "10m",
			labels: [][2]string{canaryLabel, {"severity", "warning"}},
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: too little traffic to judge its %s", name, vq)},
				{"description", fmt.Sprintf("For 10 minutes a fleet has had only {{ $value | printf \"%%.1f\" }} observations beyond its %s of %s in a minute, fewer than the %s needed: those minutes are insufficient and count neither good nor bad, so the canary can neither promote nor roll back. Send the canary more traffic or judge a lower quantile. Canary %s, baseline %s.",
					vq, r.Metric, fmtNum(c.MinTailObservations), canarySel, baselineSel)},
				runbook("PairwiseCanaryInsufficientTraffic"),
			}},
		r.fleetMissingAlert(m, runbook),
		rule{alert: "PairwiseCanaryPromotable", expr: op(op(op(good, ">=", leaf(strconv.Itoa(c.GoodNeeded))), "unless on()", r.referenceRollback(bad)), "unless on()", flags),
			labels: [][2]string{canaryLabel, {"severity", "info"}, {"action", "promote"}},
			annotations: [][2]string{
				{"summary", fmt.Sprintf("Canary %s: promotable, {{ $value }} good minutes in the last %s", name, window)},
				{"description", fmt.Sprintf("{{ $value }} of the last %d wall-clock minutes were good (%s; %d needed), fewer than %d were bad and no flag is raised. Canary %s, baseline %s.",
					c.WindowMinutes, thresholds, c.GoodNeeded, c.BadLimit, canarySel, baselineSel)},
				runbook("PairwiseCanaryPromotable"),
			}},
	)
	return out
}

// minuteCount counts the window's minutes where e has a sample, 0 if none.
func (r resolved) minuteCount(e expr) expr { return op(r.overWindow(e), "or", leaf("vector(0)")) }

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
func (r resolved) fleetMissingAlert(m minuteExprs, runbook func(string) [2]string) rule {
	window := strconv.Itoa(r.config.WindowMinutes) + "m"
	canarySel, baselineSel := templateSafe(r.canary.String()), templateSafe(r.baseline.String())
	missing := func(present, absent fleetExprs) expr {
		return op(
			lastMinute(fn("label_replace", op(op(present.count, ">", leaf("0")), "unless", op(absent.count, ">", leaf("0"))),
				leaf(`"missing_fleet"`), leaf(strconv.Quote(absent.name)), leaf(`""`), leaf(`""`))),
			"and on()", op(absent.served, ">", leaf("0")))
	}
	return rule{alert: "PairwiseCanaryFleetMissing", expr: op(missing(m.base, m.canary), "or", missing(m.canary, m.base)), forDur: "5m",
		labels: [][2]string{{"canary", r.Name}, {"severity", "warning"}},
		annotations: [][2]string{
			{"summary", "Canary " + templateSafe(r.Name) + ": the {{ $labels.missing_fleet }} fleet has stopped serving"},
			{"description", fmt.Sprintf("For 5 minutes the {{ $labels.missing_fleet }} fleet has had no %s observations while the other fleet served, although it served within the last %s. Those minutes are no-data and the analysis is stalled. Canary %s, baseline %s.",
				r.Metric, window, canarySel, baselineSel)},
			runbook("PairwiseCanaryFleetMissing"),
		}}
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// templateSafe escapes text for an alert annotation, which Prometheus expands
// as a Go template: a literal "{{" is written as an action printing it.
func templateSafe(s string) string { return strings.ReplaceAll(s, "{{", `{{ "{{" }}`) }
