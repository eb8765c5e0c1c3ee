package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// Tables and targets of the judgement section.

const evidenceRule = 2 // index of the evidence rule in judgeRules

func shapeOrder(s string) int { return slices.Index(sim.Shapes, s) }

func regOrder(name string) int {
	for i, r := range regressions {
		if r.Name == name {
			return i
		}
	}
	return len(regressions)
}

func kindOrder(k string) int {
	for i := histKind(0); i < numKinds; i++ {
		if i.String() == k {
			return int(i)
		}
	}
	return int(numKinds)
}

func keyLess(a, b cellKey) int {
	if c := shapeOrder(a.Shape) - shapeOrder(b.Shape); c != 0 {
		return c
	}
	if a.RPS != b.RPS {
		return cmpF(a.RPS, b.RPS)
	}
	return cmpF(a.Share, b.Share)
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortJudgement puts the cells in table order (workers finish in any order).
func (r *report) sortJudgement() {
	sort.SliceStable(r.Clean, func(i, j int) bool {
		a, b := r.Clean[i], r.Clean[j]
		if c := keyLess(a.Key, b.Key); c != 0 {
			return c < 0
		}
		return kindOrder(a.Kind) < kindOrder(b.Kind)
	})
	sort.SliceStable(r.Reg, func(i, j int) bool {
		a, b := r.Reg[i], r.Reg[j]
		if a.Regression != b.Regression {
			return regOrder(a.Regression) < regOrder(b.Regression)
		}
		if c := keyLess(a.Key, b.Key); c != 0 {
			return c < 0
		}
		return kindOrder(a.Kind) < kindOrder(b.Kind)
	})
}

// tooSmall is the canary the issue names: 1% of 50 req/s.
func tooSmall(k cellKey) bool { return k.Share <= 0.01+1e-9 && k.RPS <= 50 }

// regMet says whether the evidence rule's median is within 1.5x the oracle's + 1.
func (c regCell) regMet() bool {
	o, e := c.Oracle.median(), c.Rules[evidenceRule].median()
	if math.IsNaN(e) {
		return false
	}
	return math.IsNaN(o) || e <= target(o)
}

func (r *report) judgementTargets() []summaryRow {
	if len(r.Clean) == 0 {
		return nil
	}
	rules := judgeRules()
	var rows []summaryRow
	var parts []string
	evBad := 0
	for ri, rule := range rules {
		w, d, cells := 0, 0, 0
		for _, c := range r.Clean {
			x := c.Rules[ri]
			w += x.WindowsRolledBack
			d += x.DeploysRolledBack
			if x.WindowsRolledBack+x.DeploysRolledBack > 0 {
				cells++
			}
		}
		if ri == evidenceRule {
			evBad = cells
		}
		parts = append(parts, fmt.Sprintf("%s: %d windows and %d deployments in %d cells", rule.Name, w, d, cells))
	}
	c0 := r.Clean[0].Rules[0]
	rows = append(rows, summaryRow{fmt.Sprintf("5 identical fleets, %d cells (%d sliding windows and %d fresh deployments each): rolled back", len(r.Clean), c0.Windows, c0.Deploys),
		strings.Join(parts, "; "), "evidence: 0 cells", metStr(evBad == 0)})
	promoted, small := 0, 0
	for _, c := range r.Clean {
		if tooSmall(c.Key) {
			small++
			promoted += c.Rules[evidenceRule].DeploysPromoted + c.Rules[evidenceRule].DeploysRolledBack
		}
	}
	if small > 0 {
		rows = append(rows, summaryRow{fmt.Sprintf("5 too-small canary (1%% of 50 req/s), %d cells: evidence deployments promoted or rolled back", small), fmt.Sprintf("%d", promoted), "0 (hold)", metStr(promoted == 0)})
	}
	for _, rps := range r.regTraffic() {
		met, n := 0, 0
		var shares []string
		for _, c := range r.Reg {
			if c.Key.RPS != rps {
				continue
			}
			if s := shareStr(c.Key.Share); !slices.Contains(shares, s) {
				shares = append(shares, s)
			}
			n++
			if c.regMet() {
				met++
			}
		}
		rows = append(rows, summaryRow{fmt.Sprintf("5 regressions deployed fresh at %s req/s, %s share: evidence median minutes to rollback <= 1.5 x oracle + 1", rpsStr(rps), strings.Join(shares, " and ")),
			fmt.Sprintf("%d of %d cells (%d missed, section 5.3)", met, n, n-met), "every cell", metStr(met == n)})
	}
	if len(r.Reg) > 0 {
		var parts []string
		shipped, deploys := 0, 0
		for ri, rule := range rules {
			n := 0
			for _, c := range r.Reg {
				n += c.Promoted[ri]
				if ri == evidenceRule {
					deploys += c.Deploys
				}
			}
			if ri == evidenceRule {
				shipped = n
			}
			parts = append(parts, fmt.Sprintf("%s: %d", rule.Name, n))
		}
		rows = append(rows, summaryRow{fmt.Sprintf("5 regressions deployed fresh, %d deployments: promoted before any rollback (a regression shipped)", deploys),
			strings.Join(parts, "; "), "evidence: 0", metStr(shipped == 0)})
	}
	if len(r.Parity) > 0 {
		d, mm := 0, 0
		for _, p := range r.Parity {
			d += p.Decisions
			mm += p.Mismatches
		}
		rows = append(rows, summaryRow{fmt.Sprintf("5 in-process path vs Prometheus + engine.Analyze, %d kinds", len(r.Parity)), fmt.Sprintf("%d of %d verdicts and decisions differ", mm, d), "0", metStr(mm == 0 && d > 0)})
	}
	return rows
}

// promotedCell is a regression cell's count of deployments the evidence
// rule promoted before rolling them back, bold when there are any.
func promotedCell(n int) string {
	if n > 0 {
		return fmt.Sprintf("**%d**", n)
	}
	return "0"
}

func ruleCell(x cleanRule) string {
	return fmt.Sprintf("%d / %d", x.WindowsRolledBack, x.DeploysRolledBack)
}

func delaysCell(d delays) string {
	m := d.median()
	s := "none"
	if !math.IsNaN(m) {
		s = fmt.Sprintf("%g", m)
	}
	if mx := d.max(); mx > 0 {
		s += fmt.Sprintf(" [%d]", mx)
	} else if n := d.missed(); n > 0 {
		s += fmt.Sprintf(" [%d none]", n)
	}
	return s
}

func (r *report) judgementMarkdown() string {
	r.sortJudgement()
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...); b.WriteString("\n") }
	jp := r.Plan.Judge
	def := verdict.Default()
	ran := fmt.Sprintf("Produced by `%s` (%s mode, judgement matrix of %d shapes x %d traffic levels x %d shares x %d histogram kinds), run of %s.",
		r.Command, r.Plan.Name, len(jp.Shapes), len(jp.RPS), len(jp.Shares), numKinds, r.Started.Format("2006-01-02 15:04 MST"))
	p("## 5. Judgement")
	p("")
	p("Three rules side by side, on the same minutes:")
	p("")
	p("- **reference**: the chapter's rule (`rule: reference`): a minute is bad at p99 ratio >= 1.10, good at <= 0.95 (at least 10 observations beyond the p99 in each fleet, else insufficient); a window rolls back at 5 bad minutes of 60, promotes at 45 good.")
	p("- **gate 0.99**: the reference rule with `significance: 0.99` (a minute is good or bad only beyond sampling noise).")
	p("- **evidence**: `verdict.Default()`, the evidence rule (false-rollback budget %g, `docs/judgement.md`): tail observations pooled over the window's minutes and tested sequentially; its rollback boundary is %.1f in a window anchored at a deployment's start and %.1f in a sliding window.", def.FalseRollback, def.RollbackBoundary(true), def.RollbackBoundary(false))
	p("")
	p("**Data.** `pkg/sim`, %d pods per fleet, three latency shapes: *bimodal* (log-normal body, log-sd 0.3, plus a slow path: 2%% of requests 5x slower, and 10%% costly requests 2.5x; the original model), *lognormal* (one log-normal, log-sd 0.5) and *heavy* (log-logistic, tail index 3: p99.9 = 2.15x p99). The traffic follows the daily curve (+/-30%%) with bursts (half of all 30-minute slots hold one of 3 to 6 minutes at 2-3x), latency follows load in every second (x (rate / mean rate)^%g: -9%% to +7%% over the day, up to +40%% in a burst at the daily peak, both fleets alike), and one pod of a fleet restarts every 2 hours, alternating fleets (its counters reset; what it counted since the last scrape is lost). Every data set has its own seed; a regression shares its identical-fleet cell's seed, so both have the same baseline observations.", benchPods, benchLoadLatency)
	if changed := jp.changed(); len(changed) > 0 {
		p("")
		p("**Changed in this run** (`--judge-model`, `--classic-buckets`, `--stalls`, `--episodes`, `--ramp`; the in-process cells only, not section 5.4): %s. Where the paragraph above says otherwise, these hold.", strings.Join(changed, ", "))
	}
	p("")
	p("**Path.** Every figure of 5.1-5.3 comes from the *in-process* path (`cmd/pairwise-bench/fleetsim.go`): the per-minute merged histograms of each fleet are built exactly as Prometheus 3.x answers the engine's `sum(increase(h[75s])) * 0.8` / `sum by (le) (increase(h_bucket[75s])) * 0.8` over pods scraped every 15 s (every observation of the minute, from each series' last sample before it: each pod's series extrapolated as promql's `extrapolatedRate` does, x5/4, less where a restarted counter would reach zero, and read per minute, x0.8), then judged by the engine's own per-minute code (`verdict.Stats`, `verdict.MinuteEvidence` with `ScrapeScale(4)` = 1) and `verdict.Decide`. Running the matrix through Prometheus would take hours on 2 cores. Section 5.4 runs one smaller cell per histogram kind through `pairwise-gen`, the real Prometheus 3.13.5 and `engine.Analyze`, and compares every verdict and decision with the in-process path (also a test: `TestInProcessMatchesPrometheus`).")
	p("")
	p("**Windows and deployments.** *Sliding*: the 60-minute window ending at every minute of a day (%d windows; `Decide` with `Options{Shown: %d, Anchored: false}`), what a judge run every minute or the rule pack sees. *Deployments*: a fresh deployment starts every %d minutes and is judged anchored at its start (`Options{Anchored: true}`, the judge's `--since`) at each of its first %d minutes; it is rolled back if any of those minutes decides rollback, promoted if any decides promote.", jp.DayMinutes, jp.DayMinutes, deployEvery, deployMinutes)
	p("")

	p("### 5.1 Identical fleets")
	p("")
	p("%s", ran)
	p("")
	p("Windows / deployments rolled back, per rule; for the evidence rule also the deployments promoted and its closest approach to rolling back: the largest statistic minus its rollback boundary (whole window or recent run), over the sliding windows / the deployments' anchored windows; negative means it stayed that far below. *Tail/min*: the canary's observations beyond the baseline's exact p99 per minute (mean): what one minute can tell.")
	p("")
	p("| shape | req/s | canary | kind | tail/min | reference | gate 0.99 | evidence | evidence promoted | evidence margin |")
	p("|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range r.Clean {
		ev := c.Rules[evidenceRule]
		p("| %s | %s | %s | %s | %.1f | %s | %s | **%s** | %d / %d | %.1f / %.1f |", c.Key.Shape, rpsStr(c.Key.RPS), shareStr(c.Key.Share), c.Kind, c.CanaryTail,
			ruleCell(c.Rules[0]), ruleCell(c.Rules[1]), ruleCell(ev), ev.DeploysPromoted, ev.Deploys, ev.MarginSliding, ev.MarginAnchored)
	}
	p("")

	p("### 5.2 Too-small canaries")
	p("")
	p("%s", ran)
	p("")
	p("A canary of 1%% of 50 req/s serves 0.5 req/s: about 22 observations in the 45 s a one-minute `increase()` covers, 0.2 of them beyond the p99. It must hold: never promote, never roll back. Deployments promoted / rolled back / held for all %d minutes, per rule.", deployMinutes)
	p("")
	p("| shape | kind | reference | gate 0.99 | evidence |")
	p("|---|---|---|---|---|")
	for _, c := range r.Clean {
		if !tooSmall(c.Key) {
			continue
		}
		var cells []string
		for ri := range c.Rules {
			x := c.Rules[ri]
			cells = append(cells, fmt.Sprintf("%d / %d / %d", x.DeploysPromoted, x.DeploysRolledBack, heldAll(c, ri)))
		}
		p("| %s | %s | %s | %s | **%s** |", c.Key.Shape, c.Kind, cells[0], cells[1], cells[2])
	}
	p("")

	if len(r.Reg) > 0 {
		p("### 5.3 Regressions deployed fresh, beside an oracle")
		p("")
		p("%s", ran)
		p("")
		p("The canary is regressed from its first minute; deployments start every %d minutes and are judged anchored at their start for up to %d minutes. Regressions: *uniform* (every canary request x1.2 or x1.5), *tail only* (bimodal: the slow path takes 3%% of requests instead of 2%%; lognormal and heavy: latencies beyond the shape's p97 stretched, x' = q97 (x/q97)^1.5; about 1.45x as many requests beyond the p99 either way, body unchanged), *bad pod* (one canary pod of five x2).", deployEvery, regHorizon)
		p("")
		p("The **oracle** knows each minute's exact baseline p99 from the latency model (`sim.FleetQuantile`, not from data), counts the canary's exact observations beyond it among those the minute reads, every observation of the minute (from the simulator, not from buckets), pools them since the deployment's start and fires when the one-sided binomial z = (K - 0.01 N) / sqrt(0.01 x 0.99 N) exceeds the largest z it reached on the identical-fleet deployments of the same cell (so it never fires there); *whole-minute oracle* is the same over every observation of each minute, calibrated the same way: it equals the oracle, except in a restarted pod's minute, unless `--covered-minutes` reads minutes as one-minute `increase()`s, which leave out the quarter before each minute's first scrape (at 15 s); the target does not use it. Figures are minutes from the deployment's start to the first rollback: median [maximum] over the deployments (*none*: no rollback within %d minutes). The target is the evidence rule's median <= 1.5 x the oracle's + 1. *Evidence promoted first* counts the deployments the evidence rule promoted before it rolled them back, or without rolling them back: a pipeline acting on the first promote would have shipped the regression (target 0). Calibrated on %d deployments a day, the oracle may fire falsely on about 1 deployment in %d; the evidence rule's budget is 1 in %.0f. For reading the misses, *strict oracle* is the same oracle with the threshold that never fires on a deployment starting at any minute of the identical fleets' day (about 1,400 overlapping deployments, near the evidence rule's budget); the target does not use it. *Two-sample oracle* reads the same exact observations beyond the same exact p99, but does not know how many of them an identical canary would show: like any rule that reads data, it learns that from the baseline's own count of each minute (of the K observations beyond the p99 in a minute where the canary has the share f of all observations, an identical canary holds f K on average, with variance f (1 - f) K; z = sum(k - f K) / sqrt(sum(f (1 - f) K)) since the start), calibrated as the oracle is: what the baseline's sampling error costs, which no rule can avoid (the target does not use it). *Strict two-sample oracle* is the two-sample oracle calibrated as the strict oracle is, never firing on a deployment starting at any minute of the identical fleets' day (the target does not use it). Its threshold is the largest z its statistic reached that day; a day's overlapping deployments are far fewer than 1,400 independent ones, so that threshold can lie well below what a budget of 1 in 1,000 needs of a normal statistic looked at every minute (between 3.09 for one look and 4.15 for 60 independent looks).", regHorizon, (jp.DayMinutes-deployMinutes)/deployEvery+1, (jp.DayMinutes-deployMinutes)/deployEvery+1, 1/def.FalseRollback)
		p("")
		p("| regression | shape | req/s | canary | kind | deployments | oracle (z threshold) | reference | gate 0.99 | evidence | target <= | met | deployments within | evidence promoted first | strict oracle (z threshold) | whole-minute oracle (z threshold) | two-sample oracle (z threshold) | strict two-sample oracle (z threshold) |")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, c := range r.Reg {
			o := c.Oracle.median()
			tgt := "-"
			if !math.IsNaN(o) {
				tgt = fmt.Sprintf("%.1f", target(o))
			}
			met := "yes"
			if !c.regMet() {
				met = "**NO**"
			}
			strict := "-"
			if len(c.Strict) > 0 {
				strict = fmt.Sprintf("%s (%.2f)", delaysCell(c.Strict), c.StrictThreshold)
			}
			whole := "-"
			if len(c.Whole) > 0 {
				whole = fmt.Sprintf("%s (%.2f)", delaysCell(c.Whole), c.WholeThreshold)
			}
			two := "-"
			if len(c.TwoSample) > 0 {
				two = fmt.Sprintf("%s (%.2f)", delaysCell(c.TwoSample), c.TwoSampleThreshold)
			}
			strictTwo := "-"
			if len(c.StrictTwoSample) > 0 {
				strictTwo = fmt.Sprintf("%s (%.2f)", delaysCell(c.StrictTwoSample), c.StrictTwoSampleThreshold)
			}
			p("| %s | %s | %s | %s | %s | %d | %s (%.2f) | %s | %s | **%s** | %s | %s | %d / %d | %s | %s | %s | %s | %s |", c.Regression, c.Key.Shape, rpsStr(c.Key.RPS), shareStr(c.Key.Share), c.Kind, c.Deploys,
				delaysCell(c.Oracle), c.OracleThreshold, delaysCell(c.Rules[0]), delaysCell(c.Rules[1]), delaysCell(c.Rules[2]), tgt, met, c.Within, c.Deploys, promotedCell(c.Promoted[evidenceRule]), strict, whole, two, strictTwo)
		}
		p("")
	}

	if len(r.Parity) > 0 {
		p("### 5.4 In-process path vs Prometheus + engine")
		p("")
		p("%s", ran)
		p("")
		p("The same simulation written by `pairwise-gen` (schema 3 with classic buckets, and schema 0), served by Prometheus 3.13.5 and judged by `engine.Analyze` for every rule: the sliding windows ending at every minute from the 60th, and deployments every %d minutes anchored with `Since`. Every minute's verdict and decision compared with the in-process path's.", deployEvery)
		p("")
		p("| cell | kind | decisions compared | of which rollback | differ | max rel. diff p99 | max rel. diff tail counts | in-process | engine (all calls) |")
		p("|---|---|---|---|---|---|---|---|---|")
		for _, x := range r.Parity {
			p("| %s | %s | %d | %d | %d | %.1e | %.1e | %.1f s | %.1f s |", x.Cell, x.Kind, x.Decisions, x.Rollbacks, x.Mismatches, x.MaxRelDiffP99, x.MaxRelDiffCounts, x.InProcessSeconds, x.EngineSeconds)
		}
		for _, x := range r.Parity {
			if x.FirstMismatch != "" {
				p("")
				p("First difference (%s): %s", x.Kind, x.FirstMismatch)
			}
		}
		p("")
	}
	return b.String()
}

