package prom

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// These servers stand in for what a real Prometheus cannot be made to do on
// demand: refuse credentials, hang, or be something else entirely. Answers of
// a real Prometheus are tested live in internal/ and cmd/pairwise.
func TestClientErrors(t *testing.T) {
	sel, _ := selector.Parse(`{track="canary"}`)
	r := Range{Start: time.Unix(1_800_000_000, 0), End: time.Unix(1_800_000_600, 0)}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		want    error
	}{
		{name: "401", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(401) }, want: ErrAuth},
		{name: "403", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(403) }, want: ErrAuth},
		{name: "not the Prometheus API", handler: func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html>Grafana</html>")) }, want: ErrNotProm},
		{name: "slow", timeout: 50 * time.Millisecond, handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}, want: ErrTimeout},
		{name: "query timeout reported by Prometheus", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(503)
			w.Write([]byte(`{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`))
		}, want: ErrTimeout},
		{name: "bad data", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(400)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution"}`))
		}, want: ErrBadQuery},
		{name: "float samples are not a native histogram", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1800000000,"1"]]}]}}`))
		}, want: ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c, err := New(srv.URL, tt.timeout)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.FleetHistograms(context.Background(), "m", sel, Native, r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestClientUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, _ := New(url, time.Second)
	if _, err := c.BuildInfo(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error = %v, want ErrUnavailable", err)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:9090", "ftp://x", "http://"} {
		if _, err := New(u, 0); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	// A query string or fragment: the API's paths would land inside it,
	// and it is never repeated (it may hold a key).
	for _, u := range []string{"http://prom:9090?api_key=SECRET123", "http://prom:9090/prom/?x=SECRET123", "http://prom:9090#SECRET123", "http://prom:9090/?", "http://prom:9090#"} {
		_, err := New(u, 0)
		if err == nil || !strings.Contains(err.Error(), "query string or a fragment") || strings.Contains(err.Error(), "SECRET123") {
			t.Errorf("New(%q): %v; want refused, the query string not repeated", u, err)
		}
	}
	for _, u := range []string{"http://prom:9090", "http://prom:9090/", "https://mimir.example/prometheus/"} {
		if _, err := New(u, 0); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
}

func TestQueriesRenderParsedSelectors(t *testing.T) {
	sel, err := selector.Parse(`{ track = "canary", pod =~ 'a.*' }`)
	if err != nil {
		t.Fatal(err)
	}
	if got := NativeQuery("h", sel, 0); got != `sum(increase(h{track="canary",pod=~"a.*"}[75s])) * 0.8` {
		t.Error(got)
	}
	if got := ClassicQuery("h", sel, 30*time.Second); got != `sum by (le) (increase(h_bucket{track="canary",pod=~"a.*"}[90s])) * 0.6666666666666666` {
		t.Error(got)
	}
	if got := PodsClassicQuery("h", "pod", sel, 0); !strings.HasPrefix(got, "sum by (pod, le) (") {
		t.Error(got)
	}
}

// TestRequestsQuery: a fleet's requests and failed requests, each read as
// the fleet's histogram is (a whole minute), told apart by pairwise_part.
func TestRequestsQuery(t *testing.T) {
	sel, _ := selector.Parse(`{track="canary"}`)
	failed, _ := selector.ParseNarrowing(`{code=~"5.."}`)
	// Each read once: a counter's floats, or a native histogram's
	// histograms, whose count FleetRequests reads.
	want := `label_replace(sum(increase(http_requests_total{track="canary"}[75s])) * 0.8, "pairwise_part", "requests", "", "") or label_replace(sum(increase(http_requests_total{track="canary",code=~"5.."}[75s])) * 0.8, "pairwise_part", "errors", "", "")`
	if got := RequestsQuery("http_requests_total", sel, failed, 15*time.Second); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Prometheus 3's UTF-8 names are quoted where PromQL needs it, and the
// series the rule pack records keep classic names (TestJudgeUTF8Names and
// rules/tests/utf8.yml run them through Prometheus).
func TestQueriesQuoteUTF8Names(t *testing.T) {
	sel, err := selector.Parse(`{"service.name"="checkout",track="canary"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ got, want string }{
		{NativeQuery("http.server.request.duration", sel, 0), `sum(increase({"http.server.request.duration","service.name"="checkout",track="canary"}[75s])) * 0.8`},
		{ClassicQuery("http.server.request.duration", sel, 0), `sum by (le) (increase({"http.server.request.duration_bucket","service.name"="checkout",track="canary"}[75s])) * 0.8`},
		{PodsNativeQuery("http.server.request.duration", "k8s.pod.name", sel, 0), `sum by ("k8s.pod.name") (increase({"http.server.request.duration","service.name"="checkout",track="canary"}[75s])) * 0.8`},
		{PodsClassicQuery("h", "k8s.pod.name", sel, 0), `sum by ("k8s.pod.name", le) (increase(h_bucket{"service.name"="checkout",track="canary"}[75s])) * 0.8`},
		{MinuteHistogramRecord("http.server.request.duration", Native), "canary_fleet:U__http_2e_server_2e_request_2e_duration:increase_1m"},
		{MinuteHealthRecord("rpc/server-duration", Classic), "canary_fleet:U__rpc_2f_server_2d_duration_bucket:health_1m"},
		{MinuteSamplesRecord("größe_x", Native), "canary_fleet:U__gr_f6__df_e__x:samples_1m"},
		// A metric spelled as another's escaped name keeps its own records.
		{MinuteHistogramRecord("http_server_request_duration", Native), "canary_fleet:http_server_request_duration:increase_1m"},
		{MinuteHistogramRecord("job:latency:rate1m", Native), "canary_fleet:job:latency:rate1m:increase_1m"},
	} {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
	// Record names are one to one with metrics.
	seen := map[string]string{}
	for _, m := range []string{"http.server.request.duration", "http_server.request.duration", "http-server/request.duration", "http_server_request_duration", "U__http_2e_server_2e_request_2e_duration", "http.server.request.duration_"} {
		if other, ok := seen[RecordMetric(m)]; ok {
			t.Errorf("%s and %s both record as %s", m, other, RecordMetric(m))
		}
		seen[RecordMetric(m)] = m
	}
	for label, ok := range map[string]bool{"pod": true, "k8s.pod.name": true, "pod name": false, `"pod"`: false, "": false} {
		if ValidLabel(label) != ok {
			t.Errorf("ValidLabel(%q) = %v, want %v", label, !ok, ok)
		}
	}
	// A pod label tells pods apart: not the bucket bound, not the name.
	for label, want := range map[string]string{"pod": "", "k8s.pod.name": "", "pod name": "not a label name", "le": "bucket bound", "__name__": "metric's name"} {
		err := CheckPodLabel(label)
		if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("CheckPodLabel(%q) = %v, want %q", label, err, want)
		}
	}
}

