package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// The judgement section judges every minute once (one engine.Analyze over the
// whole data set), then slides verdict.Decide over 60-minute windows ending
// at every minute: exactly what a judge run each minute would decide.

// guard is one judging variant: a MinTailObservations value (0 is "no
// guard", how the reference script judges) and the significance gate.
type guard struct {
	MinTail      float64
	Significance float64
}

// guardVariants are the variants compared; the first is the default.
var guardVariants = []guard{{10, 0}, {0, 0}, {25, 0}, {50, 0}, {10, 0.99}}

// defaultGuard reports whether a row was judged with the default settings.
func defaultGuard(minTail, significance float64) bool { return minTail == 10 && significance == 0 }

// guardLabel names a variant in the tables.
func guardLabel(minTail, significance float64) string {
	label := fmt.Sprintf("%.0f", minTail)
	switch {
	case defaultGuard(minTail, significance):
		label += " (default)"
	case minTail == 0:
		label += " (no guard)"
	}
	if significance > 0 {
		label += fmt.Sprintf(" + significance %.2f", significance)
	}
	return label
}

// deployEvery is the spacing of the simulated deployments over clean data.
const deployEvery = 30

// cleanRow is one (canary share, MinTailObservations) over identical fleets.
type cleanRow struct {
	Share             float64
	MinTail           float64
	Significance      float64
	Windows           int // sliding windows judged
	RollbackWindows   int
	Episodes          int // runs of consecutive rollback windows
	Bad, Good         int // minutes over the whole data set
	Insufficient      int
	Minutes           int
	RatioMedian       float64 // canary/baseline p99 over minutes both fleets have
	RatioP5, RatioP95 float64
	CanaryTailMedian  float64 // canary observations beyond its p99, per minute
	// Deployments: a judge started every deployEvery minutes over the clean
	// data, its window the minutes since the start (up to 60): how many are
	// rolled back within 60 minutes, and the median minutes to that rollback.
	Deploys, DeploysRolledBack int
	DeployDelayMedian          float64
}

// regRow is one (factor, share, MinTailObservations) regression run.
type regRow struct {
	Factor, Share float64
	MinTail       float64
	Significance  float64
	Delay         int // regressed minutes seen when the first rollback came; -1 none
	// DeployDelay is Delay for a judge whose window starts at the onset (the
	// canary deployed with the regression): windows of the minutes since
	// the onset, up to 60; -1 none.
	DeployDelay    int
	HeldBefore     verdict.Decision // decision of the window ending just before the onset
	MaxDelay       int              // regressed minutes available in the data
	FalseBefore    int              // rollback windows ending before the onset
	BadAfterOnset  int
	InsuffAfter    int
	MinutesAfter   int
	RatioMedianReg float64 // median p99 ratio after onset (no guard)
}

// slide returns the decision of every window of n minutes ending at minutes[i], i >= n-1.
func slide(cfg verdict.Config, minutes []verdict.Minute, n int) []verdict.Decision {
	cfg.WindowMinutes = n
	var out []verdict.Decision
	for i := n - 1; i < len(minutes); i++ {
		w := verdict.Decide(cfg, slices.Clone(minutes[i-n+1:i+1]), verdict.Options{})
		out = append(out, w.Decision)
	}
	return out
}

// judged re-judges every minute with cfg (only the minute verdicts).
func judged(cfg verdict.Config, minutes []verdict.Minute) verdict.Window {
	cfg.WindowMinutes = max(len(minutes), 1)
	cfg.GoodNeeded = min(cfg.GoodNeeded, cfg.WindowMinutes)
	cfg.BadLimit = min(cfg.BadLimit, cfg.WindowMinutes)
	return verdict.Decide(cfg, slices.Clone(minutes), verdict.Options{})
}

