package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// parityRow compares, for one histogram kind, the in-process path with
// engine.Analyze on the real Prometheus serving the same simulation written
// by pairwise-gen: every minute's verdict and every decision, for every
// rule, over sliding windows and anchored deployments.
type parityRow struct {
	Cell              string
	Kind              string
	Minutes           int // minutes compared per rule and view
	Decisions         int // decisions compared (all rules, sliding and anchored)
	Rollbacks         int // of which rollback (so the comparison is not all "hold")
	Mismatches        int // verdicts or decisions that differ
	MaxRelDiffP99     float64
	MaxRelDiffCounts  float64 // evidence: tail observations of both fleets
	FirstMismatch     string
	EngineSeconds     float64
	InProcessSeconds  float64
	GenerationSeconds float64
}

// paritySpec is the small cell checked end to end: a heavy-tailed 5% canary
// at 500 req/s with load-coupled latency, bursts and a restart in each fleet,
// regressed x1.5 from minute 90 so that decisions change along the way.
func paritySpec(minutes int) simSpec {
	start := benchEnd.Add(-time.Duration(minutes) * time.Minute)
	k := cellKey{sim.ShapeHeavy, 500, 0.05}
	c := simConfig(k, start)
	c.Scenario = sim.ScenarioRegression
	c.RegressionFactor = 1.5
	c.RegressionStartMinute = minutes * 3 / 5
	c.BurstProbability = 1
	var rs []sim.Restart
	for i, m := range []int{minutes / 3, minutes / 2} {
		fleet := sim.Fleets[i]
		rs = append(rs, sim.Restart{Fleet: fleet, Index: i + 1, Pod: sim.PodName("checkout", fleet, i+1), Time: start.Add(time.Duration(m)*time.Minute + 7*time.Second).UTC()})
	}
	return simSpec{Sim: c, Minutes: minutes, Restarts: rs}
}

// genArgs are the pairwise-gen flags that write spec's simulation.
func genArgs(spec simSpec, schema int) []string {
	c := spec.Sim
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	args := []string{
		"--start", c.Start.UTC().Format(time.RFC3339), "--minutes", strconv.Itoa(spec.Minutes),
		"--seed", strconv.FormatInt(c.Seed, 10), "--scenario", c.Scenario, "--pods", strconv.Itoa(c.PodsPerFleet),
		"--total-rps", f(c.TotalRPS), "--canary-share", f(c.CanaryShare), "--error-ratio", f(c.ErrorRatio),
		"--median-latency", f(c.MedianLatency), "--costly-share", f(c.CostlyShare),
		"--burst-probability", f(c.BurstProbability), "--burst-slot-minutes", strconv.Itoa(c.BurstSlotMinutes),
		"--shape", c.Shape, "--lognormal-sigma", f(c.LognormalSigma), "--heavy-tail-index", f(c.HeavyTailIndex),
		"--load-latency", f(c.LoadLatency),
		"--regression-factor", f(c.RegressionFactor), "--regression-start-minute", strconv.Itoa(c.RegressionStartMinute),
		"--bad-pod", strconv.Itoa(c.BadPod), "--bad-pod-factor", f(c.BadPodFactor),
		"--tail-slow-share", f(c.TailSlowShare), "--tail-pivot", f(c.TailPivot), "--tail-stretch", f(c.TailStretch),
		"--schema", strconv.Itoa(schema), "--truth-pod-p99=false",
	}
	return append(args, restartArgs(spec.Restarts, c.Start)...)
}