// regTraffic lists the traffic levels of the regression cells, ascending.
func (r *report) regTraffic() []float64 {
	var out []float64
	for _, c := range r.Reg {
		if !slices.Contains(out, c.Key.RPS) {
			out = append(out, c.Key.RPS)
		}
	}
	slices.Sort(out)
	return out
}

// heldAll counts the deployments neither promoted nor rolled back.
func heldAll(c cleanCell, ri int) int {
	x := c.Rules[ri]
	// A deployment both promoted and rolled back counts in both; held ones in neither.
	held := x.Deploys - x.DeploysPromoted - x.DeploysRolledBack
	return max(held, 0)
}

func (r *report) judgementFindings() []string {
	if len(r.Clean) == 0 {
		return nil
	}
	r.sortJudgement()
	var out []string
	rules := judgeRules()
	for ri, rule := range rules {
		w, d, n := 0, 0, 0
		for _, c := range r.Clean {
			w += c.Rules[ri].WindowsRolledBack
			d += c.Rules[ri].DeploysRolledBack
			if c.Rules[ri].WindowsRolledBack+c.Rules[ri].DeploysRolledBack > 0 {
				n++
			}
		}
		out = append(out, fmt.Sprintf("Identical fleets, %s rule: %d sliding windows and %d fresh deployments rolled back, in %d of %d cells.", rule.Name, w, d, n, len(r.Clean)))
	}
	var bad []string
	for _, c := range r.Clean {
		ev := c.Rules[evidenceRule]
		if ev.WindowsRolledBack+ev.DeploysRolledBack > 0 {
			bad = append(bad, fmt.Sprintf("%s, %s: %d windows, %d deployments", c.Key, c.Kind, ev.WindowsRolledBack, ev.DeploysRolledBack))
		}
		if tooSmall(c.Key) && ev.DeploysPromoted > 0 {
			bad = append(bad, fmt.Sprintf("%s, %s: %d too-small deployments promoted", c.Key, c.Kind, ev.DeploysPromoted))
		}
	}
	if len(bad) > 0 {
		out = append(out, "Evidence-rule misses on identical fleets: "+strings.Join(bad, "; ")+".")
	}
	for _, rps := range r.regTraffic() {
		// Misses grouped by regression, shape and share, with their kinds.
		type group struct {
			name  string
			kinds []string
			ev    []string
		}
		var groups []*group
		byName := map[string]*group{}
		for _, c := range r.Reg {
			if c.Key.RPS != rps || c.regMet() {
				continue
			}
			name := fmt.Sprintf("%s, %s, %s canary (oracle %s min)", c.Regression, c.Key.Shape, shareStr(c.Key.Share), medStr(c.Oracle))
			g := byName[name]
			if g == nil {
				g = &group{name: name}
				byName[name] = g
				groups = append(groups, g)
			}
			g.kinds = append(g.kinds, c.Kind)
			g.ev = append(g.ev, medStr(c.Rules[evidenceRule]))
		}
		if len(groups) == 0 {
			out = append(out, fmt.Sprintf("At %s req/s the evidence rule's median minutes to rollback are within 1.5 x the oracle's + 1 in every regression cell.", rpsStr(rps)))
			continue
		}
		var parts []string
		for _, g := range groups {
			parts = append(parts, fmt.Sprintf("%s: evidence %s (%s)", g.name, strings.Join(g.ev, " / "), strings.Join(g.kinds, " / ")))
		}
		out = append(out, fmt.Sprintf("At %s req/s the evidence rule misses 1.5 x the oracle's minutes + 1 in: %s.", rpsStr(rps), strings.Join(parts, "; ")))
	}
	// Beside the other oracles, the same bar.
	if cells, within, faster := besideOracle(r.Reg, func(c regCell) delays { return c.Whole }); cells > 0 {
		out = append(out, fmt.Sprintf("Beside the whole-minute oracle (every observation of each minute), the evidence rule's median is within 1.5 x its minutes + 1 in %d of %d regression cells; that oracle is faster than the oracle in %d of them.", within, cells, faster))
	}
	if cells, within, faster := besideOracle(r.Reg, func(c regCell) delays { return c.Strict }); cells > 0 {
		out = append(out, fmt.Sprintf("Beside the strict oracle (calibrated never to fire on a deployment starting at any minute of the identical fleets' day, a budget near the evidence rule's), the evidence rule's median is within 1.5 x its minutes + 1 in %d of %d regression cells; that oracle is faster than the oracle in %d of them.", within, cells, faster))
	}
	if cells, within, faster := besideOracle(r.Reg, func(c regCell) delays { return c.TwoSample }); cells > 0 {
		out = append(out, fmt.Sprintf("Beside the two-sample oracle (exact observations beyond the exact p99, but what an identical canary would show learnt from the baseline's own count of each minute, as any rule reading data must), the evidence rule's median is within 1.5 x its minutes + 1 in %d of %d regression cells; that oracle is faster than the oracle in %d of them.", within, cells, faster))
	}
	if cells, within, faster := besideOracle(r.Reg, func(c regCell) delays { return c.StrictTwoSample }); cells > 0 {
		out = append(out, fmt.Sprintf("Beside the strict two-sample oracle (the two-sample oracle calibrated as the strict oracle is, whose threshold can lie below what the evidence rule's budget needs: section 5.3), the evidence rule's median is within 1.5 x its minutes + 1 in %d of %d regression cells; that oracle is faster than the oracle in %d of them.", within, cells, faster))
	}
	return out
}

