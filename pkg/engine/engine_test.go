package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
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
	mu     sync.Mutex
	series map[string]prom.Series
	health map[string]map[int64]prom.Health
	kinds  map[string]prom.Kind
	// classic answers a query for classic histograms when it has the
	// selector: a fleet with native histograms and classic buckets both.
	classic map[string]prom.Series
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
	if c, ok := s.classic[key]; ok && kind == prom.Classic {
		return c, prom.Classic, nil
	}
	k := s.kinds[key]
	if k == "" {
		k = prom.Native
	}
	return s.series[key], k, nil
}

// FleetHealth answers one series with four samples a minute (a 15 s
// scrape) wherever the fleet has a histogram, or what health says.
func (s *fleetSource) FleetHealth(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[int64]prom.Health, error) {
	if h := s.health[sel.String()]; h != nil {
		return h, nil
	}
	out := map[int64]prom.Health{}
	for ts := range s.series[sel.String()] {
		out[ts] = prom.Health{Samples: 4, Series: 1, Reporting: 1}
	}
	return out, nil
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
	cfg.Rule = verdict.RuleReference // the plumbing is tested on the counting rule; TestAnalyzeEvidence below
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
				if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `the canary selector {track="canary"} selects no histogram samples of m between`) {
					t.Fatalf("warnings %q", res.Warnings)
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
					// The window ending at the first minute shown starts 9 minutes earlier.
					if !r.Start.Equal(end.Add(-21 * time.Minute)) {
						t.Fatalf("fetched from %v, want three minutes before the first window", r.Start)
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

// scaled multiplies every minute's counts, as a busier fleet would have.
func scaled(t *testing.T, n int, slow, factor float64) prom.Series {
	return scaledDeep(t, n, slow, factor, 1)
}

// scaledDeep is scaled with deep observations in (2, 4] besides (times
// factor): beyond the bucket that holds the p99 of fleets with slow at most
// 10, where the promote test counts. Without them that bucket is the
// highest with observations.
func scaledDeep(t *testing.T, n int, slow, factor, deep float64) prom.Series {
	s := prom.Series{}
	for ts, h := range minutes(t, n, slow) {
		cum := []float64{}
		for i, b := range h.Buckets {
			prev := 0.0
			if len(cum) > 0 {
				prev = cum[len(cum)-1]
			}
			if i == 3 {
				prev += deep * factor
			}
			cum = append(cum, prev+b.Count*factor)
		}
		les := []float64{0.5, 1, 2, 4, math.Inf(1)}
		g, err := histogram.FromClassic(les, cum)
		if err != nil {
			t.Fatal(err)
		}
		s[ts] = g
	}
	return s
}

func TestAnalyzeEvidence(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	tests := []struct {
		name        string
		slow        float64
		factor      float64
		since       time.Duration // before end; 0: none
		want        verdict.Decision
		wantShown   int
		wantAnchor  bool
		wantFetched time.Duration // fetch start before end
		shown       int           // minutes asked for; 0: 10
		wantWarning string        // a warning that must be there, "" none about the deployment
	}{
		{name: "a tail four times heavier rolls back", slow: 40, factor: 100, want: verdict.Rollback, wantShown: 10, wantFetched: 18 * time.Minute},
		// Two observations a minute beyond the p99 could not tell; the ten
		// times as many beyond the p90 (a vote of its own) do.
		{name: "a tail four times heavier on little traffic rolls back on the decade below", slow: 40, factor: 1, want: verdict.Rollback, wantShown: 10, wantFetched: 18 * time.Minute},
		{name: "identical fleets with a few observations a minute hold", slow: 10, factor: 0.05, want: verdict.Hold, wantShown: 10, wantFetched: 18 * time.Minute},
		{name: "identical busy fleets promote", slow: 10, factor: 300, want: verdict.Promote, wantShown: 10, wantFetched: 18 * time.Minute},
		{name: "since clips the window and anchors it", slow: 10, factor: 300, since: 5 * time.Minute, want: verdict.Promote, wantShown: 5, wantAnchor: true, wantFetched: 4 * time.Minute},
		// A deployment older than its window pools its evidence from its
		// start: every minute since is fetched.
		{name: "since before the first window anchors the evidence at the deployment's start", slow: 10, factor: 300, since: 30 * time.Minute, want: verdict.Promote, wantShown: 10, wantAnchor: true, wantFetched: 29 * time.Minute},
		{name: "a deployment a day older than the first minute shown is judged sliding", slow: 10, factor: 300, since: 24*time.Hour + 10*time.Minute, want: verdict.Promote, wantShown: 10, wantFetched: 18 * time.Minute, wantWarning: "more than a day before the first minute shown"},
		// Its last minute is past the day (sliding), its first within it.
		{name: "a deployment a day old at the last minute is fetched from its start", slow: 10, factor: 300, since: 24*time.Hour + time.Minute, want: verdict.Promote, wantShown: 10, wantFetched: 24 * time.Hour},
		// A range whose first minute is within the deployment's first day
		// is fetched from its start, however far past the day it reaches:
		// each minute is judged as it is alone (TestMinuteDecisionIndependentOfRange).
		{name: "a range reaching past the deployment's day is fetched from its start", slow: 10, factor: 300, since: 1500 * time.Minute, shown: 100, want: verdict.Promote, wantShown: 100, wantFetched: 1499 * time.Minute},
		// Unless that reads more points than Prometheus returns: then it
		// is judged sliding, and says why.
		{name: "a week's range from a deployment's first day is judged sliding", slow: 10, factor: 300, since: (MaxShownMinutes + 1000) * time.Minute, shown: MaxShownMinutes, want: verdict.Promote, wantShown: MaxShownMinutes, wantFetched: (MaxShownMinutes + 10 - 2) * time.Minute, wantWarning: "more than the 11000 points Prometheus returns per series"},
		// Asked for more than a day, the minutes before the deployment are
		// still left out, however long ago it started.
		{name: "since inside a range of two days clips it", slow: 10, factor: 300, since: 30 * time.Hour, shown: 2 * 24 * 60, want: verdict.Promote, wantShown: 30 * 60, wantAnchor: false, wantFetched: 30*time.Hour - time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fleetSource{series: map[string]prom.Series{base: scaled(t, 40, 10, tt.factor), canary: scaled(t, 40, tt.slow, tt.factor)}}
			req := request(t, 0)
			req.Config.Rule = verdict.RuleEvidence
			req.Config.WindowMinutes = 10
			if tt.shown > 0 {
				w, err := pairing.Ending(end, tt.shown, 0)
				if err != nil {
					t.Fatal(err)
				}
				req.Window = w
			}
			if tt.since > 0 {
				req.Since = end.Add(-tt.since)
			}
			res, err := Analyze(context.Background(), src, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.want || len(res.Minutes) != tt.wantShown || res.Evidence.Anchored != tt.wantAnchor {
				t.Fatalf("%s, %d minutes shown, anchored %v: %s", res.Decision, len(res.Minutes), res.Evidence.Anchored, res.Reason)
			}
			// A deployment too old to anchor says so, and says why.
			about := slices.IndexFunc(res.Warnings, func(w string) bool {
				return strings.Contains(w, "judged as sliding windows") || strings.Contains(w, "judged as a sliding window")
			})
			if tt.wantWarning == "" && about >= 0 || tt.wantWarning != "" && (about < 0 || !strings.Contains(res.Warnings[about], tt.wantWarning)) {
				t.Fatalf("warnings %q, want one saying %q", res.Warnings, tt.wantWarning)
			}
			if got := src.ranges[0].Start; !got.Equal(end.Add(-tt.wantFetched)) {
				t.Fatalf("fetched from %v, want %v", got, end.Add(-tt.wantFetched))
			}
			for _, m := range res.Minutes {
				if m.Time.Before(end.Add(-30 * time.Minute)) {
					continue // the fleets' data start 40 minutes before end
				}
				if m.Decision == "" || !m.Evidence.Valid {
					t.Fatalf("minute %v has no decision or no evidence: %+v", m.Time, m)
				}
			}
		})
	}
	// Busy identical fleets whose p99 lies in their highest bucket with
	// observations hold: nothing lies beyond that bucket's bound, where the
	// promote test counts, and the reason says to add buckets.
	top := &fleetSource{series: map[string]prom.Series{base: scaledDeep(t, 40, 10, 100, 0), canary: scaledDeep(t, 40, 10, 100, 0)}}
	req := request(t, 0)
	req.Config.Rule = verdict.RuleEvidence
	req.Config.WindowMinutes = 10
	if res, err := Analyze(context.Background(), top, req); err != nil || res.Decision != verdict.Hold || !strings.Contains(res.Reason, "nothing lies beyond the bucket that holds the p99") {
		t.Fatalf("p99 in the highest bucket: %v, %+v", err, res)
	}
	req = request(t, 0)
	req.Since = end.Add(time.Minute)
	// None of its minutes is whole: hold, with nothing read (the source
	// has no series), as the gate and the data source answer it.
	if res, err := Analyze(context.Background(), &fleetSource{}, req); err != nil || res.Decision != verdict.Hold || len(res.Minutes) != 0 || !strings.Contains(res.Reason, "nothing to judge yet") {
		t.Fatalf("a deployment after the window: %v, %+v", err, res)
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
	// A canary selector that lost its track label holds the baseline's
	// pods: refused before anything is read, never judged.
	req = request(t, 0)
	service := selector.Matcher{Name: "service", Op: selector.Equal, Value: "checkout"}
	req.Baseline, req.Canary = append(selector.Selector{service}, req.Baseline...), selector.Selector{service}
	src := &fleetSource{}
	if _, err := Analyze(context.Background(), src, req); err == nil || !strings.Contains(err.Error(), "also selects every series of the baseline selector") {
		t.Fatalf("error %v", err)
	}
	if len(src.ranges) > 0 {
		t.Fatalf("the fleets were read %d times", len(src.ranges))
	}
}

// TestAnalyzeCompleteness: minutes in which a canary pod did not report are
// partial, carry no evidence, and hold a window that would promote; a pod
// that stays gone is accepted as the fleet's new size, with a warning.
func TestAnalyzeCompleteness(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	healthy := func(n int) map[int64]prom.Health {
		out := map[int64]prom.Health{}
		for i := 0; i < n; i++ {
			out[end.Add(-time.Duration(i)*time.Minute).Unix()] = prom.Health{Samples: 40, Series: 10, Reporting: 10}
		}
		return out
	}
	gap := healthy(40)
	for _, ago := range []int{3, 4} { // a canary pod's scrapes fail for two minutes
		gap[end.Add(-time.Duration(ago)*time.Minute).Unix()] = prom.Health{Samples: 36, Series: 9, Reporting: 9}
	}
	down := healthy(40)
	down[end.Unix()] = prom.Health{Samples: 40, Series: 10, Reporting: 10, Down: 1}
	gone := healthy(40)
	for ago := 0; ago < 16; ago++ { // deleted 16 minutes ago: 5 partial minutes before the window, then accepted
		gone[end.Add(-time.Duration(ago)*time.Minute).Unix()] = prom.Health{Samples: 36, Series: 9, Reporting: 9}
	}
	tests := []struct {
		name     string
		health   map[int64]prom.Health
		partial  int
		want     verdict.Decision
		warnings int
	}{
		{name: "complete fleets promote", health: healthy(40), want: verdict.Promote},
		{name: "a scrape gap makes partial minutes and holds", health: gap, partial: 2, want: verdict.Hold},
		{name: "a target down in the last minute holds", health: down, partial: 1, want: verdict.Hold},
		{name: "a pod deleted long ago is accepted", health: gone, want: verdict.Promote, warnings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fleetSource{series: map[string]prom.Series{base: scaled(t, 40, 10, 300), canary: scaled(t, 40, 10, 300)},
				health: map[string]map[int64]prom.Health{base: healthy(40), canary: tt.health}}
			req := request(t, 0)
			req.Config.Rule = verdict.RuleEvidence
			res, err := Analyze(context.Background(), src, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.want || res.Counts.Partial != tt.partial || len(res.Warnings) != tt.warnings {
				t.Fatalf("%s, %d partial, warnings %q: %s", res.Decision, res.Counts.Partial, res.Warnings, res.Reason)
			}
		})
	}
}

// TestCompletenessDoesNotDependOnTheRange: a minute's verdict is the same
// whatever range it is asked in; completeness looks back before the range.
func TestCompletenessDoesNotDependOnTheRange(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	h := map[int64]prom.Health{}
	for i := 0; i < 40; i++ {
		r := 10.0
		if i < 3 { // a canary pod stopped reporting three minutes ago
			r = 9
		}
		h[end.Add(-time.Duration(i)*time.Minute).Unix()] = prom.Health{Samples: 4 * r, Series: r, Reporting: r}
	}
	src := &fleetSource{series: map[string]prom.Series{base: scaled(t, 40, 10, 300), canary: scaled(t, 40, 10, 300)},
		health: map[string]map[int64]prom.Health{canary: h}}
	verdicts := func(shown int) map[int64]verdict.Verdict {
		req := request(t, 0)
		req.Config.Rule, req.Config.WindowMinutes = verdict.RuleEvidence, 1
		req.Window = pairing.Window{First: end.Add(-time.Duration(shown-1) * time.Minute), Last: end}
		res, err := Analyze(context.Background(), src, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]verdict.Verdict{}
		for _, m := range res.Minutes {
			out[m.Time.Unix()] = m.Verdict
		}
		return out
	}
	long, short := verdicts(10), verdicts(3)
	for ts, v := range short {
		if long[ts] != v || v != verdict.Partial {
			t.Errorf("minute %s: %s asked alone, %s in a longer range; want partial in both", time.Unix(ts, 0).UTC().Format("15:04"), v, long[ts])
		}
	}
}

// TestSparseScrapes: a fleet whose series have samples but never two in a
// minute (scraped every 60 s) has no minute histograms; Pairwise says why
// instead of calling it missing. Both fleets so: ErrNoData naming the
// scrape interval; one fleet so: a warning on the judgement; a fleet that
// has no samples at all keeps the plain messages.
func TestSparseScrapes(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	once := map[int64]prom.Health{}
	for i := 0; i < 20; i++ {
		once[end.Add(-time.Duration(i)*time.Minute).Unix()] = prom.Health{Samples: 3, Series: 3, Reporting: 0}
	}
	none := map[int64]prom.Health{}
	tests := []struct {
		name                 string
		series               map[string]prom.Series
		health               map[string]map[int64]prom.Health
		wantErr, wantWarning string
	}{
		{name: "both fleets once a minute", series: map[string]prom.Series{},
			health:  map[string]map[int64]prom.Health{base: once, canary: once},
			wantErr: "has samples for {track=\"baseline\"} and {track=\"canary\"}"},
		{name: "neither fleet has samples", series: map[string]prom.Series{},
			health:  map[string]map[int64]prom.Health{base: none, canary: none},
			wantErr: "has no histogram samples"},
		{name: "the canary once a minute", series: map[string]prom.Series{base: minutes(t, 10, 1)},
			health:      map[string]map[int64]prom.Health{canary: once},
			wantWarning: "the canary fleet: its series have 1.0 samples a minute, a scrape interval of about 60 s, but scrapeIntervalSeconds is 15"},
		{name: "the canary has no samples", series: map[string]prom.Series{base: minutes(t, 10, 1)},
			health: map[string]map[int64]prom.Health{canary: none}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fleetSource{series: tt.series, health: tt.health}
			res, err := Analyze(context.Background(), src, request(t, 0))
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want ErrNoData with %q", err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "has samples") && !strings.Contains(err.Error(), "set scrapeIntervalSeconds to the fleets' scrape interval") {
					t.Fatalf("the error does not say what to do: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(res.Warnings, "\n")
			if tt.wantWarning == "" && strings.Contains(got, "scrapeIntervalSeconds") || !strings.Contains(got, tt.wantWarning) {
				t.Fatalf("warnings %q, want %q", res.Warnings, tt.wantWarning)
			}
		})
	}
}

// TestScrapeIntervalFromHealth: when both fleets' health plainly shows a
// scrape interval other than the configured one, their minutes are read
// again at it, and a warning says so; when the fleets disagree, or show no
// plain interval, the configured one stands.
func TestScrapeIntervalFromHealth(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	every := func(perMinute float64) map[int64]prom.Health {
		h := map[int64]prom.Health{}
		for i := 0; i < 20; i++ {
			h[end.Add(-time.Duration(i)*time.Minute).Unix()] = prom.Health{Samples: 3 * perMinute, Series: 3, Reporting: 3}
		}
		return h
	}
	tests := []struct {
		name             string
		baseline, canary map[int64]prom.Health
		want             int // the interval the minutes are read at
	}{
		{"both fleets every 10 s", every(6), every(6), 10},
		{"both fleets every 30 s", every(2), every(2), 30},
		{"both fleets every 15 s, as configured", every(4), every(4), 15},
		{"the fleets disagree", every(6), every(4), 15},
		{"no plain interval (25 s)", every(2.4), every(2.4), 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 1), canary: minutes(t, 10, 1)},
				health: map[string]map[int64]prom.Health{base: tt.baseline, canary: tt.canary}}
			req := request(t, 0)
			res, err := Analyze(context.Background(), src, req)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Request.Config.ScrapeIntervalSeconds; got != tt.want {
				t.Fatalf("read at %d s, want %d s", got, tt.want)
			}
			last := src.ranges[len(src.ranges)-1].Scrape
			if last != time.Duration(tt.want)*time.Second {
				t.Errorf("the last histograms read over a minute and %v, want %d s", last, tt.want)
			}
			note := fmt.Sprintf("the fleets' series are scraped every %d s, not every 15 s as scrapeIntervalSeconds says: their minutes were read at %d s", tt.want, tt.want)
			if warned := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, note) }); warned != (tt.want != 15) {
				t.Errorf("warnings %q: want %q: %v", res.Warnings, note, tt.want != 15)
			}
		})
	}
}

