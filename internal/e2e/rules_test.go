// Package e2e runs Pairwise against real Prometheus and Alertmanager servers
// on 127.0.0.1, built at pinned versions by tools/install.sh.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
	"gopkg.in/yaml.v3"
)

const repoRoot = "../.."

// alertBound is how long the rollback alert may take from Prometheus being
// ready to the webhook. The pack's groups evaluate once a minute (interval:
// 1m, at a per-group offset inside the minute), so a group's first live
// evaluation comes up to 60s after Prometheus starts; the rollback alert has
// no `for`, so it fires at that evaluation (the backfilled window already
// holds the regression). Then Alertmanager's 5s group_wait of the rollback
// route, and 20s of slack for a loaded 2-core machine (the evidence rule's
// group takes a second or two to evaluate; four scenarios' Prometheus servers
// share the machine with the parity queries). The clean scenario must stay
// silent for as long.
const alertBound = 60*time.Second + 5*time.Second + 20*time.Second

// readLag is when, after a whole minute T, the tests read the pack's
// recorded and derived series for minute T. A group evaluates at T+d (d in
// [0, 60s), its offset) and the sample it records there holds the minute
// ending at T; last_over_time(x[1m]) at T+59.999s covers (T-1ms, T+59.999s],
// which holds exactly the sample stamped in [T, T+60s), and a window sum
// [60m] at that time holds minutes T-59m..T. At T itself it would see the
// sample of the minute before. Results are mapped back to T.
const readLag = time.Minute - time.Millisecond