// besideOracle counts the regression cells that have the oracle of, those
// where the evidence rule's median is within 1.5 x that oracle's + 1, and
// those where that oracle's median is below the oracle's.
func besideOracle(reg []regCell, of func(regCell) delays) (cells, within, faster int) {
	for _, c := range reg {
		d := of(c)
		if len(d) == 0 {
			continue
		}
		cells++
		m := d.median()
		if e := c.Rules[evidenceRule].median(); !math.IsNaN(e) && (math.IsNaN(m) || e <= target(m)) {
			within++
		}
		if o := c.Oracle.median(); !math.IsNaN(m) && (math.IsNaN(o) || m < o) {
			faster++
		}
	}
	return cells, within, faster
}

// changed says what a run changed of the in-process cells' data, for the
// document: the latency model, the classic buckets, pauses and ramps.
func (jp judgePlan) changed() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(jp.Model)) {
		out = append(out, fmt.Sprintf("%s=%g", name, jp.Model[name]))
	}
	if len(jp.ClassicBuckets) > 0 {
		out = append(out, fmt.Sprintf("classic buckets %v", jp.ClassicBuckets))
	}
	if jp.Stalls.Every > 0 {
		out = append(out, fmt.Sprintf("every pod pauses %g s about every %g minutes", jp.Stalls.Seconds, jp.Stalls.Every))
	}
	if jp.Episodes.Every > 0 {
		out = append(out, fmt.Sprintf("every pod of both fleets is %gx slower for %d s about every %g minutes", jp.Episodes.Factor, jp.Episodes.Seconds, jp.Episodes.Every))
	}
	if jp.Ramp.Steps > 0 {
		out = append(out, fmt.Sprintf("the canary's weight rises to its share in %d equal steps, one every %d minutes, from each deployment's start; identical-fleet deployments start every %d minutes and regressions every %d (a deployment's weight does not fall back while it is judged), so the sliding windows see the weight fall back every %d minutes",
			jp.Ramp.Steps, jp.Ramp.Every, deployMinutes, regHorizon, deployMinutes))
	}
	return out
}