// rereadFails is a fleetSource that fails every read of histograms at a
// scrape interval other than 15 s.
type rereadFails struct{ *fleetSource }

func (s rereadFails) FleetHistograms(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, prom.Kind, error) {
	if r.Scrape != 15*time.Second {
		return nil, kind, fmt.Errorf("%w: HTTP 500", prom.ErrServer)
	}
	return s.fleetSource.FleetHistograms(ctx, metric, sel, kind, r)
}

// TestScrapeIntervalRereadFails: fleets scraped every 30 s, read at 15 s,
// and reading them again at 30 s fails. The minutes read at 15 s are
// partial or miss observations: the analysis fails. Before, they were
// judged with a warning, and identical fleets promoted (the judge exited
// 0).
func TestScrapeIntervalRereadFails(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	every30 := map[int64]prom.Health{}
	for i := 0; i < 20; i++ {
		every30[end.Add(-time.Duration(i)*time.Minute).Unix()] = prom.Health{Samples: 6, Series: 3, Reporting: 3}
	}
	src := rereadFails{&fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 1), canary: minutes(t, 10, 1)},
		health: map[string]map[int64]prom.Health{base: every30, canary: every30}}}
	res, err := Analyze(context.Background(), src, request(t, 0))
	if !errors.Is(err, prom.ErrServer) || !strings.Contains(fmt.Sprint(err), "scraped every 30 s, not every 15 s") || res != nil {
		t.Fatalf("got a result: %v, error %v; want no result and an error naming both intervals and the failure", res != nil, err)
	}
}

