package prom

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

var (
	faultSel, _ = selector.Parse(`{service="checkout",track="canary"}`)
	faultRange  = Range{Start: time.Unix(1_800_000_000, 0), End: time.Unix(1_800_000_600, 0)}
)

func fleet(ctx context.Context, c *Client) error {
	_, _, err := c.FleetHistograms(ctx, "http_request_duration_seconds", faultSel, Native, faultRange)
	return err
}

// TestHTTPFaults drives the client through the HTTP faults of issue 12
// against a controllable fake: each error names its cause, quotes at most a
// short excerpt of the body, and answers that ask to be retried are retried
// within the deadline. Every row failed before: a 500 with a Prometheus
// error said "unreachable", a 503 echoed its whole body, Retry-After was
// ignored.
func TestHTTPFaults(t *testing.T) {
	hugePage := strings.Repeat("<p>Service Unavailable</p>\n", 1024)
	tests := []struct {
		name      string
		faults    []testenv.Fault
		timeout   time.Duration
		want      error // nil: the query succeeds after the faults
		notWant   error
		contains  []string
		absent    []string
		requests  int           // requests the fake must have received
		minTime   time.Duration // the client must have waited at least this
		maxTime   time.Duration
		maxErrLen int
	}{
		{name: "500 with a Prometheus error is a server error, not unreachable",
			faults:   []testenv.Fault{{Status: 500, Body: `{"status":"error","errorType":"internal","error":"opening storage failed: disk full"}`}},
			want:     ErrServer,
			contains: []string{"HTTP 500 Internal Server Error", "internal: opening storage failed: disk full"},
			absent:   []string{"unreachable"}, requests: 1},
		{name: "503 with a 5 MB page is a server error quoting a short excerpt",
			faults:   []testenv.Fault{{Status: 503, Body: "<html>", Filler: 5 << 20}},
			want:     ErrServer,
			notWant:  ErrNotProm,
			contains: []string{"HTTP 503 Service Unavailable", "(body: <html><p>Service Unavailable</p>"},
			absent:   []string{"\n", hugePage[:2000]}, maxErrLen: 600, requests: 1},
		{name: "503 with Retry-After is retried once the wait is over",
			faults:   []testenv.Fault{{Status: 503, Header: map[string]string{"Retry-After": "1"}, Body: "starting"}},
			timeout:  10 * time.Second,
			requests: 2, minTime: time.Second},
		{name: "429 with Retry-After as an HTTP date is retried",
			faults:   []testenv.Fault{{Status: 429, Header: map[string]string{"Retry-After": "DATE+3s"}}},
			timeout:  10 * time.Second,
			requests: 2, minTime: 500 * time.Millisecond},
		{name: "Retry-After beyond the deadline fails at once, saying so",
			faults:   []testenv.Fault{{Status: 503, Header: map[string]string{"Retry-After": "120"}}},
			timeout:  3 * time.Second,
			want:     ErrRetryPastDeadline,
			contains: []string{"Retry-After 120", "beyond the", "left of the query's deadline"},
			requests: 1, maxTime: time.Second},
		{name: "retries are bounded",
			faults:   []testenv.Fault{{Status: 429, Header: map[string]string{"Retry-After": "0"}}, {Status: 429, Header: map[string]string{"Retry-After": "0"}}, {Status: 429, Header: map[string]string{"Retry-After": "0"}}, {Status: 429, Header: map[string]string{"Retry-After": "0"}}, {Status: 429, Header: map[string]string{"Retry-After": "0"}}},
			timeout:  5 * time.Second,
			want:     ErrOverloaded,
			contains: []string{"HTTP 429 Too Many Requests", "still after 3 retries"},
			requests: MaxRetries + 1},
		{name: "a connection dropped mid-answer is asked again once, on a new one",
			faults:   []testenv.Fault{{Drop: true, Body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[`}},
			requests: 2},
		{name: "dropped twice: unreachable, saying why",
			faults:   []testenv.Fault{{Drop: true, Body: `{"status":"success","data":`}, {Drop: true, Body: `{"status":"success","data":`}},
			want:     ErrUnavailable,
			contains: []string{"unexpected EOF"},
			requests: 2},
		{name: "429 without Retry-After",
			faults: []testenv.Fault{{Status: 429, Body: "slow down"}},
			want:   ErrOverloaded, contains: []string{"without Retry-After", "slow down"}, requests: 1},
		{name: "502 from a proxy: the server behind it is unreachable",
			faults: []testenv.Fault{{Status: 502, Body: "<html>Bad Gateway</html>"}},
			want:   ErrUnavailable, notWant: ErrServer, contains: []string{"HTTP 502 Bad Gateway"}, requests: 1},
		{name: "504 from a proxy is a timeout",
			faults: []testenv.Fault{{Status: 504, Body: "upstream timed out"}},
			want:   ErrTimeout, requests: 1},
		{name: "404 page: not the API",
			faults: []testenv.Fault{{Status: 404, Body: "404 page not found"}},
			want:   ErrNotProm, contains: []string{"HTTP 404 Not Found"}, requests: 1},
		{name: "a hang is a timeout",
			faults:  []testenv.Fault{{Hang: true}},
			timeout: 200 * time.Millisecond,
			want:    ErrTimeout, requests: 1, maxTime: 2 * time.Second},
		{name: "Prometheus error text is one line and bounded",
			faults:   []testenv.Fault{{Status: 500, Body: `{"status":"error","errorType":"internal","error":"line one\nALERT firing forged` + strings.Repeat("y", 10000) + `"}`}},
			want:     ErrServer,
			contains: []string{"line one ALERT firing forged"},
			absent:   []string{"\n"}, maxErrLen: 1500, requests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
			for _, f := range tt.faults {
				if f.Header["Retry-After"] == "DATE+3s" { // an HTTP date, 2 to 3 s ahead
					f.Header = map[string]string{"Retry-After": time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)}
				}
				fake.Fail(f)
			}
			c, err := New(fake.URL, tt.timeout)
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			err = fleet(context.Background(), c)
			took := time.Since(began)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			if tt.notWant != nil && errors.Is(err, tt.notWant) {
				t.Errorf("error %v is also %v", err, tt.notWant)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			for _, s := range tt.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q lacks %q", msg, s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(msg, s) {
					t.Errorf("error %.300q contains %.40q", msg, s)
				}
			}
			if tt.maxErrLen > 0 && len(msg) > tt.maxErrLen {
				t.Errorf("error is %d bytes, want at most %d: %.300q", len(msg), tt.maxErrLen, msg)
			}
			if got := len(fake.Requests()); tt.requests > 0 && got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			if took < tt.minTime || tt.maxTime > 0 && took > tt.maxTime {
				t.Errorf("took %s, want between %s and %s", took, tt.minTime, tt.maxTime)
			}
		})
	}
}

func TestRetryWaitIsCanceledWithTheContext(t *testing.T) {
	fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
	fake.Fail(testenv.Fault{Status: 503, Header: map[string]string{"Retry-After": "30"}})
	c, _ := New(fake.URL, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	began := time.Now()
	err := fleet(ctx, c)
	if err == nil || !errors.Is(err, context.Canceled) || time.Since(began) > 5*time.Second {
		t.Fatalf("error %v after %s, want canceled at once", err, time.Since(began))
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"99999999999999999999", 0, false},
		{"9999999999", time.Duration(1<<31) * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestCredentials: a URL's user:password becomes basic auth and leaves
// BaseURL and every error; a bearer token is sent as Prometheus tooling
// sends it; an Authorization header set by the HTTP client (the plugin's)
// is left alone.
func TestCredentials(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ci:s3cret-pass"))
	fake := testenv.FakePrometheus(t, testenv.FakeOptions{Authorization: basic})
	withUser := strings.Replace(fake.URL, "http://", "http://ci:s3cret-pass@", 1)
	c, err := New(withUser, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.BaseURL, "s3cret") || c.Credentials.Username != "ci" || c.Credentials.Password != "s3cret-pass" {
		t.Fatalf("client %q, credentials %s", c.BaseURL, c.Credentials)
	}
	if err := fleet(context.Background(), c); err != nil {
		t.Fatalf("basic auth from the URL: %v", err)
	}
	if got := fake.Requests()[0].Header.Get("Authorization"); got != basic {
		t.Fatalf("Authorization %q", got)
	}
	// Errors of every kind leave the password out.
	for _, f := range []testenv.Fault{{Status: 500, Body: "x"}, {Status: 401}, {Status: 404}, {Status: 503, Header: map[string]string{"Retry-After": "999"}}} {
		fake.Fail(f)
		if err := fleet(context.Background(), c); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("fault %d: %v", f.Status, err)
		}
	}
	c.Credentials.Password = "wrong"
	if err := fleet(context.Background(), c); !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := New("http://ci:s3cret-pass@[::1", 0); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad URL error shows the password: %v", err)
	}
	// A password holding '/', '?' or '#' unencoded parses as a host and a
	// path: refused, without repeating the URL.
	for _, u := range []string{"http://ci:s3cret/pass@prom:9090", "http://ci:1234/5678@127.0.0.1:1", "http://ci:s3c?ret@prom"} {
		if _, err := New(u, 0); err == nil || strings.Contains(err.Error(), "s3c") || strings.Contains(err.Error(), "5678") {
			t.Errorf("%s: %v", u, err)
		}
	}

	bearer := testenv.FakePrometheus(t, testenv.FakeOptions{Authorization: "Bearer tok-123"})
	c, _ = New(bearer.URL, 5*time.Second)
	c.Credentials = Credentials{BearerToken: "tok-123"}
	if err := fleet(context.Background(), c); err != nil {
		t.Fatalf("bearer token: %v", err)
	}
	if s := c.Credentials.String(); strings.Contains(s, "tok-123") {
		t.Errorf("String shows the token: %s", s)
	}
	// The plugin's HTTP client authenticates in its transport: its header wins.
	c.HTTP = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer tok-123")
		return http.DefaultTransport.RoundTrip(r)
	})}
	c.Credentials = Credentials{BearerToken: "other"}
	if err := fleet(context.Background(), c); err != nil {
		t.Fatalf("transport's credentials: %v", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pass@host:9090/prom":   "http://user:xxxxx@host:9090/prom",
		"https://user:p@ss:w@rd@host/x?y=1": "https://user:xxxxx@host/x?y=1",
		"http://token@host":                 "http://xxxxx@host",
		"user:pass@host:9090":               "user:xxxxx@host:9090",
		"http://host:9090/a@b":              "http://host:xxxxx@b",
		// A password holding '/', '?' or '#' unencoded: they end no host.
		"http://sre:pa/ss@prom:9090":       "http://sre:xxxxx@prom:9090",
		"http://sre:1234/5678@127.0.0.1:1": "http://sre:xxxxx@127.0.0.1:1",
		"http://sre:a?b#c@prom/x":          "http://sre:xxxxx@prom/x",
		"http://host:9090":                 "http://host:9090",
		"http://u:pa ss@[::1":              "http://u:xxxxx@[::1",
		"":                                 "",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedirectedQuery: a Prometheus URL that redirects (http to https, a
// moved path) turns the POSTed query into a GET without its form. The
// error says where it was sent; before, it was Prometheus's "invalid
// parameter start", which points at the query.
func TestRedirectedQuery(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"start\": cannot parse \"\" to a valid timestamp"}`)
	}))
	defer target.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/prom"+r.URL.Path, code)
		}))
		c, err := New(moved.URL, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		err = fleet(context.Background(), c)
		moved.Close()
		if !errors.Is(err, ErrNotProm) || !strings.Contains(fmt.Sprint(err), "redirected the query to "+target.URL+"/prom/api/v1/query_range") ||
			!strings.Contains(fmt.Sprint(err), "use "+target.URL+"/prom as the Prometheus URL") {
			t.Errorf("%d: %v; want the redirect named and the URL to use", code, err)
		}
	}
	// A proxy that sends the query to a sign-in page: no URL to use.
	signIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/oauth2/sign_in?rd="+r.URL.Path, http.StatusFound)
	}))
	defer signIn.Close()
	c, err := New(signIn.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet(context.Background(), c); !errors.Is(err, ErrNotProm) || strings.Contains(fmt.Sprint(err), "as the Prometheus URL") ||
		!strings.Contains(fmt.Sprint(err), "authentication") {
		t.Errorf("sign-in redirect: %v; want the redirect named and authentication to check, no URL to use", err)
	}
}
