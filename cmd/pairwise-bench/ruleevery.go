package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
//   - every: a generic group with judgeEvery, all services in its 9 rules;
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
// into one data directory.
func everyData(e *env, services, pods, minutes int) (*dataset, float64, error) {
	dir := filepath.Join(e.dataRoot, fmt.Sprintf("every-%d-%d-%d", services, pods, minutes))
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
	g := rulegen.Generic{Name: "services", Metric: metric, Histogram: string(prom.Native), By: []string{"service"},
		FleetLabel: "track", Baseline: "baseline", Canary: "canary"}
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
	row.EveryRules = strings.Count(string(everyPack), "- record:") + strings.Count(string(everyPack), "- alert:")
	row.ListedRules = strings.Count(string(listedPack), "- record:") + strings.Count(string(listedPack), "- alert:")
	sel := selector.Selector{{Name: "track", Op: selector.Regex, Value: "baseline|canary"}}
	floor := "groups:\n- name: floor\n  rules:\n  - record: floor:" + metric + ":increase_1m\n    expr: " +
		strconv.Quote(prom.GroupedHistogramQuery(metric, sel, prom.Native, []string{"service", "track"})) + "\n"
	from := benchEnd.Add(-time.Duration(evaluated) * time.Minute)
	for _, run := range []struct {
		name, text, group string
		into              *[]float64
	}{
		{"floor", floor, "floor", &row.Floor},
		{"every", string(everyPack), "pairwise-generic-services", &row.Every},
		{"listed", string(listedPack), "pairwise-generic-services", &row.Listed},
	} {
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
