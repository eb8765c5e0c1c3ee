package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// The every part of rules-scale: many services, each with its own baseline
// and canary fleets, in one TSDB (one generated data set per service, their
// blocks linked into one data directory), judged three ways over the same
// history, each file evaluated on its own (they record the same series):
//
//   - floor: one rule, every fleet's merged histogram of the minute by
//     service and track (the generic group's read without its health);
//   - every: a generic group with judgeEvery, all services in its 13 rules;
//   - listed: the same generic group without judgeEvery, every service
//     listed as a canary: 2 reads plus each canary's rules.
//
// Each group's median evaluation over the last steadyEvaluations minutes
// (full raw minutes, full windows), per canary, and against the floor.

type everyRow struct {
	Services, Pods          int
	Floor, Every, Listed    []float64
	EveryRules, ListedRules int
	GenSeconds              float64
}

// everyData generates (or reuses) one data set per service and links them
// into one data directory, one per generator binary (env.generate).
func everyData(e *env, services, pods, minutes int) (*dataset, float64, error) {
	dir := filepath.Join(e.dataRoot, fmt.Sprintf("every-%d-%d-%d-%x", services, pods, minutes, e.genID[:4]))
	var gen float64
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		os.RemoveAll(dir)
		for i := 0; i < services; i++ {
			ds, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(pods), "--minutes", strconv.Itoa(minutes),
				"--end", benchEnd.Format(time.RFC3339), "--seed", strconv.Itoa(100+i), "--service", fmt.Sprintf("s%03d", i),
				"--buckets", "0.1,1", "--truth-pod-p99=false", "--quiet")
			if err != nil {
				return nil, 0, err
			}
			gen += ds.GenSeconds
			if err := linkTree(ds.Dir, dir); err != nil {
				return nil, 0, err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644); err != nil {
			return nil, 0, err
		}
	}
	return &dataset{Dir: dir}, gen, nil
}

func benchEvery(ctx context.Context, e *env, p rulesPlan) (everyRow, error) {
	row := everyRow{Services: p.EveryServices, Pods: p.EveryPods}
	window := verdict.Default().WindowMinutes
	evaluated := window + steadyEvaluations + 5
	ds, gen, err := everyData(e, p.EveryServices, p.EveryPods, evaluated+5)
	if err != nil {
		return row, err
	}
	row.GenSeconds = gen
	g := everyGeneric()
	every := g
	every.JudgeEvery = true
	everyPack, err := rulegen.Render(rulegen.File{Generic: []rulegen.Generic{every}})
	if err != nil {
		return row, err
	}
	listed := rulegen.File{Generic: []rulegen.Generic{g}}
	for i := 0; i < p.EveryServices; i++ {
		listed.Canaries = append(listed.Canaries, rulegen.Canary{Name: fmt.Sprintf("s%03d", i), Generic: g.Name, Labels: map[string]string{"service": fmt.Sprintf("s%03d", i)}})
	}
	listedPack, err := rulegen.Render(listed)
	if err != nil {
		return row, err
	}
	row.EveryRules = countRules(string(everyPack))
	row.ListedRules = countRules(string(listedPack))
	floor := everyFloor()
	from := benchEnd.Add(-time.Duration(evaluated) * time.Minute)
	for _, run := range []struct {
		name, text, group string
		into              *[]float64
	}{
		{"floor", floor, "floor", &row.Floor},
		{"every", string(everyPack), "pairwise-generic-services", &row.Every},
		{"listed", string(listedPack), "pairwise-generic-services", &row.Listed},
	} {
		if run.name == "listed" && p.NoListed {
			continue
		}
		e.logf("every: %d services x %d pods: evaluating %s over %d minutes", p.EveryServices, p.EveryPods, run.name, evaluated)
		times, _, err := e.groupTimings(ds, map[string]string{run.name + ".yml": run.text}, from, benchEnd)
		if err != nil {
			return row, fmt.Errorf("%s: %w", run.name, err)
		}
		*run.into = lastN(times[run.group], steadyEvaluations)
		if len(*run.into) < steadyEvaluations {
			return row, fmt.Errorf("%s: too few evaluations (%d)", run.name, len(*run.into))
		}
	}
	return row, nil
}

// everyGeneric is the services' label convention: label service tells the
// canaries apart, track their fleets (native histograms).
func everyGeneric() rulegen.Generic {
	return rulegen.Generic{Name: "services", Metric: metric, Histogram: string(prom.Native), By: []string{"service"},
		FleetLabel: "track", Baseline: "baseline", Canary: "canary"}
}

// everyFloor is the floor group of the every parts: one rule, every fleet's
// merged histogram of the minute by service and track (the generic group's
// read without its health).
func everyFloor() string {
	sel := selector.Selector{{Name: "track", Op: selector.Regex, Value: "baseline|canary"}}
	return "groups:\n- name: floor\n  rules:\n  - record: floor:" + metric + ":increase_1m\n    expr: " +
		strconv.Quote(prom.GroupedHistogramQuery(metric, sel, prom.Native, []string{"service", "track"}, prom.DefaultScrapeInterval)) + "\n"
}

// countRules is the number of recording rules and alerts in a rule file.
func countRules(pack string) int {
	return strings.Count(pack, "- record:") + strings.Count(pack, "- alert:")
}

// everyGroupRow is the judgeEvery group beside the floor at one size: what
// a canary costs in the pack's form for many canaries, at the pod counts
// and windows of the one-canary group rows.
type everyGroupRow struct {
	Services, Pods, Window int
	Every, Floor           []float64 // evaluation seconds, one per evaluation
	Rules                  int
}

// benchEveryGroup times the judgeEvery group of p.EveryGroupServices
// services of pods pods a fleet, judged over window minutes, beside the
// floor, both evaluated in one pass over the same history. The data set is
// the longest window's, shared by every window.
func benchEveryGroup(ctx context.Context, e *env, p rulesPlan, pods, window int) (everyGroupRow, error) {
	row := everyGroupRow{Services: p.EveryGroupServices, Pods: pods, Window: window}
	evaluated := window + steadyEvaluations + 5
	ds, _, err := everyData(e, p.EveryGroupServices, pods, slices.Max(p.GroupWindows)+steadyEvaluations+10)
	if err != nil {
		return row, err
	}
	g := everyGeneric()
	g.JudgeEvery = true
	pack, err := rulegen.Render(rulegen.File{Defaults: verdict.Overrides{WindowMinutes: &window}, Generic: []rulegen.Generic{g}})
	if err != nil {
		return row, err
	}
	row.Rules = countRules(string(pack))
	e.logf("every-group: %d services x %d pods, %d-minute window: evaluating the judgeEvery group and the floor over %d minutes", row.Services, pods, window, evaluated)
	row.Every, row.Floor, err = e.pairTimings(ds, map[string]string{"every.yml": string(pack), "floor.yml": everyFloor()}, evaluated, "pairwise-generic-services", "floor")
	return row, err
}
