package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

var (
	rangeTo   = time.Date(2026, 11, 21, 14, 0, 30, 0, time.UTC)
	rangeFrom = rangeTo.Add(-3 * time.Hour)
)

const validQuery = `{"metric":"http_request_duration_seconds","baselineSelector":"{service=\"checkout\",track=\"baseline\"}","canarySelector":"{service=\"checkout\",track=\"canary\"}"`

func TestParseQuery(t *testing.T) {
	tests := []struct {
		name      string
		json      string
		wantField string // empty: valid
		check     func(t *testing.T, q *parsedQuery)
	}{
		{name: "defaults come from pkg/verdict", json: validQuery + `}`, check: func(t *testing.T, q *parsedQuery) {
			def := verdict.Default()
			c := q.Request.Config
			if q.Type != QueryMinutes || q.Request.Kind != prom.Auto || c.VerdictQuantile != def.VerdictQuantile || c.BadLimit != def.BadLimit || c.GoodNeeded != def.GoodNeeded || q.PodLabel != "pod" {
				t.Fatalf("got %+v", q)
			}
			// The range mode shows the range's whole minutes, (11:00:30, 14:00:30] -> 11:01 .. 14:00,
			// each with the decision of the default 60-minute window ending at it.
			if q.Request.Window.Minutes() != 180 || c.WindowMinutes != def.WindowMinutes {
				t.Fatalf("window %v..%v, %d minutes", q.Request.Window.First, q.Request.Window.Last, c.WindowMinutes)
			}
			if c.Rule != verdict.RuleEvidence || c.FalseRollback != def.FalseRollback || c.FalsePromote != def.FalsePromote || !q.Request.Since.IsZero() {
				t.Fatalf("rule %q, budgets %v %v, since %v", c.Rule, c.FalseRollback, c.FalsePromote, q.Request.Since)
			}
		}},
		{name: "window length from the query, minutes from the range", json: validQuery + `,"windowMinutes":30,"rule":"reference","goodNeeded":20}`, check: func(t *testing.T, q *parsedQuery) {
			if q.Request.Window.Minutes() != 180 || q.Request.Config.WindowMinutes != 30 || q.Request.Config.Rule != verdict.RuleReference {
				t.Fatalf("window %d minutes, config %+v", q.Request.Window.Minutes(), q.Request.Config)
			}
		}},
		{name: "reference rule and budgets", json: validQuery + `,"rule":"reference","falseRollback":0.0001,"falsePromote":0.05}`, check: func(t *testing.T, q *parsedQuery) {
			c := q.Request.Config
			if c.Rule != verdict.RuleReference || c.FalseRollback != 0.0001 || c.FalsePromote != 0.05 {
				t.Fatalf("got %+v", c)
			}
		}},
		{name: "empty rule is the default", json: validQuery + `,"rule":"","falseRollback":null}`, check: func(t *testing.T, q *parsedQuery) {
			if q.Request.Config.Rule != verdict.RuleEvidence || q.Request.Config.FalseRollback != verdict.Default().FalseRollback {
				t.Fatalf("got %+v", q.Request.Config)
			}
		}},
		{name: "unknown rule", json: validQuery + `,"rule":"vibes"}`, wantField: "settings"},
		{name: "false-rollback budget above one half", json: validQuery + `,"falseRollback":0.7}`, wantField: "settings"},
		{name: "false-promote budget zero", json: validQuery + `,"falsePromote":0}`, wantField: "settings"},
		{name: "a short evidence window needs no edit of the minute counts", json: validQuery + `,"windowMinutes":20}`, check: func(t *testing.T, q *parsedQuery) {
			c := q.Request.Config
			if c.WindowMinutes != 20 || c.GoodNeeded != 45 || c.BadLimit != 5 {
				t.Fatalf("got %+v", c)
			}
		}},
		{name: "a short reference window must lower good needed", json: validQuery + `,"windowMinutes":20,"rule":"reference"}`, wantField: "settings"},
		{name: "warm-up as long as the window is an error, not a longer window", json: validQuery + `,"warmupMinutes":60}`, wantField: "settings"},
		{name: "more than Prometheus's points per series", json: validQuery + `,"windowMinutes":1440}`, check: nil},
		{name: "since RFC 3339", json: validQuery + `,"since":"2026-11-21T12:30:15+01:00"}`, check: wantSince(time.Date(2026, 11, 21, 11, 30, 15, 0, time.UTC))},
		{name: "since Unix seconds as text", json: validQuery + `,"since":" 1795000000 "}`, check: wantSince(time.Unix(1795000000, 0))},
		{name: "since Unix seconds as a number", json: validQuery + `,"since":1795000000.5}`, check: wantSince(time.Unix(1795000000, 5e8))},
		{name: "since Unix milliseconds (${__from})", json: validQuery + `,"since":"1795000000123"}`, check: wantSince(time.UnixMilli(1795000000123))},
		{name: "since empty or null", json: validQuery + `,"since":null}`, check: wantSince(time.Time{})},
		{name: "since an unreplaced variable", json: validQuery + `,"since":"$deployed_at"}`, wantField: "since"},
		{name: "since words", json: validQuery + `,"since":"yesterday"}`, wantField: "since"},
		{name: "a pod label that is not a label name", json: validQuery + `,"podLabel":"pod) or vector(1"}`, wantField: "podLabel"},
		// Each classic bucket would read as a pod.
		{name: "le as the pod label", json: validQuery + `,"podLabel":"le"}`, wantField: "podLabel"},
		{name: "a pod label of its own", json: validQuery + `,"podLabel":"kubernetes_pod_name"}`, check: func(t *testing.T, q *parsedQuery) {
			if q.PodLabel != "kubernetes_pod_name" {
				t.Fatal(q.PodLabel)
			}
		}},
		{name: "since negative", json: validQuery + `,"since":-5}`, wantField: "since"},
		{name: "since a boolean", json: validQuery + `,"since":true}`, wantField: "since"},
		{name: "since an object", json: validQuery + `,"since":{"a":1}}`, wantField: "since"},
		{name: "explicit zero warm-up and overrides", json: validQuery + `,"queryType":"decision","warmupMinutes":0,"badLimit":3,"rollbackThreshold":1.2,"histogramKind":"classic","quantiles":[0.9,0.99]}`, check: func(t *testing.T, q *parsedQuery) {
			c := q.Request.Config
			if q.Type != QueryDecision || c.BadLimit != 3 || c.RollbackThreshold != 1.2 || q.Request.Kind != prom.Classic || len(c.Quantiles) != 2 || c.WarmupMinutes != 0 {
				t.Fatalf("got %+v", q)
			}
		}},
		{name: "last N minutes ends at the range end", json: validQuery + `,"windowMode":"last","windowMinutes":30,"goodNeeded":20}`, check: func(t *testing.T, q *parsedQuery) {
			w := q.Request.Window
			if w.Minutes() != 30 || !w.Last.Equal(time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)) {
				t.Fatalf("window %v..%v", w.First, w.Last)
			}
		}},
		{name: "short range keeps the limits", json: validQuery + `,"windowMode":"range"}`, check: nil},
		{name: "last 30 minutes cannot need 45 good under the reference rule", json: validQuery + `,"windowMode":"last","windowMinutes":30,"rule":"reference"}`, wantField: "settings"},
		{name: "not JSON", json: `{`, wantField: "query"},
		{name: "unknown query type", json: validQuery + `,"queryType":"drop table"}`, wantField: "queryType"},
		{name: "missing metric", json: `{"baselineSelector":"{a=\"b\"}","canarySelector":"{a=\"c\"}"}`, wantField: "metric"},
		{name: "metric with PromQL in it", json: `{"metric":"up or vector(1)","baselineSelector":"{a=\"b\"}","canarySelector":"{a=\"c\"}"}`, wantField: "metric"},
		{name: "baseline selector with an expression", json: `{"metric":"m","baselineSelector":"{a=\"b\"} or vector(1)","canarySelector":"{a=\"c\"}"}`, wantField: "baselineSelector"},
		{name: "empty canary selector", json: `{"metric":"m","baselineSelector":"{a=\"b\"}"}`, wantField: "canarySelector"},
		{name: "bad kind", json: validQuery + `,"histogramKind":"summary"}`, wantField: "histogramKind"},
		{name: "thresholds crossed", json: validQuery + `,"promoteThreshold":1.5}`, wantField: "settings"},
		{name: "load-balancer selector with an expression", json: validQuery + `,"lbMetric":"envoy_upstream_rq_time","lbCanarySelector":"{a=\"b\"} or up"}`, wantField: "lbCanarySelector"},
		{name: "load-balancer metric with PromQL", json: validQuery + `,"lbMetric":"sum(up)"}`, wantField: "lbMetric"},
		{name: "load balancer defaults to the fleets' selectors", json: validQuery + `,"lbMetric":"envoy_upstream_rq_time"}`, check: func(t *testing.T, q *parsedQuery) {
			if q.Request.LB == nil || q.Request.LB.Canary.String() != q.Request.Canary.String() {
				t.Fatalf("lb %+v", q.Request.LB)
			}
		}},
		{name: "bad window mode", json: validQuery + `,"windowMode":"forever"}`, wantField: "windowMode"},
		{name: "errors metric with PromQL", json: validQuery + `,"errorsMetric":"sum(http_requests_total)"}`, wantField: "errorsMetric"},
		{name: "errors selector with an expression", json: validQuery + `,"errorsMetric":"http_requests_total","errorsSelector":"{code=\"500\"} or up"}`, wantField: "errorsSelector"},
		{name: "errors selector defaults to 5xx codes, and may match the empty string", json: validQuery + `,"errorsMetric":"http_requests_total"}`, check: func(t *testing.T, q *parsedQuery) {
			if q.Request.Errors == nil || q.Request.Errors.Failed.String() != `{code=~"5.."}` {
				t.Fatalf("errors %+v", q.Request.Errors)
			}
		}},
		{name: "names are read without the spaces around them, as the editor checks them", json: `{"metric":" http_request_duration_seconds ","baselineSelector":"{track=\"baseline\"}","canarySelector":"{track=\"canary\"}","errorsMetric":"http_requests_total ","lbMetric":" lb_request_duration_seconds"}`, check: func(t *testing.T, q *parsedQuery) {
			if r := q.Request; r.Metric != "http_request_duration_seconds" || r.Errors == nil || r.Errors.Metric != "http_requests_total" || r.LB == nil || r.LB.Metric != "lb_request_duration_seconds" {
				t.Fatalf("metric %q, errors %+v, load balancer %+v", r.Metric, r.Errors, r.LB)
			}
		}},
		{name: "a failed-request selector that narrows", json: validQuery + `,"errorsMetric":"http_requests_total","errorsSelector":"{code!~\"2..|3..\"}"}`, check: func(t *testing.T, q *parsedQuery) {
			if q.Request.Errors == nil || q.Request.Errors.Failed.String() != `{code!~"2..|3.."}` {
				t.Fatalf("errors %+v", q.Request.Errors)
			}
		}},
		{name: "an errors selector without its metric is ignored, with a notice", json: validQuery + `,"errorsSelector":"{code=\"500\"}"}`, check: func(t *testing.T, q *parsedQuery) {
			if q.Request.Errors != nil || !slices.ContainsFunc(q.Request.Notices, func(n string) bool { return strings.Contains(n, "errors selector is ignored") }) {
				t.Fatalf("errors %+v, notices %q", q.Request.Errors, q.Request.Notices)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseQuery(json.RawMessage(tt.json), "", rangeFrom, rangeTo, verdict.Default())
			if tt.wantField != "" {
				var fe *fieldError
				if !errors.As(err, &fe) || fe.Field != tt.wantField {
					t.Fatalf("error = %v, want one naming field %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, q)
			}
		})
	}
}

// A deployment none of whose minutes is whole yet holds, as the judge and
// the gate hold it, without reading Prometheus (none listens here); one
// that starts after the clock is the query's fault.
func TestSinceInTheLastMinuteHolds(t *testing.T) {
	ds := settingsInstance(t, `{}`, "")
	now := time.Date(2026, 6, 1, 12, 0, 40, 0, time.UTC)
	ds.clock = func() time.Time { return now }
	query := func(since time.Time, format string) backend.DataResponse {
		return ds.runQuery(context.Background(), backend.DataQuery{RefID: "A", QueryType: "decision",
			TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now},
			JSON:      []byte(validQuery + `,"format":"` + format + `","since":"` + since.Format(time.RFC3339) + `"}`)}, false, ds.newRun())
	}
	for _, format := range []string{"panel", "alerting"} {
		dr := query(now.Add(-50*time.Second), format)
		if dr.Error != nil {
			t.Fatalf("%s: a deployment 50 s old: %v", format, dr.Error)
		}
		f := dr.Frames[0]
		field, _ := f.FieldByName("decision_code")
		if field == nil || field.Len() != 1 {
			t.Fatalf("%s: no decision_code in %v", format, f.Fields)
		}
		if v, ok := field.ConcreteAt(0); !ok || fmt.Sprint(v) != "1" {
			t.Fatalf("%s: decision_code %v, want 1 (hold)", format, v)
		}
		if format == "panel" {
			reason, _ := f.FieldByName("reason")
			if r := fmt.Sprint(reason.At(0)); !strings.Contains(r, "nothing to judge yet") {
				t.Fatalf("reason %q", r)
			}
		}
	}
	if dr := query(now.Add(time.Minute), "panel"); dr.Status != backend.StatusBadRequest || !strings.HasPrefix(dr.Error.Error(), "since: ") || !strings.Contains(dr.Error.Error(), "has not started") {
		t.Fatalf("a deployment after the clock: status %d: %v", dr.Status, dr.Error)
	}
}

func wantSince(want time.Time) func(t *testing.T, q *parsedQuery) {
	return func(t *testing.T, q *parsedQuery) {
		t.Helper()
		if !q.Request.Since.Equal(want) {
			t.Fatalf("since %v, want %v", q.Request.Since, want)
		}
	}
}

func TestParseQueryShortRange(t *testing.T) {
	q, err := parseQuery(json.RawMessage(validQuery+`}`), "", rangeTo.Add(-10*time.Minute), rangeTo, verdict.Default())
	if err != nil {
		t.Fatal(err)
	}
	// Ten minutes are shown, each with the decision of the 60-minute window
	// ending at it: the window is not stretched or shrunk to the range.
	if q.Request.Window.Minutes() != 10 || q.Request.Config.WindowMinutes != 60 || q.Request.Config.GoodNeeded != 45 {
		t.Fatalf("window %d minutes, window length %d, good needed %d", q.Request.Window.Minutes(), q.Request.Config.WindowMinutes, q.Request.Config.GoodNeeded)
	}
	if _, err := parseQuery(json.RawMessage(validQuery+`}`), "", rangeTo.Add(-20*time.Second), rangeTo.Add(-10*time.Second), verdict.Default()); err == nil || !strings.Contains(err.Error(), "timeRange") {
		t.Fatalf("a range without a whole minute: %v", err)
	}
	// A week of minutes with a day-long window is more than Prometheus returns per series.
	week := rangeTo.Add(-7 * 24 * time.Hour)
	if _, err := parseQuery(json.RawMessage(validQuery+`,"windowMinutes":1440}`), "", week, rangeTo, verdict.Default()); err == nil || !strings.Contains(err.Error(), "windowMinutes") {
		t.Fatalf("a week with a day-long window: %v", err)
	}
	if _, err := parseQuery(json.RawMessage(validQuery+`,"windowMinutes":60}`), "", week, rangeTo, verdict.Default()); err != nil {
		t.Fatalf("a week with an hour-long window: %v", err)
	}
}

// TestParseQueryNotices: what of the query the data source does not use is
// said in a notice (Request.Notices, passed on by the engine as the
// result's warnings), never dropped quietly.
func TestParseQueryNotices(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		from       time.Time
		notice     string
	}{
		// Mode last shows the window ending at the range's end, whatever the
		// range's start: that is what it asks for, so nothing to say.
		{name: "mode last over a shorter range", json: validQuery + `,"windowMode":"last"}`, from: rangeTo.Add(-10 * time.Minute)},
		{name: "mode range", json: validQuery + `}`, from: rangeTo.Add(-30 * time.Minute)},
		{name: "load-balancer selectors without a metric", json: validQuery + `,"lbCanarySelector":"{lb=\"new\"}"}`, from: rangeFrom,
			notice: "the load-balancer selectors are ignored: no load-balancer metric is set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parseQuery(json.RawMessage(tc.json), "", tc.from, rangeTo, verdict.Default())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(q.Request.Notices, "; "); got != tc.notice {
				t.Fatalf("notices %q, want %q", got, tc.notice)
			}
			if q.Request.LB != nil {
				t.Fatalf("load balancer %+v without a metric", q.Request.LB)
			}
		})
	}
}

