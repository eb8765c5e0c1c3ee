package plugin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/engine"
)

// slowProxy stands between the data source and Prometheus and holds every
// request for delay, counting the requests and the most in flight at once.
type slowProxy struct {
	URL                      string
	requests, inFlight, peak atomic.Int64
}

func newSlowProxy(t *testing.T, promURL string, delay time.Duration) *slowProxy {
	t.Helper()
	target, err := url.Parse(promURL)
	if err != nil {
		t.Fatal(err)
	}
	upstream := httputil.NewSingleHostReverseProxy(target)
	upstream.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	p := &slowProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		n := p.inFlight.Add(1)
		defer p.inFlight.Add(-1)
		for old := p.peak.Load(); n > old && !p.peak.CompareAndSwap(old, n); old = p.peak.Load() {
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		upstream.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// TestQueriesRunTogether: the dashboard panel sends minutes, decision and
// pods in one request. Before, they ran one after another, each repeating
// the analysis: with Prometheus answering in 300 ms, three times the
// requests and the time of one query, and under Grafana's deadline the
// later ones failed, blaming the data source's timeout. Now queries run
// side by side and those that ask for the same analysis share it; a
// deadline that was Grafana's is named as such.
func TestQueriesRunTogether(t *testing.T) {
	promURL := livePrometheus(t)
	proxy := newSlowProxy(t, promURL, 300*time.Millisecond)
	ds := newLiveDatasource(t, proxy.URL)
	direct := newLiveDatasource(t, promURL)
	query := func(ctx context.Context, qs ...backend.DataQuery) (*backend.QueryDataResponse, int64, int64, time.Duration) {
		t.Helper()
		proxy.requests.Store(0)
		proxy.peak.Store(0)
		start := time.Now()
		resp, err := ds.QueryData(ctx, &backend.QueryDataRequest{Queries: qs})
		if err != nil {
			t.Fatal(err)
		}
		return resp, proxy.requests.Load(), proxy.peak.Load(), time.Since(start)
	}
	minutes := liveQuery("minutes", `,"queryType":"minutes"`)
	panel := []backend.DataQuery{minutes, liveQuery("decision", `,"queryType":"decision"`), liveQuery("pods", `,"queryType":"pods"`)}
	_, aloneRequests, alonePeak, aloneTook := query(context.Background(), minutes)
	t.Logf("the minutes query alone: %d Prometheus requests (%d at once), %v", aloneRequests, alonePeak, aloneTook.Round(10*time.Millisecond))

	for _, tt := range []struct {
		name    string
		queries []backend.DataQuery
		timeout time.Duration // Grafana's deadline for the request, 0: none
		check   func(t *testing.T, resp *backend.QueryDataResponse, requests, peak int64)
	}{
		{name: "the panel's three queries share one analysis", queries: panel,
			check: func(t *testing.T, resp *backend.QueryDataResponse, requests, peak int64) {
				// One analysis, the pods of both fleets and the rollback's
				// attribution to the canary's pods.
				if requests > aloneRequests+3 {
					t.Errorf("%d Prometheus requests, want at most %d (one analysis, the pods, the attribution)", requests, aloneRequests+3)
				}
				// The same answers as each query asked alone.
				for _, q := range panel {
					want, _ := direct.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
					got, _ := json.Marshal(resp.Responses[q.RefID])
					if w, _ := json.Marshal(want.Responses[q.RefID]); string(got) != string(w) {
						t.Errorf("%s: answer differs from the query's alone:\n%.400s\n%.400s", q.RefID, got, w)
					}
				}
			}},
		{name: "different analyses run side by side",
			queries: []backend.DataQuery{minutes, liveQuery("window30", `,"queryType":"minutes","windowMinutes":30`)},
			check: func(t *testing.T, resp *backend.QueryDataResponse, requests, peak int64) {
				if peak <= alonePeak {
					t.Errorf("at most %d Prometheus requests at once, as for one query (%d): the queries ran one after another", peak, alonePeak)
				}
			}},
		{name: "a deadline that was Grafana's says so", queries: panel, timeout: 450 * time.Millisecond,
			check: func(t *testing.T, resp *backend.QueryDataResponse, requests, peak int64) {
				for _, q := range panel {
					dr := resp.Responses[q.RefID]
					if dr.Error == nil || dr.Status != backend.StatusTimeout || !strings.Contains(dr.Error.Error(), "Grafana's deadline") ||
						strings.Contains(dr.Error.Error(), "raise the timeout on the data source's settings page") {
						t.Errorf("%s: status %d: %v; want a timeout that names Grafana's deadline", q.RefID, dr.Status, dr.Error)
					}
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			resp, requests, peak, took := query(ctx, tt.queries...)
			t.Logf("%d queries: %d Prometheus requests (%d at once), %v", len(tt.queries), requests, peak, took.Round(10*time.Millisecond))
			if tt.timeout == 0 {
				for _, q := range tt.queries {
					if dr := resp.Responses[q.RefID]; dr.Error != nil {
						t.Fatalf("%s: %v", q.RefID, dr.Error)
					}
				}
			}
			tt.check(t, resp, requests, peak)
		})
	}
}

// TestPodsReadEachFleetAtItsKind: the pods query read both fleets' pods at
// the baseline's histogram kind. A baseline with no data is read as
// classic, so a canary with native histograms only had no pods at all.
// Each fleet's pods are now read at its own kind, and the frames' meta says
// each fleet's.
func TestPodsReadEachFleetAtItsKind(t *testing.T) {
	dir, _ := testenv.Generate(t, "--end", liveEnd.Format(time.RFC3339), "--minutes", "70", "--pods", "3", "--seed", "5", "--nhcb-metric", "http_nhcb_seconds")
	ds := newLiveDatasource(t, testenv.Prometheus(t, testenv.PromOptions{DataDir: dir}).URL)
	query := func(refID, metric, baseline, queryType string) backend.DataQuery {
		return backend.DataQuery{RefID: refID, TimeRange: backend.TimeRange{From: liveEnd.Add(-30 * time.Minute), To: liveEnd},
			JSON: json.RawMessage(`{"metric":"` + metric + `","baselineSelector":"{service=\"checkout\",track=\"` + baseline + `\"}","canarySelector":"{service=\"checkout\",track=\"canary\"}","queryType":"` + queryType + `"}`)}
	}
	for _, tt := range []struct {
		name, metric, baseline string
		kind                   string // meta histogramKind
		kinds                  map[string]string
	}{
		{"both fleets, native histograms only", "http_nhcb_seconds", "baseline", "native", map[string]string{"baseline": "native", "canary": "native"}},
		{"no baseline, canary with native histograms only", "http_nhcb_seconds", "gone", "mixed", map[string]string{"baseline": "classic", "canary": "native"}},
		{"no baseline, canary with both kinds", "http_request_duration_seconds", "gone", "mixed", map[string]string{"baseline": "classic", "canary": "native"}},
		{"both fleets, both kinds", "http_request_duration_seconds", "baseline", "native", map[string]string{"baseline": "native", "canary": "native"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
				query("M", tt.metric, tt.baseline, "minutes"), query("P", tt.metric, tt.baseline, "pods")}})
			if err != nil {
				t.Fatal(err)
			}
			m, p := resp.Responses["M"], resp.Responses["P"]
			if m.Error != nil || p.Error != nil {
				t.Fatalf("%v / %v", m.Error, p.Error)
			}
			canaryMinutes := 0
			rps := fieldOf(t, m.Frames[0])("canary_rps")
			for i := 0; i < rps.Len(); i++ {
				if rps.At(i).(*float64) != nil {
					canaryMinutes++
				}
			}
			canaryPods := 0
			fleet, pods := fieldOf(t, p.Frames[0])("fleet"), fieldOf(t, p.Frames[0])("pods")
			for i := 0; i < fleet.Len(); i++ {
				if v := pods.At(i).(*float64); fleet.At(i) == "canary" && v != nil && *v > 0 {
					canaryPods++
				}
			}
			if canaryMinutes == 0 || canaryPods != canaryMinutes {
				t.Errorf("the canary has data in %d minutes, pods in %d", canaryMinutes, canaryPods)
			}
			for _, f := range []*data.Frame{m.Frames[0], p.Frames[0]} {
				meta := f.Meta.Custom.(map[string]any)
				if meta["histogramKind"] != tt.kind || fmt.Sprint(meta["histogramKinds"]) != fmt.Sprint(tt.kinds) {
					t.Errorf("%s frame: histogramKind %v, histogramKinds %v; want %s, %v", f.Name, meta["histogramKind"], meta["histogramKinds"], tt.kind, tt.kinds)
				}
			}
		})
	}
}

