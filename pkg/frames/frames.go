// Package frames lays an analysis out as wide tables: the minutes, the
// decision and the per-pod spread. The tables are pure; DataFrame turns each
// into a Grafana data frame field by field, without knowing what they mean.
// Field names and meta here are the contract with the panel (src/panel/data),
// which reads the golden frames in testdata in its tests.
package frames

import (
	"math"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// Table is a named wide table with typed columns of equal length.
type Table struct {
	Name    string
	Columns []Column
	// Meta travels in the frame's meta.custom: the thresholds in force.
	Meta map[string]any
	// Warnings become frame notices.
	Warnings []string
}

// Column holds one of: []time.Time, []*time.Time, []*float64, []string, []bool.
// Unit is a Grafana unit id ("s", "reqps") or empty; Labels, the field's
// labels (only the numeric shape sets them).
type Column struct {
	Name   string
	Values any
	Unit   string
	Labels map[string]string
}

// Frame names, one per query type.
const (
	MinutesName  = "minutes"
	DecisionName = "decision"
	PodsName     = "pods"
)

// num is a nullable number: NaN becomes null; infinities are kept.
func num(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}

// Meta is what the panel needs to label what it shows.
func Meta(res *engine.Result) map[string]any {
	c := res.Config
	labels := make([]string, len(c.Quantiles))
	for i, q := range c.Quantiles {
		labels[i] = verdict.QuantileLabel(q)
	}
	return map[string]any{
		"quantiles":            labels,
		"quantileValues":       c.Quantiles,
		"verdictQuantile":      verdict.QuantileLabel(c.VerdictQuantile),
		"verdictQuantileValue": c.VerdictQuantile,
		"promoteThreshold":     c.PromoteThreshold,
		"rollbackThreshold":    c.RollbackThreshold,
		"goodNeeded":           c.GoodNeeded,
		"badLimit":             c.BadLimit,
		"windowMinutes":        c.WindowMinutes,
		"warmupMinutes":        c.WarmupMinutes,
		"minTailObservations":  c.MinTailObservations,
		"confidence":           c.Confidence,
		"metric":               res.Request.Metric,
		"histogramKind":        histogramKind(res),
		"histogramKinds":       map[string]string{"baseline": string(res.BaselineKind), "canary": string(res.CanaryKind)},
		"baselineSelector":     res.Request.Baseline.String(),
		"canarySelector":       res.Request.Canary.String(),
		"decision":             string(res.Decision),
		"rule":                 c.Rule,
		"falseRollback":        c.FalseRollback,
		"falsePromote":         c.FalsePromote,
		"settings":             c.Settings(),
		"since":                since(res),
		"anchored":             res.Evidence.Anchored,
		"flagTexts":            verdict.FlagTexts(res.Flags, c),
		"exploreQueries":       ExploreQueries(res),
		// Where each fleet's histograms and health were read from: the
		// rule pack's recorded minutes or raw series (the query inspector
		// shows it).
		"read": served(res),
	}
}

func served(res *engine.Result) []engine.Served {
	if res.Served == nil {
		return []engine.Served{}
	}
	return res.Served
}

// histogramKind is the kind both fleets were read as (native or classic),
// or "mixed" when they were read as different kinds (histogramKinds has
// each fleet's).
func histogramKind(res *engine.Result) string {
	if res.BaselineKind != res.CanaryKind {
		return "mixed"
	}
	return string(res.BaselineKind)
}

// ExploreQueries are the PromQL of each fleet's verdict quantile in the
// minute ending at the evaluation time, from the fleet's merged histogram as
// the engine reads it: what the panel opens in Explore for a minute.
func ExploreQueries(res *engine.Result) map[string]string {
	q := verdict.QuantileKey(res.Config.VerdictQuantile)
	fleet := func(sel selector.Selector, kind prom.Kind) string {
		hist := prom.NativeQuery(res.Request.Metric, sel, res.Config.ScrapeInterval())
		if kind == prom.Classic {
			hist = prom.ClassicQuery(res.Request.Metric, sel, res.Config.ScrapeInterval())
		}
		return "histogram_quantile(" + q + ", " + hist + ")"
	}
	return map[string]string{
		"baseline": fleet(res.Request.Baseline, res.BaselineKind),
		"canary":   fleet(res.Request.Canary, res.CanaryKind),
	}
}

// since is the deployment start the analysis was asked for, RFC 3339, or "".
func since(res *engine.Result) string {
	if res.Request.Since.IsZero() {
		return ""
	}
	return res.Request.Since.UTC().Format(time.RFC3339)
}

// warnings are the engine's warnings and the window's flag notes.
func warnings(res *engine.Result) []string {
	return append(append([]string{}, res.Warnings...), res.Notes...)
}

// Minutes is one row per wall-clock minute.
func Minutes(res *engine.Result) Table {
	n := len(res.Minutes)
	c := res.Config
	times := make([]time.Time, n)
	baseRPS, canRPS, ratio := make([]*float64, n), make([]*float64, n), make([]*float64, n)
	baseQ, canQ := make([][]*float64, len(c.Quantiles)), make([][]*float64, len(c.Quantiles))
	for i := range c.Quantiles {
		baseQ[i], canQ[i] = make([]*float64, n), make([]*float64, n)
	}
	verdicts, reasons := make([]string, n), make([]string, n)
	codes, baseCount, canCount := make([]*float64, n), make([]*float64, n), make([]*float64, n)
	baseLo, baseHi, canLo, canHi := make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
	warm := make([]bool, n)
	// The decision of the window ending at each minute, and its evidence.
	decisions, decisionReasons := make([]string, n), make([]string, n)
	decisionCodes, evMinutes := make([]*float64, n), make([]*float64, n)
	statistic, promoteStatistic, rollbackBoundary, promoteBoundary := make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
	canaryTail, expectedTail, baselineTail := make([]*float64, n), make([]*float64, n), make([]*float64, n)
	recentMinutes, recentStatistic, recentBoundary := make([]*float64, n), make([]*float64, n), make([]*float64, n)
	recentCanary, recentExpected := make([]*float64, n), make([]*float64, n)
	anchored := make([]bool, n)
	for r, m := range res.Minutes {
		decisions[r], decisionReasons[r] = string(m.Decision), m.DecisionReason
		decisionCodes[r] = num(float64(m.Decision.Code()))
		w := m.Window
		evMinutes[r], anchored[r] = num(float64(w.Minutes)), w.Anchored
		statistic[r], promoteStatistic[r] = num(w.Statistic), num(w.PromoteStatistic)
		rollbackBoundary[r], promoteBoundary[r] = num(w.Rollback), num(-w.Promote)
		canaryTail[r], expectedTail[r], baselineTail[r] = num(w.Canary), num(w.Expected), num(w.Baseline)
		recentMinutes[r], recentStatistic[r], recentBoundary[r], recentCanary[r], recentExpected[r] = recent(w)
	}
	for r, m := range res.Minutes {
		times[r] = m.Time
		baseRPS[r], canRPS[r] = present(m.Baseline, m.Baseline.RPS), present(m.Canary, m.Canary.RPS)
		for i := range c.Quantiles {
			baseQ[i][r], canQ[i][r] = num(m.Baseline.Quantiles[i]), num(m.Canary.Quantiles[i])
		}
		ratio[r] = num(m.Ratio)
		verdicts[r], reasons[r], warm[r] = string(m.Verdict), m.Reason, m.Warmup
		codes[r] = num(float64(m.Verdict.Code()))
		baseCount[r], canCount[r] = num(m.Baseline.Count), num(m.Canary.Count)
		baseLo[r], baseHi[r], canLo[r], canHi[r] = num(m.Baseline.Lower), num(m.Baseline.Upper), num(m.Canary.Lower), num(m.Canary.Upper)
	}
	cols := []Column{{Name: "time", Values: times}, {Name: "baseline_rps", Values: baseRPS, Unit: "reqps"}, {Name: "canary_rps", Values: canRPS, Unit: "reqps"}}
	for i, q := range c.Quantiles {
		label := verdict.QuantileLabel(q)
		cols = append(cols, Column{Name: "baseline_" + label, Values: baseQ[i], Unit: "s"}, Column{Name: "canary_" + label, Values: canQ[i], Unit: "s"})
	}
	cols = append(cols,
		Column{Name: "ratio", Values: ratio},
		Column{Name: "verdict", Values: verdicts},
		Column{Name: "verdict_code", Values: codes},
		Column{Name: "warmup", Values: warm},
		Column{Name: "baseline_count", Values: baseCount},
		Column{Name: "canary_count", Values: canCount},
		Column{Name: "baseline_lower", Values: baseLo, Unit: "s"},
		Column{Name: "baseline_upper", Values: baseHi, Unit: "s"},
		Column{Name: "canary_lower", Values: canLo, Unit: "s"},
		Column{Name: "canary_upper", Values: canHi, Unit: "s"},
		Column{Name: "reason", Values: reasons},
		Column{Name: "decision", Values: decisions},
		Column{Name: "decision_code", Values: decisionCodes},
		Column{Name: "decision_reason", Values: decisionReasons},
		Column{Name: "evidence_statistic", Values: statistic},
		Column{Name: "rollback_boundary", Values: rollbackBoundary},
		Column{Name: "promote_statistic", Values: promoteStatistic},
		Column{Name: "promote_boundary", Values: promoteBoundary},
		Column{Name: "evidence_minutes", Values: evMinutes},
		Column{Name: "anchored", Values: anchored},
		Column{Name: "canary_tail", Values: canaryTail},
		Column{Name: "expected_canary_tail", Values: expectedTail},
		Column{Name: "baseline_tail", Values: baselineTail},
		Column{Name: "recent_minutes", Values: recentMinutes},
		Column{Name: "recent_statistic", Values: recentStatistic},
		Column{Name: "recent_boundary", Values: recentBoundary},
		Column{Name: "recent_canary_tail", Values: recentCanary},
		Column{Name: "recent_expected_canary_tail", Values: recentExpected},
	)
	return Table{Name: MinutesName, Columns: cols, Meta: Meta(res), Warnings: warnings(res)}
}

// recent is the evidence rule's recent run of minutes: its length, statistic,
// boundary and pooled tail, all null when no run shorter than the window
// was read.
func recent(w verdict.WindowEvidence) (minutes, statistic, boundary, canary, expected *float64) {
	if w.RecentMinutes <= 0 {
		return nil, nil, nil, nil, nil
	}
	return num(float64(w.RecentMinutes)), num(w.RecentStatistic), num(w.RecentBoundary), num(w.RecentVotes[0].Canary), num(w.RecentVotes[0].Expected)
}

func present(s verdict.FleetStats, v float64) *float64 {
	if !s.Present {
		return nil
	}
	return num(v)
}

// Decision is one row with numeric fields, so a Grafana-managed alert rule
// can use it directly (decision_code 2 means rollback). The evidence fields
// are the evidence rule's reading of the judged window; under the reference
// rule they are shown but do not decide. byPod, for a rollback, says which
// of the canary's pods hold its tail (engine.Attribute; nil: not asked,
// by_pod empty).
func Decision(res *engine.Result, byPod *engine.Attribution) Table {
	c, n, ev := res.Config, res.Counts, res.Evidence
	f := func(v float64) []*float64 { return []*float64{num(v)} }
	var worstTime *time.Time
	worstRatio := math.NaN()
	if res.Worst >= 0 {
		t := res.Minutes[res.Worst].Time
		worstTime, worstRatio = &t, res.Minutes[res.Worst].Ratio
	}
	rm, rs, rb, rc, re := recent(ev)
	one := func(v *float64) []*float64 { return []*float64{v} }
	cols := []Column{
		{Name: "time", Values: []time.Time{res.Request.Window.Last}},
		{Name: "decision", Values: []string{string(res.Decision)}},
		{Name: "decision_code", Values: f(float64(res.Decision.Code()))},
		{Name: "rule", Values: []string{c.Rule}},
		{Name: "evidence_statistic", Values: f(ev.Statistic)},
		{Name: "rollback_boundary", Values: f(ev.Rollback)},
		{Name: "promote_statistic", Values: f(ev.PromoteStatistic)},
		{Name: "promote_boundary", Values: f(-ev.Promote)},
		{Name: "evidence_minutes", Values: f(float64(ev.Minutes))},
		{Name: "canary_tail", Values: f(ev.Canary)},
		{Name: "expected_canary_tail", Values: f(ev.Expected)},
		{Name: "baseline_tail", Values: f(ev.Baseline)},
		{Name: "recent_minutes", Values: one(rm)},
		{Name: "recent_statistic", Values: one(rs)},
		{Name: "recent_boundary", Values: one(rb)},
		{Name: "recent_canary_tail", Values: one(rc)},
		{Name: "recent_expected_canary_tail", Values: one(re)},
		{Name: "good", Values: f(float64(n.Good))},
		{Name: "neutral", Values: f(float64(n.Neutral))},
		{Name: "bad", Values: f(float64(n.Bad))},
		{Name: "insufficient", Values: f(float64(n.Insufficient))},
		{Name: "no_data", Values: f(float64(n.NoData))},
		{Name: "partial", Values: f(float64(n.Partial))},
		{Name: "warmup", Values: f(float64(n.Warmup))},
		{Name: "window_minutes", Values: f(float64(c.WindowMinutes))},
		{Name: "good_needed", Values: f(float64(c.GoodNeeded))},
		{Name: "bad_limit", Values: f(float64(c.BadLimit))},
		{Name: "promote_threshold", Values: f(c.PromoteThreshold)},
		{Name: "rollback_threshold", Values: f(c.RollbackThreshold)},
		{Name: "worst_minute", Values: []*time.Time{worstTime}},
		{Name: "worst_ratio", Values: f(worstRatio)},
		{Name: "reason", Values: []string{res.Reason}},
		{Name: "by_pod", Values: []string{byPod.String()}},
		{Name: "flags", Values: []string{strings.Join(res.Flags, ",")}},
	}
	return Table{Name: DecisionName, Meta: Meta(res), Warnings: warnings(res), Columns: cols}
}

// Pods is the per-pod spread of the verdict quantile, one row per minute and fleet.
func Pods(res *engine.Result, spread []engine.Spread) Table {
	n := len(spread)
	times, fleets, worst := make([]time.Time, n), make([]string, n), make([]string, n)
	lo, med, hi, pods := make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
	for i, s := range spread {
		times[i], fleets[i], worst[i] = s.Time, s.Fleet, s.WorstPod
		lo[i], med[i], hi[i], pods[i] = num(s.Min), num(s.Median), num(s.Max), num(float64(s.Pods))
	}
	return Table{Name: PodsName, Meta: Meta(res), Warnings: warnings(res), Columns: []Column{
		{Name: "time", Values: times},
		{Name: "fleet", Values: fleets},
		{Name: "min", Values: lo, Unit: "s"},
		{Name: "median", Values: med, Unit: "s"},
		{Name: "max", Values: hi, Unit: "s"},
		{Name: "worst_pod", Values: worst},
		{Name: "pods", Values: pods},
	}}
}