// TestRulesEndToEnd: generated data with a regression -> Prometheus 3.13.5
// with the committed rule pack -> Alertmanager 0.31.1 with the committed
// routing -> a webhook that must record PairwiseCanaryRollback; a clean
// scenario must record none. Then the pack's minutes must be the engine's.
func TestRulesEndToEnd(t *testing.T) {
	queries := packQueries(t)
	// The committed canaries under the reference rule and with the
	// significance gate: not in the committed pack, rendered by the same
	// code into a file that is backfilled (never loaded by the live
	// Prometheus, so its alerts notify no one), as their queries read the
	// series its groups record.
	reference := variantFile(t, "-reference", func(c *rulegen.Canary) { r := verdict.RuleReference; c.Rule = &r })
	gated := variantFile(t, "-gated", func(c *rulegen.Canary) { s := 0.99; c.Significance = &s })
	// The committed native canary with a rollback resting on at least 3
	// minutes instead of 2 (minRollbackMinutes): each minute's cap is
	// then smaller, in the pack as in the engine.
	slower := variantFile(t, "-min3", func(c *rulegen.Canary) { m := 3; c.MinRollbackMinutes = &m })
	slower.Canaries = slices.DeleteFunc(slower.Canaries, func(c rulegen.Canary) bool { return c.Histogram != "native" })
	// The committed native canary read from the same buckets recorded as a
	// native histogram with custom buckets (NHCB, as Prometheus's
	// convert_classic_histograms_to_nhcb records classic buckets; every
	// scenario's data has them, pairwise-gen --nhcb-metric).
	nhcb := packConfig(t)
	nhcb.Canaries = slices.DeleteFunc(nhcb.Canaries, func(c rulegen.Canary) bool { return c.Histogram != "native" })
	for i := range nhcb.Canaries {
		nhcb.Canaries[i].Name += "-nhcb"
		nhcb.Canaries[i].Metric = nhcbMetric
	}
	variants := reference
	variants.Canaries = append(slices.Clone(reference.Canaries), gated.Canaries...)
	variants.Canaries = append(variants.Canaries, nhcb.Canaries...)
	variants.Canaries = append(variants.Canaries, slower.Canaries...)
	// And one generic group judging every service of the generated data by
	// the same rule as the committed native canary, vectorised over the
	// service label: its figures and its rollback alert must be the
	// committed canary's (everyParity).
	variants.Generic = []rulegen.Generic{{Name: "every", Metric: "http_request_duration_seconds", Histogram: "native",
		By: []string{"service"}, FleetLabel: "track", Baseline: "baseline", Canary: "canary", JudgeEvery: true}}
	variantSrc, err := rulegen.Render(variants)
	if err != nil {
		t.Fatal(err)
	}
	variantPack := filepath.Join(t.TempDir(), "variants.rules.yml")
	if err := os.WriteFile(variantPack, variantSrc, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.GeneratorBinary(t) // build once, before the parallel subtests
	testenv.BackfillBinary(t)
	for _, sc := range []struct {
		name string
		args []string
		want string // the webhook must receive "rollback", "nothing", or either (parity only)
	}{
		// Fleets of equal size and 2,000 requests a second each: with fewer,
		// a minute's p99 is noisy enough that identical fleets have 5 bad
		// minutes an hour now and then (docs/benchmarks.md: at 250 req/s a
		// fleet, most hours), so the pack would rightly roll back the clean
		// scenario on some runs; the data end at "now", so each run differs.
		{"regression", []string{"--scenario", "regression", "--canary-share", "0.5", "--total-rps", "4000"}, "rollback"},
		{"clean", []string{"--scenario", "clean", "--canary-share", "0.5", "--total-rps", "4000"}, "nothing"},
		// A 3.4% canary has about 10 observations beyond its p99 a minute: the
		// tail guard decides many minutes, on both sides of the threshold.
		{"small-canary", []string{"--scenario", "regression", "--canary-share", "0.034"}, ""},
		// A canary pod whose scrapes fail for 8 minutes (up == 0, no
		// samples): partial minutes, no evidence, and a window that would
		// promote holds (flag partial-fleet), in the pack as in the engine.
		// And every pod pauses for a second about every 10 minutes: the
		// tail counts clump, and the evidence is divided by its dispersion
		// in the pack as in the engine (decisionParity checks both do so).
		{"scrape-gap", []string{"--scenario", "clean", "--canary-share", "0.5", "--total-rps", "4000", "--scrape-gap", "canary-2@50-57", "--stall-every", "10", "--stall-seconds", "1"}, ""},
		// The canary recorded in another layout than the baseline: its
		// series kept native schema 3 where the baseline's are at 1, and its
		// release changed the classic buckets (some added, some removed).
		// Both count the fleets' tails in the layout both have (Prometheus's
		// a + b; histogram.Common), and the regression is rolled back.
		{"layouts", []string{"--scenario", "regression", "--canary-share", "0.5", "--total-rps", "4000", "--schema", "1", "--canary-schema", "3",
			"--canary-buckets", "0.001,0.0025,0.005,0.01,0.02,0.025,0.04,0.05,0.06,0.075,0.1,0.125,0.15,0.2,0.25,0.3,0.4,0.5,1,2.5,5,10"}, "rollback"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			st := startStack(t, variantPack, append(slices.Clone(sc.args), "--nhcb-metric", nhcbMetric)...)
			switch sc.want {
			case "rollback":
				for _, canary := range []string{"checkout", "checkout-classic"} {
					var alert testenv.WebhookAlert
					p, err := st.hook.WaitFor(func(p testenv.WebhookPayload) bool {
						for _, a := range p.Alerts {
							if a.Labels["alertname"] == "PairwiseCanaryRollback" && a.Labels["canary"] == canary {
								alert = a
								return true
							}
						}
						return false
					}, time.Until(st.ready.Add(alertBound)))
					if err != nil {
						t.Fatalf("no PairwiseCanaryRollback for canary %s reached the webhook within %s of Prometheus being ready: %v; received %v", canary, alertBound, err, names(st.hook))
					}
					if alert.Labels["action"] != "rollback" || alert.Labels["severity"] != "critical" || alert.Status != "firing" {
						t.Errorf("rollback alert for %s has labels %v, status %s; want action=rollback, severity=critical, firing", canary, alert.Labels, alert.Status)
					}
					if alert.Annotations["runbook_url"] == "" || alert.Annotations["summary"] == "" || alert.Annotations["description"] == "" {
						t.Errorf("rollback alert for %s lacks annotations: %v", canary, alert.Annotations)
					}
					if p.Receiver != "rollback-webhook" || p.Path != "/rollback" {
						t.Errorf("rollback alert for %s came through receiver %q at %s, want rollback-webhook at /rollback", canary, p.Receiver, p.Path)
					}
					t.Logf("PairwiseCanaryRollback{canary=%q} reached the webhook %.1fs after Prometheus was ready (bound %s)", canary, time.Since(st.ready).Seconds(), alertBound)
				}
			case "nothing":
				time.Sleep(time.Until(st.ready.Add(alertBound)))
				if got := names(st.hook); len(got) > 0 {
					t.Errorf("the clean scenario sent %v to the rollback webhook within %s", got, alertBound)
				}
				// Silence must come from rules that ran, not from rules that did not.
				for _, canary := range []string{"checkout", "checkout-classic"} {
					v, ok := st.instant(t, fmt.Sprintf(`canary:http_request_duration_seconds:decision_60m{canary=%q}`, canary), time.Now())
					if !ok || v == 2 {
						t.Errorf("clean scenario, canary %s: decision series = %v (present %v), want a recorded promote or hold", canary, v, ok)
					}
				}
				st.checkRuleHealth(t, st.ready)
			}
			// The committed canaries (evidence rule) and the same canaries
			// under the reference rule: verdicts, evidence, decisions and the
			// rollback alert's minute. With the significance gate: verdicts.
			for _, q := range queries {
				t.Run("parity/"+q.Name, func(t *testing.T) {
					st.parity(t, q, true)
					st.recordedMatchesInline(t, q)
				})
			}
			for _, q := range ruleQueries(t, reference) {
				t.Run("parity/"+q.Name, func(t *testing.T) { st.parity(t, q, true) })
			}
			for _, q := range ruleQueries(t, gated) {
				t.Run("parity/"+q.Name, func(t *testing.T) { st.parity(t, q, false) })
			}
			for _, q := range ruleQueries(t, nhcb) {
				t.Run("parity/"+q.Name, func(t *testing.T) { st.parity(t, q, true) })
			}
			for _, q := range ruleQueries(t, slower) {
				t.Run("parity/"+q.Name, func(t *testing.T) { st.parity(t, q, true) })
			}
			t.Run("parity/every", func(t *testing.T) { st.everyParity(t, string(variantSrc), sc.want == "rollback") })
		})
	}
}

// nhcbMetric is the name under which every scenario's pods also expose
// their classic buckets as a native histogram with custom buckets.
const nhcbMetric = "http_request_duration_nhcb_seconds"

func names(w *testenv.Webhook) []string {
	var out []string
	for _, p := range w.Payloads() {
		for _, a := range p.Alerts {
			out = append(out, a.Labels["alertname"]+"{canary="+a.Labels["canary"]+"}")
		}
	}
	return out
}

