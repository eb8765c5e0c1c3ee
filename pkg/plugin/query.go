package plugin

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// Query types.
const (
	QueryMinutes  = "minutes"
	QueryDecision = "decision"
	QueryPods     = "pods"
)

// queryModel is the query JSON the editor writes. Pointers tell "not set"
// (take the default of pkg/verdict) from an explicit zero.
type queryModel struct {
	QueryType        string `json:"queryType"`
	Metric           string `json:"metric"`
	BaselineSelector string `json:"baselineSelector"`
	CanarySelector   string `json:"canarySelector"`
	HistogramKind    string `json:"histogramKind"`
	// The verdict numbers; unset ones keep pkg/verdict's defaults.
	verdict.Overrides
	// ExpectedCanaryShare is the router's canary share (0.05), 0 if unknown.
	ExpectedCanaryShare float64 `json:"expectedCanaryShare"`
	// WindowMode "range" judges the whole minutes of the dashboard range;
	// "last" judges the last WindowMinutes minutes ending at the range end.
	WindowMode string `json:"windowMode"`
	PodLabel   string `json:"podLabel"`
	// LBMetric is an optional load-balancer-side histogram of the same
	// requests; its selectors default to the fleets'.
	LBMetric           string `json:"lbMetric"`
	LBBaselineSelector string `json:"lbBaselineSelector"`
	LBCanarySelector   string `json:"lbCanarySelector"`
}

// parsedQuery is a validated query, ready for the engine.
type parsedQuery struct {
	Type     string
	Request  engine.Request
	PodLabel string
}

// fieldError names the query field that is wrong; it becomes a bad request.
type fieldError struct {
	Field string
	Err   error
}

func (e *fieldError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }
func (e *fieldError) Unwrap() error { return e.Err }

func bad(field string, format string, args ...any) error {
	return &fieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// parseQuery decodes and validates one query for the range [from, to].
func parseQuery(raw json.RawMessage, queryType string, from, to time.Time) (*parsedQuery, error) {
	var m queryModel
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, bad("query", "cannot decode the query JSON: %v", err)
	}
	if m.QueryType == "" {
		m.QueryType = queryType
	}
	q := &parsedQuery{Type: m.QueryType, PodLabel: m.PodLabel}
	switch q.Type {
	case "", QueryMinutes:
		q.Type = QueryMinutes
	case QueryDecision, QueryPods:
	default:
		return nil, bad("queryType", "%q is not one of minutes, decision, pods", m.QueryType)
	}
	if q.PodLabel == "" {
		q.PodLabel = "pod"
	}
	if m.Metric == "" {
		return nil, bad("metric", "choose the histogram metric to analyse")
	}
	if err := selector.ValidMetricName(m.Metric); err != nil {
		return nil, bad("metric", "%v", err)
	}
	var err error
	r := &q.Request
	r.Metric = m.Metric
	if r.Baseline, err = selector.Parse(m.BaselineSelector); err != nil {
		return nil, &fieldError{Field: "baselineSelector", Err: err}
	}
	if r.Canary, err = selector.Parse(m.CanarySelector); err != nil {
		return nil, &fieldError{Field: "canarySelector", Err: err}
	}
	if r.Kind, err = prom.ParseKind(m.HistogramKind); err != nil {
		return nil, &fieldError{Field: "histogramKind", Err: err}
	}
	if m.LBMetric != "" {
		if r.LB, err = parseLB(m, r.Baseline, r.Canary); err != nil {
			return nil, err
		}
	}
	c := m.Overrides.Apply(verdict.Default())
	c.ExpectedCanaryShare = m.ExpectedCanaryShare

	switch m.WindowMode {
	case "", "range":
		if r.Window, err = pairing.Between(from, to); err != nil {
			return nil, bad("timeRange", "%v", err)
		}
		// The window is the range: its minutes are what is judged.
		c.WindowMinutes = r.Window.Minutes()
		if c.GoodNeeded > c.WindowMinutes || c.BadLimit > c.WindowMinutes {
			// A range shorter than the limits can still be shown; it simply cannot reach them.
			c.WindowMinutes = max(c.WindowMinutes, c.GoodNeeded, c.BadLimit)
		}
	case "last":
		if r.Window, err = pairing.Ending(to, c.WindowMinutes, 0); err != nil {
			return nil, bad("windowMinutes", "%v", err)
		}
	default:
		return nil, bad("windowMode", "%q is not range or last", m.WindowMode)
	}
	if c.WarmupMinutes >= c.WindowMinutes {
		c.WindowMinutes = c.WarmupMinutes + 1
	}
	if err := c.Validate(); err != nil {
		return nil, &fieldError{Field: "settings", Err: err}
	}
	if r.Window.Minutes() > 7*24*60 {
		return nil, bad("timeRange", "%d minutes is more than a week; choose a shorter range", r.Window.Minutes())
	}
	r.Config = c
	return q, nil
}

func parseLB(m queryModel, baseline, canary selector.Selector) (*engine.LoadBalancer, error) {
	lb := &engine.LoadBalancer{Metric: m.LBMetric, Baseline: baseline, Canary: canary}
	if err := selector.ValidMetricName(m.LBMetric); err != nil {
		return nil, bad("lbMetric", "%v", err)
	}
	var err error
	if m.LBBaselineSelector != "" {
		if lb.Baseline, err = selector.Parse(m.LBBaselineSelector); err != nil {
			return nil, &fieldError{Field: "lbBaselineSelector", Err: err}
		}
	}
	if m.LBCanarySelector != "" {
		if lb.Canary, err = selector.Parse(m.LBCanarySelector); err != nil {
			return nil, &fieldError{Field: "lbCanarySelector", Err: err}
		}
	}
	return lb, nil
}
