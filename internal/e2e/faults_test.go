package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
)

// TestFaultsEndToEnd runs the committed pack and routing through faults of
// the real servers. Each subtest has servers of its own and runs in parallel.
func TestFaultsEndToEnd(t *testing.T) {
	testenv.GeneratorBinary(t)
	testenv.BackfillBinary(t)
	t.Run("prometheus-restart", func(t *testing.T) { t.Parallel(); testPrometheusRestart(t) })
	t.Run("alertmanager-restart", func(t *testing.T) { t.Parallel(); testAlertmanagerRestart(t) })
	t.Run("canary-gone", func(t *testing.T) { t.Parallel(); testAlertResolves(t) })
	t.Run("promtool-classic-backfill", func(t *testing.T) { t.Parallel(); testPromtoolClassicBackfill(t) })
}

// faultData generates minutes of history ending at the current minute and
// backfills the pack over its last recent minutes (what the pack records is
// then there when Prometheus starts; the whole history would take minutes
// to backfill on a loaded machine).
func faultData(t *testing.T, minutes, recent int, genArgs ...string) (dataDir, packFile string, start, end time.Time) {
	t.Helper()
	dataDir, truthFile := testenv.Generate(t, append([]string{"--minutes", strconv.Itoa(minutes)}, genArgs...)...)
	truth := testenv.LoadTruth(t, truthFile)
	end, err := time.Parse(time.RFC3339, truth.End)
	if err != nil {
		t.Fatalf("truth end: %v", err)
	}
	if start, err = time.Parse(time.RFC3339, truth.Start); err != nil {
		t.Fatalf("truth start: %v", err)
	}
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	packFile = filepath.Join(root, "rules", "pairwise.rules.yml")
	testenv.Backfill(t, dataDir, packFile, end.Add(-time.Duration(recent)*time.Minute), end, 0)
	return dataDir, packFile, start, end
}

// faultProm starts Prometheus on dataDir with the pack (its groups evaluate
// once a minute, interval: 1m), sending alerts to the Alertmanagers listed in
// the file amTargets (file service discovery: an Alertmanager restarted on
// another port is found again), re-sending firing alerts every resend. The
// pack is loaded from packFile's path itself, so a restarted Prometheus
// evaluates each group at the same offset inside the minute as before (the
// offset depends on the group's name and file path).
//
// scrape, when not empty, is a `pairwise simulate` endpoint (host:port)
// scraped every 15 s, the interval the pack reads minutes at, as the demo
// scrapes it.
func faultProm(t *testing.T, dataDir, packFile, amTargets, scrape string, resend time.Duration) *testenv.PromServer {
	t.Helper()
	if !filepath.IsAbs(packFile) {
		t.Fatalf("faultProm: pack path %s is not absolute", packFile)
	}
	alerting := ""
	if amTargets != "" {
		alerting = fmt.Sprintf(`alerting:
  alertmanagers:
    - file_sd_configs:
        - files: [%q]
          refresh_interval: 1s
`, amTargets)
	}
	scraping := ""
	if scrape != "" {
		scraping = fmt.Sprintf(`scrape_configs:
  - job_name: pairwise-simulator
    scrape_interval: 15s
    honor_labels: true
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: [%q]
`, scrape)
	}
	return testenv.Prometheus(t, testenv.PromOptions{
		DataDir: dataDir,
		Config: fmt.Sprintf(`global:
  evaluation_interval: 1m
rule_files:
  - %q
%s%s`, packFile, alerting, scraping),
		Args: []string{"--rules.alert.resend-delay=" + resend.String()},
	})
}

// recordedSamples returns the raw samples of the series selected by sel
// over the last span before at: series labels -> timestamp (ms) -> value.
func recordedSamples(t *testing.T, st *stack, sel string, span time.Duration, at time.Time) map[string]map[int64]string {
	t.Helper()
	var out struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	st.query(t, fmt.Sprintf("%s[%dms]", sel, max(span, time.Second).Milliseconds()), at, &out)
	got := map[string]map[int64]string{}
	for _, r := range out.Result {
		key := fmt.Sprint(r.Metric)
		got[key] = map[int64]string{}
		for _, v := range r.Values {
			ts, _ := v[0].(float64)
			got[key][int64(ts*1000+0.5)] = fmt.Sprint(v[1])
		}
	}
	return got
}