// packConfig reads the committed rule pack configuration.
func packConfig(t *testing.T) rulegen.File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "rules", "pairwise.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := rulegen.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// packQueries reads the committed config and checks that the expressions the
// parity test queries are the ones the committed pack evaluates: the pack
// records every expression the queries' decisions are derived from.
func packQueries(t *testing.T) []rulegen.Queries {
	t.Helper()
	f := packConfig(t)
	qs, err := rulegen.MinuteQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	pack, err := os.ReadFile(filepath.Join(repoRoot, "rules", "pairwise.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	flat := spaced(string(pack))
	for _, q := range qs {
		if q.Config.Rule != verdict.RuleEvidence {
			t.Fatalf("canary %s of the committed pack is judged by the %s rule; this test expects the default, the evidence rule", q.Name, q.Config.Rule)
		}
		for _, r := range q.Recorded {
			if !strings.Contains(flat, spaced(r)) {
				t.Fatalf("the committed pack does not record, for canary %s, an expression the parity queries derive from; regenerate the pack", q.Name)
			}
		}
	}
	return qs
}

// variantFile is the committed configuration with its canaries renamed with
// suffix and changed by edit: not in the committed pack, but rendered by the
// same code, so the pack must judge them as the engine does.
func variantFile(t *testing.T, suffix string, edit func(*rulegen.Canary)) rulegen.File {
	t.Helper()
	f := packConfig(t)
	for i := range f.Canaries {
		f.Canaries[i].Name += suffix
		edit(&f.Canaries[i])
	}
	return f
}

// ruleQueries are the per-minute queries of f's canaries.
func ruleQueries(t *testing.T, f rulegen.File) []rulegen.Queries {
	t.Helper()
	qs, err := rulegen.MinuteQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// spaced normalises PromQL text for comparison: one space around parentheses.
func spaced(s string) string {
	s = strings.NewReplacer("(", " ( ", ")", " ) ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// stack is one scenario's data, Prometheus, Alertmanager and webhook.
type stack struct {
	promURL string
	client  *prom.Client
	hook    *testenv.Webhook
	// first and end are the first and last whole minutes of generated
	// data; ready is when Prometheus answered /-/ready.
	first, end, ready time.Time
	// clumped: the generated pods pause (--stall-every), so that the
	// evidence rule's dispersion must discount some windows.
	clumped bool
}

// startStack generates the data, backfills the committed pack and
// variantPack over all of it and starts Prometheus (the committed pack) and
// Alertmanager.
func startStack(t *testing.T, variantPack string, genArgs ...string) *stack {
	t.Helper()
	// 90 minutes ending at the current whole minute: the rules evaluate "now",
	// and their 60-minute window must lie inside the data.
	dataDir, truthFile := testenv.Generate(t, append([]string{"--minutes", "90"}, genArgs...)...)
	truth := testenv.LoadTruth(t, truthFile)
	start, err := time.Parse(time.RFC3339, truth.Start)
	if err != nil {
		t.Fatalf("truth start: %v", err)
	}
	end, err := time.Parse(time.RFC3339, truth.End)
	if err != nil {
		t.Fatalf("truth end: %v", err)
	}

	hook := testenv.WebhookReceiver(t)
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	amSrc, err := os.ReadFile(filepath.Join(root, "rules", "alertmanager", "alertmanager.yml"))
	if err != nil {
		t.Fatal(err)
	}
	const placeholder = "http://127.0.0.1:9099/rollback"
	if !strings.Contains(string(amSrc), placeholder) {
		t.Fatalf("rules/alertmanager/alertmanager.yml no longer has the rollback webhook URL %s this test redirects", placeholder)
	}
	am := testenv.Alertmanager(t, strings.ReplaceAll(string(amSrc), placeholder, hook.URL+"/rollback"))

	packFile := filepath.Join(root, "rules", "pairwise.rules.yml")
	pack, err := os.ReadFile(packFile)
	if err != nil {
		t.Fatal(err)
	}
	// The pack's rules read what it records, minute after minute: a fresh
	// Prometheus over generated history would have none of it. Record it
	// over the whole history first, as a Prometheus that had run the pack
	// all along would have: every minute from the first to end, whose
	// records are stamped at the minute plus the group's offset, so up to
	// end+59.999s (to end+1m).
	last := end.Add(time.Minute)
	testenv.Backfill(t, dataDir, packFile, start.Add(time.Minute), last, 0)
	testenv.Backfill(t, dataDir, variantPack, start.Add(time.Minute), last, 0)
	// The live Prometheus evaluates at other offsets (they depend on the
	// file's path): started after the backfill's last evaluation time, it
	// records no minute up to end a second time (it would count twice in
	// window sums) and appends nothing older than the backfilled blocks.
	time.Sleep(time.Until(last.Add(time.Millisecond)))
	p := testenv.Prometheus(t, testenv.PromOptions{
		DataDir: dataDir,
		Config: fmt.Sprintf(`global:
  evaluation_interval: 1m
rule_files:
  - pairwise.rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['%s']
`, am.Addr),
		Files: map[string]string{"pairwise.rules.yml": string(pack)},
		// The parity test's decision queries recompute 60-minute windows at
		// every minute of the data: more than the default 2 minutes on a
		// loaded machine.
		Args: []string{"--query.timeout=10m"},
	})
	client, err := prom.New(p.URL, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{promURL: p.URL, client: client, hook: hook, first: start.Add(time.Minute), end: end, ready: time.Now(), clumped: slices.Contains(genArgs, "--stall-every")}
}

// parity compares, minute by minute over the whole data, the pack's
// per-minute expressions (instant queries at each whole minute T) with
// engine.Analyze on the same Prometheus: verdicts, and with decisions the
// evidence of every minute (evidence rule), the decision of the window ending
// at every minute and the minutes the rollback alert's condition holds.
func (st *stack) parity(t *testing.T, q rulegen.Queries, decisions bool) {
	window := pairing.Window{First: st.first, Last: st.end}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// No Since: the engine's timeline, each minute with the decision of the
	// sliding window ending at it, as the pack (which knows no deployment
	// start) decides.
	res, err := engine.Analyze(ctx, st.client, engine.Request{Metric: q.Metric, Baseline: q.Baseline, Canary: q.Canary, Kind: q.Kind, Config: q.Config, Window: window})
	if err != nil {
		t.Fatalf("engine.Analyze: %v", err)
	}
	// One range query per expression, stepping on the window's whole minutes:
	// each step is the instant query reading minute T (at T+readLag).
	badAt, goodAt, codeAt := st.rangeAt(t, q.Bad, window), st.rangeAt(t, q.Good, window), st.rangeAt(t, q.Verdict, window)
	var engineBad, packBad []string
	excused, excusedAt, counts := map[int64]bool{}, map[string]bool{}, map[verdict.Verdict]int{}
	for _, m := range res.Minutes {
		counts[m.Verdict]++
		at := m.Time.Format("15:04")
		_, bad := badAt[m.Time.Unix()]
		_, good := goodAt[m.Time.Unix()]
		code, hasCode := codeAt[m.Time.Unix()]
		if !hasCode {
			code = math.NaN()
		}
		engineBad = appendIf(engineBad, at, m.Verdict == verdict.Bad && !m.Warmup)
		packBad = appendIf(packBad, at, bad)
		if int(code) == m.Verdict.Code() && bad == (m.Verdict == verdict.Bad && !m.Warmup) && good == (m.Verdict == verdict.Good && !m.Warmup) {
			continue
		}
		// A disagreement. The only one rules/README.md allows: classic
		// buckets that are not monotonic, with the two tail counts on either
		// side of the threshold (histogram_fraction lacks the monotonicity fix).
		baseTail, _ := st.instant(t, q.BaselineTail, m.Time.Add(readLag))
		canaryTail, _ := st.instant(t, q.CanaryTail, m.Time.Add(readLag))
		detail := fmt.Sprintf("minute %s: engine %s (ratio %.6f, tails %.4f/%.4f), pack verdict code %v bad %v good %v (tails %.4f/%.4f)",
			m.Time.Format(time.RFC3339), m.Verdict, m.Ratio, m.Baseline.Tail, m.Canary.Tail, code, bad, good, baseTail, canaryTail)
		if q.Kind == prom.Classic && st.excusable(t, q, m, baseTail, canaryTail) {
			excused[m.Time.Unix()] = true
			excusedAt[at] = true
			t.Logf("excused (non-monotonic classic buckets, tails straddle %.0f): %s", q.Config.MinTailObservations, detail)
			continue
		}
		t.Errorf("the pack and the engine disagree on %s", detail)
	}
	// The bad minutes, excused ones left out of both lists.
	notExcused := func(list []string) []string {
		return slices.DeleteFunc(slices.Clone(list), func(at string) bool { return excusedAt[at] })
	}
	if !slices.Equal(notExcused(engineBad), notExcused(packBad)) {
		t.Errorf("bad minutes differ:\nengine %v\npack   %v", engineBad, packBad)
	}
	// The window count the reference rule compares, over the window ending
	// at end. A subquery's steps fall on whole minutes S, where the minute
	// expression reads the record stamped in (S-60s, S]: minute S-1m (the
	// group's offset d is above 0; with d = 0 it would read minute S). So
	// the subquery at end+1m counts minutes end-59m..end.
	count, _ := st.instant(t, fmt.Sprintf("count_over_time((%s)[%dm:1m]) or vector(0)", q.Bad, q.Config.WindowMinutes), st.end.Add(time.Minute))
	if len(excused) == 0 && int(count) != res.Counts.Bad {
		t.Errorf("subquery count of bad minutes at %s = %v, engine counts %d", st.end.Format(time.RFC3339), count, res.Counts.Bad)
	}
	t.Logf("%s (%s), %s..%s: %d bad minutes, identical in the pack (%d excused); verdicts %v",
		q.Name, q.Kind, window.First.Format("15:04"), window.Last.Format("15:04"), len(engineBad), len(excused), counts)
	if !decisions {
		return
	}
	if q.Config.Rule == verdict.RuleEvidence {
		st.evidenceParity(t, q, res, window, excused)
	}
	st.decisionParity(t, q, res, window, excused)
}

// evidenceParity compares each minute's evidence terms with the engine's
// (verdict.Evidence of a minute that is neither warm-up nor partial). A
// classic minute whose buckets are not monotonic may differ (histogram_fraction
// lacks the monotonicity fix); it is logged and added to excused.
func (st *stack) evidenceParity(t *testing.T, q rulegen.Queries, res *engine.Result, window pairing.Window, excused map[int64]bool) {
	terms := st.rangeBy(t, q.MinuteTerms, window, "term")
	carrying := 0
	for _, m := range res.Minutes {
		ts := m.Time.Unix()
		e := m.Evidence
		want := e.Valid && !m.Warmup && m.Verdict != verdict.Partial
		_, got := terms["minutes"][ts]
		var diffs []string
		if got != want {
			diffs = append(diffs, fmt.Sprintf("engine carries evidence %v, pack %v", want, got))
		} else if want {
			carrying++
			// Every vote's terms, as the pack names them.
			for vi, q := range q.Config.VoteQuantiles() {
				if q == 0 {
					continue
				}
				v, names := e.Votes[vi], rulegen.TermsOfVote(vi, q)
				for i, name := range names.LLR {
					if got := terms[name][ts]; !near(got, v.LLR[i]) {
						diffs = append(diffs, fmt.Sprintf("%s engine %.12g pack %.12g", name, v.LLR[i], got))
					}
				}
				if v.Quantile == 0 {
					continue // abstained: no counts
				}
				if got := terms[names.Canary][ts]; !near(got, v.Canary) {
					diffs = append(diffs, fmt.Sprintf("%s engine %.12g pack %.12g", names.Canary, v.Canary, got))
				}
				if got := terms[names.Baseline][ts]; !near(got, v.Baseline) {
					diffs = append(diffs, fmt.Sprintf("%s engine %.12g pack %.12g", names.Baseline, v.Baseline, got))
				}
				if got := terms[names.Expected][ts]; !near(got, v.Expected(e.Share)) {
					diffs = append(diffs, fmt.Sprintf("%s engine %.12g pack %.12g", names.Expected, v.Expected(e.Share), got))
				}
			}
		}
		if len(diffs) == 0 {
			continue
		}
		detail := fmt.Sprintf("minute %s: %s (engine threshold %.6g, share %.6g)", m.Time.Format(time.RFC3339), strings.Join(diffs, "; "), e.Votes[0].Threshold, e.Share)
		if q.Kind == prom.Classic && (!st.monotonic(t, prom.ClassicQuery(q.Metric, q.Baseline, q.Config.ScrapeInterval()), m.Time) || !st.monotonic(t, prom.ClassicQuery(q.Metric, q.Canary, q.Config.ScrapeInterval()), m.Time)) {
			excused[ts] = true
			t.Logf("excused (non-monotonic classic buckets): %s", detail)
			continue
		}
		t.Errorf("the pack's evidence and the engine's disagree on %s", detail)
	}
	t.Logf("%s: %d minutes carry evidence, with the same terms in the pack", q.Name, carrying)
}

// near is equality to 1e-9, relative above 1 and absolute below: the
// engine's compensated sums and Prometheus's differ in the last bits.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// decisionParity compares the decision of the window ending at each minute,
// and the minutes the rollback alert's condition holds, with the engine's
// timeline, and the flags over the last window. A window holding an excused
// minute may differ (logged).
func (st *stack) decisionParity(t *testing.T, q rulegen.Queries, res *engine.Result, window pairing.Window, excused map[int64]bool) {
	codes, alert := st.rangeAt(t, q.Decision, window), st.rangeAt(t, q.Rollback, window)
	span := time.Duration(q.Config.WindowMinutes) * time.Minute
	excusedWindow := func(end time.Time) bool {
		for ts := range excused {
			if at := time.Unix(ts, 0); at.After(end.Add(-span)) && !at.After(end) {
				return true
			}
		}
		return false
	}
	var stats, promotes map[int64]float64
	var phis map[string]map[int64]float64
	discounted := 0
	if q.Config.Rule == verdict.RuleEvidence {
		stats, promotes, phis = st.rangeAt(t, q.Evidence, window), st.rangeAt(t, q.PromoteEvidence, window), st.rangeBy(t, q.Dispersion, window, "quantile")
	}
	var engineFirst, packFirst string
	decisions := map[verdict.Decision]int{}
	for _, m := range res.Minutes {
		ts := m.Time.Unix()
		decisions[m.Decision]++
		code, ok := codes[ts]
		_, firing := alert[ts]
		if m.Decision == verdict.Rollback && engineFirst == "" {
			engineFirst = m.Time.Format(time.RFC3339)
		}
		if firing && packFirst == "" {
			packFirst = m.Time.Format(time.RFC3339)
		}
		// The evidence rule's statistic, and each vote's dispersion where
		// the window carries evidence.
		var differ []string
		if stats != nil {
			if got, has := stats[ts]; !has || !near(got, m.Window.Statistic) {
				differ = append(differ, fmt.Sprintf("evidence engine %.12g pack %.12g (present %v)", m.Window.Statistic, got, has))
			}
			if got, has := promotes[ts]; m.Window.Minutes > 0 && (!has || !near(got, m.Window.PromoteStatistic)) {
				differ = append(differ, fmt.Sprintf("promote evidence engine %.12g pack %.12g (present %v)", m.Window.PromoteStatistic, got, has))
			}
			for vi, vq := range q.Config.VoteQuantiles() {
				got, has := phis[verdict.VoteLabel(vi, vq)][ts]
				if vq == 0 || m.Window.Minutes == 0 && !has {
					continue
				}
				if want := m.Window.Dispersion[vi]; !has || !near(got, want) {
					differ = append(differ, fmt.Sprintf("%s dispersion engine %.12g pack %.12g (present %v)", verdict.VoteLabel(vi, vq), want, got, has))
				} else if want > 1 {
					discounted++
				}
			}
		}
		if ok && int(code) == m.Decision.Code() && firing == (m.Decision == verdict.Rollback) && len(differ) == 0 {
			continue
		}
		detail := fmt.Sprintf("window ending %s: engine %s (%s), pack decision code %v (present %v), rollback alert condition %v %v",
			m.Time.Format(time.RFC3339), m.Decision, m.DecisionReason, code, ok, firing, differ)
		if q.Config.Rule == verdict.RuleEvidence {
			stat, _ := st.instant(t, q.Evidence, m.Time.Add(readLag))
			promote, _ := st.instant(t, q.PromoteEvidence, m.Time.Add(readLag))
			minutes, _ := st.instant(t, q.EvidenceMinutes, m.Time.Add(readLag))
			detail += fmt.Sprintf("; pack evidence %.6g, promote evidence %.6g over %v minutes; engine %.6g, %.6g over %d, best recent run %d minutes %.6g",
				stat, promote, minutes, m.Window.Statistic, m.Window.PromoteStatistic, m.Window.Minutes, m.Window.RecentMinutes, m.Window.RecentStatistic)
		}
		if excusedWindow(m.Time) {
			t.Logf("excused (the window holds an excused minute): %s", detail)
			continue
		}
		t.Errorf("the pack and the engine decide differently: %s", detail)
	}
	// The first rollback may differ only where the earlier of the two is
	// a window holding an excused minute.
	if engineFirst != packFirst && !excusedWindow(earliest(t, engineFirst, packFirst)) {
		t.Errorf("the rollback alert's condition first holds at %q, the engine first rolls back at %q", packFirst, engineFirst)
	}
	// The flags raised over the last window (they keep it from promoting);
	// the engine's flags from other sources have no counterpart in the pack.
	var packFlags, engineFlags []string
	for flag := range st.instantBy(t, q.Flags, st.end.Add(readLag), "flag") {
		packFlags = append(packFlags, flag)
	}
	for _, f := range res.Flags {
		if f != verdict.FlagMeasurementDivergence && f != verdict.FlagPartialResponse {
			engineFlags = append(engineFlags, f)
		}
	}
	slices.Sort(packFlags)
	slices.Sort(engineFlags)
	if !slices.Equal(packFlags, engineFlags) && !excusedWindow(st.end) {
		t.Errorf("flags over the window ending %s: pack %v, engine %v", st.end.Format(time.RFC3339), packFlags, engineFlags)
	}
	evidence := ""
	if stats != nil {
		evidence = fmt.Sprintf("; the same evidence and promote evidence in every window, %d votes' windows discounted by their dispersion in both", discounted)
	}
	t.Logf("%s (%s rule): decisions %v, the same in the pack; rollback first at %q in both; flags %v%s", q.Name, q.Config.Rule, decisions, engineFirst, engineFlags, evidence)
	if st.clumped && stats != nil && discounted == 0 {
		t.Errorf("%s: pods pause, yet no window's evidence was discounted: the dispersion went untested", q.Name)
	}
}

// recordedMatchesInline checks the committed pack's chain of recording rules
// in the running Prometheus: the decision and the evidence its group recorded
// at an evaluation are what the parity queries give at that evaluation's time.
func (st *stack) recordedMatchesInline(t *testing.T, q rulegen.Queries) {
	window := strconv.Itoa(q.Config.WindowMinutes) + "m"
	for _, c := range []struct{ record, inline string }{
		{rulegen.RecordName(q.Metric, "decision_"+window, false), q.Decision},
		{rulegen.RecordName(q.Metric, "evidence_"+window, false), q.Evidence},
		{rulegen.RecordName(q.Metric, "promote_evidence_"+window, false), q.PromoteEvidence},
	} {
		selector := fmt.Sprintf("%s{canary=%q}", c.record, q.Name)
		var at string
		for deadline := time.Now().Add(30 * time.Second); at == ""; time.Sleep(time.Second) {
			var out struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			}
			st.post(t, "/api/v1/query", url.Values{"query": {"timestamp(" + selector + ")"}}, &out)
			if len(out.Result) == 1 {
				at = fmt.Sprint(out.Result[0].Value[1])
			} else if time.Now().After(deadline) {
				t.Fatalf("Prometheus has recorded no %s within 30s", selector)
			}
		}
		recorded, inline := st.instantAt(t, selector, at), st.instantAt(t, c.inline, at)
		if math.Abs(recorded-inline) > 1e-9*math.Max(1, math.Abs(inline)) {
			t.Errorf("%s recorded at %s is %v; the parity query gives %v", selector, at, recorded, inline)
		}
	}
}

// minuteRange is the query_range form reading every whole minute T of w (at
// T+readLag, see readLag); minuteOf maps a result's timestamp back to T.
func minuteRange(query string, w pairing.Window) url.Values {
	at := func(t time.Time) string {
		return strconv.FormatFloat(float64(t.Add(readLag).UnixMilli())/1000, 'f', 3, 64)
	}
	return url.Values{"query": {query}, "start": {at(w.First)}, "end": {at(w.Last)}, "step": {"60"}}
}

func minuteOf(ts float64) int64 {
	return (int64(math.Round(ts*1000)) - readLag.Milliseconds()) / 1000
}

// rangeBy reads query for every whole minute of w: label value -> minute end -> value.
func (st *stack) rangeBy(t *testing.T, query string, w pairing.Window, label string) map[string]map[int64]float64 {
	t.Helper()
	values := map[string]map[int64]float64{}
	for _, r := range st.rangeSeries(t, query, w) {
		values[r.metric[label]] = r.values
	}
	return values
}

// minuteSeries is one series of a range query over whole minutes.
type minuteSeries struct {
	metric map[string]string
	values map[int64]float64 // minute end (Unix) -> value
}

// rangeSeries reads query for every whole minute of w, each series keyed by
// minute end.
func (st *stack) rangeSeries(t *testing.T, query string, w pairing.Window) []minuteSeries {
	t.Helper()
	form := minuteRange(query, w)
	var out struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	st.post(t, "/api/v1/query_range", form, &out)
	var series []minuteSeries
	for _, r := range out.Result {
		s := minuteSeries{metric: r.Metric, values: map[int64]float64{}}
		for _, v := range r.Values {
			ts, _ := v[0].(float64)
			f, err := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
			if err != nil {
				t.Fatalf("range query %s: value %v: %v", query, v[1], err)
			}
			s.values[minuteOf(ts)] = f
		}
		series = append(series, s)
	}
	return series
}

// instantBy runs query at `at`: label value -> value.
func (st *stack) instantBy(t *testing.T, query string, at time.Time, label string) map[string]float64 {
	t.Helper()
	var out struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	st.query(t, query, at, &out)
	values := map[string]float64{}
	for _, r := range out.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(r.Value[1]), 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", query, r.Value[1], err)
		}
		values[r.Metric[label]] = v
	}
	return values
}

// instantAt runs a single-sample query at a time written as Prometheus
// writes it (Unix seconds with milliseconds).
func (st *stack) instantAt(t *testing.T, query, at string) float64 {
	t.Helper()
	var out struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	st.post(t, "/api/v1/query", url.Values{"query": {query}, "time": {at}}, &out)
	if len(out.Result) != 1 {
		t.Fatalf("query %s at %s returned %d series, want one", query, at, len(out.Result))
	}
	v, err := strconv.ParseFloat(fmt.Sprint(out.Result[0].Value[1]), 64)
	if err != nil {
		t.Fatalf("query %s: value %v: %v", query, out.Result[0].Value[1], err)
	}
	return v
}

// earliest is the earlier of two RFC 3339 times, either of which may be
// empty (never); the zero time when both are.
func earliest(t *testing.T, a, b string) time.Time {
	t.Helper()
	var out time.Time
	for _, s := range []string{a, b} {
		if s == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		if out.IsZero() || at.Before(out) {
			out = at
		}
	}
	return out
}

func appendIf(list []string, s string, ok bool) []string {
	if ok {
		return append(list, s)
	}
	return list
}

// rangeAt reads query for every whole minute of w: minute end (Unix) -> value.
func (st *stack) rangeAt(t *testing.T, query string, w pairing.Window) map[int64]float64 {
	t.Helper()
	series := st.rangeSeries(t, query, w)
	switch len(series) {
	case 0:
		return map[int64]float64{}
	case 1:
		return series[0].values
	}
	t.Fatalf("range query %s returned %d series, want at most one", query, len(series))
	return nil
}

// excusable reports whether a classic minute's disagreement is the
// documented one: a fleet's merged buckets are not monotonic and the engine's
// and the pack's tail counts lie on opposite sides of MinTailObservations.
func (st *stack) excusable(t *testing.T, q rulegen.Queries, m verdict.Minute, baseTail, canaryTail float64) bool {
	limit := q.Config.MinTailObservations
	straddles := func(engineTail, packTail float64) bool { return (engineTail < limit) != (packTail < limit) }
	for _, fleet := range []struct {
		query              string
		engineTail, packTl float64
	}{
		{prom.ClassicQuery(q.Metric, q.Baseline, q.Config.ScrapeInterval()), m.Baseline.Tail, baseTail},
		{prom.ClassicQuery(q.Metric, q.Canary, q.Config.ScrapeInterval()), m.Canary.Tail, canaryTail},
	} {
		if straddles(fleet.engineTail, fleet.packTl) && !st.monotonic(t, fleet.query, m.Time) {
			return true
		}
	}
	return false
}

// monotonic reports whether the cumulative le buckets at T never decrease.
func (st *stack) monotonic(t *testing.T, query string, at time.Time) bool {
	var out struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	st.query(t, query, at, &out)
	type bucket struct{ le, count float64 }
	var bs []bucket
	for _, r := range out.Result {
		le, err1 := strconv.ParseFloat(r.Metric["le"], 64)
		c, err2 := strconv.ParseFloat(fmt.Sprint(r.Value[1]), 64)
		if err1 != nil || err2 != nil {
			return false
		}
		bs = append(bs, bucket{le, c})
	}
	slices.SortFunc(bs, func(a, b bucket) int {
		if a.le < b.le {
			return -1
		}
		if a.le > b.le {
			return 1
		}
		return 0
	})
	for i := 1; i < len(bs); i++ {
		if bs[i].count < bs[i-1].count {
			return false
		}
	}
	return true
}

// instant runs a scalar-or-single-sample instant query at `at`; ok is false
// when the result is empty.
func (st *stack) instant(t *testing.T, query string, at time.Time) (value float64, ok bool) {
	t.Helper()
	var out struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	st.query(t, query, at, &out)
	if len(out.Result) == 0 {
		return math.NaN(), false
	}
	if len(out.Result) > 1 {
		t.Fatalf("query %s at %s returned %d series, want at most one", query, at.Format(time.RFC3339), len(out.Result))
	}
	v, err := strconv.ParseFloat(fmt.Sprint(out.Result[0].Value[1]), 64)
	if err != nil {
		t.Fatalf("query %s: value %v: %v", query, out.Result[0].Value[1], err)
	}
	return v, true
}

func (st *stack) query(t *testing.T, query string, at time.Time, into any) {
	t.Helper()
	st.post(t, "/api/v1/query", url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}, into)
}

func (st *stack) post(t *testing.T, path string, form url.Values, into any) {
	t.Helper()
	query := form.Get("query")
	resp, err := http.PostForm(st.promURL+path, form)
	if err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Status != "success" {
		t.Fatalf("query %s: status %s %s (%v)", query, env.Status, env.Error, err)
	}
	if err := json.Unmarshal(env.Data, into); err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
}

// ruleGroup is a rule group as Prometheus's /api/v1/rules shows it.
type ruleGroup struct {
	Name           string    `json:"name"`
	EvaluationTime float64   `json:"evaluationTime"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	Rules          []struct {
		Name      string `json:"name"`
		Health    string `json:"health"`
		LastError string `json:"lastError"`
	} `json:"rules"`
}

// ruleGroups reads Prometheus's rule groups.
func (st *stack) ruleGroups() ([]ruleGroup, error) {
	resp, err := http.Get(st.promURL + "/api/v1/rules")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Groups []ruleGroup `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("/api/v1/rules: %v", err)
	}
	return out.Data.Groups, nil
}

// checkRuleHealth fails on any rule Prometheus could not evaluate. It
// first waits until every group has evaluated since `since` (once a minute:
// up to a minute, and slack), as a rule not yet evaluated has health
// "unknown".
func (st *stack) checkRuleHealth(t *testing.T, since time.Time) {
	var groups []ruleGroup
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		var err error
		if groups, err = st.ruleGroups(); err != nil {
			t.Fatal(err)
		}
		evaluated := len(groups) > 0
		for _, g := range groups {
			evaluated = evaluated && g.LastEvaluation.After(since)
		}
		if evaluated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every rule group has evaluated since %s within 90s: %+v", since.Format(time.RFC3339), groups)
		}
	}
	n := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s/%s: health %q %s", g.Name, r.Name, r.Health, r.LastError)
			}
		}
	}
	if n == 0 {
		t.Error("Prometheus loaded no rules")
	}
}

