package engine

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

func TestFetchedMinutes(t *testing.T) {
	c := verdict.Default()
	for _, tc := range []struct{ shown, window, warmup, want int }{
		{shown: 60, window: 60, warmup: 0, want: 119},
		{shown: 1, window: 1, warmup: 0, want: 1},
		{shown: 10, window: 60, warmup: 5, want: 74},
	} {
		c.WindowMinutes, c.WarmupMinutes = tc.window, tc.warmup
		if got := FetchedMinutes(tc.shown, c); got != tc.want {
			t.Errorf("shown %d, window %d, warm-up %d: %d minutes fetched, want %d", tc.shown, tc.window, tc.warmup, got, tc.want)
		}
	}
}

func TestPlanRange(t *testing.T) {
	to := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	day := verdict.Default()
	day.WindowMinutes = 1440
	for _, tc := range []struct {
		name      string
		from      time.Time
		c         verdict.Config
		first     time.Time
		minutes   int
		fetched   int
		wantErr   any // a pointer to the error type wanted, or nil
		errSubstr string
	}{
		{name: "three hours: the unfinished minute is not shown", from: to.Add(-3 * time.Hour), c: verdict.Default(),
			first: time.Date(2026, 6, 1, 9, 1, 0, 0, time.UTC), minutes: 180, fetched: 239},
		{name: "ten minutes keep the 60-minute window", from: to.Add(-10 * time.Minute), c: verdict.Default(), minutes: 10, fetched: 69,
			first: time.Date(2026, 6, 1, 11, 51, 0, 0, time.UTC)},
		{name: "a week with the default window", from: to.Add(-7 * 24 * time.Hour), c: verdict.Default(), minutes: 10080, fetched: 10139,
			first: time.Date(2026, 5, 25, 12, 1, 0, 0, time.UTC)},
		{name: "more than a week", from: to.Add(-7*24*time.Hour - 2*time.Minute), c: verdict.Default(),
			wantErr: new(*ShownLimitError), errSubstr: "10082 minutes is more than a week"},
		{name: "a week with a day-long window needs too much data", from: to.Add(-7 * 24 * time.Hour), c: day,
			wantErr: new(*FetchLimitError), errSubstr: "need 11519 minutes of data, and the fleets' health 5 minutes before them, more than the 11000 points"},
		{name: "no whole minute", from: to.Add(-20 * time.Second), c: verdict.Default(), errSubstr: "holds no whole minute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanRange(tc.from, to, tc.c)
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("error %v, want one containing %q", err, tc.errSubstr)
				}
				if tc.wantErr != nil && !errors.As(err, tc.wantErr) {
					t.Fatalf("error %T, want %T", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Shown.Minutes() != tc.minutes || !p.Shown.First.Equal(tc.first) || p.Fetched != tc.fetched {
				t.Fatalf("plan %v..%v (%d minutes), %d fetched; want from %v, %d minutes, %d fetched",
					p.Shown.First, p.Shown.Last, p.Shown.Minutes(), p.Fetched, tc.first, tc.minutes, tc.fetched)
			}
		})
	}
}

func TestPlanLast(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		shown   int
		window  int
		settle  time.Duration
		last    time.Time
		fetched int
		wantErr any // a pointer to the error type wanted; nil: any error
		fails   bool
	}{
		{name: "the judge's default: the window", shown: 60, last: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), fetched: 119},
		{name: "settle moves the minutes back", shown: 60, settle: 2 * time.Minute, last: time.Date(2026, 6, 1, 11, 58, 0, 0, time.UTC), fetched: 119},
		{name: "a day shown with a day-long window", shown: 1440, window: 1440, last: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), fetched: 2879},
		{name: "more than a week", shown: 10081, fails: true, wantErr: new(*ShownLimitError)},
		{name: "too much data", shown: 10000, window: 1440, fails: true, wantErr: new(*FetchLimitError)},
		{name: "no minute", shown: 0, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := verdict.Default()
			if tc.window != 0 {
				c.WindowMinutes = tc.window
			}
			p, err := PlanLast(at, tc.shown, tc.settle, c)
			if tc.fails {
				if err == nil {
					t.Fatalf("plan %+v, want an error", p)
				}
				if tc.wantErr != nil && !errors.As(err, tc.wantErr) {
					t.Fatalf("error %T (%v), want %T", err, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Shown.Minutes() != tc.shown || !p.Shown.Last.Equal(tc.last) || p.Fetched != tc.fetched {
				t.Fatalf("shown %v..%v, %d fetched; want %d minutes ending %v, %d fetched", p.Shown.First, p.Shown.Last, p.Fetched, tc.shown, tc.last, tc.fetched)
			}
		})
	}
}

