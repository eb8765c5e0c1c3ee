package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

var updateEvidenceTests = flag.Bool("update-evidence-tests", false, "rewrite rules/tests/evidence.yml from pkg/sim and the Go engine's decisions")

// evidenceTestFile holds the promtool unit tests of the evidence rule.
const evidenceTestFile = "rules/tests/evidence.yml"

// The evidence rule's promtool tests run the committed pack on fleets from
// pkg/sim, one pod a fleet scraped every 30 s, and expect exactly what the Go
// engine decides on the same series: the series are written out, and the
// engine reads each minute's histograms as Prometheus computes them from the
// series (increase() over a minute and one 15 s interval, times 60/75, with
// its extrapolation, emulated below; the promtool run checks the emulation,
// since any difference would move the minutes). The series are scraped every
// 15 s, the pack's default.
const (
	scrapeSeconds = 15
	// nativeSchema is the exponential schema of the native series: 2^(1/2)
	// wide buckets, whose bounds are Prometheus's to the bit (expFrac).
	nativeSchema = 1
)

// expFrac is Prometheus's exponentialBounds for nativeSchema
// (model/histogram/generic.go): bucket i = k<<schema + j ends at
// expFrac[j] * 2^(k+1).
var expFrac = []float64{0.5, 0.7071067811865475}

// classicBounds are the le bounds of the classic series (and +Inf).
var classicBounds = []float64{0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.1, 0.15, 0.25, 0.5}

func nativeBound(i int) float64 {
	j := i & (1<<nativeSchema - 1)
	return math.Ldexp(expFrac[j], i>>nativeSchema+1)
}

func nativeIndex(v float64) int {
	i := int(math.Ceil(math.Log2(v) * (1 << nativeSchema)))
	for nativeBound(i) < v {
		i++
	}
	for i > math.MinInt32 && nativeBound(i-1) >= v {
		i--
	}
	return i
}

// evidenceScenario is one promtool test group: simulated fleets, judged
// under one histogram kind.
type evidenceScenario struct {
	title   string
	kind    prom.Kind
	sim     sim.Config
	minutes int
	// clumped: the pods pause, and some windows' evidence must be divided
	// by its dispersion (the test counts them).
	clumped bool
}

func evidenceScenarios() []evidenceScenario {
	start := time.Unix(0, 0).UTC() // promtool's series start at 0
	healthy := sim.DefaultConfig(start)
	healthy.Seed, healthy.PodsPerFleet = 11, 1
	regression := healthy
	regression.Seed, regression.Scenario, regression.RegressionStartMinute = 13, sim.ScenarioRegression, 60
	paused := healthy
	paused.Seed, paused.StallEveryMinutes, paused.StallSeconds = 123, 10, 1
	pausedRegression := regression
	pausedRegression.Seed, pausedRegression.StallEveryMinutes, pausedRegression.StallSeconds = 29, 10, 1
	var out []evidenceScenario
	for _, k := range []prom.Kind{prom.Native, prom.Classic} {
		out = append(out,
			evidenceScenario{"a healthy 5% canary of identical fleets", k, healthy, 150, false},
			evidenceScenario{"a 5% canary that turns 1.2x slower after minute 60", k, regression, 100, false},
			evidenceScenario{"a healthy 5% canary of identical fleets whose pods pause 1 s about every 10 minutes", k, paused, 150, true},
			evidenceScenario{"a 5% canary that turns 1.2x slower after minute 60, its pods pausing 1 s about every 10 minutes", k, pausedRegression, 100, true},
		)
	}
	return out
}

// cumulative is one fleet's counters at every scrape: native bucket counts
// by index, and classic counts by le (the last is +Inf).
type cumulative struct {
	native  []map[int]float64
	classic [][]float64
	count   []float64
}

func observe(s *sim.Sim, fleet string, scrapes int) cumulative {
	var c cumulative
	nat := map[int]float64{}
	cls := make([]float64, len(classicBounds)+1)
	count := 0.0
	for i := 0; i <= scrapes; i++ {
		if i > 0 {
			from := time.Unix(int64((i-1)*scrapeSeconds), 0)
			s.Observe(fleet, 0, from, from.Add(scrapeSeconds*time.Second), func(v float64, _ bool) {
				nat[nativeIndex(v)]++
				for j, b := range classicBounds {
					if v <= b {
						cls[j]++
					}
				}
				cls[len(classicBounds)]++
				count++
			})
		}
		c.native = append(c.native, mapsClone(nat))
		c.classic = append(c.classic, slices.Clone(cls))
		c.count = append(c.count, count)
	}
	return c
}