// waitRecorded waits until sel has at least series series (one per group
// recording it), each with at least n samples recorded after since.
func waitRecorded(t *testing.T, st *stack, sel string, series int, since time.Time, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		now := time.Now()
		got := recordedSamples(t, st, sel, now.Sub(since), now)
		ok := len(got) >= series
		for _, s := range got {
			ok = ok && len(s) >= n
		}
		if ok {
			return
		}
		if now.After(deadline) {
			var groups []string
			gs, err := st.ruleGroups()
			if err != nil {
				groups = append(groups, err.Error())
			}
			for _, g := range gs {
				groups = append(groups, fmt.Sprintf("%s %.1fs %s", g.Name, g.EvaluationTime, g.LastEvaluation.Format(time.RFC3339Nano)))
			}
			t.Fatalf("%s: fewer than %d series with %d evaluations each recorded within %s of %s: %v; rule groups (evaluation seconds, last evaluation): %s", sel, series, n, timeout, since.Format(time.RFC3339), got, groups)
		}
		time.Sleep(time.Second)
	}
}

// onDataCode: a recorded verdict code judged on data (good, neutral, bad,
// insufficient), not no-data (4) or partial (5).
func onDataCode(v string) bool { return v == "0" || v == "1" || v == "2" || v == "3" }

// waitOnData waits until each of series canaries has a verdict on data
// recorded for a minute after from.
func waitOnData(t *testing.T, st *stack, series int, from time.Time, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		now := time.Now()
		got := 0
		seen := map[string][]string{}
		for key, samples := range recordedSamples(t, st, `canary:http_request_duration_seconds:verdict_1m`, now.Sub(from), now) {
			ok := false
			for ts, v := range samples {
				if !time.UnixMilli(ts).Before(from) {
					seen[key] = append(seen[key], v)
					ok = ok || onDataCode(v)
				}
			}
			if ok {
				got++
			}
		}
		if got >= series {
			return
		}
		if now.After(deadline) {
			t.Fatalf("within %s, %d of %d canaries had a minute after %s judged on scraped data; verdict codes recorded: %v", timeout, got, series, from.Format(time.RFC3339), seen)
		}
		time.Sleep(2 * time.Second)
	}
}