// TestPodsStartAtTheDeployment: the pods frame showed the whole range
// while the minutes frame starts at the deployment (since); both now show
// the same minutes.
func TestPodsStartAtTheDeployment(t *testing.T) {
	ds := newLiveDatasource(t, livePrometheus(t))
	for _, tt := range []struct {
		name  string
		since string
		first time.Time // the first minute shown; zero: none
	}{
		{"no deployment start", "", liveEnd.Add(-59 * time.Minute)},
		{"a deployment before the range", liveEnd.Add(-3 * time.Hour).Format(time.RFC3339), liveEnd.Add(-59 * time.Minute)},
		{"a deployment within the range", "2026-06-01T11:40:00Z", liveEnd.Add(-19 * time.Minute)},
		{"a deployment between minutes", "2026-06-01T11:40:20Z", liveEnd.Add(-18 * time.Minute)},
		{"a deployment with no whole minute yet", "2026-06-01T11:59:30Z", time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			extra := ""
			if tt.since != "" {
				extra = `,"since":"` + tt.since + `"`
			}
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
				liveQuery("M", `,"queryType":"minutes"`+extra), liveQuery("P", `,"queryType":"pods"`+extra)}})
			if err != nil {
				t.Fatal(err)
			}
			m, p := resp.Responses["M"], resp.Responses["P"]
			if m.Error != nil || p.Error != nil {
				t.Fatalf("%v / %v", m.Error, p.Error)
			}
			times := func(f *data.Frame) []string {
				field := fieldOf(t, f)("time")
				var out []string
				for i := 0; i < field.Len(); i++ {
					out = append(out, field.At(i).(time.Time).UTC().Format(time.RFC3339))
				}
				return out
			}
			shown := times(m.Frames[0])
			var want []string
			for ts := tt.first; !tt.first.IsZero() && !ts.After(liveEnd); ts = ts.Add(time.Minute) {
				want = append(want, ts.Format(time.RFC3339))
			}
			if fmt.Sprint(shown) != fmt.Sprint(want) {
				t.Fatalf("minutes frame shows %v, want %v", shown, want)
			}
			// The pods frame: each minute shown, once per fleet.
			pods := times(p.Frames[0])
			sort.Strings(pods)
			var twice []string
			for _, ts := range shown {
				twice = append(twice, ts, ts)
			}
			if fmt.Sprint(pods) != fmt.Sprint(twice) {
				t.Errorf("pods frame has %d rows from %v, want the minutes frame's %d minutes for each fleet", len(pods), first(pods), len(shown))
			}
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return s[0]
}

