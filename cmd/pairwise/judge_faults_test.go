package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// fakeArgs judges the fake's fleets over a fixed hour.
func fakeArgs(url string, extra ...string) []string {
	return append([]string{"--prometheus", url, "--metric", "http_request_duration_seconds",
		"--baseline", `{service="checkout",track="baseline"}`, "--canary", `{service="checkout",track="canary"}`,
		"--at", "2026-11-21T12:00:00Z"}, extra...)
}

// TestJudgeHTTPFaults: the judge names the cause of each HTTP fault, in one
// line that quotes no more than an excerpt of what the server sent. Before,
// a 500 with a Prometheus error said "cannot reach Prometheus", a 503 said
// "check the URL" or echoed its whole body, and Retry-After was ignored.
func TestJudgeHTTPFaults(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	tests := []struct {
		name    string
		fault   *testenv.Fault // every request
		first   []testenv.Fault
		url     string
		extra   []string
		code    int
		want    []string
		notWant []string
		maxTime time.Duration
	}{
		{name: "healthy fake: a decision", code: -1, want: []string{"minute", "worst minute"}},
		{name: "500 with a Prometheus error", fault: &testenv.Fault{Status: 500, Body: `{"status":"error","errorType":"internal","error":"opening block: input/output error"}`},
			code: 3, want: []string{"answered with a server error", "HTTP 500 Internal Server Error: internal: opening block: input/output error"}, notWant: []string{"cannot reach", "check the URL"}},
		{name: "503 with a 5 MB page", fault: &testenv.Fault{Status: 503, Body: "<html><h1>503 Service Unavailable</h1>", Filler: 5 << 20},
			code: 3, want: []string{"answered with a server error", "HTTP 503 Service Unavailable", "(body: <html><h1>503 Service Unavailable</h1>"}, notWant: []string{"check the URL", "cannot reach", strings.Repeat("<p>Service Unavailable</p> ", 20)}},
		{name: "Retry-After within the deadline is honoured", first: []testenv.Fault{{Status: 503, Header: map[string]string{"Retry-After": "1"}}, {Status: 429, Header: map[string]string{"Retry-After": "1"}}},
			code: -1, want: []string{"minute"}},
		{name: "Retry-After beyond the deadline", fault: &testenv.Fault{Status: 503, Header: map[string]string{"Retry-After": "3600"}}, extra: []string{"--timeout", "5s"},
			code: 3, want: []string{"overloaded or rate-limiting", "Retry-After 3600", "raise --timeout"}, maxTime: 3 * time.Second},
		{name: "429 without Retry-After", fault: &testenv.Fault{Status: 429, Body: "rate limited"},
			code: 3, want: []string{"overloaded or rate-limiting", "HTTP 429 Too Many Requests without Retry-After"}, notWant: []string{"raise --timeout"}},
		{name: "Retry-After within the deadline, retries run out", fault: &testenv.Fault{Status: 503, Header: map[string]string{"Retry-After": "0"}},
			code: 3, want: []string{"overloaded or rate-limiting", "try again later", "still after 3 retries"}, notWant: []string{"raise --timeout"}},
		{name: "405: a proxy that refuses POST", fault: &testenv.Fault{Status: 405, Body: "method not allowed"},
			code: 3, want: []string{"refuses the POST requests the judge queries with", "HTTP 405 Method Not Allowed to a POST of /api/v1/query"}, notWant: []string{"check the URL"}},
		{name: "502 from a proxy", fault: &testenv.Fault{Status: 502, Body: "bad gateway"},
			code: 3, want: []string{"cannot reach Prometheus", "HTTP 502 Bad Gateway"}},
		{name: "a hang", fault: &testenv.Fault{Hang: true}, extra: []string{"--timeout", "1s"},
			code: 3, want: []string{"did not answer within 1s"}, maxTime: 5 * time.Second},
		{name: "401 without credentials", fault: &testenv.Fault{Status: 401},
			code: 3, want: []string{"needs credentials", "--bearer-token-file", "--basic-auth-user"}},
		{name: "404: not the API", fault: &testenv.Fault{Status: 404, Body: "404 page not found"},
			code: 3, want: []string{"does not answer like the Prometheus HTTP API; check the URL", "HTTP 404 Not Found"}},
		{name: "nothing listening", url: closed, code: 3, want: []string{"cannot reach Prometheus at " + closed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if url == "" {
				fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
				fake.Fail(tt.first...)
				fake.FailAlways(tt.fault)
				url = fake.URL
			}
			began := time.Now()
			code, out, errOut := runJudge(fakeArgs(url, tt.extra...)...)
			took := time.Since(began)
			all := out + errOut
			if tt.code >= 0 && code != tt.code || tt.code < 0 && code > 2 {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, all)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%.2000s", w, all)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Errorf("output has %.60q:\n%.2000s", w, all)
				}
			}
			if code == exitError && (strings.Count(errOut, "\n") != 1 || len(errOut) > 1500 || out != "") {
				t.Errorf("the error is not one short line (%d bytes, %d lines), or stdout is not empty:\n%.3000s", len(errOut), strings.Count(errOut, "\n"), errOut)
			}
			if tt.maxTime > 0 && took > tt.maxTime {
				t.Errorf("took %s, want at most %s", took, tt.maxTime)
			}
		})
	}
}

