package testenv

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FakeProm is a controllable stand-in for the Prometheus HTTP API, for the
// faults a real Prometheus cannot be made to produce on demand: server
// errors, rate limiting with Retry-After, huge error pages, hangs, answers
// that are not the API, refused credentials. Scrape gaps and real query
// semantics are tested against the real Prometheus (Prometheus above).
//
// Between faults it answers as a healthy Prometheus serving two fleets of
// native histograms, one sample a minute: every query_range whose query holds
// track="canary" is the canary fleet, any other the baseline; each minute of
// each fleet holds the same log-normal latency distribution (median 50 ms),
// the canary's slowed by FakeOptions.CanarySlowdown. The fleet health query
// (prom.HealthCountsQuery) answers 4 pods scraped 4 times a minute, none down;
// other count_over_time queries 4, classic queries an empty matrix. Instant
// queries (/api/v1/query, with which the judge looks up the rule pack's
// recorded minute series) find nothing: an empty matrix for a range
// selector, an empty vector otherwise, so every fleet is read raw.
type FakeProm struct {
	URL  string
	opts FakeOptions
	srv  *httptest.Server
	done chan struct{}

	mu       sync.Mutex
	faults   []Fault
	always   *Fault
	requests []FakeRequest
}

// FakeOptions configure the healthy answers of a FakeProm.
type FakeOptions struct {
	// Authorization, when set, is the Authorization header every request
	// must carry; others are answered 401.
	Authorization string
	// CanarySlowdown multiplies the canary's latencies (0 means 1: identical
	// fleets).
	CanarySlowdown float64
	// RPS is each fleet's request rate (default 1,000 a second).
	RPS float64
	// Metric is the only histogram with data (default
	// http_request_duration_seconds); queries of others answer no series.
	Metric string
	// Warnings are attached to every successful answer, as Thanos or
	// Mimir do when an answer is partial.
	Warnings []string
	// NoInstantQuery answers /api/v1/query 404, as a backend serving
	// range queries only would.
	NoInstantQuery bool
}

// Fault is one scripted answer.
type Fault struct {
	Status int               // HTTP status (default 200)
	Header map[string]string // e.g. Retry-After
	Body   string            // the answer's start
	// Filler appends this many bytes of filler after Body: a proxy's huge page.
	Filler int
	// Delay waits this long before answering, unless the client gives up first.
	Delay time.Duration
	// Hang never answers: the client must give up.
	Hang bool
	// Drop sends the status, the headers and Body as the start of a longer
	// answer, then closes the connection: a connection dropped mid-answer.
	Drop bool
	// EchoAuthorization follows Body with the request's Authorization
	// header, as a proxy's error page that shows the request may.
	EchoAuthorization bool
}

// FakeRequest is a request the fake received.
type FakeRequest struct {
	Method string
	Path   string
	Header http.Header
	Form   url.Values
	At     time.Time
}

// FakePrometheus starts a FakeProm on 127.0.0.1, closed in t.Cleanup.
func FakePrometheus(t testing.TB, opts FakeOptions) *FakeProm {
	t.Helper()
	if opts.CanarySlowdown <= 0 {
		opts.CanarySlowdown = 1
	}
	if opts.RPS <= 0 {
		opts.RPS = 1000
	}
	if opts.Metric == "" {
		opts.Metric = "http_request_duration_seconds"
	}
	f := &FakeProm{opts: opts, done: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.done) }) // runs first: hung handlers return
	return f
}

// Fail scripts the answers to the next requests, one fault each, in order;
// later requests are answered healthily again.
func (f *FakeProm) Fail(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, faults...)
}

// FailAlways answers every request (after the scripted ones) with fault;
// nil restores healthy answers.
func (f *FakeProm) FailAlways(fault *Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.always = fault
}

// Requests returns the requests received so far, in order.
func (f *FakeProm) Requests() []FakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FakeRequest(nil), f.requests...)
}