func mapsClone(m map[int]float64) map[int]float64 {
	out := make(map[int]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// minuteRange is the seconds of the range the pack reads a minute over
// (prom.MinuteRange at its default interval).
const minuteRange = 75

// perMinute is prom.PerMinute at the pack's default interval.
const perMinute = 60.0 / minuteRange

// increaseFactor is Prometheus's extrapolation (promql extrapolatedRate) of
// increase() at T over minuteRange seconds, times 60/75, of a counter sampled at
// T-60s (first) ... T (last): it extrapolates to the range start, unless the
// counter would fall below zero before it.
func increaseFactor(first, result float64) float64 {
	sampledInterval := 60.0
	durationToStart := float64(minuteRange - 60)
	if result > 0 && first >= 0 {
		if durationToZero := sampledInterval * (first / result); durationToZero < durationToStart {
			durationToStart = durationToZero
		}
	}
	return (sampledInterval + durationToStart + 0) / sampledInterval
}

// minuteHistogram is sum(increase(...[75s])) * 0.8 (native) or sum by (le)
// of it (classic) at the end of minute T, as the engine reads it.
func (c cumulative) minuteHistogram(t *testing.T, kind prom.Kind, minute int) *histogram.Histogram {
	last := minute * 60 / scrapeSeconds
	first := max(last-60/scrapeSeconds, 0)
	if kind == prom.Native {
		result := c.count[last] - c.count[first]
		factor := increaseFactor(c.count[first], result)
		var buckets []histogram.APIBucket
		for i, v := range c.native[last] {
			if d := (v - c.native[first][i]) * factor * perMinute; d > 0 {
				buckets = append(buckets, histogram.APIBucket{Boundaries: 0, Lower: nativeBound(i - 1), Upper: nativeBound(i), Count: d})
			}
		}
		h, err := histogram.FromNative(buckets, result*factor*perMinute, 0)
		if err != nil || h.Kind != histogram.NativeExponential || h.Schema != nativeSchema {
			t.Fatalf("native histogram of minute %d: %v (kind %v, schema %d)", minute, err, h.Kind, h.Schema)
		}
		return h
	}
	les := append(slices.Clone(classicBounds), math.Inf(1))
	counts := make([]float64, len(les))
	for j := range les {
		result := c.classic[last][j] - c.classic[first][j]
		counts[j] = result * increaseFactor(c.classic[first][j], result) * perMinute
	}
	h, err := histogram.FromClassic(les, counts)
	if err != nil {
		t.Fatalf("classic histogram of minute %d: %v", minute, err)
	}
	return h
}

// emulatedProm answers the engine from the simulated counters.
type emulatedProm struct {
	t       *testing.T
	kind    prom.Kind
	minutes int
	fleets  map[string]cumulative
}

func (p emulatedProm) FleetHistograms(_ context.Context, _ string, sel selector.Selector, _ prom.Kind, r prom.Range) (prom.Series, prom.Kind, error) {
	c := p.fleets[sel.String()]
	out := prom.Series{}
	for m := 1; m <= p.minutes; m++ {
		if at := time.Unix(int64(m*60), 0); !at.Before(r.Start) && !at.After(r.End) {
			out[at.Unix()] = c.minuteHistogram(p.t, p.kind, m)
		}
	}
	return out, p.kind, nil
}

// FleetHealth: one series a fleet, a sample every scrape, no target down.
func (p emulatedProm) FleetHealth(_ context.Context, _ string, _ selector.Selector, _ prom.Kind, r prom.Range) (map[int64]prom.Health, error) {
	out := map[int64]prom.Health{}
	for m := 1; m <= p.minutes; m++ {
		if at := time.Unix(int64(m*60), 0); !at.Before(r.Start) && !at.After(r.End) {
			out[at.Unix()] = prom.Health{Samples: 60 / scrapeSeconds, Series: 1, Reporting: 1}
		}
	}
	return out, nil
}

// packQuery finds the committed canary judged on a histogram kind.
func packQuery(t *testing.T, kind prom.Kind) rulegen.Queries {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "rules", "pairwise.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := rulegen.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := rulegen.MinuteQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Kind == kind {
			return q
		}
	}
	t.Fatalf("rules/pairwise.yaml has no %s canary", kind)
	return rulegen.Queries{}
}