// TestLayoutWarnings: minutes whose fleets differ in layout are counted and
// named, those with no layout in common too; kinds that differ have their own
// warning and same layouts none.
func TestLayoutWarnings(t *testing.T) {
	classic := func(ub ...float64) *histogram.Histogram {
		cum := make([]float64, len(ub))
		for i := range cum {
			cum[i] = float64(10 * (i + 1))
		}
		h, err := histogram.FromClassic(ub, cum)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	native := func(schema int32) *histogram.Histogram {
		lo, hi := histogram.ExponentialBound(-1, schema), histogram.ExponentialBound(0, schema)
		h, err := histogram.FromNative([]histogram.APIBucket{{Lower: lo, Upper: hi, Count: 5}, {Lower: hi, Upper: histogram.ExponentialBound(1, schema), Count: 5}}, 10, 10)
		if err != nil || h.Schema != schema {
			t.Fatalf("schema %d: %v %+v", schema, err, h)
		}
		return h
	}
	inf := math.Inf(1)
	pair := func(b, c *histogram.Histogram) pairing.Pair { return pairing.Pair{Baseline: b, Canary: c} }
	for _, tc := range []struct {
		name  string
		pairs []pairing.Pair
		want  []string
	}{
		{"same layouts", []pairing.Pair{pair(native(3), native(3)), pair(classic(1, inf), classic(1, inf)), pair(nil, native(1))}, nil},
		{"kinds differ", []pairing.Pair{pair(native(3), classic(1, inf))}, nil},
		{"schemas differ", []pairing.Pair{pair(native(3), native(3)), pair(native(1), native(3)), pair(native(1), native(2))},
			[]string{"differ in layout in 2 of 3 minutes (baseline and canary: native schema 1 and 3, counted at schema 1)"}},
		{"classic bounds", []pairing.Pair{pair(classic(0.5, 1, inf), classic(1, 2, inf)), pair(classic(1, inf), classic(2, inf))},
			[]string{"differ in layout in 1 of 2 minutes (baseline and canary: 3 and 3 le bounds, counted at the 2 both have)",
				"no layout in common in 1 of 2 minutes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := layoutWarnings(tc.pairs)
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d warnings", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d: %q lacks %q", i, got[i], w)
				}
			}
		})
	}
}

