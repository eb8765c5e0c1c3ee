package plugin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
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
			// The range mode judges the range's whole minutes: (11:00:30, 14:00:30] -> 11:01 .. 14:00.
			if q.Request.Window.Minutes() != 180 || c.WindowMinutes != 180 {
				t.Fatalf("window %v..%v, %d minutes", q.Request.Window.First, q.Request.Window.Last, c.WindowMinutes)
			}
		}},
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
		{name: "last 30 minutes cannot need 45 good", json: validQuery + `,"windowMode":"last","windowMinutes":30}`, wantField: "settings"},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseQuery(json.RawMessage(tt.json), "", rangeFrom, rangeTo)
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

func TestParseQueryShortRange(t *testing.T) {
	q, err := parseQuery(json.RawMessage(validQuery+`}`), "", rangeTo.Add(-10*time.Minute), rangeTo)
	if err != nil {
		t.Fatal(err)
	}
	// Ten minutes can be shown and judged, but cannot reach 45 good minutes.
	if q.Request.Window.Minutes() != 10 || q.Request.Config.GoodNeeded != 45 {
		t.Fatalf("window %d minutes, good needed %d", q.Request.Window.Minutes(), q.Request.Config.GoodNeeded)
	}
	if _, err := parseQuery(json.RawMessage(validQuery+`}`), "", rangeTo.Add(-20*time.Second), rangeTo.Add(-10*time.Second)); err == nil || !strings.Contains(err.Error(), "timeRange") {
		t.Fatalf("a range without a whole minute: %v", err)
	}
}

func FuzzParseQuery(f *testing.F) {
	f.Add(validQuery + `}`)
	f.Add(validQuery + `,"queryType":"pods","windowMode":"last","windowMinutes":5}`)
	f.Add(`{"metric":"m","baselineSelector":"{a=~\".*\"}","canarySelector":"{b=\"\\\"\"}"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseQuery(json.RawMessage(raw), "", rangeFrom, rangeTo)
		if err != nil {
			return
		}
		// Whatever is accepted renders selectors that parse again and a valid config.
		if err := q.Request.Config.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		if !strings.HasPrefix(prom.NativeQuery(q.Request.Metric, q.Request.Canary), "sum(increase("+q.Request.Metric+"{") {
			t.Fatalf("query shape: %s", prom.NativeQuery(q.Request.Metric, q.Request.Canary))
		}
	})
}