// TestJudgeSecretsNeverPrinted runs the judge with each way of passing
// credentials, against a fake Prometheus that checks them, through every
// output: the table, the JSON document, warnings, and the error of each
// class. No secret may appear; the URL's password shows as xxxxx. Before,
// --prometheus http://user:pass@host printed the password in its errors.
func TestJudgeSecretsNeverPrinted(t *testing.T) {
	const (
		urlPass  = "url-Pa55-word"
		envPass  = "env-Pa55-word"
		filePass = "file-Pa55-word"
		token    = "tok-5ecret-abc"
		envToken = "env-tok-5ecret"
		urlToken = "url-tok-5ecret"
	)
	// The Authorization header each mode sends is as secret as what it holds.
	b64 := func(user, pass string) string { return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)) }
	secrets := []string{urlPass, envPass, filePass, token, envToken, urlToken, b64("ci", urlPass), b64(urlToken, ""), b64("ci", envPass), b64("ci", filePass)}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenFile, passFile := write("token", token+"\n"), write("password", filePass+"\n")
	basic := func(user, pass string) string { return "Basic " + b64(user, pass) }
	modes := []struct {
		name   string
		auth   string // what the fake requires
		url    func(string) string
		args   []string
		env    map[string]string
		sentAs string // what the 401 message says was sent
		shown  string // how the URL is named, redacted
	}{
		{name: "userinfo in the URL", auth: basic("ci", urlPass), url: func(u string) string { return strings.Replace(u, "http://", "http://ci:"+urlPass+"@", 1) }, sentAs: `basic auth as "ci"`, shown: "http://ci:xxxxx@127.0.0.1:"},
		{name: "a token as the URL's user", auth: basic(urlToken, ""), url: func(u string) string { return strings.Replace(u, "http://", "http://"+urlToken+"@", 1) }, sentAs: `basic auth as "xxxxx"`, shown: "http://xxxxx@127.0.0.1:"},
		{name: "basic auth, password from the environment", auth: basic("ci", envPass), args: []string{"--basic-auth-user", "ci"}, env: map[string]string{envBasicAuthPassword: envPass}, sentAs: `basic auth as "ci"`},
		{name: "basic auth, password file", auth: basic("ci", filePass), args: []string{"--basic-auth-user", "ci", "--basic-auth-password-file", passFile}, sentAs: `basic auth as "ci"`},
		{name: "bearer token file", auth: "Bearer " + token, args: []string{"--bearer-token-file", tokenFile}, sentAs: "bearer token"},
		{name: "bearer token from the environment", auth: "Bearer " + envToken, env: map[string]string{envBearerToken: envToken}, sentAs: "bearer token"},
	}
	faults := []struct {
		name  string
		fault testenv.Fault
		extra []string
		want  string
	}{
		{name: "server error", fault: testenv.Fault{Status: 500, Body: `{"status":"error","errorType":"internal","error":"boom"}`}, want: "server error"},
		{name: "huge 503", fault: testenv.Fault{Status: 503, Filler: 1 << 20}, want: "server error"},
		{name: "an error page that shows the request", fault: testenv.Fault{Status: 502, Body: "proxy error;", EchoAuthorization: true}, want: "502 Bad Gateway"},
		{name: "overloaded", fault: testenv.Fault{Status: 429, Header: map[string]string{"Retry-After": "600"}}, want: "overloaded"},
		{name: "refused", fault: testenv.Fault{Status: 403}, want: "refused the credentials sent"},
		{name: "not the API", fault: testenv.Fault{Status: 200, Body: "<html>"}, want: "check the URL"},
		{name: "bad query", fault: testenv.Fault{Status: 400, Body: `{"status":"error","errorType":"bad_data","error":"bad"}`}, want: "rejected the query"},
		{name: "timeout", fault: testenv.Fault{Hang: true}, extra: []string{"--timeout", "1s"}, want: "did not answer within"},
		{name: "flag error", extra: []string{"--window", "90s"}, want: "--window"},
		{name: "validation error", extra: []string{"--rollback-threshold", "+Inf"}, want: "--rollback-threshold"},
		{name: "no data in the window", extra: []string{"--metric", "other_seconds"}, want: ""},
	}
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q:\n%.2000s", what, s, text)
			}
		}
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			for _, k := range []string{envBearerToken, envBasicAuthPassword} {
				t.Setenv(k, m.env[k])
			}
			fake := testenv.FakePrometheus(t, testenv.FakeOptions{Authorization: m.auth})
			url := fake.URL
			if m.url != nil {
				url = m.url(url)
			}
			// Decisions: the table and the JSON document, and the warnings.
			for _, output := range []string{"table", "json"} {
				code, out, errOut := runJudge(fakeArgs(url, append(m.args, "--output", output)...)...)
				if code > 2 {
					t.Fatalf("--output %s: exit %d:\n%s\n%s", output, code, out, errOut)
				}
				check(t, "--output "+output+" stdout", out)
				check(t, "--output "+output+" stderr", errOut)
				if output == "json" && !json.Valid([]byte(out)) {
					t.Errorf("not JSON:\n%s", out)
				}
				if m.url != nil && !strings.Contains(errOut, "warning: --prometheus "+m.shown) {
					t.Errorf("no warning about the credential in --prometheus, or not redacted:\n%s", errOut)
				}
			}
			if got := fake.Requests()[0].Header.Get("Authorization"); got != m.auth {
				t.Fatalf("sent Authorization %q, want %q", got, m.auth)
			}
			// Errors of every class.
			for _, f := range faults {
				fake.FailAlways(nil)
				if f.fault.Status != 0 || f.fault.Hang {
					fault := f.fault
					fake.FailAlways(&fault)
				}
				code, out, errOut := runJudge(fakeArgs(url, append(append([]string(nil), m.args...), f.extra...)...)...)
				if code != exitError || !strings.Contains(errOut, f.want) {
					t.Errorf("%s: exit %d, want 3 and %q:\n%s", f.name, code, f.want, errOut)
				}
				if f.name == "refused" && !strings.Contains(errOut, m.sentAs) {
					t.Errorf("the 403 message does not say what was sent (%s): %s", m.sentAs, errOut)
				}
				if m.url != nil && f.name != "flag error" && f.name != "validation error" && f.name != "no data in the window" && f.name != "bad query" && !strings.Contains(lastLine(errOut), m.shown) {
					t.Errorf("%s: the URL is not named, redacted: %s", f.name, errOut)
				}
				check(t, f.name+" stdout", out)
				check(t, f.name+" stderr", errOut)
			}
			fake.FailAlways(nil)
		})
	}

	// Credential errors name files and variables, never their contents.
	for _, args := range [][]string{
		{"--prometheus", "ftp://ci:" + urlPass + "@host"},
		{"--prometheus", "http://ci:" + urlPass + "@[::1"},
		{"--prometheus", "http://ci:" + urlPass + "@host", "--bearer-token-file", tokenFile},
		{"--bearer-token-file", tokenFile, "--basic-auth-user", "ci", "--basic-auth-password-file", passFile},
		{"--basic-auth-password-file", passFile},
		{"--bearer-token-file", write("two-lines", token+"\n"+token+"\n")},
		{"--prometheus", "http://ci:" + urlPass + "@host", "unexpected"},
	} {
		full := append([]string{"--metric", "m", "--baseline", `{a="b"}`, "--canary", `{a="c"}`}, args...)
		code, out, errOut := runJudge(full...)
		if code != exitError {
			t.Errorf("%v: exit %d", args, code)
		}
		check(t, strings.Join(args, " "), out+errOut)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestJudgePartialResponse: identical busy fleets promote, but not when the
// backend warns that its answer may be partial: the judge holds, exit 1,
// and says why.
func TestJudgePartialResponse(t *testing.T) {
	whole := testenv.FakePrometheus(t, testenv.FakeOptions{})
	if code, out, errOut := runJudge(fakeArgs(whole.URL)...); code != 0 {
		t.Fatalf("identical fleets without warnings: exit %d, want 0:\n%s%s", code, out, errOut)
	}
	warning := "partial response: store gateway 10.0.0.7:10901 unreachable"
	partial := testenv.FakePrometheus(t, testenv.FakeOptions{Warnings: []string{warning}})
	code, out, errOut := runJudge(fakeArgs(partial.URL)...)
	for _, want := range []string{"HOLD: would promote", "partial-response", "store gateway 10.0.0.7:10901 unreachable"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, want 1 with %q:\n%s%s", code, want, out, errOut)
		}
	}
	// A partial answer with no data for either fleet is not "no data"
	// (the data may be on the store that did not answer): it is an error
	// that says so, not the advice to check the metric name.
	emptyPartial := testenv.FakePrometheus(t, testenv.FakeOptions{Warnings: []string{warning}, Metric: "another_metric_seconds"})
	code, out, errOut = runJudge(fakeArgs(emptyPartial.URL)...)
	if code != exitError || !strings.Contains(errOut, "may be partial") || !strings.Contains(errOut, "10.0.0.7:10901") {
		t.Fatalf("no data in a partial answer: exit %d, want 3 naming the warning:\n%s%s", code, out, errOut)
	}
}