func FuzzParseQuery(f *testing.F) {
	f.Add(validQuery + `}`)
	f.Add(validQuery + `,"queryType":"pods","windowMode":"last","windowMinutes":5}`)
	f.Add(`{"metric":"m","baselineSelector":"{a=~\".*\"}","canarySelector":"{b=\"\\\"\"}"}`)
	f.Add(`[]`)
	f.Add(validQuery + `,"rule":"reference","since":"2026-11-21T12:00:00Z","falseRollback":0.01}`)
	f.Add(validQuery + `,"since":1795000000123,"windowMinutes":1}`)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseQuery(json.RawMessage(raw), "", rangeFrom, rangeTo, verdict.Default())
		if err != nil {
			return
		}
		// Whatever is accepted renders selectors that parse again (to the
		// same selector) and a valid config.
		for _, sel := range []selector.Selector{q.Request.Baseline, q.Request.Canary} {
			again, err := selector.Parse(sel.String())
			if err != nil || again.String() != sel.String() {
				t.Fatalf("selector %s renders %q, which parses to %q: %v", raw, sel.String(), again.String(), err)
			}
		}
		if err := q.Request.Config.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		if !strings.HasPrefix(prom.NativeQuery(q.Request.Metric, q.Request.Canary, q.Request.Config.ScrapeInterval()), "sum(increase("+q.Request.Metric+"{") {
			t.Fatalf("query shape: %s", prom.NativeQuery(q.Request.Metric, q.Request.Canary, q.Request.Config.ScrapeInterval()))
		}
	})
}

// TestEnginePanicIsThePluginsFault: a panic the engine caught (on any of
// its goroutines) answers the query as the plugin's internal error, with
// the details in the plugin's log only; other failures keep their status.
func TestEnginePanicIsThePluginsFault(t *testing.T) {
	ds := settingsInstance(t, `{}`, "")
	q := backend.DataQuery{RefID: "A"}
	dr := ds.failed(context.Background(), q, &engine.ErrInternal{What: "reading the minutes", Value: "index out of range", Stack: []byte("goroutine 1")})
	if dr.Status != backend.StatusInternal || dr.ErrorSource != backend.ErrorSourcePlugin || strings.Contains(dr.Error.Error(), "index out of range") {
		t.Fatalf("status %d, source %s: %v", dr.Status, dr.ErrorSource, dr.Error)
	}
}