func TestAPIBucketDecoding(t *testing.T) {
	tests := []struct {
		in      string
		want    apiBucket
		wantErr bool
	}{
		{in: `[0,"0.1","0.2","3"]`, want: apiBucket{Boundaries: 0, Lower: 0.1, Upper: 0.2, Count: 3}},
		{in: ` [ 3 , "-2.938735877055719e-39" , "2.938735877055719e-39" , "0.5" ] `, want: apiBucket{Boundaries: 3, Lower: -2.938735877055719e-39, Upper: 2.938735877055719e-39, Count: 0.5}},
		{in: `[1,"-Inf","-4","1e+300"]`, want: apiBucket{Boundaries: 1, Lower: math.Inf(-1), Upper: -4, Count: 1e300}},
		{in: `[0,"0.1","0.2"]`, wantErr: true},
		{in: `[0,0.1,"0.2","3"]`, wantErr: true},
		{in: `{"a":1}`, wantErr: true},
		{in: `[x,"1","2","3"]`, wantErr: true},
	}
	for _, tt := range tests {
		var got apiBucket
		err := got.UnmarshalJSON([]byte(tt.in))
		if (err != nil) != tt.wantErr || !tt.wantErr && got != tt.want {
			t.Errorf("%s: got %+v, %v", tt.in, got, err)
		}
	}
}