// TestJudgeOutputLost: a decision whose output cannot be written is an
// error, exit 3, in either format: before, a table lost to a full disk
// left exit 0 (promote) behind, with nothing printed.
func TestJudgeOutputLost(t *testing.T) {
	fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
	for _, format := range []string{"table", "json"} {
		out := &failingWriter{fail: true}
		var errOut bytes.Buffer
		code := run(append([]string{"judge"}, fakeArgs(fake.URL, "--output", format)...), out, &errOut)
		if code != exitError || !strings.Contains(errOut.String(), "no space left on device") {
			t.Errorf("%s: exit %d, stderr %q; want 3 and the write error", format, code, errOut.String())
		}
	}
}

// TestJudgeTooEarlyJSON: a deployment with no whole minute yet holds, and
// its JSON document lists no minutes as an empty list: before, "minutes"
// was null and `jq '.minutes[]'` failed.
func TestJudgeTooEarlyJSON(t *testing.T) {
	fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
	code, out, errOut := runJudge(fakeArgs(fake.URL, "--output", "json", "--since", "2026-11-21T11:59:40Z")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (hold):\n%s%s", code, out, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if m, ok := doc["minutes"].([]any); !ok || len(m) != 0 {
		t.Fatalf("minutes = %#v, want []", doc["minutes"])
	}
}

