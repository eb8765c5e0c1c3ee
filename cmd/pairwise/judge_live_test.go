package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// judgeEnd is the end of the generated data: a fixed whole minute.
var judgeEnd = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// judgeProm serves a scenario of 80 minutes with enough traffic (1,000 req/s
// per fleet) that each minute's verdict follows the scenario, not noise.
func judgeProm(t *testing.T, args ...string) string {
	t.Helper()
	dir, _ := testenv.Generate(t, append([]string{"--end", judgeEnd.Format(time.RFC3339), "--minutes", "80", "--pods", "4",
		"--total-rps", "2000", "--canary-share", "0.5", "--seed", "11"}, args...)...)
	return testenv.Prometheus(t, testenv.PromOptions{DataDir: dir}).URL
}

// TestJudgeLive runs the judge against a real Prometheus 3.13.5 serving
// generated fleets: a canary 1.5x slower from minute 60 of 80, and a canary
// 0.8x as slow throughout.
func TestJudgeLive(t *testing.T) {
	regression := judgeProm(t, "--scenario", "regression", "--regression-factor", "1.5", "--regression-start-minute", "60")
	faster := judgeProm(t, "--scenario", "regression", "--regression-factor", "0.8", "--regression-start-minute", "0")
	t.Run("exit codes", func(t *testing.T) { judgeExitCodes(t, regression, faster) })
	t.Run("json", func(t *testing.T) { judgeJSON(t, regression) })
	t.Run("timeline", func(t *testing.T) { judgeTimeline(t, regression) })
	t.Run("table columns", func(t *testing.T) { judgeTableColumns(t, regression) })
	t.Run("errors", func(t *testing.T) { judgeErrors(t, regression) })
}