// testPrometheusRestart stops Prometheus for longer than a minute in the
// middle of live evaluation (the pack's groups evaluate once a minute) while
// the fleets keep serving and are scraped (pairwise simulate, continuing the
// history), and starts it again on the same data directory and rule file:
// every decision and evidence sample recorded before the stop (backfilled
// and live) is still there; at least one evaluation of each group is missed,
// and its minute has no record and reads as no-data, never bad; the minutes
// the outage cut into are judged on what was scraped and are never bad; the
// clean canary is never rolled back. One simulator serves both fleets, so
// the outage cuts them at the same scrapes; a scrape one fleet's pod missed
// alone is TestFailedScrapeBeforeMinute's (pkg/engine, raw and recorded).
// It takes 3.5 to 5 minutes: the
// generation and backfill (seconds), up to a minute to the first live
// evaluation (the wait is bounded at 90s), the outage (restartOutage, 70s),
// up to a minute to the first evaluation after the restart (again
// bounded at 90s), and a minute or two to the first judged on data.
func testPrometheusRestart(t *testing.T) {
	knobs := []string{"--scenario", "clean", "--canary-share", "0.5", "--total-rps", "4000", "--seed", "7"}
	dataDir, packFile, start, end := faultData(t, 70, 3, knobs...)
	// The fleets keep serving, live, while Prometheus stops and starts: the
	// simulator counts from the history's start with the same knobs, so its
	// samples continue the history's series without a reset, and every
	// minute evaluated live reads scraped data, the minutes around the
	// outage partly scraped.
	simAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	sim := testenv.Start(t, "simulator", dashBuild(t), t.TempDir(), append([]string{"simulate", "--listen", simAddr, "--start", start.Format(time.RFC3339), "--quiet"}, knobs...)...)
	testenv.WaitReady(t, sim, "http://"+simAddr+"/metrics", 60*time.Second)
	p1 := faultProm(t, dataDir, packFile, "", simAddr, time.Minute)
	st := &stack{promURL: p1.URL}
	began := time.Now()
	recorded := []string{
		`canary:http_request_duration_seconds:decision_60m`,
		`canary:http_request_duration_seconds:evidence_60m`,
	}
	// One evaluation of every group (a series each): up to a minute, and
	// slack.
	canaries := packQueries(t)
	const evalWait = 90 * time.Second
	for _, sel := range recorded {
		waitRecorded(t, st, sel, len(canaries), began, 1, evalWait)
	}
	// Then a minute scraped whole, judged on its data, in every group,
	// before the stop: the outage then cuts into live judgement.
	waitOnData(t, st, len(canaries), end.Add(time.Minute), 150*time.Second)
	before := map[string]map[string]map[int64]string{}
	for _, sel := range recorded {
		at := time.Now()
		before[sel] = recordedSamples(t, st, sel, at.Sub(end.Add(-5*time.Minute)), at)
	}
	stopped := time.Now()
	p1.Stop()
	// Longer than the evaluation interval: each group's next evaluation
	// time falls inside the outage, whatever its offset.
	const restartOutage = 70 * time.Second
	time.Sleep(restartOutage)
	p2 := faultProm(t, dataDir, packFile, "", simAddr, time.Minute)
	restarted := time.Now()
	st = &stack{promURL: p2.URL}
	for _, sel := range recorded {
		waitRecorded(t, st, sel, len(canaries), restarted, 1, evalWait)
	}
	// The first minute after the restart reads too few scrapes to be judged
	// on data: wait for one that is, in every group, so that the minutes the
	// outage cut into include some judged on what was scraped.
	waitOnData(t, st, len(canaries), restarted, 150*time.Second)
	now := time.Now()
	// missed holds, per canary, the minutes with no record: between the last
	// record before the stop and the first after the restart.
	missed := map[string][]time.Time{}
	for _, sel := range recorded {
		after := recordedSamples(t, st, sel, now.Sub(end.Add(-5*time.Minute)), now)
		lost, kept := 0, 0
		for series, samples := range before[sel] {
			for ts, v := range samples {
				if got, ok := after[series][ts]; !ok || got != v {
					lost++
					if lost <= 3 {
						t.Errorf("%s %s at %s: recorded %s before the restart, %q (present %v) after", sel, series, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano), v, got, ok)
					}
				} else {
					kept++
				}
			}
		}
		if lost > 0 {
			t.Errorf("%s: %d samples recorded before the restart are lost", sel, lost)
		}
		if len(before[sel]) == 0 {
			t.Errorf("%s: nothing recorded before the stop", sel)
		}
		for series, samples := range after {
			var lastBefore, firstAfter time.Time
			for ts := range samples {
				at := time.UnixMilli(ts)
				// The outage has no evaluation.
				if at.After(stopped) && at.Before(restarted) {
					t.Errorf("%s %s has a sample at %s, inside the outage %s..%s", sel, series, at.UTC().Format(time.RFC3339Nano), stopped.Format(time.RFC3339), restarted.Format(time.RFC3339))
				}
				if !at.After(stopped) && at.After(lastBefore) {
					lastBefore = at
				}
				if !at.Before(restarted) && (firstAfter.IsZero() || at.Before(firstAfter)) {
					firstAfter = at
				}
			}
			if lastBefore.IsZero() || firstAfter.IsZero() {
				t.Errorf("%s %s: no sample before the stop (%v) or none after the restart (%v)", sel, series, lastBefore, firstAfter)
				continue
			}
			// A record stamped t holds the minute t truncates to.
			var gap []time.Time
			for m := lastBefore.Truncate(time.Minute).Add(time.Minute); m.Before(firstAfter.Truncate(time.Minute)); m = m.Add(time.Minute) {
				gap = append(gap, m)
			}
			if len(gap) == 0 {
				t.Errorf("%s %s: the last record before the stop (%s) and the first after the restart (%s) are of adjacent minutes: no evaluation was missed", sel, series, lastBefore.UTC().Format(time.RFC3339Nano), firstAfter.UTC().Format(time.RFC3339Nano))
			}
			if sel == recorded[0] {
				missed[series] = gap
			}
		}
		t.Logf("%s: %d samples recorded before the restart, all %d kept", sel, kept, kept)
	}
	// The missed minutes read as no-data (verdict code 4), never bad, with
	// the pack's own per-minute expressions, read as the pack's rules read
	// them (see readLag).
	queries := map[string]rulegen.Queries{}
	for _, q := range canaries {
		queries[q.Name] = q
	}
	checked := 0
	for series, gap := range missed {
		name := regexp.MustCompile(`[\[ ]canary:([^ \]]+)`).FindStringSubmatch(series)
		if name == nil {
			t.Errorf("series %s has no canary label", series)
			continue
		}
		q, ok := queries[name[1]]
		if !ok {
			t.Errorf("series %s: canary %s is not in the committed pack", series, name[1])
			continue
		}
		for _, m := range gap {
			checked++
			if v, ok := st.instant(t, q.Verdict, m.Add(readLag)); !ok || v != 4 {
				t.Errorf("canary %s, minute %s missed in the outage: verdict code %v (present %v), want 4 (no-data)", q.Name, m.UTC().Format(time.RFC3339), v, ok)
			}
			if v, ok := st.instant(t, q.Bad, m.Add(readLag)); ok {
				t.Errorf("canary %s, minute %s missed in the outage: bad (%v)", q.Name, m.UTC().Format(time.RFC3339), v)
			}
			if got := recordedSamples(t, st, fmt.Sprintf(`canary:http_request_duration_seconds:verdict_1m{canary=%q}`, q.Name), time.Minute, m.Add(readLag)); len(got) > 0 {
				t.Errorf("canary %s, minute %s missed in the outage: a verdict is recorded: %v", q.Name, m.UTC().Format(time.RFC3339), got)
			}
		}
		t.Logf("canary %s: minutes %v missed in the outage, each no-data, none bad, none recorded", q.Name, gap)
	}
	if checked == 0 {
		t.Error("no missed minute was checked")
	}
	// No decision recorded over the whole run is a rollback.
	for series, samples := range recordedSamples(t, st, recorded[0], now.Sub(end.Add(-5*time.Minute)), now) {
		for ts, v := range samples {
			if v == "2" {
				t.Errorf("clean canary: %s recorded a rollback at %s", series, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano))
			}
		}
	}
	// Minutes after the history were scraped live: each evaluated one is
	// judged on data, and those the outage cut into (partly scraped, the
	// first evaluations after the restart) are never bad: a missed scrape
	// is counted as missed, not as a slow minute.
	verdicts := recordedSamples(t, st, `canary:http_request_duration_seconds:verdict_1m`, now.Sub(end.Add(time.Minute)), now)
	judged, onData, cut, cutOnData := 0, 0, 0, 0
	for series, samples := range verdicts {
		for ts, v := range samples {
			at := time.UnixMilli(ts)
			if at.Before(end.Add(time.Minute)) {
				continue
			}
			judged++
			if onDataCode(v) {
				onData++
			}
			// A record stamped t holds the minute t truncates to: (m-60s, m].
			if m := at.Truncate(time.Minute); m.After(stopped.Add(-time.Minute)) && m.Before(restarted.Add(3*time.Minute)) {
				cut++
				if onDataCode(v) && !at.Before(restarted) {
					cutOnData++
				}
				if v == "2" {
					t.Errorf("%s: minute %s, cut by the outage %s..%s, is bad", series, m.UTC().Format(time.RFC3339), stopped.Format(time.RFC3339), restarted.Format(time.RFC3339))
				}
			}
		}
	}
	if onData == 0 {
		raw, _ := st.instant(t, `count(count_over_time(http_request_duration_seconds[5m]))`, now)
		t.Errorf("none of the %d verdicts recorded live is on data: the fleets were not scraped (%v raw series in the last 5m); Prometheus log:\n%s", judged, raw, p2.LogTail(30))
	}
	if cutOnData == 0 {
		t.Errorf("no minute cut by the outage was judged on data after the restart (%d of them judged)", cut)
	}
	t.Logf("%d verdicts recorded live, %d on data, %d of minutes cut by the outage (%d judged on data after the restart), none bad", judged, onData, cut, cutOnData)
	if v, ok := st.instant(t, `count(ALERTS{alertname="PairwiseCanaryRollback"})`, now); ok {
		t.Errorf("clean canary: %v PairwiseCanaryRollback alerts active after the restart", v)
	}
}