// packAnnotations reads an alert's annotation templates from the committed pack.
func packAnnotations(t *testing.T, canary, alert string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "rules", "pairwise.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var pack struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &pack); err != nil {
		t.Fatal(err)
	}
	for _, g := range pack.Groups {
		for _, r := range g.Rules {
			if g.Name == "pairwise-"+canary && r.Alert == alert {
				return r.Annotations
			}
		}
	}
	t.Fatalf("the committed pack has no alert %s for canary %s", alert, canary)
	return nil
}

// expectedAnnotations are an alert's annotations at a minute: the summary's
// $value and the description's first sentence, the engine's reason, are what
// the engine says; the rest of the templates is static text.
func expectedAnnotations(t *testing.T, templates map[string]string, value float64, reason string) map[string]string {
	t.Helper()
	const valueAction = `{{ $value | printf "%.1f" }}`
	out := map[string]string{}
	for k, v := range templates {
		switch k {
		case "summary":
			out[k] = strings.ReplaceAll(v, valueAction, fmt.Sprintf("%.1f", value))
		case "description":
			// The template's text after its last action ends the engine's
			// reason (promote) or follows it (rollback).
			rest := v[strings.LastIndex(v, "}}")+2:]
			if i := strings.Index(reason, " reached the promote boundary"); i >= 0 {
				reason = reason[:i]
			}
			out[k] = reason + rest
		default:
			out[k] = v
		}
	}
	return out
}

func seriesLabels(fleet string, extra string) string {
	return fmt.Sprintf(`http_request_duration_seconds%s{service="checkout",track=%q,pod="%s-0"%s}`, map[bool]string{true: "_bucket", false: ""}[extra != ""], fleet, fleet, extra)
}

func writeSeries(b *strings.Builder, kind prom.Kind, fleet string, c cumulative) {
	scrapes := len(c.count)
	if kind == prom.Native {
		lo, hi := math.MaxInt, math.MinInt
		for i := range c.native[scrapes-1] {
			lo, hi = min(lo, i), max(hi, i)
		}
		fmt.Fprintf(b, "      - series: '%s'\n        values: '", seriesLabels(fleet, ""))
		for s := 0; s < scrapes; s++ {
			if s > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "{{schema:%d sum:0 count:%s offset:%d buckets:[", nativeSchema, strconv.FormatFloat(c.count[s], 'f', -1, 64), lo)
			for i := lo; i <= hi; i++ {
				if i > lo {
					b.WriteByte(' ')
				}
				b.WriteString(strconv.FormatFloat(c.native[s][i], 'f', -1, 64))
			}
			b.WriteString("]}}")
		}
		b.WriteString("'\n")
		return
	}
	for j := range len(classicBounds) + 1 {
		le := "+Inf"
		if j < len(classicBounds) {
			le = strconv.FormatFloat(classicBounds[j], 'f', -1, 64)
		}
		fmt.Fprintf(b, "      - series: '%s'\n        values: '", seriesLabels(fleet, fmt.Sprintf(",le=%q", le)))
		for s := 0; s < scrapes; s++ {
			if s > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatFloat(c.classic[s][j], 'f', -1, 64))
		}
		b.WriteString("'\n")
	}
}