func runJudge(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"judge"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func fleetArgs(url string) []string {
	return []string{"--prometheus", url, "--metric", "http_request_duration_seconds",
		"--baseline", `{service="checkout",track="baseline"}`, "--canary", `{service="checkout",track="canary"}`}
}

func judgeExitCodes(t *testing.T, regression, faster string) {
	tests := []struct {
		name     string
		url      string
		at       time.Time
		extra    []string
		wantCode int
		wantLine string
		wantErr  string // an error on stderr instead of a table
	}{
		{name: "regressed window rolls back", url: regression, at: judgeEnd, wantCode: 2, wantLine: "ROLLBACK: "},
		// Every canary pod is slower: the tail is spread over them all.
		{name: "a rollback says which pods hold the tail", url: regression, at: judgeEnd, wantCode: 2, wantLine: "\nby pod: of the canary's "},
		{name: "an empty --pod-label does not ask", url: regression, at: judgeEnd, extra: []string{"--pod-label", ""}, wantCode: 2, wantLine: "ROLLBACK: "},
		{name: "window before the regression promotes: identical busy fleets", url: regression, at: judgeEnd.Add(-20 * time.Minute), wantCode: 0, wantLine: "PROMOTE: "},
		{name: "the reference rule holds the same window", url: regression, at: judgeEnd.Add(-20 * time.Minute), extra: []string{"--rule", "reference"}, wantCode: 1, wantLine: "HOLD: "},
		{name: "faster canary promotes", url: faster, at: judgeEnd, wantCode: 0, wantLine: "PROMOTE: "},
		{name: "classic buckets agree", url: regression, at: judgeEnd, extra: []string{"--histogram", "classic"}, wantCode: 2, wantLine: "ROLLBACK: "},
		{name: "unix seconds for --at", url: faster, at: time.Time{}, extra: []string{"--at", fmt.Sprint(judgeEnd.Unix())}, wantCode: 0, wantLine: "PROMOTE"},
		// The baseline's own histogram stands in for the canary's load balancer:
		// 1.5x apart in the regressed minutes, which the divergence check flags.
		{name: "load-balancer divergence is flagged", url: regression, at: judgeEnd, extra: []string{"--lb-metric", "http_request_duration_seconds", "--lb-canary", `{service="checkout",track="baseline"}`}, wantCode: 2, wantLine: "flag measurement-divergence: in 20 minutes"},
		{name: "matching load balancer is not flagged", url: regression, at: judgeEnd.Add(-20 * time.Minute), extra: []string{"--lb-metric", "http_request_duration_seconds"}, wantCode: 0, wantLine: "PROMOTE"},
		{name: "thresholds from flags", url: regression, at: judgeEnd, extra: []string{"--rule", "reference", "--rollback-threshold", "1.6"}, wantCode: 1, wantLine: "HOLD"},
		// A canary chosen by pod name that takes the baseline's pods too:
		// the selectors name different labels, so only the series tell.
		// The baseline's 4 pods each expose their histogram in both forms
		// (native and classic buckets) and count once.
		{name: "fleets that share pods are refused", url: regression, at: judgeEnd, extra: []string{"--canary", `{service="checkout",pod=~"checkout-.+"}`}, wantCode: 3, wantErr: "4 series of http_request_duration_seconds at 2026-06-01T12:00:00Z are selected by both the baseline selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := fleetArgs(tt.url)
			if !tt.at.IsZero() {
				args = append(args, "--at", tt.at.Format(time.RFC3339))
			}
			code, out, errOut := runJudge(append(args, tt.extra...)...)
			if tt.wantErr != "" {
				if code != tt.wantCode || out != "" || !strings.Contains(errOut, tt.wantErr) {
					t.Fatalf("exit %d, want %d and an error with %q; stdout %q, stderr %q", code, tt.wantCode, tt.wantErr, out, errOut)
				}
				return
			}
			if code != tt.wantCode || !strings.Contains(out, tt.wantLine) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s\n%s", code, tt.wantCode, tt.wantLine, out, errOut)
			}
			if strings.Contains(out, "by pod:") != (tt.wantCode == 2 && !slices.Contains(tt.extra, "--pod-label")) {
				t.Fatalf("a pod attribution where none is due, or none where one is:\n%s", out)
			}
			if strings.Contains(tt.name, "not flagged") && strings.Contains(out, "measurement-divergence") {
				t.Fatalf("flagged a load balancer that matches:\n%s", out)
			}
			if !strings.HasPrefix(strings.TrimSpace(out), "minute") || strings.Count(out, "\n") < 62 {
				t.Fatalf("table has no header or too few rows:\n%s", out)
			}
		})
	}
}