// TestJudgeAheadOfTheClock: an --at ahead of the clock is judged as given
// (the demo judges backfilled minutes up to the next whole minute), with a
// warning that live minutes after the last one over are unfinished; an
// --at in the past has none.
func TestJudgeAheadOfTheClock(t *testing.T) {
	fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
	ahead := time.Now().Add(3 * time.Minute).UTC().Format(time.RFC3339)
	_, out, errOut := runJudge(fakeArgs(fake.URL, "--at", ahead)...)
	if !strings.Contains(errOut, "is ahead of the last minute that is over") {
		t.Errorf("--at %s: no warning:\n%s%s", ahead, out, errOut)
	}
	_, out, errOut = runJudge(fakeArgs(fake.URL)...)
	if strings.Contains(errOut, "ahead of the last minute") {
		t.Errorf("--at in the past warned:\n%s%s", out, errOut)
	}
}

// TestJudgeTenant: a multi-tenant Mimir answers 401 "no org id" without
// X-Scope-OrgID. The judge says to pass --tenant (it said to pass a bearer
// token), and with it sends the header on every request.
func TestJudgeTenant(t *testing.T) {
	fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
	target, err := url.Parse(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var wrong atomic.Int32
	mimir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("X-Scope-OrgID") {
		case "":
			http.Error(w, "no org id", http.StatusUnauthorized)
		case "team-a":
			proxy.ServeHTTP(w, r)
		default:
			wrong.Add(1)
			http.Error(w, "unknown tenant", http.StatusForbidden)
		}
	}))
	defer mimir.Close()
	code, out, errOut := runJudge(fakeArgs(mimir.URL)...)
	if code != exitError || !strings.Contains(errOut, "pass --tenant") {
		t.Errorf("without a tenant: exit %d, want 3 and advice to pass --tenant:\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runJudge(fakeArgs(mimir.URL, "--tenant", "team-a")...); code != 0 || wrong.Load() != 0 {
		t.Errorf("--tenant team-a: exit %d, want 0 (promote):\n%s%s", code, out, errOut)
	}
	if code, _, errOut = runJudge(fakeArgs(mimir.URL, "--tenant", "a\nb")...); code != exitError || !strings.Contains(errOut, "--tenant") {
		t.Errorf("a tenant with a line break: exit %d, %s", code, errOut)
	}
}

