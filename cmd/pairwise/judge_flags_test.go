package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flagNow is the clock of the flag tests: the command's own clock, so
// that it refuses the same times.
var flagNow = time.Now().UTC().Truncate(time.Minute)

// flagCase is one value of one judge flag: accepted (want "") or refused
// with an error holding want.
type flagCase struct {
	args []string          // besides the base flags
	env  map[string]string // environment for the case
	want string
}

// TestJudgeFlagValidation range-checks every judge flag: each refused value
// is refused before any query, with one line naming the flag, and exit 3;
// each accepted value builds a request. Before, --at 1e20 became 1677,
// --settle -5m and --rollback-threshold +Inf were accepted.
func TestJudgeFlagValidation(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token, empty, twoLines, password := file("token", "tok-abc\n"), file("empty", " \n"), file("two", "a\nb\n"), file("pw", "pw-abc\n")
	big := file("big", strings.Repeat("x", 70<<10))
	missing := filepath.Join(dir, "missing")
	at := func(t time.Time) string { return t.Format(time.RFC3339) }

	cases := map[string][]flagCase{
		"prometheus": {
			{args: []string{"--prometheus", "ftp://host"}, want: "--prometheus"},
			{args: []string{"--prometheus", "localhost:9090"}, want: "--prometheus"},
			{args: []string{"--prometheus", "http://"}, want: "--prometheus"},
			{args: []string{"--prometheus", "https://host/prometheus"}},
			{args: []string{"--prometheus", "http://ci:pw-url@host:9090"}},
			{args: []string{"--prometheus", "http://ci:pw-url@host:9090", "--basic-auth-user", "x"}, env: map[string]string{envBasicAuthPassword: "p"}, want: "pass the credentials once"},
		},
		"bearer-token-file": {
			{args: []string{"--bearer-token-file", token}},
			{args: []string{"--bearer-token-file", missing}, want: "no such file"},
			{args: []string{"--bearer-token-file", empty}, want: "is empty"},
			{args: []string{"--bearer-token-file", twoLines}, want: "control character"},
			{args: []string{"--bearer-token-file", big}, want: "larger than 64 KiB"},
			{args: []string{"--bearer-token-file", token, "--basic-auth-user", "ci"}, env: map[string]string{envBasicAuthPassword: "p"}, want: "choose one"},
		},
		"basic-auth-user": {
			{args: []string{"--basic-auth-user", "ci"}, env: map[string]string{envBasicAuthPassword: "pw-env"}},
			{args: []string{"--basic-auth-user", "ci"}, want: "needs a password"},
			{args: []string{"--basic-auth-user", "c:i"}, env: map[string]string{envBasicAuthPassword: "p"}, want: "colon"},
			{args: []string{"--basic-auth-user", "ci"}, env: map[string]string{envBasicAuthPassword: "p", envBearerToken: "t"}, want: "choose one"},
		},
		"basic-auth-password-file": {
			{args: []string{"--basic-auth-user", "ci", "--basic-auth-password-file", password}},
			{args: []string{"--basic-auth-password-file", password}, want: "needs --basic-auth-user"},
			{args: []string{"--basic-auth-user", "ci", "--basic-auth-password-file", missing}, want: "no such file"},
			{args: []string{"--basic-auth-user", "ci", "--basic-auth-password-file", empty}, want: "is empty"},
		},
		"metric": {
			{args: []string{"--metric", "sum(up)"}, want: "--metric"},
			{args: []string{"--metric", ""}, want: "--metric, --baseline and --canary are required"},
			{args: []string{"--metric", "http_request_duration_seconds_bucket"}, want: "--metric: give the histogram name without _bucket (http_request_duration_seconds)"},
			{args: []string{"--metric", "http_request_duration_seconds"}},
		},
		"baseline": {
			{args: []string{"--baseline", `{a="b"} or vector(1)`}, want: "--baseline: invalid selector"},
			{args: []string{"--baseline", ""}, want: "are required"},
			{args: []string{"--baseline", `{service="checkout",track="baseline"}`}},
		},
		"canary": {
			{args: []string{"--canary", `up`}, want: "--canary"},
			{args: []string{"--canary", `{track="canary"}`}},
		},
		"histogram": {
			{args: []string{"--histogram", "summary"}, want: "--histogram"},
			{args: []string{"--histogram", "classic"}},
		},
		"window": {
			{args: []string{"--window", "90s"}, want: "--window 1m30s is not a whole number of minutes"},
			{args: []string{"--window", "0s"}, want: "--window"},
			{args: []string{"--window", "-60m"}, want: "--window"},
			{args: []string{"--window", "169h"}, want: "between 1m and 168h"},
			{args: []string{"--window", "168h"}, want: "needs 20164 minutes of data"},
			// 10,996 minutes of histograms fit 11,000 points; their health, 5 minutes earlier, does not.
			{args: []string{"--window", "5500m", "--range", "5497m"}, want: "needs 11001 minutes of data"},
			{args: []string{"--window", "5500m", "--range", "5496m"}},
			{args: []string{"--window", "90h", "--good-needed", "45"}},
			{args: []string{"--window", "1m", "--good-needed", "1", "--bad-limit", "1"}},
			{args: []string{"--window", "8d"}, want: "between 1m and 168h"},
			{args: []string{"--window", "1d"}},
		},
		"at": {
			{args: []string{"--at", "1e20"}, want: "--at: \"1e20\" is not a time between 2000-01-01T00:00:00Z and " + at(flagNow.Add(futureSlack))},
			{args: []string{"--at", "-5"}, want: "--at"},
			{args: []string{"--at", "NaN"}, want: "--at"},
			{args: []string{"--at", "+Inf"}, want: "--at"},
			{args: []string{"--at", "1999-12-31T23:59:59Z"}, want: "--at"},
			{args: []string{"--at", "9999-01-01T00:00:00Z"}, want: "--at"},
			{args: []string{"--at", at(flagNow.Add(10 * time.Minute))}, want: "--at"},
			{args: []string{"--at", "yesterday"}, want: "neither RFC 3339"},
			{args: []string{"--at", at(flagNow.Add(4 * time.Minute))}},
			{args: []string{"--at", "1763899200"}},
			{args: []string{"--at", "1763899200.5"}},
		},
		"since": {
			{args: []string{"--since", "1e20"}, want: "--since"},
			{args: []string{"--since", "2001-09-09T01:46:40+25:00"}, want: "--since"},
			{args: []string{"--since", at(flagNow.Add(time.Hour))}, want: "--since"},
			{args: []string{"--since", at(flagNow.Add(-30 * time.Minute))}},
			// A start after the window asked for is a mistake, not a hold.
			{args: []string{"--since", at(flagNow.Add(-30 * time.Minute)), "--at", at(flagNow.Add(-time.Hour))}, want: "--since: " + at(flagNow.Add(-30*time.Minute)) + " is after the end of the window asked for"},
			{args: []string{"--since", at(flagNow.Add(-time.Hour)), "--at", at(flagNow.Add(-time.Hour))}},
		},
		"range": {
			{args: []string{"--range", "90s"}, want: "--range"},
			{args: []string{"--range", "-1m"}, want: "--range"},
			{args: []string{"--range", "169h"}, want: "--range"},
			{args: []string{"--range", "168h", "--window", "168h"}, want: "more than the 11000 points"},
			{args: []string{"--range", "168h"}},
			{args: []string{"--range", "3h"}},
			{args: []string{"--range", "7d"}},
			{args: []string{"--range", "1w1d"}, want: "--range"},
		},
		"rule": {
			{args: []string{"--rule", "majority"}, want: "rule (--rule)"},
			{args: []string{"--rule", "reference"}},
		},
		"false-rollback": {
			{args: []string{"--false-rollback", "0"}, want: "--false-rollback"},
			{args: []string{"--false-rollback", "0.6"}, want: "--false-rollback"},
			{args: []string{"--false-rollback", "NaN"}, want: "--false-rollback"},
			{args: []string{"--false-rollback", "0.01"}},
		},
		"false-promote": {
			{args: []string{"--false-promote", "-0.01"}, want: "--false-promote"},
			{args: []string{"--false-promote", "+Inf"}, want: "--false-promote"},
			{args: []string{"--false-promote", "0.05"}},
		},
		"settle": {
			{args: []string{"--settle", "-5m"}, want: "--settle -5m0s is not between 0s and 1h"},
			{args: []string{"--settle", "2h"}, want: "--settle"},
			{args: []string{"--settle", "0s"}},
			{args: []string{"--settle", "45s"}},
		},
		"timeout": {
			{args: []string{"--timeout", "0s"}, want: "--timeout 0s is not between 1s and 30m"},
			{args: []string{"--timeout", "-5s"}, want: "--timeout"},
			{args: []string{"--timeout", "500ms"}, want: "--timeout"},
			{args: []string{"--timeout", "31m"}, want: "--timeout"},
			{args: []string{"--timeout", "1s"}},
			{args: []string{"--timeout", "30m"}},
		},
		"output": {
			{args: []string{"--output", "yaml"}, want: "--output"},
			{args: []string{"--output", "json"}},
		},
		"quantiles": {
			{args: []string{"--quantiles", "0.5,NaN"}, want: "--quantiles"},
			{args: []string{"--quantiles", "0.5,+Inf"}, want: "--quantiles"},
			{args: []string{"--quantiles", "0.5,1"}, want: "quantiles (--quantiles)"},
			{args: []string{"--quantiles", ""}, want: "--quantiles"},
			{args: []string{"--quantiles", "0.5, 0.9"}},
		},
		"verdict-quantile": {
			{args: []string{"--verdict-quantile", "1"}, want: "--verdict-quantile"},
			{args: []string{"--verdict-quantile", "NaN"}, want: "--verdict-quantile"},
			{args: []string{"--verdict-quantile", "0.999"}},
		},
		"promote-threshold": {
			{args: []string{"--promote-threshold", "0"}, want: "--promote-threshold"},
			{args: []string{"--promote-threshold", "-Inf"}, want: "--promote-threshold"},
			{args: []string{"--promote-threshold", "1.2"}, want: "rollbackThreshold (--rollback-threshold): 1.1 must be above 1 (a heavier tail) and above promoteThreshold 1.2"},
			{args: []string{"--promote-threshold", "0.9"}},
		},
		"rollback-threshold": {
			{args: []string{"--rollback-threshold", "+Inf"}, want: "rollbackThreshold (--rollback-threshold): +Inf is not a finite number"},
			{args: []string{"--rollback-threshold", "NaN"}, want: "--rollback-threshold"},
			{args: []string{"--promote-threshold", "0.9", "--rollback-threshold", "1"}, want: "rollbackThreshold (--rollback-threshold): 1 must be above 1"},
			{args: []string{"--rollback-threshold", "0.9"}, want: "--rollback-threshold"},
			{args: []string{"--rollback-threshold", "1.5"}},
		},
		"good-needed": {
			{args: []string{"--good-needed", "0"}, want: "--good-needed"},
			{args: []string{"--rule", "reference", "--good-needed", "61"}, want: "--good-needed"},
			{args: []string{"--good-needed", "61"}}, // the evidence rule does not count minutes
			{args: []string{"--good-needed", "30"}},
		},
		"bad-limit": {
			{args: []string{"--bad-limit", "0"}, want: "--bad-limit"},
			{args: []string{"--rule", "reference", "--bad-limit", "61"}, want: "--bad-limit"},
			{args: []string{"--bad-limit", "61"}},
			{args: []string{"--bad-limit", "3"}},
		},
		"warmup": {
			{args: []string{"--warmup", "-1"}, want: "--warmup"},
			{args: []string{"--warmup", "60"}, want: "--warmup"},
			{args: []string{"--warmup", "5"}},
		},
		"min-tail": {
			{args: []string{"--min-tail", "-1"}, want: "--min-tail"},
			{args: []string{"--min-tail", "+Inf"}, want: "--min-tail"},
			{args: []string{"--min-tail", "0"}},
		},
		"confidence": {
			{args: []string{"--confidence", "1"}, want: "--confidence"},
			{args: []string{"--confidence", "NaN"}, want: "--confidence"},
			{args: []string{"--confidence", "0.99"}},
		},
		"expected-share": {
			{args: []string{"--expected-share", "-0.1"}, want: "--expected-share"},
			{args: []string{"--expected-share", "1"}, want: "--expected-share"},
			{args: []string{"--expected-share", "Inf"}, want: "--expected-share"},
			{args: []string{"--expected-share", "0.05"}},
		},
		"max-share-drift": {
			{args: []string{"--max-share-drift", "0"}, want: "--max-share-drift"},
			{args: []string{"--max-share-drift", "-0.5"}, want: "--max-share-drift"},
			{args: []string{"--max-share-drift", "NaN"}, want: "--max-share-drift"},
			{args: []string{"--max-share-drift", "0.2"}},
		},
		"scrape-interval": {
			{args: []string{"--scrape-interval", "25s"}, want: "--scrape-interval"},
			{args: []string{"--scrape-interval", "2m"}, want: "--scrape-interval"},
			{args: []string{"--scrape-interval", "1500ms"}, want: "--scrape-interval"},
			{args: []string{"--scrape-interval", "0s"}, want: "--scrape-interval"},
			{args: []string{"--scrape-interval", "30s"}},
			{args: []string{"--scrape-interval", "1m"}},
		},
		"min-rollback-minutes": {
			{args: []string{"--min-rollback-minutes", "1"}, want: "--min-rollback-minutes"},
			{args: []string{"--min-rollback-minutes", "5"}, want: "--min-rollback-minutes"},
			{args: []string{"--min-rollback-minutes", "4"}},
		},
		"significance": {
			{args: []string{"--significance", "0.3"}, want: "--significance"},
			{args: []string{"--significance", "1"}, want: "--significance"},
			{args: []string{"--significance", "NaN"}, want: "--significance"},
			{args: []string{"--significance", "0"}},
			{args: []string{"--significance", "0.99"}},
		},
		"lb-metric": {
			{args: []string{"--lb-metric", "sum(x)"}, want: "--lb-metric"},
			{args: []string{"--lb-metric", "lb_request_duration_seconds"}},
		},
		"lb-baseline": {
			{args: []string{"--lb-baseline", `{a="b"}`}, want: "--lb-baseline and --lb-canary need --lb-metric"},
			{args: []string{"--lb-metric", "lb_seconds", "--lb-baseline", `{a=~}`}, want: "--lb-baseline"},
			{args: []string{"--lb-metric", "lb_seconds", "--lb-baseline", `{a="b"}`}},
		},
		"lb-canary": {
			{args: []string{"--lb-canary", `{a="c"}`}, want: "need --lb-metric"},
			{args: []string{"--lb-metric", "lb_seconds", "--lb-canary", `x y`}, want: "--lb-canary"},
			{args: []string{"--lb-metric", "lb_seconds", "--lb-canary", `{a="c"}`}},
		},
		"errors-metric": {
			{args: []string{"--errors-metric", "sum(http_requests_total)"}, want: "--errors-metric: invalid metric name"},
			{args: []string{"--errors-metric", "http_requests_total"}},
		},
		"errors": {
			{args: []string{"--errors", `{code="500"}`}, want: "--errors needs --errors-metric"},
			{args: []string{"--errors-metric", "http_requests_total", "--errors", `{code="500"} or up`}, want: "--errors: invalid selector"},
			{args: []string{"--errors-metric", "http_requests_total", "--errors", `{code!~"2..|3.."}`}},
		},
		"pod-label": {
			{args: []string{"--pod-label", "pod)"}, want: "--pod-label"},
			{args: []string{"--pod-label", "1pod"}, want: "--pod-label"},
			{args: []string{"--pod-label", "kubernetes_pod_name"}},
			{args: []string{"--pod-label", ""}},
		},
		"source": {
			{args: []string{"--source", "cache"}, want: "--source"},
			{args: []string{"--source", "recorded"}},
			{args: []string{"--source", "auto"}},
		},
		"tenant": {
			{args: []string{"--tenant", "team\x7fa"}, want: "--tenant"},
			{args: []string{"--tenant", strings.Repeat("t", 151)}, want: "--tenant must be at most 150"},
			{args: []string{"--tenant", "team-a"}},
			{args: []string{"--tenant", "team-a|team-b"}},
		},
		"max-divergence": {
			{args: []string{"--max-divergence", "0"}, want: "--max-divergence"},
			{args: []string{"--max-divergence", "+Inf"}, want: "--max-divergence"},
			{args: []string{"--max-divergence", "0.5"}},
		},
	}

	// Every flag has its rows.
	fs, _ := newJudgeFlags(&bytes.Buffer{})
	fs.VisitAll(func(f *flag.Flag) {
		if len(cases[f.Name]) == 0 {
			t.Errorf("flag --%s has no validation rows", f.Name)
		}
	})

	base := []string{"--prometheus", "http://127.0.0.1:9", "--metric", "m", "--baseline", `{a="b"}`, "--canary", `{a="c"}`}
	for name, rows := range cases {
		for _, row := range rows {
			t.Run(name+" "+strings.Join(row.args, " "), func(t *testing.T) {
				for _, k := range []string{envBearerToken, envBasicAuthPassword} {
					t.Setenv(k, row.env[k])
				}
				args := append(append([]string(nil), base...), row.args...)
				fs, f := newJudgeFlags(&bytes.Buffer{})
				if err := fs.Parse(args); err != nil {
					t.Fatal(err)
				}
				_, err := f.credentials()
				if err == nil {
					_, _, err = f.request(flagNow)
				}
				if row.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), row.want) {
					t.Fatalf("error %v, want one with %q", err, row.want)
				}
				if !strings.Contains(err.Error(), "--") {
					t.Errorf("the error does not name a flag: %v", err)
				}
				// The command refuses it the same way: one line, exit 3, no query.
				code, out, errOut := runJudge(args...)
				if code != exitError || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "pairwise: ") {
					t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
				}
			})
		}
	}
}