func judgeJSON(t *testing.T, url string) {
	code, out, errOut := runJudge(append(fleetArgs(url), "--at", judgeEnd.Format(time.RFC3339), "--output", "json")...)
	if code != 2 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Decision     string
		Good         *int
		Neutral      *int
		Bad          *int
		Insufficient *int
		NoData       *int `json:"no_data"`
		WorstMinute  *struct {
			Time  string
			Ratio float64
		} `json:"worst_minute"`
		Attribution *struct {
			Minutes int
			Pods    []struct {
				Pod          string
				CanaryTail   float64 `json:"canary_tail"`
				ExpectedTail float64 `json:"expected_canary_tail"`
			}
			Summary string
		}
		Minutes []struct {
			Time     string
			Verdict  string
			Ratio    *float64
			Baseline struct {
				Count     float64
				RPS       float64
				Quantiles map[string]*float64
			}
			Canary struct {
				Count     float64
				RPS       float64
				Quantiles map[string]*float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Decision != "rollback" || doc.Good == nil || doc.Neutral == nil || doc.Insufficient == nil || doc.NoData == nil || doc.Bad == nil || *doc.Bad < 20 || doc.WorstMinute == nil || len(doc.Minutes) != 60 {
		t.Fatalf("document: %s", out)
	}
	// A rollback splits the canary's tail among its pods, the pod with the
	// largest excess first.
	if a := doc.Attribution; a == nil || a.Minutes == 0 || len(a.Pods) < 2 || !strings.HasPrefix(a.Summary, "of the canary's") ||
		a.Pods[0].CanaryTail-a.Pods[0].ExpectedTail < a.Pods[1].CanaryTail-a.Pods[1].ExpectedTail {
		t.Fatalf("attribution: %s", out)
	}
	for _, m := range doc.Minutes[40:] { // the 20 regressed minutes, canary 1.5x slower
		if m.Verdict != "bad" {
			t.Fatalf("regressed minute %s is %s", m.Time, m.Verdict)
		}
	}
	first, last := doc.Minutes[0], doc.Minutes[59]
	if first.Time != "2026-06-01T11:01:00Z" || last.Time != "2026-06-01T12:00:00Z" || last.Verdict != "bad" || last.Ratio == nil {
		t.Fatalf("minutes run %s..%s, last %s", first.Time, last.Time, last.Verdict)
	}
	for _, q := range []string{"0.5", "0.99", "0.999", "0.9999"} {
		if last.Baseline.Quantiles[q] == nil || last.Canary.Quantiles[q] == nil {
			t.Fatalf("quantile %s missing: %+v", q, last)
		}
	}
	if rps := last.Canary.RPS; rps < 800 || rps > 1200 || last.Canary.Count/60 != rps {
		t.Fatalf("canary rps %.1f (count %.0f), want about 1,000", rps, last.Canary.Count)
	}
	if worst, _ := time.Parse(time.RFC3339, doc.WorstMinute.Time); worst.Before(judgeEnd.Add(-20*time.Minute)) || doc.WorstMinute.Ratio < 1.1 {
		t.Fatalf("worst minute %+v is not in the regression", doc.WorstMinute)
	}
}

func judgeErrors(t *testing.T, url string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	at := []string{"--at", judgeEnd.Format(time.RFC3339)}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "Prometheus unreachable", args: append(fleetArgs(closed), at...), want: "cannot reach Prometheus at " + closed},
		{name: "selector with an expression", args: []string{"--prometheus", url, "--metric", "m", "--baseline", `{a="b"} or vector(1)`, "--canary", `{a="c"}`}, want: "--baseline: invalid selector"},
		{name: "metric name with PromQL", args: []string{"--prometheus", url, "--metric", "sum(up)", "--baseline", `{a="b"}`, "--canary", `{a="c"}`}, want: "invalid metric name"},
		{name: "metric not found", args: append([]string{"--prometheus", url, "--metric", "no_such_metric_seconds", "--baseline", `{a="b"}`, "--canary", `{a="c"}`}, at...), want: "no histogram samples"},
		{name: "no data in the window", args: append(fleetArgs(url), "--at", "2025-01-01T00:00:00Z"), want: "no data in the window"},
		{name: "missing flags", args: []string{"--prometheus", url}, want: "--metric, --baseline and --canary are required"},
		{name: "bad time", args: append(fleetArgs(url), "--at", "yesterday"), want: "neither RFC 3339"},
		{name: "bad window", args: append(fleetArgs(url), "--window", "90s"), want: "not a whole number of minutes"},
		{name: "crossed thresholds", args: append(fleetArgs(url), "--promote-threshold", "1.2"), want: "rollbackThreshold"},
		{name: "bad output", args: append(fleetArgs(url), "--output", "yaml"), want: "--output"},
		{name: "bad pod label", args: append(fleetArgs(url), "--pod-label", "pod)"), want: `--pod-label: "pod)" is not a label name`},
		{name: "unknown flag", args: []string{"--nope"}, want: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runJudge(tt.args...)
			if code != exitError || out != "" || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 3 and %q", code, out, errOut, tt.want)
			}
			if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines > 0 && tt.name != "unknown flag" {
				t.Fatalf("the error is not one sentence: %q", errOut)
			}
		})
	}
}