// TestPartialNoDataIsAnError: no data in an answer Prometheus warned may be
// partial (a Thanos store down) is an error that names the warnings, for
// the panel and for alerting alike: the data may be on the store that did
// not answer, so it is neither alerting's "no data" (which rules may map to
// Normal) nor a bad request. No data without warnings stays "no data".
func TestPartialNoDataIsAnError(t *testing.T) {
	const warning = "partial response: store 10.0.0.7:10901 unavailable"
	partial := newLiveDatasource(t, testenv.FakePrometheus(t, testenv.FakeOptions{Metric: "other_metric_seconds", Warnings: []string{warning}}).URL)
	empty := newLiveDatasource(t, testenv.FakePrometheus(t, testenv.FakeOptions{Metric: "other_metric_seconds"}).URL)
	fromAlert := map[string]string{backend.FromAlertHeaderName: "true"}
	for _, tt := range []struct {
		name    string
		ds      *Datasource
		headers map[string]string
		extra   string
		noData  bool // want alerting's "no data": an empty frame
	}{
		{name: "panel decision", ds: partial, extra: `,"queryType":"decision"`},
		{name: "panel pods", ds: partial, extra: `,"queryType":"pods"`},
		{name: "alerting decision", ds: partial, headers: fromAlert, extra: `,"queryType":"decision"`},
		{name: "alerting minutes", ds: partial, headers: fromAlert, extra: `,"queryType":"minutes"`},
		{name: "format alerting", ds: partial, extra: `,"queryType":"decision","format":"alerting"`},
		{name: "no data without warnings is no data", ds: empty, headers: fromAlert, extra: `,"queryType":"decision"`, noData: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.ds.QueryData(context.Background(), &backend.QueryDataRequest{Headers: tt.headers, Queries: []backend.DataQuery{liveQuery("A", tt.extra)}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if tt.noData {
				if dr.Error != nil || len(dr.Frames) != 1 || len(dr.Frames[0].Fields) != 0 {
					t.Fatalf("%v, %d frames; want an empty frame", dr.Error, len(dr.Frames))
				}
				return
			}
			if dr.Error == nil || len(dr.Frames) != 0 || dr.Status != backend.StatusBadGateway || dr.ErrorSource != backend.ErrorSourceDownstream ||
				!strings.Contains(dr.Error.Error(), "10.0.0.7:10901") || !strings.Contains(dr.Error.Error(), "may be partial") {
				t.Fatalf("status %d, source %q, %d frames: %v; want a downstream 502 naming the warning", dr.Status, dr.ErrorSource, len(dr.Frames), dr.Error)
			}
		})
	}
	// Whether the engine's partial no-data error is also engine.ErrNoData
	// or not, it is an error.
	for _, err := range []error{
		&engine.PartialNoData{Warnings: []string{warning}, NoData: engine.ErrNoData},
		errors.Join(&engine.PartialNoData{Warnings: []string{warning}, NoData: engine.ErrNoData}, engine.ErrNoData),
	} {
		if noData(err) || errorResponse(err).Status != backend.StatusBadGateway {
			t.Errorf("%T %v: read as no data (%v) or status %d", err, err, noData(err), errorResponse(err).Status)
		}
	}
	if !noData(fmt.Errorf("%w: nothing", engine.ErrNoData)) {
		t.Error("engine.ErrNoData is not read as no data")
	}
}

// TestSecretsScrubbedFromEchoes: an endpoint that echoes the request's
// headers in its error page (a misconfigured proxy, a debugging server)
// had the bearer token, the basic-auth header and custom header values
// copied into the health check, query errors and the metrics resource:
// they are scrubbed, cut short by the excerpt's limit too.
func TestSecretsScrubbedFromEchoes(t *testing.T) {
	const (
		token    = "tok-3f9a7c1e-never-show"
		password = "pw-51d0e2b8-never-show"
		apiKey   = "key-9d2c4b7a-never-show"
	)
	echo := func(pad int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			names := make([]string, 0, len(r.Header))
			for name := range r.Header {
				names = append(names, name)
			}
			sort.Strings(names)
			var b strings.Builder
			b.WriteString(strings.Repeat("x", pad))
			for _, name := range names {
				if name == "Authorization" || name == "X-Api-Key" {
					fmt.Fprintf(&b, "%s=%s; ", name, r.Header.Get(name))
				}
			}
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(b.String()))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	basic := base64.StdEncoding.EncodeToString([]byte("sre:" + password))
	for _, tt := range []struct {
		name     string
		settings backend.DataSourceInstanceSettings
		pad      int
		secrets  []string
	}{
		{name: "bearer token", settings: backend.DataSourceInstanceSettings{
			DecryptedSecureJSONData: map[string]string{"bearerToken": token}}, secrets: []string{token}},
		{name: "basic auth", settings: backend.DataSourceInstanceSettings{BasicAuthEnabled: true, BasicAuthUser: "sre",
			DecryptedSecureJSONData: map[string]string{"basicAuthPassword": password}}, secrets: []string{password, basic}},
		{name: "custom header", settings: backend.DataSourceInstanceSettings{JSONData: []byte(`{"timeout":5,"httpHeaderName1":"X-Api-Key"}`),
			DecryptedSecureJSONData: map[string]string{"httpHeaderValue1": apiKey}}, secrets: []string{apiKey}},
		// The excerpt of the body ends 10 characters into the token.
		{name: "a token the excerpt cuts", pad: 240 - len("Authorization=Bearer ") - 10, settings: backend.DataSourceInstanceSettings{
			DecryptedSecureJSONData: map[string]string{"bearerToken": token}}, secrets: []string{token[:10]}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			settings := tt.settings
			settings.UID, settings.URL = "pw", echo(tt.pad).URL
			if settings.JSONData == nil {
				settings.JSONData = []byte(`{"timeout":5}`)
			}
			inst, err := NewDatasource(context.Background(), settings)
			if err != nil {
				t.Fatal(err)
			}
			ds := inst.(*Datasource)
			t.Cleanup(ds.Dispose)
			health, _ := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			resp, _ := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{liveQuery("A", `,"queryType":"pods"`)}})
			var resource string
			_ = ds.CallResource(context.Background(), &backend.CallResourceRequest{Path: "metrics", Method: http.MethodGet},
				backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { resource = string(r.Body); return nil }))
			answers := map[string]string{"health": health.Message, "resource": resource}
			if dr := resp.Responses["A"]; dr.Error != nil {
				answers["query"] = dr.Error.Error()
			}
			for where, text := range answers {
				if !strings.Contains(text, "400") {
					t.Errorf("%s does not quote the answer: %s", where, text)
				}
				for _, secret := range tt.secrets {
					if strings.Contains(text, secret) {
						t.Errorf("%s holds a secret: %s", where, text)
					}
				}
			}
		})
	}
}