// generateEvidenceTests writes the promtool tests of the evidence rule.
func generateEvidenceTests(t *testing.T) []byte {
	var b strings.Builder
	b.WriteString(`# Code generated by TestEvidenceUnitTestsAreGenerated (cmd/pairwise/rules_evidence_test.go); DO NOT EDIT.
# promtool unit tests of the committed rule pack's evidence rule:
#   .tools/bin/promtool test rules rules/tests/evidence.yml
# (go test ./cmd/pairwise/ runs them; regenerate with
#   go test ./cmd/pairwise/ -run TestEvidenceUnitTestsAreGenerated -update-evidence-tests).
# The fleets are pkg/sim's (500 req/s, a 5% canary, bursts and the daily
# curve), one pod a fleet scraped every 30s, as native (schema 1) or classic
# histograms. Every expected value is the Go engine's (engine.Analyze, the
# timeline without a deployment start) on the same series: the minute the
# rollback alert fires, its annotations (the engine's reason), how many minutes
# each decision holds; and, for the healthy canary, that the chapter's counting
# rule would have rolled it back (5 bad minutes in an hour) while the evidence
# rule never does. Minute T is (T-60s, T]; the group is evaluated every minute.
rule_files:
  - ../pairwise.rules.yml
evaluation_interval: 1m
tests:
`)
	for _, sc := range evidenceScenarios() {
		s, err := sim.New(sc.sim)
		if err != nil {
			t.Fatal(err)
		}
		scrapes := sc.minutes * 60 / scrapeSeconds
		q := packQuery(t, sc.kind)
		fleets := map[string]cumulative{q.Baseline.String(): observe(s, sim.FleetBaseline, scrapes), q.Canary.String(): observe(s, sim.FleetCanary, scrapes)}
		src := emulatedProm{t: t, kind: sc.kind, minutes: sc.minutes, fleets: fleets}
		window := pairing.Window{First: time.Unix(60, 0), Last: time.Unix(int64(sc.minutes*60), 0)}
		judge := func(rule string) *engine.Result {
			c := q.Config
			c.Rule = rule
			res, err := engine.Analyze(context.Background(), src, engine.Request{Metric: q.Metric, Baseline: q.Baseline, Canary: q.Canary, Kind: sc.kind, Config: c, Window: window})
			if err != nil {
				t.Fatalf("%s, %s: %v", sc.title, sc.kind, err)
			}
			if len(res.Minutes) != sc.minutes {
				t.Fatalf("%s: the engine shows %d minutes, want %d", sc.title, len(res.Minutes), sc.minutes)
			}
			return res
		}
		evidence, reference := judge(verdict.RuleEvidence), judge(verdict.RuleReference)
		writeEvidenceTest(t, &b, sc, q, fleets, evidence, reference)
	}
	return []byte(b.String())
}