// judgeTimeline: --range shows every minute with the decision of the window
// ending at it; --since keeps the minutes before the deployment out, so the
// regressed deployment (from minute 60, 11:40) rolls back within minutes
// while the sliding windows over the same minutes, which remember the clean
// hour before, say when they would have fired.
func judgeTimeline(t *testing.T, url string) {
	type doc struct {
		Decision string `json:"decision"`
		Since    string `json:"since"`
		Evidence struct {
			Anchored bool `json:"anchored"`
		} `json:"evidence"`
		Minutes []struct {
			Time     string `json:"time"`
			Decision string `json:"decision"`
			Reason   string `json:"decision_reason"`
		} `json:"minutes"`
	}
	judgeDoc := func(extra ...string) doc {
		t.Helper()
		code, out, errOut := runJudge(append(fleetArgs(url), append([]string{"--at", judgeEnd.Format(time.RFC3339), "--output", "json"}, extra...)...)...)
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil || code != 2 {
			t.Fatalf("exit %d, %v:\n%s\n%s", code, err, out, errOut)
		}
		return d
	}
	firstRollback := func(d doc) string {
		for _, m := range d.Minutes {
			if m.Decision == "rollback" {
				return m.Time
			}
			if m.Decision == "" {
				t.Fatalf("minute %s has no decision", m.Time)
			}
		}
		return ""
	}
	sliding := judgeDoc("--range", "30m")
	if len(sliding.Minutes) != 30 || sliding.Minutes[0].Time != "2026-06-01T11:31:00Z" {
		t.Fatalf("--range 30m shows %d minutes from %s", len(sliding.Minutes), sliding.Minutes[0].Time)
	}
	deployed := judgeDoc("--range", "30m", "--since", "2026-06-01T11:40:00Z")
	if len(deployed.Minutes) != 20 || deployed.Minutes[0].Time != "2026-06-01T11:41:00Z" || deployed.Since != "2026-06-01T11:40:00Z" {
		t.Fatalf("--since 11:40 shows %d minutes from %s", len(deployed.Minutes), deployed.Minutes[0].Time)
	}
	if !deployed.Evidence.Anchored {
		t.Fatal("the window ending at 12:00 holds all 20 minutes since the deployment, anchored")
	}
	slide, fresh := firstRollback(sliding), firstRollback(deployed)
	if fresh == "" || fresh > "2026-06-01T11:44:00Z" || slide == "" || slide < fresh {
		t.Fatalf("first rollback: deployment %q, sliding windows %q", fresh, slide)
	}
	t.Logf("first rollback: deployment from 11:40 at %s, sliding windows at %s", fresh, slide)
}

