package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
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
	// The verdict numbers, the window rule (rule: "evidence", the default, or
	// "reference") and the evidence rule's budgets (falseRollback,
	// falsePromote); unset ones keep pkg/verdict's defaults.
	verdict.Overrides
	// ExpectedCanaryShare is the router's canary share (0.05), 0 if unknown.
	ExpectedCanaryShare float64 `json:"expectedCanaryShare"`
	// WindowMode "range" shows the whole minutes of the dashboard range, each
	// with the decision of the windowMinutes-minute window ending at it;
	// "last" shows only the last windowMinutes minutes ending at the range end.
	WindowMode string `json:"windowMode"`
	// Since is the deployment's start (RFC 3339, Unix seconds, or Unix
	// milliseconds as Grafana's ${__from} gives them; empty: none). Minutes
	// before it are neither shown nor judged.
	Since    sinceValue `json:"since"`
	PodLabel string     `json:"podLabel"`
	// LBMetric is an optional load-balancer-side histogram of the same
	// requests; its selectors default to the fleets'.
	LBMetric           string `json:"lbMetric"`
	LBBaselineSelector string `json:"lbBaselineSelector"`
	LBCanarySelector   string `json:"lbCanarySelector"`
	// ErrorsMetric is an optional request counter of both fleets whose
	// failed requests (ErrorsSelector, default {code=~"5.."}) are compared:
	// a canary shown to fail more often is flagged traffic-parity.
	ErrorsMetric   string `json:"errorsMetric"`
	ErrorsSelector string `json:"errorsSelector"`
	// Format "alerting" asks for the numeric shape Grafana's server-side
	// expressions read (frames.Numeric); "" or "panel", the panel's frames.
	// Requests from alerting get the numeric shape whatever this says.
	Format string `json:"format"`
	// Fields are the numeric fields of the numeric shape; empty, the query
	// type's frames.DefaultNumericFields.
	Fields []string `json:"fields"`
}

// Query formats.
const (
	FormatPanel    = "panel"
	FormatAlerting = "alerting"
)

// parsedQuery is a validated query, ready for the engine.
type parsedQuery struct {
	Type     string
	Request  engine.Request
	PodLabel string
	Format   string
	Fields   []string
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
func parseQuery(raw json.RawMessage, queryType string, from, to time.Time, defaults verdict.Config) (*parsedQuery, error) {
	var m queryModel
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, bad("query", "cannot decode the query JSON: %v", err)
	}
	if m.QueryType == "" {
		m.QueryType = queryType
	}
	// Names are read as the editor checks them: a space typed around one is
	// not part of it.
	m.Metric, m.ErrorsMetric, m.LBMetric = strings.TrimSpace(m.Metric), strings.TrimSpace(m.ErrorsMetric), strings.TrimSpace(m.LBMetric)
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
	if err := prom.CheckPodLabel(q.PodLabel); err != nil {
		return nil, bad("podLabel", "%v", err)
	}
	switch m.Format {
	case "", FormatPanel:
		q.Format = FormatPanel
	case FormatAlerting:
		q.Format = FormatAlerting
	default:
		return nil, bad("format", "%q is not panel or alerting", m.Format)
	}
	for _, f := range m.Fields {
		if f = strings.TrimSpace(f); f != "" {
			q.Fields = append(q.Fields, f)
		}
	}
	if m.Metric == "" {
		return nil, bad("metric", "choose the histogram metric to analyse")
	}
	if err := prom.ValidHistogramName(m.Metric); err != nil {
		return nil, bad("metric", "%v", err)
	}
	var err error
	r := &q.Request
	r.Metric = m.Metric
	// The rule pack's recorded minute series when they exist, else raw
	// series: the result is the raw one either way.
	r.Read = engine.ReadAuto
	if r.Baseline, err = selector.Parse(m.BaselineSelector); err != nil {
		return nil, &fieldError{Field: "baselineSelector", Err: err}
	}
	if r.Canary, err = selector.Parse(m.CanarySelector); err != nil {
		return nil, &fieldError{Field: "canarySelector", Err: err}
	}
	if r.Kind, err = prom.ParseKind(m.HistogramKind); err != nil {
		return nil, &fieldError{Field: "histogramKind", Err: err}
	}
	if err := parseErrors(m, r); err != nil {
		return nil, err
	}
	if err := parseLB(m, r); err != nil {
		return nil, err
	}
	if m.Rule != nil && strings.TrimSpace(*m.Rule) == "" {
		m.Rule = nil // an editor's empty choice is the default rule
	}
	c := m.Overrides.Apply(defaults)
	c.ExpectedCanaryShare = m.ExpectedCanaryShare
	if err := c.Validate(); err != nil {
		return nil, &fieldError{Field: "settings", Err: err}
	}

	// The minutes shown come from the dashboard range (or the last window);
	// the window length, which every shown minute's decision looks back
	// over, is the query's windowMinutes.
	var plan engine.Plan
	switch m.WindowMode {
	case "", "range":
		plan, err = engine.PlanRange(from, to, c)
	case "last":
		plan, err = engine.PlanLast(to, c.WindowMinutes, 0, c)
	default:
		return nil, bad("windowMode", "%q is not range or last", m.WindowMode)
	}
	if err != nil {
		// Too much data is the window's doing; otherwise the range's, except
		// in mode last, whose minutes the window alone sets.
		field := "timeRange"
		if m.WindowMode == "last" || errors.As(err, new(*engine.FetchLimitError)) {
			field = "windowMinutes"
		}
		return nil, bad(field, "%v", err)
	}
	r.Window = plan.Shown
	if r.Since, err = m.Since.parse(); err != nil {
		return nil, &fieldError{Field: "since", Err: err}
	}
	r.Config = c
	return q, nil
}

