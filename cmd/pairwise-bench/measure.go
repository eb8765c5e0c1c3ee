package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

const metric = "http_request_duration_seconds"

// benchEnd is the fixed end of every generated data set (a whole minute in
// the past), so runs are reproducible.
var benchEnd = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

var (
	baseSel = mustSel(`{service="checkout",track="baseline"}`)
	canSel  = mustSel(`{service="checkout",track="canary"}`)
)

func mustSel(s string) selector.Selector {
	sel, err := selector.Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// median of xs (NaN when empty).
func median(xs []float64) float64 { return percentile(xs, 0.5) }

// percentile is the linear-interpolated p-quantile (0..1) of xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := p * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func maxOf(xs []float64) float64 {
	m := math.NaN()
	for _, x := range xs {
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return m
}

// analysisRequest is the engine request for the window of n minutes ending at end.
func analysisRequest(end time.Time, n int, kind prom.Kind) (engine.Request, error) {
	w, err := pairing.Ending(end, n, 0)
	if err != nil {
		return engine.Request{}, err
	}
	cfg := verdict.Default()
	cfg.WindowMinutes = n
	if cfg.GoodNeeded > n {
		cfg.GoodNeeded = n
	}
	if cfg.BadLimit > n {
		cfg.BadLimit = n
	}
	return engine.Request{Metric: metric, Baseline: baseSel, Canary: canSel, Kind: kind, Config: cfg, Window: w}, nil
}

// runEngine is one engine.Analyze, timed.
func runEngine(ctx context.Context, client *prom.Client, req engine.Request) (time.Duration, *engine.Result, error) {
	t0 := time.Now()
	res, err := engine.Analyze(ctx, client, req)
	d := time.Since(t0)
	if err != nil {
		return d, nil, err
	}
	if len(res.Minutes) != req.Window.Minutes() {
		return d, nil, fmt.Errorf("engine returned %d minutes, want %d", len(res.Minutes), req.Window.Minutes())
	}
	return d, res, nil
}

var httpClient = &http.Client{Timeout: 10 * time.Minute}

// rangeQuery posts one range query at step 60 s over the window and returns
// the body. decode=true decodes the matrix like a dashboard client would.
func rangeQuery(ctx context.Context, base, query string, w pairing.Window, decode bool) (int, error) {
	form := url.Values{
		"query": {query},
		"start": {strconv.FormatInt(w.First.Unix(), 10)},
		"end":   {strconv.FormatInt(w.Last.Unix(), 10)},
		"step":  {"60"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/query_range", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
		return 0, fmt.Errorf("query %s: %s: %s", query, resp.Status, b)
	}
	if !decode {
		n, err := io.Copy(io.Discard, resp.Body)
		return int(n), err
	}
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("query %s: status %s", query, body.Status)
	}
	n := 0
	for _, s := range body.Data.Result {
		for _, v := range s.Values {
			if str, ok := v[1].(string); ok {
				if _, err := strconv.ParseFloat(str, 64); err != nil {
					return 0, err
				}
			}
			n++
		}
	}
	return n, nil
}

// runAll issues queries sequentially or all at once, and times the lot.
func runAll(ctx context.Context, base string, queries []string, w pairing.Window, concurrent, decode bool) (time.Duration, error) {
	t0 := time.Now()
	if !concurrent {
		for _, q := range queries {
			if _, err := rangeQuery(ctx, base, q, w, decode); err != nil {
				return 0, err
			}
		}
		return time.Since(t0), nil
	}
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = rangeQuery(ctx, base, q, w, decode)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// engineQueries are the two range queries engine.Analyze issues for kind.
func engineQueries(kind prom.Kind) []string {
	if kind == prom.Classic {
		return []string{prom.ClassicQuery(metric, baseSel, prom.DefaultScrapeInterval), prom.ClassicQuery(metric, canSel, prom.DefaultScrapeInterval)}
	}
	return []string{prom.NativeQuery(metric, baseSel, prom.DefaultScrapeInterval), prom.NativeQuery(metric, canSel, prom.DefaultScrapeInterval)}
}

// dashboardQueries is what a Grafana dashboard issues for the same figures:
// one histogram_quantile range query per quantile per fleet, plus one request
// rate query per fleet.
func dashboardQueries(kind prom.Kind, quantiles []float64) []string {
	var qs []string
	for _, sel := range []selector.Selector{baseSel, canSel} {
		for _, q := range quantiles {
			qk := strconv.FormatFloat(q, 'f', -1, 64)
			if kind == prom.Classic {
				qs = append(qs, fmt.Sprintf("histogram_quantile(%s, sum by (le) (rate(%s[1m])))", qk, sel.With(metric+"_bucket")))
			} else {
				qs = append(qs, fmt.Sprintf("histogram_quantile(%s, sum(rate(%s[1m])))", qk, sel.With(metric)))
			}
		}
		if kind == prom.Classic {
			qs = append(qs, fmt.Sprintf("sum(rate(%s[1m]))", sel.With(metric+"_count")))
		} else {
			qs = append(qs, fmt.Sprintf("histogram_count(sum(rate(%s[1m])))", sel.With(metric)))
		}
	}
	return qs
}

// timing is the repeated durations of one measured thing.
type timing []time.Duration

func (t timing) median() float64 {
	xs := make([]float64, len(t))
	for i, d := range t {
		xs[i] = d.Seconds()
	}
	return median(xs)
}

func (t timing) min() float64 { return slices.Min(t).Seconds() }
func (t timing) max() float64 { return slices.Max(t).Seconds() }

// alternate runs each measurement once per repetition, rotating which goes
// first so that no side always meets a cache warmed by the other. One untimed
// warm-up round runs first.
func alternate(reps int, fns ...func() (time.Duration, error)) ([]timing, error) {
	out := make([]timing, len(fns))
	for _, f := range fns {
		if _, err := f(); err != nil {
			return nil, err
		}
	}
	for r := 0; r < reps; r++ {
		for k := range fns {
			i := (k + r) % len(fns)
			d, err := fns[i]()
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], d)
		}
	}
	return out, nil
}