func TestParseLoadBalancer(t *testing.T) {
	base, _ := selector.Parse(`{track="baseline"}`)
	canary, _ := selector.Parse(`{track="canary"}`)
	for _, tc := range []struct {
		name                       string
		metric, baseline, canary   string
		wantNil                    bool
		wantBaseline, wantCanary   string
		wantPart                   string
		wantSelectorsWithoutMetric bool
	}{
		{name: "none", wantNil: true},
		{name: "selectors default to the fleets'", metric: "lb_seconds", wantBaseline: base.String(), wantCanary: canary.String()},
		{name: "own selectors", metric: "lb_seconds", baseline: `{lb="old"}`, canary: `{lb="new"}`, wantBaseline: `{lb="old"}`, wantCanary: `{lb="new"}`},
		{name: "metric with PromQL", metric: "sum(up)", wantPart: "metric"},
		{name: "baseline with an expression", metric: "lb_seconds", baseline: `{a="b"} or up`, wantPart: "baseline"},
		{name: "canary malformed", metric: "lb_seconds", canary: `{a=~}`, wantPart: "canary"},
		{name: "selectors without a metric", canary: `{a="c"}`, wantSelectorsWithoutMetric: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb, err := ParseLoadBalancer(tc.metric, tc.baseline, tc.canary, base, canary)
			var lbErr *LoadBalancerError
			switch {
			case tc.wantSelectorsWithoutMetric:
				if !errors.Is(err, ErrLoadBalancerSelectorsWithoutMetric) {
					t.Fatalf("error %v, want %v", err, ErrLoadBalancerSelectorsWithoutMetric)
				}
			case tc.wantPart != "":
				if !errors.As(err, &lbErr) || lbErr.Part != tc.wantPart {
					t.Fatalf("error %v, want one about the load balancer's %s", err, tc.wantPart)
				}
			case err != nil:
				t.Fatal(err)
			case tc.wantNil:
				if lb != nil {
					t.Fatalf("load balancer %+v, want none", lb)
				}
			default:
				if lb == nil || lb.Metric != tc.metric || lb.Baseline.String() != tc.wantBaseline || lb.Canary.String() != tc.wantCanary {
					t.Fatalf("load balancer %+v, want %s %s %s", lb, tc.metric, tc.wantBaseline, tc.wantCanary)
				}
			}
		})
	}
}

// TestAnalyzePassesNoticesOn: what the front end did not use of a request
// reaches the user as the result's first warnings.
func TestAnalyzePassesNoticesOn(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	src := &fleetSource{series: map[string]prom.Series{base: minutes(t, 10, 10), canary: minutes(t, 10, 10)}, kinds: map[string]prom.Kind{canary: prom.Classic}}
	req := request(t, 0)
	req.Notices = []string{"the load-balancer selectors are ignored: no load-balancer metric is set"}
	res, err := Analyze(context.Background(), src, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 2 || res.Warnings[0] != req.Notices[0] || !strings.Contains(res.Warnings[1], "no minute carries evidence") {
		t.Fatalf("warnings %q", res.Warnings)
	}
}

// TestMinuteReadAgreesWithTheScale: pkg/prom reads a minute over a minute and
// one scrape interval, per minute, and pkg/verdict's scale undoes that read;
// the two packages do not import each other, so their defaults and their
// factors are held together here.
func TestMinuteReadAgreesWithTheScale(t *testing.T) {
	if d := verdict.Default().ScrapeInterval(); d != prom.DefaultScrapeInterval {
		t.Fatalf("verdict's default scrape interval %v, prom's %v", d, prom.DefaultScrapeInterval)
	}
	for _, seconds := range []int{1, 10, 15, 20, 30, 60} {
		c := verdict.Default()
		c.ScrapeIntervalSeconds = seconds
		per, err := strconv.ParseFloat(prom.PerMinute(c.ScrapeInterval()), 64)
		if err != nil {
			t.Fatal(err)
		}
		if r := prom.MinuteRange(c.ScrapeInterval()); r != strconv.Itoa(60+seconds)+"s" {
			t.Errorf("%d s: the minute is read over %s", seconds, r)
		}
		if got := per * c.RangePerMinute(); math.Abs(got-1) > 1e-15 {
			t.Errorf("%d s: per minute %v times the range's minutes %v = %v, want 1", seconds, per, c.RangePerMinute(), got)
		}
		if got := c.ScrapeScale(c.ScrapesPerMinute()); math.Abs(got-1) > 1e-15 {
			t.Errorf("%d s: the scale at the configured interval is %v, want 1", seconds, got)
		}
	}
}

// TestPlanLeavesRoomForHealth: the fleets' health is read StableMinutes
// before the first window, so minutes whose histograms fit Prometheus's
// 11,000 points but whose health does not are refused before any query,
// not by Prometheus; warm-up minutes already read that far back.
func TestPlanLeavesRoomForHealth(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	c := verdict.Default()
	c.WindowMinutes = 5500
	for _, tc := range []struct {
		shown, warmup int
		refused       bool
	}{
		{shown: 5496, refused: false}, // 10,995 minutes, health from 11,000
		{shown: 5497, refused: true},  // 10,996 minutes, health from 11,001
		{shown: 5496, warmup: 5, refused: false},
		{shown: 5497, warmup: 5, refused: true}, // 11,001 with the warm-up
	} {
		c.WarmupMinutes = tc.warmup
		_, err := PlanLast(at, tc.shown, 0, c)
		var tooMuch *FetchLimitError
		if errors.As(err, &tooMuch) != tc.refused {
			t.Errorf("%d shown, warm-up %d: %v, want refused %v", tc.shown, tc.warmup, err, tc.refused)
		}
	}
}