func writeEvidenceTest(t *testing.T, b *strings.Builder, sc evidenceScenario, q rulegen.Queries, fleets map[string]cumulative, evidence, reference *engine.Result) {
	minuteOf := func(m verdict.Minute) string { return fmt.Sprintf("%dm", m.Time.Unix()/60) }
	counts := map[verdict.Decision]int{}
	firstOf := map[verdict.Decision]int{}
	for i, m := range evidence.Minutes {
		if counts[m.Decision] == 0 {
			firstOf[m.Decision] = i
		}
		counts[m.Decision]++
	}
	refRollback, maxBad := -1, 0
	for i, m := range reference.Minutes {
		if m.Decision == verdict.Rollback && refRollback < 0 {
			refRollback = i
		}
		n := 0
		for _, w := range reference.Minutes[max(0, i-q.Config.WindowMinutes+1) : i+1] {
			if w.Verdict == verdict.Bad && !w.Warmup {
				n++
			}
		}
		maxBad = max(maxBad, n)
	}
	t.Logf("%s (%s): evidence rule %v (first rollback %v), reference rule first rolls back at minute %d, at most %d bad minutes in a window",
		sc.title, sc.kind, counts, firstOf[verdict.Rollback], refRollback+1, maxBad)
	decision := fmt.Sprintf("canary:%s:decision_%dm{canary=%q}", q.Metric, q.Config.WindowMinutes, q.Name)
	end := fmt.Sprintf("%dm", sc.minutes)

	fmt.Fprintf(b, "\n  # %s, %s histograms (canary %q): evidence rule decisions over %d minutes: %d promote, %d hold, %d rollback.\n",
		sc.title, sc.kind, q.Name, sc.minutes, counts[verdict.Promote], counts[verdict.Hold], counts[verdict.Rollback])
	fmt.Fprintf(b, "  - interval: %ds\n    input_series:\n", scrapeSeconds)
	writeSeries(b, sc.kind, sim.FleetBaseline, fleets[q.Baseline.String()])
	writeSeries(b, sc.kind, sim.FleetCanary, fleets[q.Canary.String()])
	b.WriteString("    promql_expr_test:\n")
	// expr expects query at `at` to give one sample, or none without value.
	expr := func(query, at, labels string, value ...float64) {
		fmt.Fprintf(b, "      - expr: '%s'\n        eval_time: %s\n", query, at)
		if len(value) > 0 {
			fmt.Fprintf(b, "        exp_samples:\n          - labels: '%s'\n            value: %s\n", labels, strconv.FormatFloat(value[0], 'f', -1, 64))
		}
	}
	canaryLabel := fmt.Sprintf("{canary=%q}", q.Name)
	// How many minutes each decision holds, minute by minute (the group is
	// evaluated at every whole minute; the subquery reads each evaluation).
	for _, d := range []verdict.Decision{verdict.Promote, verdict.Hold, verdict.Rollback} {
		query := fmt.Sprintf("count_over_time((%s == %d)[%s:1m])", decision, d.Code(), end)
		if counts[d] > 0 {
			expr(query, end, canaryLabel, float64(counts[d]))
		} else {
			expr(query, end, "")
		}
	}
	if sc.clumped {
		// The minutes whose window divides the p99 vote's evidence by its
		// dispersion, the engine's against the pack's.
		discounted := 0
		for _, m := range evidence.Minutes {
			if m.Window.Dispersion[0] > 1 {
				discounted++
			}
		}
		if discounted == 0 {
			t.Fatalf("%s: no window's evidence is divided by its dispersion; the test would show nothing: change the seed", sc.title)
		}
		if i, ok := firstOf[verdict.Rollback]; ok && counts[verdict.Rollback] > 0 && !(evidence.Minutes[i].Window.Dispersion[0] > 1) {
			t.Fatalf("%s: the rollback's reason names no dispersion, so its description's template is not tested: change the seed", sc.title)
		}
		query := fmt.Sprintf(`count_over_time((canary:%s:evidence_dispersion_%dm{canary=%q,quantile="%s"} > 1)[%s:1m])`,
			q.Metric, q.Config.WindowMinutes, q.Name, verdict.QuantileLabel(q.Config.VerdictQuantile), end)
		expr(query, end, fmt.Sprintf(`{canary=%q,quantile="%s"}`, q.Name, verdict.QuantileLabel(q.Config.VerdictQuantile)), float64(discounted))
	}
	alerts := func(name, over string) string {
		return fmt.Sprintf(`count_over_time(ALERTS{alertname=%q,alertstate="firing",canary=%q}[%s])`, name, q.Name, over)
	}
	var tests []string
	alertTest := func(name, at string, annotations map[string]string, labels map[string]string) {
		var s strings.Builder
		fmt.Fprintf(&s, "      - alertname: %s\n        eval_time: %s\n", name, at)
		if annotations != nil {
			s.WriteString("        exp_alerts:\n          - exp_labels:\n")
			for _, k := range sortedKeys(labels) {
				fmt.Fprintf(&s, "              %s: %s\n", k, quoteYAML(labels[k]))
			}
			s.WriteString("            exp_annotations:\n")
			for _, k := range sortedKeys(annotations) {
				fmt.Fprintf(&s, "              %s: %s\n", k, quoteYAML(annotations[k]))
			}
		}
		tests = append(tests, s.String())
	}
	if i, ok := firstOf[verdict.Rollback]; ok && counts[verdict.Rollback] > 0 {
		m := evidence.Minutes[i]
		if i == 0 || evidence.Minutes[i-1].Decision == verdict.Rollback {
			t.Fatalf("%s: the first rollback minute must follow a minute that does not roll back", sc.title)
		}
		value := m.Window.Statistic
		if value < m.Window.Rollback {
			value = m.Window.RecentStatistic
		}
		w := m.Window
		votes := w.RecentVotes
		if w.Statistic >= w.Rollback {
			votes = w.Votes
		}
		// Every vote's figures are printed in the description.
		margins := [][2]float64{{value, 1}}
		for _, v := range votes {
			margins = append(margins, [2]float64{v.Canary, 0}, [2]float64{v.Expected, 1})
		}
		margins = append(margins, dispersionMargins(w)...)
		checkMargins(t, sc.title, margins...)
		expr(decision, minuteOf(evidence.Minutes[i-1]), decision, float64(evidence.Minutes[i-1].Decision.Code()))
		expr(decision, minuteOf(m), decision, float64(verdict.Rollback.Code()))
		// The alert's first firing is written to ALERTS (which the healthy
		// tests read), and it had never fired before.
		expr(alerts("PairwiseCanaryRollback", "1m"), minuteOf(m), fmt.Sprintf(`{alertname="PairwiseCanaryRollback",alertstate="firing",canary=%q,severity="critical",action="rollback"}`, q.Name), 1)
		expr(alerts("PairwiseCanaryRollback", fmt.Sprintf("%ds", m.Time.Unix()-1)), fmt.Sprintf("%ds", m.Time.Unix()-1), "")
		alertTest("PairwiseCanaryRollback", fmt.Sprintf("%ds", m.Time.Unix()-1), nil, nil)
		alertTest("PairwiseCanaryRollback", minuteOf(m), expectedAnnotations(t, packAnnotations(t, q.Name, "PairwiseCanaryRollback"), value, m.DecisionReason),
			map[string]string{"canary": q.Name, "severity": "critical", "action": "rollback"})
	} else {
		// Never rolled back, though the counting rule would have.
		if refRollback < 0 || maxBad < q.Config.BadLimit {
			t.Fatalf("%s: the chapter's counting rule does not roll this healthy canary back (at most %d bad minutes an hour); the test would show nothing: change the seed", sc.title, maxBad)
		}
		expr(alerts("PairwiseCanaryRollback", end), end, "")
		expr(fmt.Sprintf("max_over_time(canary:%s:bad_minutes_%dm{canary=%q}[%s])", q.Metric, q.Config.WindowMinutes, q.Name, end), end, canaryLabel, float64(maxBad))
	}
	if i, ok := firstOf[verdict.Promote]; ok && counts[verdict.Promote] > 0 && i > 0 {
		m := evidence.Minutes[i]
		margins := [][2]float64{{m.Window.PromoteStatistic, 1}}
		for _, v := range m.Window.Votes {
			margins = append(margins, [2]float64{v.Canary, 0}, [2]float64{v.Expected, 1})
		}
		margins = append(margins, dispersionMargins(m.Window)...)
		checkMargins(t, sc.title, margins...)
		alertTest("PairwiseCanaryPromotable", fmt.Sprintf("%ds", m.Time.Unix()-1), nil, nil)
		alertTest("PairwiseCanaryPromotable", minuteOf(m), expectedAnnotations(t, packAnnotations(t, q.Name, "PairwiseCanaryPromotable"), m.Window.PromoteStatistic, m.DecisionReason),
			map[string]string{"canary": q.Name, "severity": "info", "action": "promote"})
	}
	if len(tests) > 0 {
		b.WriteString("    alert_rule_test:\n")
		for _, s := range tests {
			b.WriteString(s)
		}
	}
}

