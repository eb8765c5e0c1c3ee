package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// Attribution says which of the canary's pods hold the tail that rolled it
// back: over the minutes of the run that reached the rollback boundary, the
// canary's observations beyond each minute's verdict-quantile threshold
// (the threshold of both fleets' merged histogram, verdict.Vote), split
// among its pods, beside what each pod would hold if the fleets were
// identical (the canary's expected count, split by each pod's share of the
// canary's observations). One pod holding most of the excess is one bad
// pod, or a pod that paused (docs/judgement.md, "Clustered tails"); an
// excess spread over every pod is the release.
type Attribution struct {
	// Quantile is the verdict quantile; Minutes the minutes attributed.
	Quantile float64
	Minutes  int
	// Beyond and Expected are the canary's counted observations beyond the
	// threshold and those expected, summed over the minutes (Pods add up to
	// them).
	Beyond, Expected float64
	// Pods, the pod with the largest excess (Beyond - Expected) first.
	Pods []PodShare
}

// PodShare is one canary pod's part of an Attribution.
type PodShare struct {
	Pod              string
	Beyond, Expected float64
}

// Attribute attributes a rollback to the canary's pods (nil for any other
// decision, or when no minute of the run can be split), reading the
// canary's per-pod histograms over the minutes of the run that rolled back:
// the recent run if it reached its boundary, else the window's minutes
// shown. podLabel names the label that tells pods apart; empty, nothing
// is asked.
func Attribute(ctx context.Context, src PodSource, res *Result, podLabel string) (a *Attribution, err error) {
	defer recovered(&err, "attributing the tail to pods")
	minutes := rollbackRun(res.Window)
	if len(minutes) == 0 || podLabel == "" {
		return nil, nil
	}
	r := prom.Range{Start: minutes[0].Time, End: minutes[len(minutes)-1].Time, Scrape: res.Request.Config.ScrapeInterval()}
	pods, err := src.PodHistograms(ctx, res.Request.Metric, podLabel, res.Request.Canary, res.CanaryKind, r)
	if err != nil {
		return nil, fmt.Errorf("query canary pods: %w", err)
	}
	// Series without the label are told apart from the pods, and a canary
	// none of whose series has it cannot be split.
	if unlabelled, ok := pods[""]; ok {
		if len(pods) == 1 {
			return nil, fmt.Errorf("the canary's series have no label %q: name the label that tells its pods apart (the judge's --pod-label, the query's Pod label)", podLabel)
		}
		delete(pods, "")
		pods["(series without "+podLabel+")"] = unlabelled
	}
	return attribute(minutes, pods), nil
}

// rollbackRun is the minutes of a rollback's run among those shown: the
// last RecentMinutes when the evidence rule's recent run reached its
// boundary, every minute shown when its evidence since the deployment's
// start did, else the shown minutes of the judged window (the reference
// rule counts the window's bad minutes); nil unless the decision is
// rollback.
func rollbackRun(w verdict.Window) []verdict.Minute {
	if w.Decision != verdict.Rollback || len(w.Minutes) == 0 {
		return nil
	}
	n := w.Config.WindowMinutes
	switch e := w.Evidence; {
	case w.Config.Rule == verdict.RuleReference:
	case e.Statistic < e.Rollback && e.RecentMinutes > 0:
		n = e.RecentMinutes
	case e.Anchored:
		// The evidence since the deployment's start rolled back: every
		// minute shown is since then.
		n = len(w.Minutes)
	}
	return w.Minutes[max(0, len(w.Minutes)-n):]
}

// attribute splits each minute's counted canary observations beyond its
// verdict-quantile threshold among the pods in proportion to each pod's
// own count beyond it (interpolated in its buckets as the fleet's are),
// and the minute's expected count in proportion to each pod's
// observations. nil when no minute can be split.
func attribute(minutes []verdict.Minute, pods map[string]prom.Series) *Attribution {
	a := &Attribution{}
	// Pods in order, so that every sum is added in the same order, and two
	// readers of the same data agree to the last bit.
	names := slices.Sorted(maps.Keys(pods))
	shares := make([]PodShare, len(names))
	seen := make([]bool, len(names))
	beyond, count := make([]float64, len(names)), make([]float64, len(names))
	for _, m := range minutes {
		ev := m.Evidence
		v := ev.Votes[0]
		if !ev.Valid || v.Quantile == 0 || math.IsNaN(v.Threshold) || math.IsInf(v.Threshold, 0) {
			continue
		}
		t := m.Time.Unix()
		var sumBeyond, sumCount float64
		for i, pod := range names {
			beyond[i], count[i] = 0, 0
			if h := pods[pod][t]; h != nil && h.Count > 0 {
				if b := h.CountAbove(v.Threshold); !math.IsNaN(b) {
					beyond[i], count[i] = b, h.Count
					sumBeyond += b
					sumCount += h.Count
				}
			}
		}
		if !(sumCount > 0) {
			continue
		}
		a.Quantile = v.Quantile
		a.Minutes++
		expected := v.Expected(ev.Share)
		a.Beyond += v.Canary
		a.Expected += expected
		for i := range names {
			if count[i] == 0 {
				continue
			}
			seen[i] = true
			if sumBeyond > 0 {
				shares[i].Beyond += v.Canary * beyond[i] / sumBeyond
			}
			shares[i].Expected += expected * count[i] / sumCount
		}
	}
	if a.Minutes == 0 {
		return nil
	}
	for i, pod := range names {
		if seen[i] {
			shares[i].Pod = pod
			a.Pods = append(a.Pods, shares[i])
		}
	}
	slices.SortStableFunc(a.Pods, func(x, y PodShare) int {
		// The largest excess first; names break ties (a.Pods is in name order).
		ex, ey := x.Beyond-x.Expected, y.Beyond-y.Expected
		switch {
		case ex > ey:
			return -1
		case ex < ey:
			return 1
		}
		return 0
	})
	return a
}

// String tells the attribution in a sentence: the pod with the largest
// excess and the others together, e.g. "of the canary's 41 observations
// beyond the p99 over 9 minutes (15.0 expected), checkout-canary-2 holds 31
// (3.0 expected) and its other 4 pods 10 (12.0 expected)".
func (a *Attribution) String() string {
	if a == nil || len(a.Pods) == 0 {
		return ""
	}
	top := a.Pods[0]
	s := fmt.Sprintf("of the canary's %.0f observations beyond the %s over %d minutes (%.1f expected), %s holds %.0f (%.1f expected)",
		a.Beyond, verdict.QuantileLabel(a.Quantile), a.Minutes, a.Expected, top.Pod, top.Beyond, top.Expected)
	if rest := len(a.Pods) - 1; rest > 0 {
		var b, e float64
		for _, p := range a.Pods[1:] {
			b += p.Beyond
			e += p.Expected
		}
		others := fmt.Sprintf("its other %d pods", rest)
		if rest == 1 {
			others = "its other pod"
		}
		s += fmt.Sprintf(" and %s %.0f (%.1f expected)", others, b, e)
	}
	return s
}