func (f *FakeProm) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	f.requests = append(f.requests, FakeRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Form: r.Form, At: time.Now()})
	var fault *Fault
	if len(f.faults) > 0 {
		fault = &f.faults[0]
		f.faults = f.faults[1:]
	} else if f.always != nil {
		fault = f.always
	}
	f.mu.Unlock()

	if fault != nil {
		f.answer(w, r, *fault)
		return
	}
	if f.opts.Authorization != "" && r.Header.Get("Authorization") != f.opts.Authorization {
		w.Header().Set("WWW-Authenticate", `Basic realm="prometheus"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/api/v1/status/buildinfo":
		writeAPI(w, map[string]string{"version": "3.13.5-fake"})
	case "/api/v1/query_range":
		f.queryRange(w, r)
	case "/api/v1/query":
		if f.opts.NoInstantQuery {
			http.NotFound(w, r)
			return
		}
		resultType := "vector"
		if strings.HasSuffix(strings.TrimSpace(r.Form.Get("query")), "]") {
			resultType = "matrix"
		}
		writeAPI(w, map[string]any{"resultType": resultType, "result": []any{}}, f.opts.Warnings...)
	case "/api/v1/metadata":
		writeAPI(w, map[string][]map[string]string{"http_request_duration_seconds": {{"type": "histogram"}}})
	case "/api/v1/label/__name__/values":
		writeAPI(w, []string{"http_request_duration_seconds"})
	default:
		http.NotFound(w, r)
	}
}

func (f *FakeProm) answer(w http.ResponseWriter, r *http.Request, fault Fault) {
	if fault.Hang {
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	}
	if fault.Delay > 0 {
		timer := time.NewTimer(fault.Delay)
		defer timer.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		case <-timer.C:
		}
	}
	for k, v := range fault.Header {
		w.Header().Set(k, v)
	}
	if fault.Status == 0 {
		fault.Status = http.StatusOK
	}
	if fault.Drop {
		w.Header().Set("Content-Length", strconv.Itoa(len(fault.Body)+1024))
	}
	w.WriteHeader(fault.Status)
	_, _ = w.Write([]byte(fault.Body))
	if fault.EchoAuthorization {
		_, _ = w.Write([]byte(" request headers: Authorization: " + r.Header.Get("Authorization")))
	}
	if fault.Drop {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler) // net/http closes the connection, quietly
	}
	if fault.Filler > 0 {
		chunk := []byte(strings.Repeat("<p>Service Unavailable</p>\n", 1024))
		for left := fault.Filler; left > 0; left -= len(chunk) {
			if left < len(chunk) {
				chunk = chunk[:left]
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

func writeAPI(w http.ResponseWriter, data any, warnings ...string) {
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"status": "success", "data": data}
	if len(warnings) > 0 {
		body["warnings"] = warnings
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (f *FakeProm) queryRange(w http.ResponseWriter, r *http.Request) {
	query := r.Form.Get("query")
	start, err1 := strconv.ParseFloat(r.Form.Get("start"), 64)
	end, err2 := strconv.ParseFloat(r.Form.Get("end"), 64)
	step, err3 := strconv.ParseFloat(r.Form.Get("step"), 64)
	if err1 != nil || err2 != nil || err3 != nil || step <= 0 || end < start {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": "invalid start, end or step"})
		return
	}
	type sample = [2]any
	var times []float64
	for t := start; t <= end; t += step {
		times = append(times, t)
	}
	series := map[string]any{"metric": map[string]string{}}
	hasData := strings.Contains(query, f.opts.Metric+"{") || strings.Contains(query, f.opts.Metric+"[")
	switch {
	case !hasData:
		writeAPI(w, map[string]any{"resultType": "matrix", "result": []any{}}, f.opts.Warnings...)
		return
	case strings.Contains(query, `"pairwise_health"`):
		// The engine's fleet health: 4 pods, each scraped 4 times a minute, none down.
		var result []any
		for name, v := range map[string]string{"samples": "16", "series": "4", "reporting": "4"} {
			values := make([]sample, len(times))
			for i, t := range times {
				values[i] = sample{t, v}
			}
			result = append(result, map[string]any{"metric": map[string]string{"pairwise_health": name}, "values": values})
		}
		writeAPI(w, map[string]any{"resultType": "matrix", "result": result}, f.opts.Warnings...)
		return
	case strings.Contains(query, "count_over_time("):
		values := make([]sample, len(times))
		for i, t := range times {
			values[i] = sample{t, "4"}
		}
		series["values"] = values
	case strings.HasPrefix(query, "sum(increase("):
		slow := 1.0
		if strings.Contains(query, `track="canary"`) {
			slow = f.opts.CanarySlowdown
		}
		h := fakeHistogram(f.opts.RPS*60, 0.050*slow, 0.5)
		values := make([]sample, len(times))
		for i, t := range times {
			values[i] = sample{t, h}
		}
		series["histograms"] = values
	default:
		writeAPI(w, map[string]any{"resultType": "matrix", "result": []any{}}, f.opts.Warnings...)
		return
	}
	writeAPI(w, map[string]any{"resultType": "matrix", "result": []any{series}}, f.opts.Warnings...)
}

// fakeHistogram is a native histogram (schema 2: four buckets per doubling)
// of n log-normal observations, as the HTTP API writes it.
func fakeHistogram(n, median, sigma float64) map[string]any {
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-(math.Log(x)-math.Log(median))/(sigma*math.Sqrt2)) }
	var buckets [][4]any
	var count, sum float64
	for i := -40; i < 20; i++ {
		lo, hi := math.Pow(2, float64(i)/4), math.Pow(2, float64(i+1)/4)
		c := math.Round(n * (cdf(hi) - cdf(lo)))
		if c <= 0 {
			continue
		}
		buckets = append(buckets, [4]any{0, fmtFloat(lo), fmtFloat(hi), fmtFloat(c)})
		count += c
		sum += c * math.Sqrt(lo*hi)
	}
	return map[string]any{"count": fmtFloat(count), "sum": fmtFloat(sum), "buckets": buckets}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// String describes the fake for test logs.
func (f *FakeProm) String() string { return fmt.Sprintf("fake Prometheus at %s", f.URL) }