// TestJudgeRampedWeight: identical fleets, the canary's weight raised as
// Flagger raises it (5% more every minute up to 50%, deploy/flagger/canary.yaml),
// judged from the deployment's start. The ramp's first minutes hold
// promotion (traffic-parity) until the share has been steady for the
// window's last 30 minutes, not for the whole hour: promotion comes about
// 35 minutes after the start, instead of after 64.
func TestJudgeRampedWeight(t *testing.T) {
	start := judgeEnd.Add(-80 * time.Minute)
	url := judgeProm(t, "--scenario", "clean", "--ramp-step", "0.05", "--ramp-every", "1")
	code, out, errOut := runJudge(append(fleetArgs(url), "--at", judgeEnd.Format(time.RFC3339), "--since", start.Format(time.RFC3339), "--range", "80m", "--output", "json")...)
	var d struct {
		Minutes []struct {
			Time     time.Time `json:"time"`
			Decision string    `json:"decision"`
			Reason   string    `json:"decision_reason"`
		} `json:"minutes"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%.2000s\n%s", code, err, out, errOut)
	}
	var firstPromote time.Time
	heldByParity := false
	for _, m := range d.Minutes {
		if m.Decision == "rollback" {
			t.Fatalf("identical fleets rolled back at %s: %s", m.Time, m.Reason)
		}
		if m.Decision == "promote" && firstPromote.IsZero() {
			firstPromote = m.Time
		}
		if m.Decision == "hold" && firstPromote.IsZero() && !m.Time.Before(start.Add(30*time.Minute)) && strings.Contains(m.Reason, "traffic-parity") {
			heldByParity = true
		}
	}
	t.Logf("first promote %s after the start", firstPromote.Sub(start))
	if !heldByParity {
		t.Error("no minute after 30 minutes of evidence held on traffic-parity: the ramp did not show")
	}
	if firstPromote.IsZero() || firstPromote.Sub(start) > 42*time.Minute {
		t.Fatalf("first promote %s after the start, want within 42 minutes (the ramp ends at 10, the share is steady for 30 minutes from 40)", firstPromote.Sub(start))
	}
}

// judgeTableColumns: the table's evidence and recent columns are each
// minute's window statistic and strongest recent run's, as the JSON has
// them ("-" where there is no recent run), minute by minute.
func judgeTableColumns(t *testing.T, url string) {
	args := append(fleetArgs(url), "--at", judgeEnd.Format(time.RFC3339))
	_, table, _ := runJudge(args...)
	_, js, _ := runJudge(append(args, "--output", "json")...)
	var doc struct {
		Minutes []struct {
			Time     time.Time
			Evidence struct {
				Statistic       *float64 `json:"statistic"`
				RecentStatistic *float64 `json:"recent_statistic"`
			} `json:"evidence"`
		} `json:"minutes"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Minutes) == 0 {
		t.Fatalf("%v: %s", err, js)
	}
	lines := strings.Split(table, "\n")
	header := strings.Fields(lines[0])
	col := func(name string) int { return slices.Index(header, name) }
	if col("evidence") < 0 || col("recent") != col("evidence")+1 {
		t.Fatalf("header %q", lines[0])
	}
	format := func(f *float64) string {
		if f == nil {
			return "-"
		}
		return strconv.FormatFloat(*f, 'f', 1, 64)
	}
	for i, m := range doc.Minutes {
		row := strings.Fields(lines[1+i])
		if len(row) != len(header) || row[0] != m.Time.UTC().Format("15:04") {
			t.Fatalf("row %d %q for minute %s", i, lines[1+i], m.Time.UTC().Format("15:04"))
		}
		if got, want := row[col("evidence")]+" "+row[col("recent")], format(m.Evidence.Statistic)+" "+format(m.Evidence.RecentStatistic); got != want {
			t.Errorf("minute %s: evidence and recent %q, want %q", row[0], got, want)
		}
	}
}

