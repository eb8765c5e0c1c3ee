package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// The window policy: which minutes an analysis shows and how many minutes of
// data it fetches for them. The command-line judge and the Grafana data
// source both ask it, so a range the one accepts the other accepts too.
// It never stretches or shrinks what was asked: a window, range or warm-up
// it cannot serve is an error that says why.

// Limits of one analysis.
const (
	// MaxShownMinutes is the longest span of minutes shown: a week.
	MaxShownMinutes = 7 * 24 * 60
	// MaxFetchedMinutes is Prometheus's limit of points per series in a
	// range query (11,000), at one point a minute.
	MaxFetchedMinutes = 11000
)

// FetchedMinutes is how many minutes of data showing shown minutes needs:
// every shown minute carries the decision of the WindowMinutes-minute window
// ending at it, so the first window's earlier minutes and the warm-up before
// them are fetched too. A deployment start (Request.Since) fetches from it
// instead, never more than a day and the warm-up before the last minute
// when it lies before the first window: within MaxFetchedMinutes either way.
func FetchedMinutes(shown int, c verdict.Config) int {
	return shown + c.WindowMinutes - 1 + c.WarmupMinutes
}

// healthLead is how many minutes before the fetched ones the fleets'
// health is read: completeness looks StableMinutes back from the first
// window, and a warm-up already fetches that far.
func healthLead(warmup int) int { return max(0, verdict.StableMinutes-warmup) }

// ShownLimitError means more minutes were asked to be shown than
// MaxShownMinutes.
type ShownLimitError struct{ Shown int }

func (e *ShownLimitError) Error() string {
	return fmt.Sprintf("%d minutes is more than a week; choose a shorter range", e.Shown)
}

// FetchLimitError means the minutes shown, with their windows and warm-up,
// need more points per series than Prometheus returns.
type FetchLimitError struct{ Shown, Window, Warmup, Fetched int }

// Queried is the minutes the analysis would ask Prometheus for: those
// fetched and the health's lead before them.
func (e *FetchLimitError) Queried() int { return e.Fetched + healthLead(e.Warmup) }

func (e *FetchLimitError) Error() string {
	return fmt.Sprintf("%d minutes shown with a %d-minute window (and %d warm-up minutes) need %d minutes of data, and the fleets' health %d minutes before them, more than the %d points Prometheus returns per series; shorten the range or the window",
		e.Shown, e.Window, e.Warmup, e.Fetched, healthLead(e.Warmup), MaxFetchedMinutes)
}

// Plan is the window policy's answer for one analysis.
type Plan struct {
	// Shown holds the minutes shown (Request.Window).
	Shown pairing.Window
	// Fetched is the minutes of data fetched per series.
	Fetched int
}

// check applies the limits to the shown minutes.
func (p *Plan) check(c verdict.Config) error {
	n := p.Shown.Minutes()
	if n > MaxShownMinutes {
		return &ShownLimitError{Shown: n}
	}
	p.Fetched = FetchedMinutes(n, c)
	// The fleets' health is read from StableMinutes before the first
	// window (completeness looks that far back): its range query must fit
	// too.
	if p.Fetched+healthLead(c.WarmupMinutes) > MaxFetchedMinutes {
		return &FetchLimitError{Shown: n, Window: c.WindowMinutes, Warmup: c.WarmupMinutes, Fetched: p.Fetched}
	}
	return nil
}

// PlanRange shows the whole minutes of a time range (from, to], as a
// dashboard asks: the unfinished minute at to is not shown.
func PlanRange(from, to time.Time, c verdict.Config) (Plan, error) {
	w, err := pairing.Between(from, to)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Shown: w}
	return p, p.check(c)
}

// DefaultSettle is how long a minute must be over before it is judged, so
// that its last scrape has landed (a 15 s scrape lands up to 15 s after the
// minute, plus the scrape's own duration): the judge's and the server's
// --settle, and the data source's for a range that ends now.
const DefaultSettle = 30 * time.Second

// PlanLast shows the last shown whole minutes ending settle before at: the
// judge's --range (else the window), the data source's window mode "last".
func PlanLast(at time.Time, shown int, settle time.Duration, c verdict.Config) (Plan, error) {
	w, err := pairing.Ending(at, shown, settle)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Shown: w}
	return p, p.check(c)
}

// LoadBalancerError names the part of a load-balancer histogram's
// definition that is wrong: "metric", "baseline" or "canary".
type LoadBalancerError struct {
	Part string
	Err  error
}

func (e *LoadBalancerError) Error() string { return fmt.Sprintf("load-balancer %s: %v", e.Part, e.Err) }
func (e *LoadBalancerError) Unwrap() error { return e.Err }

// ErrLoadBalancerSelectorsWithoutMetric means load-balancer selectors were
// given without the load-balancer metric they select from.
var ErrLoadBalancerSelectorsWithoutMetric = errors.New("load-balancer selectors need a load-balancer metric")

// ParseLoadBalancer reads the optional load-balancer-side histogram: its
// metric name and its fleets' selectors as written, each selector empty for
// the application fleet's (baseline, canary). No metric and no selectors is
// no load balancer (nil); selectors without a metric are
// ErrLoadBalancerSelectorsWithoutMetric; a wrong part a *LoadBalancerError.
func ParseLoadBalancer(metric, baselineText, canaryText string, baseline, canary selector.Selector) (*LoadBalancer, error) {
	if metric == "" {
		if baselineText != "" || canaryText != "" {
			return nil, ErrLoadBalancerSelectorsWithoutMetric
		}
		return nil, nil
	}
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, &LoadBalancerError{Part: "metric", Err: err}
	}
	lb := &LoadBalancer{Metric: metric, Baseline: baseline, Canary: canary}
	var err error
	if baselineText != "" {
		if lb.Baseline, err = selector.Parse(baselineText); err != nil {
			return nil, &LoadBalancerError{Part: "baseline", Err: err}
		}
	}
	if canaryText != "" {
		if lb.Canary, err = selector.Parse(canaryText); err != nil {
			return nil, &LoadBalancerError{Part: "canary", Err: err}
		}
	}
	return lb, nil
}

// ParseErrors reads the request counter whose failed requests the fleets
// are compared by (Request.Errors): nil when metric is empty; failedText
// (default prom.DefaultFailed) are the matchers, added to each fleet's selector,
// that select the failed ones.
func ParseErrors(metric, failedText string) (*Errors, error) {
	if metric == "" {
		return nil, nil
	}
	if err := prom.ValidCounterName(metric); err != nil {
		return nil, err
	}
	failed, err := prom.ParseFailed(failedText)
	if err != nil {
		return nil, err
	}
	return &Errors{Metric: metric, Failed: failed}, nil
}