// testAlertmanagerRestart: (ten minutes of the regression are backfilled,
// so that a pack deciding from recorded minutes has evidence to roll back
// on) the rollback alert reaches an Alertmanager that
// holds it (a 30 s group_wait) and is stopped before it notifies; a new
// Alertmanager (another port, found through file discovery) gets the alert
// again from Prometheus, which re-sends firing alerts when its group
// evaluates (once a minute) and its default resend delay (1m) has passed
// since the last send, and delivers it to the webhook: every canary whose
// rollback the first Alertmanager held, not merely some rollback (the pack
// has two canaries, whose groups evaluate at different seconds, and the
// second's first send would reach the new Alertmanager unaided). The ten
// regressed minutes roll back on their own: the
// regression (1.2x latency from minute 30 of the 70) is in every one of
// them, and the window's evidence needs only a few such minutes at 2,000
// requests a second a fleet (TestRulesEndToEnd's regression rolls back
// within a minute or two of its start), so the first live evaluation, whose
// window holds the ten backfilled minutes, fires the alert.
func testAlertmanagerRestart(t *testing.T) {
	dataDir, packFile, _, _ := faultData(t, 70, 10, "--scenario", "regression", "--canary-share", "0.5", "--total-rps", "4000")
	hook := testenv.WebhookReceiver(t)
	amConfig := routingConfig(t, hook, "30s")
	am1 := testenv.Alertmanager(t, amConfig)
	targets := filepath.Join(t.TempDir(), "alertmanagers.yml")
	writeTargets(t, targets, am1.Addr)
	faultProm(t, dataDir, packFile, targets, "", time.Minute) // Prometheus's default resend delay

	// Wait until Alertmanager holds a rollback, then stop it.
	deadline := time.Now().Add(90 * time.Second)
	var held []string
	for held = amHeld(t, am1, "PairwiseCanaryRollback"); len(held) == 0; held = amHeld(t, am1, "PairwiseCanaryRollback") {
		if time.Now().After(deadline) {
			t.Fatalf("Alertmanager received no PairwiseCanaryRollback within 90s; log:\n%s", am1.LogTail(20))
		}
		time.Sleep(500 * time.Millisecond)
	}
	am1.Stop()
	stopped := time.Now()
	if got := names(hook); len(got) > 0 {
		t.Fatalf("the webhook got %v before the first Alertmanager stopped: the test's group_wait did not hold the alert", got)
	}
	am2 := testenv.Alertmanager(t, amConfig)
	writeTargets(t, targets, am2.Addr)
	// Prometheus re-sends a firing alert at the first evaluation of its
	// group more than the resend delay (1m) after it last sent it: up to two
	// evaluations (120 s; discovery refreshes every 1 s meanwhile), then
	// group_wait 30 s, and 20 s of slack.
	const bound = 2*time.Minute + 30*time.Second + 20*time.Second
	waiting := map[string]bool{}
	for _, c := range held {
		waiting[c] = true
	}
	_, err := hook.WaitFor(func(p testenv.WebhookPayload) bool {
		for _, a := range p.Alerts {
			if a.Labels["alertname"] == "PairwiseCanaryRollback" && a.Status == "firing" {
				delete(waiting, a.Labels["canary"])
			}
		}
		return len(waiting) == 0
	}, bound)
	if err != nil {
		t.Fatalf("the rollback of %v, held by the stopped Alertmanager, never reached the webhook through the new one within %s: %v; its log:\n%s", slices.Sorted(maps.Keys(waiting)), bound, err, am2.LogTail(20))
	}
	t.Logf("the rollbacks the stopped Alertmanager held (%v) reached the webhook %.1fs after it was stopped", held, time.Since(stopped).Seconds())
}