// TestAutoReadsBothFleetsAlike: a canary that moved to native histograms,
// judged against a baseline with classic buckets only, is read from its
// classic buckets too (it still has them), so its minutes carry evidence;
// without them the kinds stay apart and the warning says nothing can be
// decided.
func TestAutoReadsBothFleetsAlike(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	nativeOnly := prom.Series{}
	for ts := range minutes(t, 10, 10) {
		nativeOnly[ts] = lognormalNative(t, 3)
	}
	for _, tc := range []struct {
		name        string
		classic     map[string]prom.Series
		wantKind    prom.Kind
		wantWarning string
	}{
		{"the canary has classic buckets too", map[string]prom.Series{canary: minutes(t, 10, 10)}, prom.Classic, "both are read from their classic buckets"},
		{"native only", nil, prom.Native, "no minute carries evidence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 10), canary: nativeOnly},
				kinds: map[string]prom.Kind{base: prom.Classic}, classic: tc.classic}
			req := request(t, 0)
			req.Config.Rule = verdict.RuleEvidence
			res, err := Analyze(context.Background(), src, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.CanaryKind != tc.wantKind || res.BaselineKind != prom.Classic {
				t.Errorf("kinds %s and %s, want classic and %s", res.BaselineKind, res.CanaryKind, tc.wantKind)
			}
			if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, tc.wantWarning) }) {
				t.Errorf("warnings %q lack %q", res.Warnings, tc.wantWarning)
			}
			withEvidence := 0
			for _, m := range res.Window.Minutes {
				if m.Evidence.Valid {
					withEvidence++
				}
			}
			if want := map[prom.Kind]int{prom.Classic: 10, prom.Native: 0}[tc.wantKind]; withEvidence != want {
				t.Errorf("%d minutes carry evidence, want %d", withEvidence, want)
			}
		})
	}
}

