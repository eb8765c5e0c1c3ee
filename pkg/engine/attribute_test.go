package engine

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// classicPod is a pod's minute: below counts at or below 1 s, above beyond 2 s.
func classicPod(t *testing.T, below, above float64) *histogram.Histogram {
	t.Helper()
	h, err := histogram.FromClassic([]float64{1, 2, math.Inf(1)}, []float64{below, below, below + above})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAttribute: the canary's counted observations beyond each minute's
// threshold are split among its pods by their own counts beyond it, the
// expected ones by their traffic; the pod with the largest excess first.
func TestAttribute(t *testing.T) {
	at := func(i int) time.Time { return end.Add(time.Duration(i) * time.Minute) }
	minute := func(i int, canary, baseline, share float64) verdict.Minute {
		m := verdict.Minute{Time: at(i)}
		m.Evidence.Valid = true
		m.Evidence.Share = share
		m.Evidence.Votes[0] = verdict.Vote{Quantile: 0.99, Threshold: 2, Canary: canary, Baseline: baseline}
		return m
	}
	// Two minutes; pod a has twice pod b's traffic, and pod b all of the
	// tail. Counted (scaled) figures come from the minutes' evidence.
	pods := map[string]prom.Series{
		"a": {at(0).Unix(): classicPod(t, 200, 0), at(1).Unix(): classicPod(t, 200, 0)},
		"b": {at(0).Unix(): classicPod(t, 90, 10), at(1).Unix(): classicPod(t, 95, 5)},
	}
	minutes := []verdict.Minute{minute(0, 9, 21, 0.1), minute(1, 4.5, 25.5, 0.1)}
	a := attribute(minutes, pods)
	if a == nil || a.Minutes != 2 || len(a.Pods) != 2 {
		t.Fatalf("attribution %+v", a)
	}
	// Expected: 0.1 x 30 = 3 a minute, split 2:1 by traffic.
	want := []PodShare{{Pod: "b", Beyond: 13.5, Expected: 2}, {Pod: "a", Beyond: 0, Expected: 4}}
	for i, w := range want {
		g := a.Pods[i]
		if g.Pod != w.Pod || math.Abs(g.Beyond-w.Beyond) > 1e-9 || math.Abs(g.Expected-w.Expected) > 1e-9 {
			t.Errorf("pod %d: %+v, want %+v", i, g, w)
		}
	}
	if math.Abs(a.Beyond-13.5) > 1e-9 || math.Abs(a.Expected-6) > 1e-9 {
		t.Errorf("totals %v beyond, %v expected", a.Beyond, a.Expected)
	}
	if s := a.String(); s != "of the canary's 14 observations beyond the p99 over 2 minutes (6.0 expected), b holds 14 (2.0 expected) and its other pod 0 (4.0 expected)" {
		t.Errorf("sentence %q", s)
	}
	// A minute without evidence, or without pods, is not attributed.
	none := minute(2, 1, 1, 0.5)
	none.Evidence.Valid = false
	if a := attribute([]verdict.Minute{none, minute(3, 1, 1, 0.5)}, pods); a != nil {
		t.Errorf("nothing to split: %+v", a)
	}
	if (*Attribution)(nil).String() != "" {
		t.Error("a nil attribution says something")
	}
}

// TestRollbackRun: the recent run when it rolled back, else the window; nothing for other decisions.
func TestRollbackRun(t *testing.T) {
	ms := make([]verdict.Minute, 10)
	w := verdict.Window{Config: verdict.Config{WindowMinutes: 6}, Minutes: ms, Decision: verdict.Rollback}
	w.Evidence = verdict.WindowEvidence{Statistic: 20, Rollback: 14, RecentMinutes: 2, RecentStatistic: 20, RecentBoundary: 14}
	if got := len(rollbackRun(w)); got != 6 {
		t.Errorf("window rolled back: %d minutes, want 6", got)
	}
	// A deployment's evidence since its start: every minute shown.
	w.Evidence.Anchored = true
	if got := len(rollbackRun(w)); got != 10 {
		t.Errorf("evidence since the deployment's start rolled back: %d minutes, want the 10 shown", got)
	}
	w.Evidence.Statistic = 3
	if got := len(rollbackRun(w)); got != 2 {
		t.Errorf("recent run rolled back: %d minutes, want 2", got)
	}
	w.Evidence.Anchored = false
	// The reference rule rolls back on the window's bad minutes.
	w.Config.Rule = verdict.RuleReference
	if got := len(rollbackRun(w)); got != 6 {
		t.Errorf("reference rule: %d minutes, want the window's 6", got)
	}
	w.Decision = verdict.Hold
	if got := rollbackRun(w); got != nil {
		t.Errorf("hold: %d minutes", len(got))
	}
}

// TestAttributeBadPod: one canary pod of five three times slower, in a real
// Prometheus: the canary is rolled back and the attribution names that pod,
// with most of the excess.
func TestAttributeBadPod(t *testing.T) {
	client, base, canary, w, _ := liveFleets(t, 20, "--minutes", "30", "--pods", "5",
		"--scenario", "bad-pod", "--bad-pod", "2", "--bad-pod-factor", "3", "--canary-share", "0.2", "--seed", "3")
	for _, kind := range []prom.Kind{prom.Native, prom.Classic} {
		req := Request{Metric: testenv.GeneratedMetric, Baseline: base, Canary: canary, Kind: kind, Config: verdict.Default(), Window: w}
		req.Config.WindowMinutes = 20
		res, err := Analyze(context.Background(), client, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != verdict.Rollback {
			t.Fatalf("%s: %s (%s), want rollback", kind, res.Decision, res.Reason)
		}
		a, err := Attribute(context.Background(), client, res, "pod")
		if err != nil || a == nil {
			t.Fatalf("%s: attribution %v, %v", kind, a, err)
		}
		top := a.Pods[0]
		if top.Pod != "checkout-canary-2" || top.Beyond < 0.5*a.Beyond || top.Beyond < 3*top.Expected || len(a.Pods) != 5 {
			t.Errorf("%s: %s", kind, a)
		}
		if !strings.HasPrefix(a.String(), "of the canary's") {
			t.Errorf("%s: %q", kind, a)
		}
		// No label: nothing is asked.
		if a, err := Attribute(context.Background(), client, res, ""); a != nil || err != nil {
			t.Errorf("%s: no label: %v, %v", kind, a, err)
		}
		// A label the canary's series do not have cannot split them.
		if a, err := Attribute(context.Background(), client, res, "kubernetes_pod_name"); a != nil || err == nil || !strings.Contains(err.Error(), `have no label "kubernetes_pod_name"`) {
			t.Errorf("%s: a label the series lack: %v, %v", kind, a, err)
		}
		t.Logf("%s: %s", kind, a)
	}
}