// testAlertResolves: a canary whose rollback fired and whose series then
// end (rolled back, removed) has its alert resolved through Alertmanager.
// The rollback fires while the canary records minutes within the last
// goneMinutes (5); keep_firing_for holds it after that. The committed pack's
// 10m would make this test wait 15 minutes, so the pack runs here with
// keep_firing_for 1m, and the routing sends the rollback webhook resolved
// notifications (the committed routing does not: a rollback needs no
// undo). The data end at the current minute and nothing is scraped after:
// the canary is gone from then on.
func testAlertResolves(t *testing.T) {
	dataDir, committed, _, end := faultData(t, 70, 10, "--scenario", "regression", "--canary-share", "0.5", "--total-rps", "4000")
	b, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	const keep, short = "keep_firing_for: 10m", "keep_firing_for: 1m"
	if !strings.Contains(string(b), keep) {
		t.Fatalf("%s has no %q for this test to shorten", committed, keep)
	}
	packFile := filepath.Join(t.TempDir(), "pairwise.rules.yml")
	if err := os.WriteFile(packFile, []byte(strings.ReplaceAll(string(b), keep, short)), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := testenv.WebhookReceiver(t)
	const noResolved = "send_resolved: false"
	amConfig := routingConfig(t, hook, "5s")
	if strings.Count(amConfig, noResolved) != 1 {
		t.Fatalf("the committed routing no longer has one %q for this test to turn on", noResolved)
	}
	am := testenv.Alertmanager(t, strings.Replace(amConfig, noResolved, "send_resolved: true", 1))
	targets := filepath.Join(t.TempDir(), "alertmanagers.yml")
	writeTargets(t, targets, am.Addr)
	faultProm(t, dataDir, packFile, targets, "", time.Minute)

	fired := map[string]bool{}
	if _, err := hook.WaitFor(func(p testenv.WebhookPayload) bool {
		for _, a := range p.Alerts {
			if a.Labels["alertname"] == "PairwiseCanaryRollback" && a.Status == "firing" {
				fired[a.Labels["canary"]] = true
			}
		}
		return fired["checkout"] && fired["checkout-classic"]
	}, 3*time.Minute); err != nil {
		t.Fatalf("PairwiseCanaryRollback reached the webhook within 3 minutes for %v, not for both canaries of the pack (checkout, checkout-classic): %v; Alertmanager's log:\n%s",
			slices.Sorted(maps.Keys(fired)), err, am.LogTail(20))
	}
	// Resolved after the last minute's record leaves the 5-minute range
	// (evaluated once a minute), keep_firing_for's minute and the next
	// evaluation, then Alertmanager's group_interval (1m) and slack.
	gone := end.Add(5 * time.Minute)
	deadline := gone.Add(time.Minute + 2*time.Minute + time.Minute + 30*time.Second)
	waiting := maps.Clone(fired)
	var resolvedAt time.Time
	_, err = hook.WaitFor(func(p testenv.WebhookPayload) bool {
		for _, a := range p.Alerts {
			if a.Labels["alertname"] == "PairwiseCanaryRollback" && a.Status == "resolved" && waiting[a.Labels["canary"]] {
				if a.EndsAt.Before(gone) {
					t.Errorf("the rollback of %s resolved at %s, before its canary's last minute (%s) left the %d-minute range: not because it was gone",
						a.Labels["canary"], a.EndsAt.Format(time.RFC3339), end.Format(time.RFC3339), 5)
				}
				delete(waiting, a.Labels["canary"])
				resolvedAt = time.Now()
			}
		}
		return len(waiting) == 0
	}, time.Until(deadline))
	if err != nil {
		t.Fatalf("the rollback of %v had not resolved %s after its canary's last minute (%s): %v; Alertmanager's log:\n%s",
			slices.Sorted(maps.Keys(waiting)), deadline.Sub(end), end.Format(time.RFC3339), err, am.LogTail(20))
	}
	t.Logf("the rollbacks of %v resolved through Alertmanager %.1f minutes after their canary's last minute", slices.Sorted(maps.Keys(fired)), resolvedAt.Sub(end).Minutes())
}

// routingConfig is the committed routing with the rollback webhook pointed
// at hook and the rollback route's group_wait set to groupWait.
func routingConfig(t *testing.T, hook *testenv.Webhook, groupWait string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "rules", "alertmanager", "alertmanager.yml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	const placeholder, wait = "http://127.0.0.1:9099/rollback", "      group_wait: 5s\n"
	if !strings.Contains(src, placeholder) || strings.Count(src, wait) != 1 {
		t.Fatalf("rules/alertmanager/alertmanager.yml no longer has the rollback webhook URL %s and one %q this test rewrites", placeholder, wait)
	}
	src = strings.ReplaceAll(src, placeholder, hook.URL+"/rollback")
	return strings.Replace(src, wait, "      group_wait: "+groupWait+"\n", 1)
}

func writeTargets(t *testing.T, path, addr string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("- targets: [%q]\n", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// amHeld is the canary label of each active alert of that name Alertmanager
// holds.
func amHeld(t *testing.T, am *testenv.AMServer, name string) []string {
	t.Helper()
	resp, err := http.Get(am.URL + "/api/v2/alerts")
	if err != nil {
		t.Logf("Alertmanager alerts: %v", err)
		return nil
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Logf("Alertmanager alerts: %v", err)
		return nil
	}
	var canaries []string
	for _, a := range alerts {
		if a.Labels["alertname"] == name {
			canaries = append(canaries, a.Labels["canary"])
		}
	}
	return canaries
}

// testPromtoolClassicBackfill: `promtool tsdb create-blocks-from rules`,
// run once per level of the chain of records in dependency order (each pass
// reading, through Prometheus, the blocks of the passes before), records the
// classic canary's group as pairwise-backfill records it in one pass, sample
// for sample. rules/README.md ("Backfill") describes the procedure.
func testPromtoolClassicBackfill(t *testing.T) {
	const span = 8 // minutes backfilled
	genDir, truthFile := testenv.Generate(t, "--minutes", "70", "--scenario", "regression", "--canary-share", "0.5", "--total-rps", "4000")
	truth := testenv.LoadTruth(t, truthFile)
	end, err := time.Parse(time.RFC3339, truth.End)
	if err != nil {
		t.Fatalf("truth end: %v", err)
	}
	start := end.Add(-span * time.Minute)
	// promtool 3.13.5 truncates each two-hour block's end to the second
	// (cmd/promtool/rules.go), so an evaluation in a block's last second
	// (this group's, at 59.144 s of the minute) is lost at every even UTC
	// hour; rules/README.md says so. Keep the span inside one block: the
	// data hold 70 minutes.
	if b := end.Truncate(2 * time.Hour); b.After(start) {
		end = b.Add(-time.Minute)
		start = end.Add(-span * time.Minute)
	}
	group := packGroup(t, "pairwise-checkout-classic")
	levels := recordLevels(t, group)

	// The reference: pairwise-backfill over a copy of the data. The rule
	// file has one path for both tools and for every level, as
	// rules/README.md says it must, so Prometheus's evaluation offset (from
	// the file and group names) is the same: a file per level evaluates each
	// level at another second, and a level read before the one it reads is
	// a minute late (helper review: 943 samples differed).
	ruleFile := filepath.Join(t.TempDir(), "classic.rules.yml")
	refDir := filepath.Join(t.TempDir(), "data")
	copyDir(t, genDir, refDir)
	writeGroup(t, ruleFile, group, nil)
	testenv.Backfill(t, refDir, ruleFile, start, end, 0)

	promtool := testenv.Binary(t, "promtool")
	p := testenv.Prometheus(t, testenv.PromOptions{DataDir: genDir})
	for level := range levels {
		writeGroup(t, ruleFile, group, levels[level])
		out := filepath.Join(t.TempDir(), "blocks")
		cmd := exec.Command(promtool, "tsdb", "create-blocks-from", "rules", "--url", p.URL,
			"--start", strconv.FormatInt(start.Unix(), 10), "--end", strconv.FormatInt(end.Unix(), 10),
			"--output-dir", out, "--eval-interval", "1m", ruleFile)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool, level %d: %v\n%s", level, err, b)
		}
		blocks, err := os.ReadDir(out)
		if err != nil || len(blocks) == 0 {
			t.Fatalf("promtool, level %d, wrote no block into %s (%v): %s", level, out, err, b)
		}
		for _, b := range blocks {
			if err := os.Rename(filepath.Join(out, b.Name()), filepath.Join(genDir, b.Name())); err != nil {
				t.Fatal(err)
			}
		}
		// Prometheus looks for new blocks every minute; a restart loads them at once.
		p.Stop()
		p = testenv.Prometheus(t, testenv.PromOptions{DataDir: genDir})
	}
	ref := testenv.Prometheus(t, testenv.PromOptions{DataDir: refDir})
	got, want := &stack{promURL: p.URL}, &stack{promURL: ref.URL}
	at := end.Add(time.Second)
	records := 0
	for _, name := range recordNames(group) {
		sel := fmt.Sprintf(`%s{canary="checkout-classic"}`, name)
		a, b := recordedSamples(t, got, sel, at.Sub(start), at), recordedSamples(t, want, sel, at.Sub(start), at)
		if len(b) == 0 {
			continue // recorded only on some minutes (a filter), none in this span
		}
		records++
		for series, samples := range b {
			for ts, v := range samples {
				w, _ := strconv.ParseFloat(v, 64)
				// The rule engine truncates an evaluation time to the
				// millisecond; promtool sends it through the query API,
				// which rounds it: the same evaluation may be 1 ms apart.
				pv, ok := a[series][ts]
				for _, d := range []int64{1, -1} {
					if !ok {
						pv, ok = a[series][ts+d]
					}
				}
				g, err := strconv.ParseFloat(pv, 64)
				if err != nil || math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
					var at []string
					for ts := range a[series] {
						at = append(at, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano))
					}
					slices.Sort(at)
					t.Errorf("%s at %s: promtool recorded %q, pairwise-backfill %s (promtool's samples are at %v)", series, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano), pv, v, at)
				}
			}
			if len(a[series]) != len(samples) {
				t.Errorf("%s: promtool recorded %d samples, pairwise-backfill %d", series, len(a[series]), len(samples))
			}
		}
	}
	if records == 0 {
		t.Fatal("pairwise-backfill recorded none of the classic group's records")
	}
	t.Logf("%d records of the classic group over %d minutes, in %d promtool passes, identical to pairwise-backfill's", records, span, len(levels))
}