// lognormalNative is a native histogram of 110 observations at the schema.
func lognormalNative(t *testing.T, schema int32) *histogram.Histogram {
	t.Helper()
	var bs []histogram.APIBucket
	for i, c := range []float64{10, 40, 40, 15, 5} {
		idx := int32(i - 3)
		bs = append(bs, histogram.APIBucket{Lower: histogram.ExponentialBound(idx-1, schema), Upper: histogram.ExponentialBound(idx, schema), Count: c})
	}
	h, err := histogram.FromNative(bs, 110, 50)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// sharedSource is a fleetSource that counts the series both selectors
// select with a fixed answer: shared, a count at each minute's end (Unix
// seconds).
type sharedSource struct {
	*fleetSource
	shared map[int64]int
	err    error
	asked  int
}

func (s *sharedSource) SharedSeries(_ context.Context, _ string, _, _ selector.Selector, r prom.Range) (map[int64]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	out := map[int64]int{}
	for t, n := range s.shared {
		if u := time.Unix(t, 0); !u.Before(r.Start) && !u.After(r.End) {
			out[t] = n
		}
	}
	return out, s.err
}

// TestSharedSeries: fleets whose selectors name different labels are asked
// whether they share a series; one they share is refused, a backend that
// rejects the question is a warning, one that fails or garbles its answer
// fails the analysis. Fleets
// the selectors tell apart are not asked.
func TestSharedSeries(t *testing.T) {
	byPod := `{pod=~"canary-.+"}`
	req := request(t, 0)
	req.Canary, _ = selector.Parse(byPod)
	fleets := func() *fleetSource {
		return &fleetSource{series: map[string]prom.Series{`{track="baseline"}`: minutes(t, 10, 10), byPod: minutes(t, 10, 10)}}
	}
	for _, tc := range []struct {
		name      string
		n         int
		err       error
		wantErr   error
		wantNote  string
		tellApart bool
	}{
		{name: "none shared", n: 0},
		{name: "shared pods at the last minute are refused", n: 3, wantErr: ErrSharedSeries},
		{name: "a backend that rejects the question: a warning", err: prom.ErrBadQuery, wantNote: "whether a series is in both fleets could not be checked"},
		// Its histograms came from the same API: a garbled answer (a proxy's
		// HTML page) is a failure, never a reason to judge unchecked.
		{name: "a garbled answer: the analysis fails", err: prom.ErrNotProm, wantErr: prom.ErrNotProm},
		{name: "a backend that fails: the analysis fails", err: prom.ErrServer, wantErr: prom.ErrServer},
		{name: "fleets the selectors tell apart are not asked", n: 3, tellApart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &sharedSource{fleetSource: fleets(), shared: map[int64]int{end.Unix(): tc.n}, err: tc.err}
			r := req
			if tc.tellApart {
				r = request(t, 0)
				src.series[`{track="canary"}`] = src.series[byPod]
			}
			res, err := Analyze(context.Background(), src, r)
			want := 1
			if tc.tellApart {
				want = 0
			}
			if src.asked != want {
				t.Fatalf("asked %d times, want %d", src.asked, want)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			noted := strings.Contains(strings.Join(res.Warnings, "\n"), "whether a series is in both fleets")
			if noted != (tc.wantNote != "") || !strings.Contains(strings.Join(res.Warnings, "\n"), tc.wantNote) {
				t.Fatalf("warnings %q, want %q", res.Warnings, tc.wantNote)
			}
		})
	}
}

// TestSharedSeriesEarlierHolds: a series the fleets shared before the last
// minute holds every window that holds its minute, with the flag and its
// note, as the rule pack's shared_series record does; the windows after it
// decide as if nothing had been shared.
func TestSharedSeriesEarlierHolds(t *testing.T) {
	byPod := `{pod=~"canary-.+"}`
	req := request(t, 0)
	req.Canary, _ = selector.Parse(byPod)
	req.Config.Rule = verdict.RuleEvidence
	w, err := pairing.Ending(end, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	req.Window = w
	sharedAt := end.Add(-12 * time.Minute)
	analyze := func(shared map[int64]int) *Result {
		t.Helper()
		src := &sharedSource{fleetSource: &fleetSource{series: map[string]prom.Series{`{track="baseline"}`: scaled(t, 40, 10, 300), byPod: scaled(t, 40, 10, 300)}}, shared: shared}
		res, err := Analyze(context.Background(), src, req)
		if err != nil {
			t.Fatal(err)
		}
		if src.asked != 1 {
			t.Fatalf("asked %d times, want 1", src.asked)
		}
		return res
	}
	clean := analyze(nil)
	res := analyze(map[int64]int{sharedAt.Unix(): 2})
	if len(res.Minutes) != 10 || len(clean.Minutes) != 10 {
		t.Fatalf("%d and %d minutes shown, want 10", len(res.Minutes), len(clean.Minutes))
	}
	held := 0
	for i, m := range res.Minutes {
		holdsIt := !m.Time.Add(-time.Duration(req.Config.WindowMinutes-1) * time.Minute).After(sharedAt)
		flagged := strings.Contains(m.DecisionReason, verdict.FlagSharedSeries)
		switch {
		case holdsIt && (m.Decision != verdict.Hold || !flagged):
			t.Errorf("%s: the window holds the shared minute: %s, %q", m.Time.Format("15:04"), m.Decision, m.DecisionReason)
		case !holdsIt && (m.Decision != clean.Minutes[i].Decision || flagged):
			t.Errorf("%s: after the shared minute's windows: %s, want %s as unshared (%q)", m.Time.Format("15:04"), m.Decision, clean.Minutes[i].Decision, m.DecisionReason)
		}
		if holdsIt && clean.Minutes[i].Decision == verdict.Promote {
			held++
		}
	}
	if held == 0 || clean.Decision != verdict.Promote || res.Decision != verdict.Promote {
		t.Fatalf("the fleets must promote unshared, and in the windows after the shared minute: %d held that would promote, %s and %s", held, clean.Decision, res.Decision)
	}
	// The last window, when it holds such a minute, names the flag and
	// says what to do.
	res = analyze(map[int64]int{end.Add(-3 * time.Minute).Unix(): 2, end.Add(-4 * time.Minute).Unix(): 1})
	if res.Decision != verdict.Hold || !slices.Equal(res.Flags, []string{verdict.FlagSharedSeries}) || !strings.Contains(res.Notes[0], "in 2 minutes some series were selected by both fleets' selectors") {
		t.Fatalf("%s, flags %v, notes %q", res.Decision, res.Flags, res.Notes)
	}
}

// TestNaNSumWarns: a fleet whose histograms have a NaN sum (a pod observed
// NaN or +Inf) is judged as any other, and the answer warns that the rule
// pack's figures for it are wrong: Prometheus's histogram_quantile
// interpolates such histograms in their highest populated bucket (p99
// 1.76e106 for 3.95 with a finite sum, promtool 3.13.5).
func TestNaNSumWarns(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	nan := minutes(t, 10, 1)
	for _, h := range nan {
		h.Sum = math.NaN()
	}
	clean := &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 1), canary: minutes(t, 10, 1)}}
	withNaN := &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 1), canary: nan}}
	want, err := Analyze(context.Background(), clean, request(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Analyze(context.Background(), withNaN, request(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got.Decision != want.Decision || got.Reason != want.Reason {
		t.Errorf("a NaN sum changed the judgement: %s (%s), want %s (%s)", got.Decision, got.Reason, want.Decision, want.Reason)
	}
	if !slices.ContainsFunc(got.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "the canary fleet's histograms have a NaN sum in 10 minutes")
	}) {
		t.Errorf("warnings %q: want the canary's NaN sums named", got.Warnings)
	}
	if slices.ContainsFunc(want.Warnings, func(w string) bool { return strings.Contains(w, "NaN sum") }) {
		t.Errorf("finite sums warned: %q", want.Warnings)
	}
}

// TestLoadBalancerCoverage: a load balancer whose histograms are missing
// in every minute the fleets served (a selector that matches nothing, a
// load balancer scraped less often than the fleets) cross-checks nothing,
// which is an error naming the load-balancer fleet, not a silent pass;
// missing in some minutes, a warning saying how many were checked.
func TestLoadBalancerCoverage(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	lbBase, lbCanary := `{ingress="baseline"}`, `{ingress="canary"}`
	for _, c := range []struct {
		name             string
		lbBase, lbCanary int // minutes with load-balancer histograms, of 10
		wantErr, warning string
	}{
		{"every minute", 10, 10, "", ""},
		{"half the minutes", 10, 5, "", "cross-check 5 of the 10 minutes"},
		{"no canary minute", 10, 0, `load-balancer canary: lb_seconds{ingress="canary"} has no observations in any of the 10 minutes`, ""},
		{"none", 0, 0, `load-balancer baseline: lb_seconds{ingress="baseline"} has no observations`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 10), canary: minutes(t, 10, 10),
				lbBase: minutes(t, c.lbBase, 10), lbCanary: minutes(t, c.lbCanary, 10)}}
			req := request(t, 0)
			lb, err := ParseLoadBalancer("lb_seconds", lbBase, lbCanary, req.Baseline, req.Canary)
			if err != nil {
				t.Fatal(err)
			}
			req.LB = lb
			res, err := Analyze(context.Background(), src, req)
			if c.wantErr != "" {
				var lbErr *LoadBalancerError
				if !errors.As(err, &lbErr) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v; want a LoadBalancerError containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			warned := ""
			for _, w := range res.Warnings {
				if strings.Contains(w, "load-balancer") {
					warned = w
				}
			}
			if (c.warning == "") != (warned == "") || !strings.Contains(warned, c.warning) {
				t.Errorf("warnings %q; want one containing %q (none if empty)", res.Warnings, c.warning)
			}
		})
	}
}