func benchJudgement(ctx context.Context, e *env, p plan, r *report) error {
	base := verdict.Default()
	for _, share := range p.JudgeShares {
		ds, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(p.JudgePods), "--minutes", strconv.Itoa(p.JudgeMinutes),
			"--canary-share", strconv.FormatFloat(share, 'f', -1, 64), "--end", benchEnd.Format(time.RFC3339), "--seed", "7", "--truth-pod-p99=false")
		if err != nil {
			return err
		}
		r.Datasets = append(r.Datasets, dsNote{Purpose: fmt.Sprintf("judgement, clean, %.0f%% canary", share*100), DS: ds})
		minutes, err := judgeAll(ctx, e, ds, p.JudgeMinutes)
		if err != nil {
			return err
		}
		e.logf("judgement: clean, %.0f%% canary, %d minutes", share*100, len(minutes))
		for _, gv := range guardVariants {
			cfg := base
			cfg.MinTailObservations, cfg.Significance = gv.MinTail, gv.Significance
			row := cleanRow{Share: share, MinTail: gv.MinTail, Significance: gv.Significance, Minutes: len(minutes)}
			decisions := slide(cfg, minutes, base.WindowMinutes)
			row.Windows = len(decisions)
			prev := false
			for _, d := range decisions {
				rb := d == verdict.Rollback
				if rb {
					row.RollbackWindows++
					if !prev {
						row.Episodes++
					}
				}
				prev = rb
			}
			all := judged(cfg, minutes)
			row.Bad, row.Good, row.Insufficient = all.Counts.Bad, all.Counts.Good, all.Counts.Insufficient
			var ratios, tails []float64
			for _, m := range all.Minutes {
				if !math.IsNaN(m.Ratio) && m.Verdict != verdict.NoData {
					ratios = append(ratios, m.Ratio)
					tails = append(tails, m.Canary.Tail)
				}
			}
			row.RatioMedian, row.RatioP5, row.RatioP95 = median(ratios), percentile(ratios, 0.05), percentile(ratios, 0.95)
			row.CanaryTailMedian = median(tails)
			var delays []float64
			for s := 0; s+base.WindowMinutes <= len(minutes); s += deployEvery {
				row.Deploys++
				d := deployDelay(cfg, minutes[:s+base.WindowMinutes], minutes[s].Time, base.WindowMinutes)
				if d > 0 {
					row.DeploysRolledBack++
					delays = append(delays, float64(d))
				}
			}
			row.DeployDelayMedian = median(delays)
			r.Clean = append(r.Clean, row)
		}
	}

	for _, share := range p.RegShares {
		for _, factor := range p.RegFactors {
			ds, err := e.generate("--scenario", "regression", "--pods", strconv.Itoa(p.JudgePods), "--minutes", strconv.Itoa(p.RegMinutes),
				"--canary-share", strconv.FormatFloat(share, 'f', -1, 64),
				"--regression-factor", strconv.FormatFloat(factor, 'f', -1, 64),
				"--regression-start-minute", strconv.Itoa(p.RegStart),
				"--end", benchEnd.Format(time.RFC3339), "--seed", "7", "--truth-pod-p99=false")
			if err != nil {
				return err
			}
			r.Datasets = append(r.Datasets, dsNote{Purpose: fmt.Sprintf("judgement, regression x%.2f, %.0f%% canary", factor, share*100), DS: ds})
			minutes, err := judgeAll(ctx, e, ds, p.RegMinutes)
			if err != nil {
				return err
			}
			onset, err := regressionOnset(ds, p)
			if err != nil {
				return err
			}
			e.logf("judgement: regression x%.2f, %.0f%% canary, onset minute ends %s", factor, share*100, onset.Format(time.RFC3339))
			for _, gv := range guardVariants {
				cfg := base
				cfg.MinTailObservations, cfg.Significance = gv.MinTail, gv.Significance
				row := regRow{Factor: factor, Share: share, MinTail: gv.MinTail, Significance: gv.Significance, Delay: -1, DeployDelay: -1}
				decisions := slide(cfg, minutes, base.WindowMinutes)
				all := judged(cfg, minutes)
				var regRatios []float64
				for i, m := range all.Minutes {
					if !m.Time.Before(onset) {
						row.MinutesAfter++
						switch m.Verdict {
						case verdict.Bad:
							row.BadAfterOnset++
						case verdict.Insufficient:
							row.InsuffAfter++
						}
						if !math.IsNaN(m.Ratio) {
							regRatios = append(regRatios, m.Ratio)
						}
					}
					if i < base.WindowMinutes-1 {
						continue
					}
					if m.Time.Equal(onset.Add(-time.Minute)) {
						row.HeldBefore = decisions[i-(base.WindowMinutes-1)]
					}
					if decisions[i-(base.WindowMinutes-1)] != verdict.Rollback {
						continue
					}
					if m.Time.Before(onset) {
						row.FalseBefore++
					} else if row.Delay < 0 {
						row.Delay = int(m.Time.Sub(onset)/time.Minute) + 1
					}
				}
				row.MaxDelay = row.MinutesAfter
				row.DeployDelay = deployDelay(cfg, minutes, onset, base.WindowMinutes)
				row.RatioMedianReg = median(regRatios)
				r.Reg = append(r.Reg, row)
			}
		}
	}
	return nil
}

// judgeAll serves ds and runs one engine.Analyze over its n minutes.
func judgeAll(ctx context.Context, e *env, ds *dataset, n int) ([]verdict.Minute, error) {
	srv, err := e.serve(ds)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	client, err := newClient(srv.URL)
	if err != nil {
		return nil, err
	}
	req, err := analysisRequest(benchEnd, n, prom.Native)
	if err != nil {
		return nil, err
	}
	_, res, err := runEngine(ctx, client, req)
	if err != nil {
		return nil, err
	}
	return res.Minutes, nil
}

// regressionOnset is the end of the first regressed minute: the simulator's
// regression starts at the truth file's facts.regression_start, and minute T
// covers (T-60s, T].
func regressionOnset(ds *dataset, p plan) (time.Time, error) {
	tr, err := loadTruth(ds.Truth)
	if err != nil {
		return time.Time{}, err
	}
	if tr.Facts.RegressionStart == "" {
		return time.Time{}, fmt.Errorf("%s: no facts.regression_start", ds.Truth)
	}
	t, err := time.Parse(time.RFC3339, tr.Facts.RegressionStart)
	if err != nil {
		return time.Time{}, err
	}
	want := benchEnd.Add(-time.Duration(p.RegMinutes-p.RegStart) * time.Minute)
	if !t.Equal(want) {
		return time.Time{}, fmt.Errorf("regression starts at %s, expected %s", t, want)
	}
	return t.Add(time.Minute), nil
}

// deployDelay judges, at every minute from the onset on, the window of the
// minutes since the onset (at most n) with verdict.Decide, and returns how
// many regressed minutes it took to roll back (-1: never).
func deployDelay(cfg verdict.Config, minutes []verdict.Minute, onset time.Time, n int) int {
	first := -1
	for i, m := range minutes {
		if !m.Time.Before(onset) {
			first = i
			break
		}
	}
	if first < 0 {
		return -1
	}
	for i := first; i < len(minutes); i++ {
		from := max(first, i-n+1)
		c := cfg
		c.WindowMinutes = n
		if verdict.Decide(c, slices.Clone(minutes[from:i+1]), verdict.Options{}).Decision == verdict.Rollback {
			return i - first + 1
		}
	}
	return -1
}