// TestJudgeUTF8Names judges fleets whose metric and labels are Prometheus 3
// UTF-8 names, as an OpenTelemetry SDK exports them without escaping
// (http.server.request.duration, service.name, k8s.pod.name), beside the same
// fleets under classic names: every minute and decision is the same, read
// through native and classic buckets, and so is the rollback's split among
// the canary's pods, read by the quoted pod label.
func TestJudgeUTF8Names(t *testing.T) {
	// A canary pod's scrapes fail for two minutes: the minute after them is
	// partial only by its target's up, read through the quoted labels.
	scenario := []string{"--scenario", "regression", "--regression-factor", "1.5", "--regression-start-minute", "60", "--scrape-gap", "canary-1@30-32"}
	classic := judgeProm(t, scenario...)
	utf8 := judgeProm(t, append(scenario, "--metric", "http.server.request.duration",
		"--rename-labels", "service=service.name,track=deployment.track,pod=k8s.pod.name")...)
	classicArgs := append(fleetArgs(classic), "--pod-label", "pod")
	utf8Args := []string{"--prometheus", utf8, "--metric", "http.server.request.duration", "--pod-label", "k8s.pod.name",
		"--baseline", `{"service.name"="checkout","deployment.track"="baseline"}`, "--canary", `{"service.name"="checkout","deployment.track"="canary"}`}
	for _, kind := range []string{"native", "classic"} {
		t.Run(kind, func(t *testing.T) {
			judge := func(args []string) (int, string, map[string]any) {
				code, out, errOut := runJudge(append(args, "--histogram", kind, "--at", judgeEnd.Format(time.RFC3339), "--range", "60m", "--output", "json")...)
				var doc map[string]any
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("exit %d, %v:\n%.2000s\n%s", code, err, out, errOut)
				}
				return code, out, doc
			}
			wantCode, _, want := judge(classicArgs)
			code, out, got := judge(utf8Args)
			if code != 2 || wantCode != 2 {
				t.Fatalf("exit %d with UTF-8 names, %d with classic names; want 2 (rollback) for both:\n%.3000s", code, wantCode, out)
			}
			var doc struct {
				Minutes []struct{ Verdict string } `json:"minutes"`
			}
			b, _ := json.Marshal(want)
			if json.Unmarshal(b, &doc); !slices.ContainsFunc(doc.Minutes, func(m struct{ Verdict string }) bool { return m.Verdict == "partial" }) {
				t.Fatalf("classic names: no partial minute around the scrape gap:\n%s", b)
			}
			for _, field := range []string{"minutes", "decision", "attribution"} {
				w, _ := json.Marshal(want[field])
				g, _ := json.Marshal(got[field])
				if want[field] == nil || field != "decision" && len(w) < 100 {
					t.Fatalf("classic names: %s has too little to compare: %s", field, w)
				}
				if !bytes.Equal(w, g) {
					t.Errorf("%s differ between classic and UTF-8 names:\nclassic %.1500s\nUTF-8   %.1500s", field, w, g)
				}
			}
		})
	}
}