// sinceValue is the query's deployment start as written: a string (RFC 3339,
// Unix seconds or milliseconds, or a dashboard variable's value) or a JSON
// number of Unix seconds or milliseconds.
type sinceValue string

func (s *sinceValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = ""
	case len(b) > 0 && b[0] == '"':
		var text string
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		*s = sinceValue(text)
	default:
		// A number, or anything else, which parse then names as wrong.
		*s = sinceValue(b)
	}
	return nil
}

// parse reads the deployment start as engine.ParseTime does; empty gives
// the zero time (none). Whether it is after now is the data source's to
// say (engine.CheckStarted), which knows the clock.
func (s sinceValue) parse() (time.Time, error) {
	text := strings.TrimSpace(string(s))
	if text == "" {
		return time.Time{}, nil
	}
	if strings.HasPrefix(text, "$") || strings.Contains(text, "${") || strings.Contains(text, "[[") {
		return time.Time{}, fmt.Errorf("%q is a dashboard variable that was not replaced: define the variable, or leave the deployment start empty", text)
	}
	return engine.ParseTime(text, farFuture)
}

// farFuture bounds the times a query may name before the clock is read.
var farFuture = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// parseErrors reads the request counter whose failed requests the fleets
// are compared by; its selector without it is ignored, with a notice.
func parseErrors(m queryModel, r *engine.Request) error {
	if m.ErrorsMetric == "" {
		if strings.TrimSpace(m.ErrorsSelector) != "" {
			r.Notices = append(r.Notices, "the errors selector is ignored: no errors metric is set")
		}
		return nil
	}
	if err := prom.ValidCounterName(m.ErrorsMetric); err != nil {
		return &fieldError{Field: "errorsMetric", Err: err}
	}
	e, err := engine.ParseErrors(m.ErrorsMetric, strings.TrimSpace(m.ErrorsSelector))
	if err != nil {
		return &fieldError{Field: "errorsSelector", Err: err}
	}
	r.Errors = e
	return nil
}

// lbFields are the query fields of the load balancer's parts.
var lbFields = map[string]string{"metric": "lbMetric", "baseline": "lbBaselineSelector", "canary": "lbCanarySelector"}

// parseLB reads the load-balancer histogram; selectors without its metric
// are ignored, with a notice.
func parseLB(m queryModel, r *engine.Request) error {
	lb, err := engine.ParseLoadBalancer(m.LBMetric, m.LBBaselineSelector, m.LBCanarySelector, r.Baseline, r.Canary)
	var lbErr *engine.LoadBalancerError
	switch {
	case errors.Is(err, engine.ErrLoadBalancerSelectorsWithoutMetric):
		r.Notices = append(r.Notices, "the load-balancer selectors are ignored: no load-balancer metric is set")
	case errors.As(err, &lbErr):
		return &fieldError{Field: lbFields[lbErr.Part], Err: lbErr.Err}
	case err != nil:
		return err
	}
	r.LB = lb
	return nil
}