// TestJudgeTableFollowsTheFlags: the table shows the quantiles --quantiles
// names (the reference output's p99 and p99.9 otherwise), a range over a
// day names each minute's day, and a flag the chosen rule ignores is said
// to be ignored.
func TestJudgeTableFollowsTheFlags(t *testing.T) {
	fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
	for _, tt := range []struct {
		name    string
		extra   []string
		header  string
		want    []string
		notWant []string
	}{
		{name: "defaults", header: "minute rps_old rps_new p99_old p99_new p999_old p999_new ratio(p99) verdict evidence recent decision", want: []string{" 11:01 "}, notWant: []string{"warning"}},
		{name: "quantiles given", extra: []string{"--quantiles", "0.5,0.9"}, header: "minute rps_old rps_new p50_old p50_new p90_old p90_new p99_old p99_new ratio(p99) verdict evidence recent decision"},
		{name: "another verdict quantile", extra: []string{"--verdict-quantile", "0.95"}, header: "minute rps_old rps_new p95_old p95_new p99_old p99_new ratio(p95) verdict evidence recent decision"},
		{name: "a range over a day", extra: []string{"--window", "10m", "--range", "1d"}, want: []string{" 11-20 12:01 ", " 11-21 12:00 "}},
		{name: "an evidence flag under the reference rule", extra: []string{"--rule", "reference", "--false-rollback", "0.01"}, want: []string{"pairwise: warning: --false-rollback applies to the evidence rule only; the reference rule ignores it"}},
		{name: "a reference flag under the evidence rule", extra: []string{"--bad-limit", "3"}, want: []string{"pairwise: warning: --bad-limit applies to the reference rule only; the evidence rule ignores it"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runJudge(fakeArgs(fake.URL, tt.extra...)...)
			if code > 2 {
				t.Fatalf("exit %d:\n%s%s", code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%.3000s%s", w, out, errOut)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out+errOut, w) {
					t.Errorf("output has %q:\n%.3000s%s", w, out, errOut)
				}
			}
			if header, _, _ := strings.Cut(out, "\n"); tt.header != "" && strings.Join(strings.Fields(header), " ") != tt.header {
				t.Errorf("header %q, want %q", header, tt.header)
			}
		})
	}
}