// packGroup returns the committed pack's group of that name.
func packGroup(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "rules", "pairwise.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []map[string]any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Groups {
		if g["name"] == name {
			return g
		}
	}
	t.Fatalf("the committed pack has no group %s", name)
	return nil
}

func groupRules(g map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range g["rules"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// recordNames lists the group's recorded metric names, each once, in order.
func recordNames(g map[string]any) []string {
	var names []string
	for _, r := range groupRules(g) {
		if n, ok := r["record"].(string); ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// recordLevels splits the group's recording rules (by index) into levels:
// a rule's level is one more than the highest level of the records its
// expression reads (0 for a rule reading raw series only).
func recordLevels(t *testing.T, g map[string]any) [][]int {
	t.Helper()
	rs := groupRules(g)
	names := recordNames(g)
	reads := func(expr, name string) bool {
		return regexp.MustCompile(`(^|[^a-zA-Z0-9_:])` + regexp.QuoteMeta(name) + `($|[^a-zA-Z0-9_:])`).MatchString(expr)
	}
	level := map[string]int{}
	for range rs { // at most one pass per rule settles every level
		changed := false
		for _, r := range rs {
			name, ok := r["record"].(string)
			if !ok {
				continue
			}
			l := 0
			for _, dep := range names {
				if dep != name && reads(r["expr"].(string), dep) {
					l = max(l, level[dep]+1)
				}
			}
			if l > level[name] {
				level[name], changed = l, true
			}
		}
		if !changed {
			break
		}
	}
	var levels [][]int
	for i, r := range rs {
		name, ok := r["record"].(string)
		if !ok {
			continue
		}
		for len(levels) <= level[name] {
			levels = append(levels, nil)
		}
		levels[level[name]] = append(levels[level[name]], i)
	}
	return levels
}

// writeGroup writes the group to path, with only the rules at the given
// indices (all of them when nil).
func writeGroup(t *testing.T, path string, g map[string]any, only []int) {
	t.Helper()
	sub := map[string]any{}
	for k, v := range g {
		sub[k] = v
	}
	if only != nil {
		rs := groupRules(g)
		var keep []any
		for _, i := range only {
			keep = append(keep, rs[i])
		}
		sub["rules"] = keep
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{sub}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if b, err := exec.Command("cp", "-r", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -r %s %s: %v\n%s", from, to, err, b)
	}
}