// TestHealthSaysPrometheusWasReached: a server error (5xx) or an answer
// asking to retry later (429, 503 with Retry-After) was reported as
// "Cannot reach Prometheus ... check that the server is up", although it
// was reached; a health check cut short by Grafana's own deadline blamed
// the data source's timeout.
func TestHealthSaysPrometheusWasReached(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		closed  bool          // the server is gone
		timeout time.Duration // Grafana's deadline for the check
		want    string
	}{
		{name: "500", handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) },
			want: "is reachable but answered with a server error"},
		{name: "503 with Retry-After beyond the timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, want: "is reachable but asked to be retried later"},
		{name: "429 without Retry-After", handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTooManyRequests) },
			want: "is reachable but asked to be retried later"},
		{name: "Grafana's deadline", timeout: 200 * time.Millisecond, handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		}, want: "Grafana's deadline for the health check passed"},
		{name: "nothing listens", closed: true, handler: func(http.ResponseWriter, *http.Request) {}, want: "Cannot reach Prometheus"},
		// buildinfo's GET answers, the queries' POSTs are refused: the check must send a query.
		{name: "a proxy that lets only GET through", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"success","data":{"version":"3.13.5"}}`)
		}, want: "refuses the POST requests Pairwise queries with (HTTP 405): allow POST"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			if tt.closed {
				srv.Close()
			}
			inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "pw", URL: srv.URL, JSONData: []byte(`{"timeout":5}`)})
			if err != nil {
				t.Fatal(err)
			}
			ds := inst.(*Datasource)
			defer ds.Dispose()
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			h, err := ds.CheckHealth(ctx, &backend.CheckHealthRequest{})
			if err != nil || h.Status != backend.HealthStatusError || !strings.Contains(h.Message, tt.want) ||
				!tt.closed && strings.Contains(h.Message, "Cannot reach") || tt.timeout > 0 && strings.Contains(h.Message, "raise the timeout") {
				t.Fatalf("%v %v: %s; want %q", err, h.Status, h.Message, tt.want)
			}
		})
	}
}