// TestMinuteDecisionIndependentOfRange: a deployment 1,500 minutes before
// the last minute; its minute 1,401 minutes in is within its first day, so
// judged alone (a gate, the judge with --at) its evidence pools from the
// start. Shown as the first minute of a range that reaches past the day, it
// must be judged the same way: before, the range was judged as sliding
// windows, and a rollback the gate saw showed as hold.
func TestMinuteDecisionIndependentOfRange(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	tests := []struct {
		name         string
		slow, factor float64
	}{
		{"identical fleets, little traffic", 10, 0.05},
		{"identical fleets", 10, 0.5},
		{"identical busy fleets", 10, 1},
		{"a heavier canary tail", 12, 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fleetSource{series: map[string]prom.Series{base: scaled(t, 1600, 10, tt.factor), canary: scaled(t, 1600, tt.slow, tt.factor)}}
			req := request(t, 0)
			req.Config.Rule = verdict.RuleEvidence
			req.Since = end.Add(-1500 * time.Minute)
			at := end.Add(-99 * time.Minute)
			alone := req
			alone.Window = pairing.Window{First: at, Last: at}
			a, err := Analyze(context.Background(), src, alone)
			if err != nil {
				t.Fatal(err)
			}
			ranged := req
			ranged.Window = pairing.Window{First: at, Last: end}
			r, err := Analyze(context.Background(), src, ranged)
			if err != nil {
				t.Fatal(err)
			}
			m := r.Minutes[0]
			if !m.Time.Equal(at) || !a.Evidence.Anchored {
				t.Fatalf("first minute shown %v, anchored alone %v", m.Time, a.Evidence.Anchored)
			}
			if a.Decision != m.Decision || a.Evidence.Statistic != m.Window.Statistic || a.Evidence.Minutes != m.Window.Minutes {
				t.Errorf("minute %s: alone %s, evidence %.2f over %d minutes (%s); in the range %s, %.2f over %d minutes (%s)",
					at.Format("15:04"), a.Decision, a.Evidence.Statistic, a.Evidence.Minutes, a.Reason, m.Decision, m.Window.Statistic, m.Window.Minutes, m.DecisionReason)
			}
			// The range's last minute is past the day: a sliding window.
			if last := r.Minutes[len(r.Minutes)-1]; last.Window.Anchored {
				t.Errorf("the minute 1,500 minutes in is judged from the deployment's start")
			}
		})
	}
}

