package engine

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// fleetSource answers FleetHistograms from fixed series keyed by selector;
// the answers of a real Prometheus are tested in internal/live.
type fleetSource struct {
	mu      sync.Mutex
	series  map[string]prom.Series
	kinds   map[string]prom.Kind
	fail    map[string]error
	block   map[string]bool // wait for cancellation, then return its error
	ranges  []prom.Range
	blocked chan struct{}
}

func (s *fleetSource) FleetHistograms(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, prom.Kind, error) {
	key := sel.String()
	s.mu.Lock()
	s.ranges = append(s.ranges, r)
	s.mu.Unlock()
	if s.block[key] {
		<-ctx.Done()
		return nil, kind, context.Cause(ctx)
	}
	if err := s.fail[key]; err != nil {
		return nil, kind, err
	}
	k := s.kinds[key]
	if k == "" {
		k = prom.Native
	}
	return s.series[key], k, nil
}

var end = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// classicHist has 100 observations up to 1s and `slow` more: in (1, 2] when
// slow is at most 10, else in (2, 4], so its p99 doubles.
func classicHist(t *testing.T, slow float64) *histogram.Histogram {
	cumulative := []float64{50, 100, 100 + slow, 100 + slow, 100 + slow}
	if slow > 10 {
		cumulative[2] = 100
	}
	h, err := histogram.FromClassic([]float64{0.5, 1, 2, 4, math.Inf(1)}, cumulative)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func minutes(t *testing.T, n int, slow float64) prom.Series {
	s := prom.Series{}
	for i := 0; i < n; i++ {
		s[end.Add(-time.Duration(i)*time.Minute).Unix()] = classicHist(t, slow)
	}
	return s
}

func request(t *testing.T, warmup int) Request {
	b, _ := selector.Parse(`{track="baseline"}`)
	c, _ := selector.Parse(`{track="canary"}`)
	cfg := verdict.Default()
	cfg.WindowMinutes, cfg.GoodNeeded, cfg.BadLimit, cfg.WarmupMinutes = 10, 5, 3, warmup
	cfg.MinTailObservations = 1
	w, err := pairing.Ending(end, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Metric: "m", Baseline: b, Canary: c, Kind: prom.Auto, Config: cfg, Window: w}
}

func TestAnalyze(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	tests := []struct {
		name    string
		src     *fleetSource
		warmup  int
		wantErr string
		check   func(t *testing.T, res *Result, src *fleetSource)
	}{
		{name: "slower canary rolls back", src: &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 10), canary: minutes(t, 10, 40)}},
			check: func(t *testing.T, res *Result, _ *fleetSource) {
				if res.Decision != verdict.Rollback || res.Counts.Bad != 10 || res.Worst < 0 {
					t.Fatalf("%s %+v", res.Decision, res.Counts)
				}
			}},
		{name: "a canary that is not there is no-data, flagged", src: &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 10)}},
			check: func(t *testing.T, res *Result, _ *fleetSource) {
				if res.Decision != verdict.Hold || res.Counts.NoData != 10 || len(res.Flags) != 1 || res.Flags[0] != verdict.FlagFleetMissing {
					t.Fatalf("%s %+v %v", res.Decision, res.Counts, res.Flags)
				}
			}},
		{name: "no data at all is an error", src: &fleetSource{}, wantErr: "no data in the window"},
		{name: "one failing fleet fails the analysis and cancels the other",
			src:     &fleetSource{fail: map[string]error{base: prom.ErrTimeout}, block: map[string]bool{canary: true}},
			wantErr: "query baseline histogram: prometheus did not answer in time"},
		{name: "kinds that differ are a warning", src: &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 10), canary: minutes(t, 10, 10)}, kinds: map[string]prom.Kind{canary: prom.Classic}},
			check: func(t *testing.T, res *Result, _ *fleetSource) {
				if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "native histograms and the canary from classic") {
					t.Fatalf("warnings %v", res.Warnings)
				}
			}},
		{name: "warm-up looks back before the window", warmup: 3, src: &fleetSource{series: map[string]prom.Series{base: minutes(t, 13, 10), canary: minutes(t, 5, 40)}},
			check: func(t *testing.T, res *Result, src *fleetSource) {
				// The canary serves the last 5 minutes; the first 3 of those are warm-up.
				if res.Counts.Warmup != 8 || res.Counts.Bad != 2 {
					t.Fatalf("counts %+v", res.Counts)
				}
				for _, r := range src.ranges {
					if !r.Start.Equal(end.Add(-12 * time.Minute)) {
						t.Fatalf("fetched from %v, want three minutes before the window", r.Start)
					}
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Analyze(context.Background(), tt.src, request(t, tt.warmup))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, res, tt.src)
		})
	}
}

func TestAnalyzeRejectsBadRequests(t *testing.T) {
	req := request(t, 0)
	req.Config.BadLimit = 0
	if _, err := Analyze(context.Background(), &fleetSource{}, req); err == nil || !strings.Contains(err.Error(), "badLimit") {
		t.Fatalf("error %v", err)
	}
	req = request(t, 0)
	req.Metric = "up or vector(1)"
	if _, err := Analyze(context.Background(), &fleetSource{}, req); err == nil || !errors.Is(err, err) || !strings.Contains(err.Error(), "invalid metric name") {
		t.Fatalf("error %v", err)
	}
}