// dispersionMargins are the dispersions a reason prints (those beyond 1).
func dispersionMargins(w verdict.WindowEvidence) [][2]float64 {
	var out [][2]float64
	for _, d := range w.Dispersion {
		if d > 1 {
			out = append(out, [2]float64{d, 1})
		}
	}
	return out
}

// checkMargins fails when a number the annotations print (value, printed
// with decimals) lies so close to a rounding edge that the pack's floating
// point, a few ulps from the engine's, could print it otherwise.
func checkMargins(t *testing.T, title string, values ...[2]float64) {
	t.Helper()
	for _, v := range values {
		scaled := v[0] * math.Pow(10, v[1])
		if frac := scaled - math.Floor(scaled); math.Abs(frac-0.5) < 1e-6*math.Max(1, math.Abs(scaled)) {
			t.Fatalf("%s: %v is too close to a rounding edge to be printed the same by the pack and the engine; change the seed", title, v[0])
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// quoteYAML writes s as a YAML double-quoted scalar (JSON strings are).
func quoteYAML(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestEvidenceUnitTestsAreGenerated(t *testing.T) {
	got := generateEvidenceTests(t)
	path := filepath.Join(repoRoot, evidenceTestFile)
	if *updateEvidenceTests {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is not what pkg/sim, the committed pack and the Go engine give (%v): regenerate it with\n  go test ./cmd/pairwise/ -run TestEvidenceUnitTestsAreGenerated -update-evidence-tests", evidenceTestFile, err)
	}
}