// TestSharedMinuteHoldsItsDeployment: a deployment judged from its start
// pools every minute since then, so a minute whose series both fleets
// selected holds its promotion for as long as the minute's evidence is in
// the pool, not only while it is in the last window (before, the window
// promoted 10 minutes after it, on evidence that still counted it).
func TestSharedMinuteHoldsItsDeployment(t *testing.T) {
	byPod := `{pod=~"canary-.+"}`
	req := request(t, 0)
	req.Canary, _ = selector.Parse(byPod)
	req.Config.Rule = verdict.RuleEvidence
	w, err := pairing.Ending(end, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	req.Window = w
	req.Since = end.Add(-30 * time.Minute) // 30 minutes, a window of 10
	sharedAt := end.Add(-20 * time.Minute)
	for _, tc := range []struct {
		name   string
		shared map[int64]int
		want   verdict.Decision
	}{
		{"nothing shared", nil, verdict.Promote},
		{"a minute shared two windows back", map[int64]int{sharedAt.Unix(): 2}, verdict.Hold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &sharedSource{fleetSource: &fleetSource{series: map[string]prom.Series{`{track="baseline"}`: scaled(t, 40, 10, 300), byPod: scaled(t, 40, 10, 300)}}, shared: tc.shared}
			res, err := Analyze(context.Background(), src, req)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Evidence.Anchored || res.Evidence.Minutes < 25 {
				t.Fatalf("not pooled since the start: anchored %v, %d minutes", res.Evidence.Anchored, res.Evidence.Minutes)
			}
			if res.Decision != tc.want {
				t.Fatalf("%s, want %s: %s", res.Decision, tc.want, res.Reason)
			}
			flagged := slices.Contains(res.Flags, verdict.FlagSharedSeries)
			if flagged != (tc.shared != nil) || flagged && !strings.Contains(res.Reason, verdict.FlagSharedSeries) {
				t.Fatalf("flags %v: %s", res.Flags, res.Reason)
			}
		})
	}
}
