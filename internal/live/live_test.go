// Package live checks the engine against a real Prometheus 3.13.5 serving
// generated fleets of known ground truth: every per-minute quantile must equal
// Prometheus's own histogram_quantile for the same minute, and the decisions
// must follow the injected scenario.
package live

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// end is a fixed whole minute, so generated data and results are reproducible.
var end = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const metric = testenv.GeneratedMetric

// startFleets generates a scenario ending at `end` and serves it.
func startFleets(t *testing.T, args ...string) *prom.Client {
	t.Helper()
	dir, _ := testenv.Generate(t, append([]string{"--end", end.Format(time.RFC3339), "--seed", "7"}, args...)...)
	srv := testenv.Prometheus(t, testenv.PromOptions{DataDir: dir})
	c, err := prom.New(srv.URL, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// promQuantiles asks Prometheus for histogram_quantile of expr at every
// minute of w (a range query at step 60 s evaluates at exactly those times).
func promQuantiles(t *testing.T, base string, q float64, expr string, w pairing.Window) map[int64]float64 {
	t.Helper()
	query := fmt.Sprintf("histogram_quantile(%s, %s)", strconv.FormatFloat(q, 'g', -1, 64), expr)
	series, err := procs.QueryRange(base, query, w.First, w.Last, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]float64{}
	for _, s := range series {
		for _, v := range s.Values {
			text, ok := v[1].(string)
			f, err := strconv.ParseFloat(text, 64)
			if !ok || err != nil {
				t.Fatalf("query %s: sample %v", query, v)
			}
			out[int64(v[0].(float64))] = f
		}
	}
	return out
}

func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// TestQuantilesEqualPrometheus: 2 fleets x 12 pods x 130 minutes, native and
// classic, with a counter reset; every quantile of every fleet-minute from the
// engine equals Prometheus's histogram_quantile on the same data.
func TestQuantilesEqualPrometheus(t *testing.T) {
	client := startFleets(t, "--scenario", "regression", "--minutes", "130", "--pods", "12", "--regression-start-minute", "90",
		"--restart", "checkout-canary-3@60", "--restart", "checkout-baseline-0@100")
	baseline, canary := testenv.GeneratedFleets(t)
	w, err := pairing.Ending(end, 120, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verdict.Default()
	cfg.WindowMinutes = 120
	for _, kind := range []prom.Kind{prom.Native, prom.Classic} {
		t.Run(string(kind), func(t *testing.T) {
			res, err := engine.Analyze(context.Background(), client, engine.Request{
				Metric: metric, Baseline: baseline, Canary: canary, Kind: kind, Config: cfg, Window: w})
			if err != nil {
				t.Fatal(err)
			}
			if res.BaselineKind != kind || res.CanaryKind != kind {
				t.Fatalf("read %s/%s, asked for %s", res.BaselineKind, res.CanaryKind, kind)
			}
			compared := 0
			for _, fleet := range []struct {
				name  string
				sel   selector.Selector
				stats func(m verdict.Minute) verdict.FleetStats
			}{
				{"baseline", baseline, func(m verdict.Minute) verdict.FleetStats { return m.Baseline }},
				{"canary", canary, func(m verdict.Minute) verdict.FleetStats { return m.Canary }},
			} {
				expr := prom.NativeQuery(metric, fleet.sel, prom.DefaultScrapeInterval)
				if kind == prom.Classic {
					expr = prom.ClassicQuery(metric, fleet.sel, prom.DefaultScrapeInterval)
				}
				for qi, q := range cfg.Quantiles {
					want := promQuantiles(t, client.BaseURL, q, expr, w)
					for _, m := range res.Minutes {
						got := fleet.stats(m).Quantiles[qi]
						exp, ok := want[m.Time.Unix()]
						if !ok {
							t.Fatalf("%s %s: Prometheus has no value at %s", fleet.name, verdict.QuantileLabel(q), m.Time)
						}
						if !sameFloat(got, exp) {
							t.Errorf("%s %s at %s: engine %.17g, Prometheus %.17g", fleet.name, verdict.QuantileLabel(q), m.Time.Format(time.RFC3339), got, exp)
						}
						compared++
					}
				}
			}
			if want := 2 * len(cfg.Quantiles) * 120; compared != want {
				t.Fatalf("compared %d values, want %d", compared, want)
			}
			t.Logf("%s: %d fleet-minute quantiles equal Prometheus's histogram_quantile", kind, compared)
		})
	}
}

// judge runs the default rules over the 60 minutes ending at `at`.
func judge(t *testing.T, client *prom.Client, at time.Time) *engine.Result {
	t.Helper()
	baseline, canary := testenv.GeneratedFleets(t)
	w, err := pairing.Ending(at, 60, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Analyze(context.Background(), client, engine.Request{
		Metric: metric, Baseline: baseline, Canary: canary, Kind: prom.Auto, Config: verdict.Default(), Window: w})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// heavyTraffic splits 3,000 req/s evenly, so a minute's p99 rests on
// thousands of tail observations and verdicts follow the scenario, not noise.
var heavyTraffic = []string{"--total-rps", "3000", "--canary-share", "0.5", "--pods", "10"}

func TestEightBadMinutesRollBack(t *testing.T) {
	// 100 minutes; the canary turns 1.5x slower for the last 8 of them.
	client := startFleets(t, append(heavyTraffic, "--scenario", "regression", "--minutes", "100",
		"--regression-factor", "1.5", "--regression-start-minute", "92")...)
	res := judge(t, client, end)
	if res.Decision != verdict.Rollback || res.Counts.Bad != 8 {
		t.Fatalf("decision %s with %+v, want rollback with 8 bad minutes", res.Decision, res.Counts)
	}
	for i, m := range res.Minutes {
		if wantBad := i >= 52; (m.Verdict == verdict.Bad) != wantBad {
			t.Errorf("minute %d (%s): %s, ratio %.3f", i, m.Time.Format("15:04"), m.Verdict, m.Ratio)
		}
	}
	// The window that ends before the regression is not a rollback.
	if before := judge(t, client, end.Add(-8*time.Minute)); before.Decision == verdict.Rollback {
		t.Fatalf("the window before the regression rolled back: %+v", before.Counts)
	}
}

func TestCleanFleetsNeverRollBack(t *testing.T) {
	client := startFleets(t, append(heavyTraffic, "--scenario", "clean", "--minutes", "130")...)
	for at := end; at.After(end.Add(-70 * time.Minute)); at = at.Add(-10 * time.Minute) {
		if res := judge(t, client, at); res.Decision == verdict.Rollback {
			t.Fatalf("clean fleets at %s: %s %+v (worst ratio %.3f)", at.Format("15:04"), res.Decision, res.Counts, res.Minutes[res.Worst].Ratio)
		}
	}
}

// TestSignificanceGate: a 5% canary (about 11 observations beyond its p99 a
// minute) of identical fleets is rolled back by the bare rule in every
// window, from p99 noise alone; with the gate at 0.99 it is not, while a
// canary that turns 1.5x slower is still rolled back within 12 minutes.
func TestSignificanceGate(t *testing.T) {
	judgeWith := func(client *prom.Client, at time.Time, significance float64) *engine.Result {
		t.Helper()
		baseline, canary := testenv.GeneratedFleets(t)
		w, err := pairing.Ending(at, 60, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := verdict.Default()
		cfg.Rule = verdict.RuleReference // the gate belongs to the counting rule
		cfg.Significance = significance
		res, err := engine.Analyze(context.Background(), client, engine.Request{
			Metric: metric, Baseline: baseline, Canary: canary, Kind: prom.Native, Config: cfg, Window: w})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("clean", func(t *testing.T) {
		client := startFleets(t, "--scenario", "clean", "--minutes", "240", "--pods", "10")
		bare := 0
		for at := end; at.After(end.Add(-180 * time.Minute)); at = at.Add(-15 * time.Minute) {
			if judgeWith(client, at, 0).Decision == verdict.Rollback {
				bare++
			}
			if res := judgeWith(client, at, 0.99); res.Decision == verdict.Rollback {
				t.Fatalf("gated judge rolled back identical fleets at %s: %+v", at.Format("15:04"), res.Counts)
			}
		}
		t.Logf("the bare rule rolled back %d of 12 windows of identical fleets; the gated one none", bare)
	})
	t.Run("regression", func(t *testing.T) {
		// 1.5x slower from minute 120 of 180: the first slow minute ends at 11:01.
		client := startFleets(t, "--scenario", "regression", "--minutes", "180", "--pods", "10",
			"--regression-factor", "1.5", "--regression-start-minute", "120")
		onset := end.Add(-59 * time.Minute)
		if res := judgeWith(client, onset.Add(-time.Minute), 0.99); res.Decision == verdict.Rollback {
			t.Fatalf("rolled back before the regression: %+v", res.Counts)
		}
		for after := 0; after <= 12; after++ {
			if judgeWith(client, onset.Add(time.Duration(after)*time.Minute), 0.99).Decision == verdict.Rollback {
				t.Logf("rolled back %d minutes after the onset", after)
				return
			}
		}
		t.Fatal("a 1.5x regression was not rolled back within 12 minutes")
	})
}

// TestEvidenceRuleTimeline: the same 5% canary judged by the default
// evidence rule, every minute of three hours in one analysis: identical
// fleets are never rolled back by any sliding window, and a deployment that
// is 1.5x slower from its first minute is rolled back within minutes of its
// start (--since), while the minutes before it are not part of any window.
func TestEvidenceRuleTimeline(t *testing.T) {
	analyze := func(client *prom.Client, first, last, since time.Time) *engine.Result {
		t.Helper()
		baseline, canary := testenv.GeneratedFleets(t)
		res, err := engine.Analyze(context.Background(), client, engine.Request{
			Metric: metric, Baseline: baseline, Canary: canary, Kind: prom.Native, Config: verdict.Default(),
			Window: pairing.Window{First: first, Last: last}, Since: since})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("clean", func(t *testing.T) {
		client := startFleets(t, "--scenario", "clean", "--minutes", "240", "--pods", "10")
		res := analyze(client, end.Add(-179*time.Minute), end, time.Time{})
		if len(res.Minutes) != 180 || res.Counts.Partial != 0 || res.Evidence.Minutes != 60 {
			t.Fatalf("%d minutes shown (want 180), %d partial (want 0), %d with evidence (want 60)", len(res.Minutes), res.Counts.Partial, res.Evidence.Minutes)
		}
		for _, m := range res.Minutes {
			if m.Decision == verdict.Rollback || m.Decision == "" {
				t.Fatalf("identical fleets: %s at %s: %s", m.Decision, m.Time.Format("15:04"), m.DecisionReason)
			}
		}
	})
	t.Run("regression", func(t *testing.T) {
		client := startFleets(t, "--scenario", "regression", "--minutes", "180", "--pods", "10",
			"--regression-factor", "1.5", "--regression-start-minute", "120")
		onset := end.Add(-59 * time.Minute) // the first slow minute
		res := analyze(client, end.Add(-179*time.Minute), end, onset.Add(-time.Minute))
		if len(res.Minutes) != 60 || !res.Minutes[0].Time.Equal(onset) || !res.Minutes[0].Window.Anchored {
			t.Fatalf("since keeps earlier minutes out: %d minutes from %s", len(res.Minutes), res.Minutes[0].Time.Format("15:04"))
		}
		for i, m := range res.Minutes {
			if m.Decision == verdict.Rollback {
				t.Logf("rolled back %d minutes after the onset: %s", i, m.DecisionReason)
				if i > 12 {
					t.Fatalf("a 1.5x regression took %d minutes", i)
				}
				return
			}
		}
		t.Fatal("a 1.5x regression was never rolled back")
	})
}

// TestTrafficMixIsFlagged: the traffic-mix canary (cheaper requests, and 1.2x
// its configured share of traffic) looks like a win; told the router's
// share, the engine flags the traffic instead of trusting the win. Clean
// fleets at their configured share are not flagged.
func TestTrafficMixIsFlagged(t *testing.T) {
	baseline, canary := testenv.GeneratedFleets(t)
	for _, tt := range []struct {
		scenario string
		want     bool
	}{{"traffic-mix", true}, {"clean", false}} {
		t.Run(tt.scenario, func(t *testing.T) {
			client := startFleets(t, "--scenario", tt.scenario, "--minutes", "65", "--pods", "10")
			w, err := pairing.Ending(end, 60, 0)
			if err != nil {
				t.Fatal(err)
			}
			cfg := verdict.Default()
			cfg.ExpectedCanaryShare = 0.05 // the generator's default canary share
			res, err := engine.Analyze(context.Background(), client, engine.Request{
				Metric: metric, Baseline: baseline, Canary: canary, Kind: prom.Native, Config: cfg, Window: w})
			if err != nil {
				t.Fatal(err)
			}
			flagged := false
			for _, f := range res.Flags {
				flagged = flagged || f == verdict.FlagTrafficParity
			}
			if flagged != tt.want {
				t.Fatalf("traffic-parity flagged %v, want %v: %v", flagged, tt.want, res.Notes)
			}
		})
	}
}

// TestScrapeGaps: a fleet is the sum over whoever reported, so a pod that
// is not scraped changes the fleet without a sign in its histogram. Against
// a real Prometheus, with up == 0 written for the failed scrapes as
// Prometheus does: the minutes of the gap are partial under both rules (no
// verdict, no evidence) and flag the window, which holds instead of
// promoting; the regressed pod whose scrapes fail cannot get its canary
// promoted.
func TestScrapeGaps(t *testing.T) {
	judgeRule := func(client *prom.Client, rule string) *engine.Result {
		t.Helper()
		baseline, canary := testenv.GeneratedFleets(t)
		cfg := verdict.Default()
		cfg.Rule = rule
		w, err := pairing.Ending(end, 60, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := engine.Analyze(context.Background(), client, engine.Request{
			Metric: metric, Baseline: baseline, Canary: canary, Kind: prom.Native, Config: cfg, Window: w})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("a canary pod misses seven minutes of scrapes", func(t *testing.T) {
		// 120 minutes; canary pod 2 of 10 is not scraped in minutes 90 to 97.
		client := startFleets(t, append(heavyTraffic, "--scenario", "clean", "--minutes", "120", "--scrape-gap", "canary-2@90-97")...)
		for _, rule := range []string{verdict.RuleEvidence, verdict.RuleReference} {
			res := judgeRule(client, rule)
			partial := 0
			for _, m := range res.Minutes {
				if m.Verdict == verdict.Partial {
					partial++
					if !strings.Contains(m.Reason, "canary fleet is incomplete") {
						t.Errorf("%s: partial minute %s: %q", rule, m.Time.Format("15:04"), m.Reason)
					}
				}
			}
			// The gap's 7 minutes, and a minute on each side whose
			// increase() lacks the pod's first or last sample.
			if partial < 7 || partial > 9 || res.Counts.Partial != partial {
				t.Errorf("%s: %d partial minutes, want the 7 of the gap (up to 9)", rule, partial)
			}
			if res.Decision == verdict.Rollback || res.Decision == verdict.Promote || !slices.Contains(res.Flags, verdict.FlagPartialFleet) {
				t.Errorf("%s: %s with flags %v: %s", rule, res.Decision, res.Flags, res.Reason)
			}
			t.Logf("%s: %s, %d partial minutes, %d minutes of evidence", rule, res.Decision, partial, res.Evidence.Minutes)
			if res.Evidence.Minutes > 60-7 {
				t.Errorf("%s: %d minutes carry evidence, the gap's must not", rule, res.Evidence.Minutes)
			}
		}
	})
	t.Run("the regressed pod's scrapes fail", func(t *testing.T) {
		// Canary pod 0 of 10 is 3x slower, and from minute 60 on it cannot be scraped.
		client := startFleets(t, append(heavyTraffic, "--scenario", "bad-pod", "--bad-pod", "0", "--bad-pod-factor", "3",
			"--minutes", "120", "--scrape-gap", "canary-0@60-120")...)
		res := judgeRule(client, verdict.RuleEvidence)
		if res.Decision == verdict.Promote || res.Counts.Partial != 60 || res.Evidence.Minutes != 0 {
			t.Fatalf("%s with %d partial minutes and %d minutes of evidence: %s", res.Decision, res.Counts.Partial, res.Evidence.Minutes, res.Reason)
		}
	})
}