// everyParity compares, minute by minute over the data, the generic group
// that judges every service at once (variants pack, group
// pairwise-generic-every, by service) with the committed pack's canary
// checkout (native, the same fleets): each minute's counts, the window's
// statistic, the recent runs' highest, and the minutes the rollback alert's
// condition holds (some, when the scenario rolls back). The committed
// canary is checked against the engine by
// parity; this ties the vectorised rules to it.
func (st *stack) everyParity(t *testing.T, variantPack string, rollsBack bool) {
	const metric = "http_request_duration_seconds"
	w := pairing.Window{First: st.first, Last: st.end}
	alertExpr := func(pack, group string) string {
		var f struct {
			Groups []struct {
				Name  string `yaml:"name"`
				Rules []struct {
					Alert string `yaml:"alert"`
					Expr  string `yaml:"expr"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal([]byte(pack), &f); err != nil {
			t.Fatal(err)
		}
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if g.Name == group && r.Alert == "PairwiseCanaryRollback" {
					return r.Expr
				}
			}
		}
		t.Fatalf("no PairwiseCanaryRollback in group %s", group)
		return ""
	}
	committed, err := os.ReadFile(filepath.Join(repoRoot, "rules", "pairwise.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	evidence := rulegen.RecordName(metric, "evidence_60m", false)
	recent := rulegen.RecordName(metric, "recent_evidence", false)
	counts := rulegen.RecordName(metric, "evidence_counts_1m", false)
	inputs := rulegen.RecordName(metric, "evidence_inputs_1m", false)
	canaryBeyond, bound := rulegen.TermsOfVote(0, 0.99).Canary, rulegen.TermsOfVote(0, 0.99).Bound
	for _, c := range []struct {
		name, one, every string
		absentIsZero     bool // the one canary's figure is 0 where every canary's has no series
	}{
		{"counts", fmt.Sprintf(`%s{canary="checkout",term=%q}`, counts, canaryBeyond), fmt.Sprintf(`%s{pairwise_generic="every",term=%q}`, counts, canaryBeyond), false},
		{"bucket bound", fmt.Sprintf(`%s{canary="checkout",term=%q}`, inputs, bound), fmt.Sprintf(`%s{pairwise_generic="every",term=%q}`, inputs, bound), false},
		{"statistic", fmt.Sprintf(`%s{canary="checkout"}`, evidence), fmt.Sprintf(`%s{pairwise_generic="every"}`, evidence), true},
		{"recent", fmt.Sprintf(`max(%s{canary="checkout"})`, recent), fmt.Sprintf(`max by (service) (%s{pairwise_generic="every"})`, recent), false},
		{"rollback", "max(" + alertExpr(string(committed), "pairwise-checkout") + ")", "max by (canary) (" + alertExpr(variantPack, "pairwise-generic-every") + ")", false},
	} {
		one, every := st.rangeAt(t, c.one, w), st.rangeBy(t, c.every, w, map[bool]string{true: "canary", false: "service"}[c.name == "rollback"])["checkout"]
		if c.name != "rollback" && len(one) == 0 {
			t.Fatalf("%s: the committed canary recorded nothing: %s", c.name, c.one)
		}
		differ := 0
		for ts := w.First.Unix(); ts <= w.Last.Unix(); ts += 60 {
			a, okA := one[ts]
			b, okB := every[ts]
			if !okB && okA && c.absentIsZero && a == 0 {
				continue
			}
			if okA != okB || (okA && math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(a))) {
				if differ++; differ <= 5 {
					t.Errorf("%s at %s: one canary %v (present %v), every canary %v (present %v)", c.name, time.Unix(ts, 0).UTC().Format("15:04"), a, okA, b, okB)
				}
			}
		}
		t.Logf("%s: %d minutes compared, %d with a value, %d differ", c.name, w.Minutes(), len(one), differ)
		if c.name == "rollback" && rollsBack && len(every) == 0 {
			t.Errorf("the scenario rolls back, but the vectorised alert's condition never held")
		}
	}
}