// TestScrapesAMinute: what a fleet's samples a minute per series tell.
// UnevenScrapes: intervals that divide a minute, with a series that starts
// late or misses a scrape, are even; 25, 40 and 45 s are not. ScrapedEvery:
// the interval the minutes show plainly, none where they disagree, where the
// interval does not divide a minute, or with too few minutes to tell.
func TestScrapesAMinute(t *testing.T) {
	minutes, repeat := healthMinutes, repeated
	tests := []struct {
		name   string
		health map[int64]Health
		uneven bool
		every  int
	}{
		{"15 s", minutes(repeat(20, 4)...), false, 15},
		{"15 s, a series starting late and one missing a scrape", minutes(append(repeat(18, 4), 4-2.0/3, 4-1.0/3)...), false, 15},
		{"10 s", minutes(repeat(20, 6)...), false, 10},
		{"20 s, the series starting in the first minute", minutes(append([]float64{1}, repeat(11, 3)...)...), false, 20},
		{"30 s", minutes(repeat(20, 2)...), false, 30},
		{"60 s", minutes(repeat(20, 1)...), false, 60},
		{"60 s, five minutes", minutes(1, 1, 1, 1, 1), false, 60},
		{"60 s, four minutes are too few", minutes(1, 1, 1, 1), false, 0},
		{"45 s, four minutes are too few to tell it from 60 s", minutes(2, 1, 1, 2), false, 0},
		{"25 s, pods at different offsets", minutes(repeat(20, 2.4, 2.3, 2.5)...), true, 0},
		{"25 s", minutes(repeat(20, 2, 3, 2, 3, 2)...), true, 0},
		{"40 s", minutes(repeat(20, 2, 1)...), true, 0},
		{"45 s", minutes(repeat(21, 2, 1, 1)...), true, 0},
		{"25 s, too few minutes to tell", minutes(2, 3, 2, 3), false, 0},
		{"7 samples a minute do not divide it", minutes(repeat(20, 7)...), false, 0},
		{"15 s missing a scrape in most minutes", minutes(repeat(20, 3, 4, 3, 2, 3, 4)...), true, 0},
		// Two minutes of three must show the interval; a third of the
		// minutes a whole sample short is uneven.
		{"15 s, a series missing a scrape in every other minute", minutes(repeat(20, 4, 4-1.0/3)...), false, 0},
		{"15 s, a series missing a scrape in one minute of three", minutes(repeat(21, 4, 4, 4-1.0/3)...), false, 15},
		{"36 s: a sample short in one minute of three", minutes(repeat(21, 2, 2, 1)...), true, 0},
		// A canary of one pod: its series' samples are the samples per series.
		{"15 s, a fleet of one series", seriesMinutes(1, repeat(20, 4)...), false, 15},
		{"no samples", map[int64]Health{0: {Down: 1}}, false, 0},
	}
	for _, tt := range tests {
		if n, got := UnevenScrapes(tt.health); got != tt.uneven {
			t.Errorf("%s: %.2f samples a minute, uneven %v, want %v", tt.name, n, got, tt.uneven)
		}
		if got := ScrapedEvery(tt.health); got != tt.every {
			t.Errorf("%s: scraped every %d s, want %d s", tt.name, got, tt.every)
		}
	}
}

// healthMinutes is the health of a fleet of three series with the given
// samples per series in consecutive minutes.
func healthMinutes(perMinute ...float64) map[int64]Health { return seriesMinutes(3, perMinute...) }

// seriesMinutes is healthMinutes for a fleet of the given number of series.
func seriesMinutes(series float64, perMinute ...float64) map[int64]Health {
	out := map[int64]Health{}
	for i, n := range perMinute {
		out[int64(60*i)] = Health{Samples: series * n, Series: series, Reporting: series}
	}
	return out
}

// repeated is n figures of pattern, repeated.
func repeated(n int, pattern ...float64) []float64 {
	var out []float64
	for len(out) < n {
		out = append(out, pattern...)
	}
	return out[:n]
}

// TestGzipAnswers: the client asks for gzip itself and reads gzip answers
// (klauspost/compress), reads plain answers as they come, and names a gzip
// body it cannot read.
func TestGzipAnswers(t *testing.T) {
	answer := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1800000000,{"count":"3","sum":"0.3","buckets":[[0,"0.1","0.2","3"]]}]]}]}}`
	zipped := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	tests := []struct {
		name          string
		serverZips    bool
		body          []byte
		wantAsked     string
		wantErr       error
		wantErrSubstr string
	}{
		{name: "gzip asked for and read", serverZips: true, body: zipped(answer), wantAsked: "gzip"},
		{name: "a plain answer to a gzip request", body: []byte(answer), wantAsked: "gzip"},
		{name: "a gzip body that is not gzip", serverZips: true, body: []byte(answer), wantAsked: "gzip", wantErr: ErrNotProm, wantErrSubstr: "gzip body that cannot be read"},
		{name: "a gzip body cut short", serverZips: true, body: zipped(answer)[:40], wantAsked: "gzip", wantErr: ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked = r.Header.Get("Accept-Encoding")
				w.Header().Set("Content-Type", "application/json")
				if tt.serverZips {
					w.Header().Set("Content-Encoding", "gzip")
				}
				w.Write(tt.body)
			}))
			defer srv.Close()
			c, err := New(srv.URL, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			series, _, err := c.FleetHistograms(context.Background(), "h", faultSel, Native, faultRange)
			if asked != tt.wantAsked {
				t.Errorf("Accept-Encoding %q, want %q", asked, tt.wantAsked)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(fmt.Sprint(err), tt.wantErrSubstr) {
					t.Fatalf("error %v, want %v containing %q", err, tt.wantErr, tt.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h := series[1800000000]; h == nil || h.Count != 3 {
				t.Fatalf("decoded %v", series)
			}
		})
	}
}