// parity runs spec both ways for every kind and compares.
func parity(ctx context.Context, e *env, spec simSpec) ([]parityRow, error) {
	base := verdict.Default()
	t0 := time.Now()
	d, err := simulateFleets(spec, base)
	if err != nil {
		return nil, err
	}
	inProc := time.Since(t0).Seconds()
	window := base.WindowMinutes
	n := spec.Minutes
	if n < window+10 {
		return nil, fmt.Errorf("parity needs more than %d minutes", window+10)
	}
	var rows []parityRow
	var datasets [2]*dataset // by schema 0, 3
	for kind := histKind(0); kind < numKinds; kind++ {
		schema, pk := 3, prom.Native
		switch kind {
		case kindNative0:
			schema = 0
		case kindClassic:
			pk = prom.Classic
		}
		si := 0
		if schema == 3 {
			si = 1
		}
		if datasets[si] == nil {
			ds, err := e.generate(genArgs(spec, schema)...)
			if err != nil {
				return nil, err
			}
			datasets[si] = ds
		}
		ds := datasets[si]
		row := parityRow{Cell: fmt.Sprintf("%s, %d pods, regression x%g from minute %d, restarts %d, %d minutes", cellKey{spec.Sim.Shape, spec.Sim.TotalRPS, spec.Sim.CanaryShare}, spec.Sim.PodsPerFleet, spec.Sim.RegressionFactor, spec.Sim.RegressionStartMinute, len(spec.Restarts), n),
			Kind: kind.String(), InProcessSeconds: inProc, GenerationSeconds: ds.GenSeconds}
		if err := compareKind(ctx, e, ds, pk, d.Kinds[kind], &row); err != nil {
			return nil, fmt.Errorf("parity %s: %w", kind, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// compareKind serves ds and compares the engine's minutes with the in-process
// ones, for every rule: the sliding windows ending at every minute from the
// 60th on, and deployments anchored every deployEvery minutes.
func compareKind(ctx context.Context, e *env, ds *dataset, kind prom.Kind, mine []verdict.Minute, row *parityRow) error {
	srv, err := e.serve(ds)
	if err != nil {
		return err
	}
	defer srv.Stop()
	client, err := newClient(srv.URL)
	if err != nil {
		return err
	}
	window := verdict.Default().WindowMinutes
	n := len(mine)
	t0 := time.Now()
	defer func() { row.EngineSeconds = time.Since(t0).Seconds() }()
	for _, rule := range judgeRules() {
		// Sliding: the engine shows the minutes window..n, each with the
		// decision of the window ending at it.
		views := []struct {
			name   string
			first  int // first shown minute
			last   int
			since  bool
			inproc verdict.Window
		}{{name: "sliding", first: window - 1, last: n - 1,
			inproc: verdict.Decide(rule.Cfg, slices.Clone(mine), verdict.Options{Shown: n - window + 1})}}
		for _, s := range deployStarts(0, n, deployMinutes) {
			views = append(views, struct {
				name   string
				first  int
				last   int
				since  bool
				inproc verdict.Window
			}{name: fmt.Sprintf("deployment at minute %d", s), first: s, last: s + deployMinutes - 1, since: true,
				inproc: verdict.Decide(rule.Cfg, slices.Clone(mine[s:s+deployMinutes]), verdict.Options{Shown: deployMinutes, Anchored: true})})
		}
		for _, v := range views {
			req := engine.Request{Metric: metric, Baseline: baseSel, Canary: canSel, Kind: kind, Config: rule.Cfg,
				Window: pairing.Window{First: mine[v.first].Time, Last: mine[v.last].Time}}
			if v.since {
				req.Since = mine[v.first].Time.Add(-time.Minute)
			}
			res, err := engine.Analyze(ctx, client, req)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", rule.Name, v.name, err)
			}
			theirs, ours := res.Minutes, v.inproc.Minutes
			if len(theirs) != len(ours) {
				return fmt.Errorf("%s, %s: engine shows %d minutes, in-process %d", rule.Name, v.name, len(theirs), len(ours))
			}
			row.Minutes = max(row.Minutes, len(ours))
			for i := range ours {
				a, b := theirs[i], ours[i]
				row.Decisions++
				if b.Decision == verdict.Rollback {
					row.Rollbacks++
				}
				if !a.Time.Equal(b.Time) || a.Verdict != b.Verdict || a.Decision != b.Decision {
					row.Mismatches++
					if row.FirstMismatch == "" {
						row.FirstMismatch = fmt.Sprintf("%s, %s, minute %s: engine %s/%s (%s), in-process %s/%s (%s)", rule.Name, v.name, b.Time.Format(time.RFC3339),
							a.Verdict, a.Decision, a.DecisionReason, b.Verdict, b.Decision, b.DecisionReason)
					}
				}
				row.MaxRelDiffP99 = math.Max(row.MaxRelDiffP99, math.Max(relDiff(a.Baseline.Value, b.Baseline.Value), relDiff(a.Canary.Value, b.Canary.Value)))
				for vi := range a.Evidence.Votes {
					va, vb := a.Evidence.Votes[vi], b.Evidence.Votes[vi]
					row.MaxRelDiffCounts = math.Max(row.MaxRelDiffCounts, math.Max(relDiff(va.Canary, vb.Canary), relDiff(va.Baseline, vb.Baseline)))
				}
			}
		}
	}
	return nil
}

// relDiff is |a-b| / max(|a|, |b|), 0 when both are equal (or both NaN).
func relDiff(a, b float64) float64 {
	if a == b || math.IsNaN(a) && math.IsNaN(b) {
		return 0
	}
	d := math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	return d
}