// TestJudgeErrors compares the fleets' failed requests off a real
// Prometheus's http_requests_total (--errors-metric): identical busy fleets
// whose canary fails 4 times as often (1% of the baseline's requests, 4% of
// the canary's), its latencies unchanged, are held, flagged traffic-parity;
// without the counter, or failing as often, they promote.
func TestJudgeErrors(t *testing.T) {
	failing := judgeProm(t, "--scenario", "clean", "--error-ratio", "0.01", "--canary-error-factor", "4")
	same := judgeProm(t, "--scenario", "clean", "--error-ratio", "0.01")
	at := []string{"--at", judgeEnd.Format(time.RFC3339)}
	for _, tt := range []struct {
		name     string
		url      string
		extra    []string
		wantCode int
		want     string
	}{
		{"failing 4x as often holds", failing, []string{"--errors-metric", "http_requests_total"}, 1, "flagged traffic-parity"},
		{"the note says why", failing, []string{"--errors-metric", "http_requests_total", "--errors", `{code="500"}`}, 1, "(4.0"},
		{"without the counter it promotes", failing, nil, 0, "PROMOTE: "},
		{"failing as often promotes", same, []string{"--errors-metric", "http_requests_total"}, 0, "PROMOTE: "},
		{"--errors needs --errors-metric", same, []string{"--errors", `{code="500"}`}, 3, "--errors needs --errors-metric"},
		{"a bad counter name is refused", same, []string{"--errors-metric", "http requests"}, 3, "--errors-metric: invalid metric name"},
		{"a counter that is not there fails", same, []string{"--errors-metric", "nope_total"}, 3, "the request counter nope_total has no samples for the baseline fleet"},
		{"failed-request matchers that match nothing warn", failing, []string{"--errors-metric", "http_requests_total", "--errors", `{status=~"5.."}`}, 0, "no request of http_requests_total matched the failed requests' matchers"},
		{"failed-request matchers on a fleet label are refused", same, []string{"--errors-metric", "http_requests_total", "--errors", `{track="canary"}`}, 3, "names a label the fleets' selectors set"},
		// The counters are read only for fleets with data (alerting's No Data
		// stays no data).
		{"a window without data is no data, counter or not", same, []string{"--errors-metric", "nope_total", "--at", judgeEnd.Add(-3 * time.Hour).Format(time.RFC3339)}, 3, "no histogram samples"},
		{"a _bucket series is not a counter", same, []string{"--errors-metric", "http_request_duration_seconds_bucket"}, 3, "give a request counter, or the histogram's http_request_duration_seconds_count"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runJudge(append(append(fleetArgs(tt.url), at...), tt.extra...)...)
			if code != tt.wantCode || !strings.Contains(out+errOut, tt.want) {
				t.Fatalf("exit %d, want %d with %q:\n%.3000s\n%s", code, tt.wantCode, tt.want, out, errOut)
			}
		})
	}
	nativeCountsAsCounter(t, same, at)
	code, out, errOut := runJudge(append(append(fleetArgs(failing), at...), "--errors-metric", "http_requests_total", "--output", "json")...)
	var doc struct {
		Flags   []string `json:"flags"`
		Notes   []string `json:"notes"`
		Minutes []struct {
			Errors *struct {
				Baseline struct{ Requests, Errors float64 } `json:"baseline"`
				Canary   struct{ Requests, Errors float64 } `json:"canary"`
			} `json:"errors"`
		} `json:"minutes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 {
		t.Fatalf("exit %d, %v:\n%.2000s\n%s", code, err, out, errOut)
	}
	if !slices.Contains(doc.Flags, "traffic-parity") || len(doc.Minutes) == 0 {
		t.Fatalf("flags %v, %d minutes", doc.Flags, len(doc.Minutes))
	}
	for _, m := range doc.Minutes {
		e := m.Errors
		if e == nil || !(e.Baseline.Requests > 50000 && e.Canary.Requests > 50000) {
			t.Fatalf("a minute without its requests: %+v", e)
		}
		// Each fleet serves about 60,000 requests a minute: 1% and 4% fail.
		if rb, rc := e.Baseline.Errors/e.Baseline.Requests, e.Canary.Errors/e.Canary.Requests; math.Abs(rb-0.01) > 0.003 || math.Abs(rc-0.04) > 0.006 {
			t.Fatalf("error ratios %.4f and %.4f, want about 0.01 and 0.04", rb, rc)
		}
	}
}

// nativeCountsAsCounter: a native histogram given as the request counter
// is read by its count, one read per fleet and part, and counts the
// requests http_requests_total counts, minute by minute.
func nativeCountsAsCounter(t *testing.T, url string, at []string) {
	t.Helper()
	requests := func(metric string) map[string][2]float64 {
		code, out, errOut := runJudge(append(append(fleetArgs(url), at...), "--errors-metric", metric, "--errors", `{code="500"}`, "--output", "json")...)
		var doc struct {
			Minutes []struct {
				Time   string `json:"time"`
				Errors *struct {
					Baseline struct{ Requests float64 } `json:"baseline"`
					Canary   struct{ Requests float64 } `json:"canary"`
				} `json:"errors"`
			} `json:"minutes"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
			t.Fatalf("--errors-metric %s: exit %d, %v:\n%.2000s\n%s", metric, code, err, out, errOut)
		}
		got := map[string][2]float64{}
		for _, m := range doc.Minutes {
			if m.Errors != nil {
				got[m.Time] = [2]float64{m.Errors.Baseline.Requests, m.Errors.Canary.Requests}
			}
		}
		return got
	}
	counter, native := requests("http_requests_total"), requests("http_request_duration_seconds")
	if len(counter) < 50 || len(native) != len(counter) {
		t.Fatalf("%d minutes with requests off the counter, %d off the native histogram", len(counter), len(native))
	}
	for minute, c := range counter {
		n := native[minute]
		for i := range c {
			if !(c[i] > 0) || math.Abs(n[i]-c[i]) > 1e-9*c[i] {
				t.Fatalf("minute %s: %v requests off the native histogram, %v off http_requests_total", minute, n, c)
			}
		}
	}
}
