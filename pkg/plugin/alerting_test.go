package plugin

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/pairwise-canary/pairwise/internal/grafana"
	"github.com/pairwise-canary/pairwise/pkg/frames"
)

// alertingShape: what Grafana's alerting gets for every query type. A request
// marked FromAlert (and one from server-side expressions, and a query with
// format alerting) is answered with a wide time series: the SDK's
// TimeSeriesSchema says wide, and Grafana's conversion (the replica in
// internal/grafana) reads one series per field with unique labels, whose
// last value is the panel frame's. The panel's own frames, by contrast, are
// exactly what Grafana rejects.
func alertingShape(t *testing.T, ds *Datasource) {
	fromAlert := map[string]string{backend.FromAlertHeaderName: "true"}
	fromExpr := map[string]string{"http_" + fromExpressionHeader: "true"}
	for _, tt := range []struct {
		name, extra string
		headers     map[string]string
		series      int
		fields      []string
	}{
		{"decision from alerting", `,"queryType":"decision"`, fromAlert, 1, []string{"decision_code"}},
		{"decision, several fields", `,"queryType":"decision","fields":["decision_code","evidence_statistic","rollback_boundary","bad"]`, fromAlert, 4, []string{"decision_code", "evidence_statistic", "rollback_boundary", "bad"}},
		{"minutes from alerting", `,"queryType":"minutes"`, fromAlert, 1, []string{"decision_code"}},
		{"minutes from a dashboard expression", `,"queryType":"minutes","fields":["ratio","verdict_code"]`, fromExpr, 2, []string{"ratio", "verdict_code"}},
		{"pods from alerting", `,"queryType":"pods"`, fromAlert, 2, []string{"max"}},
		{"decision with format alerting", `,"queryType":"decision","format":"alerting"`, nil, 1, []string{"decision_code"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := liveQuery("A", tt.extra)
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}, Headers: tt.headers})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error != nil || len(dr.Frames) != 1 {
				t.Fatalf("%s", grafana.Describe(dr))
			}
			frame := dr.Frames[0]
			if s := frame.TimeSeriesSchema(); s.Type != data.TimeSeriesTypeWide || s.TimeIsNullable || len(s.ValueIndices) != tt.series {
				t.Fatalf("schema %+v, want wide with %d value fields", s, tt.series)
			}
			// Through the wire format Grafana reads.
			b, err := json.Marshal(dr)
			if err != nil {
				t.Fatal(err)
			}
			var back backend.DataResponse
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			res, err := grafana.Convert(back.Frames)
			if err != nil {
				t.Fatal(err)
			}
			if res.Kind != grafana.KindSeries || len(res.Series) != tt.series {
				t.Fatalf("Grafana reads %s", res.Describe())
			}
			last, err := grafana.Reduce("B", res.Series, "last", "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := grafana.Instances(last); err != nil {
				t.Fatalf("alerting cannot tell the series apart: %v", err)
			}
			for _, s := range res.Series {
				if s.Labels["service"] != "checkout" || s.Labels["metric"] != "http_request_duration_seconds" || !contains(tt.fields, s.Labels[frames.FieldLabel]) {
					t.Errorf("series %s labels %v", s.Name, s.Labels)
				}
			}
			// The decision an alert reads is the panel's.
			var model struct{ QueryType string }
			if err := json.Unmarshal(q.JSON, &model); err != nil {
				t.Fatal(err)
			}
			panelType := model.QueryType
			if panelType == "pods" {
				return
			}
			panel := dsFrame(t, ds, liveQuery("P", `,"queryType":"`+panelType+`"`))
			for _, n := range last {
				name := n.Labels[frames.FieldLabel]
				f, _ := panel.FieldByName(name)
				if f == nil {
					t.Fatalf("panel frame has no %s", name)
				}
				want := f.At(f.Len() - 1).(*float64)
				if (want == nil) != math.IsNaN(*n.Value) || want != nil && *want != *n.Value {
					t.Errorf("%s: alert reads %v, the panel shows %v", name, *n.Value, deref(want))
				}
			}
		})
	}
	t.Run("the panel frames are what Grafana rejects", func(t *testing.T) {
		for _, qt := range []string{"minutes", "decision", "pods"} {
			frame := dsFrame(t, ds, liveQuery("P", `,"queryType":"`+qt+`"`))
			if _, err := grafana.Convert(data.Frames{frame}); err == nil || !strings.Contains(err.Error(), "wide series") {
				t.Errorf("%s: the panel frame converts (%v); the alerting shape would not be needed", qt, err)
			}
		}
	})
	t.Run("no data is no data, not an error", func(t *testing.T) {
		q := liveQuery("A", `,"queryType":"decision"`)
		q.JSON = json.RawMessage(strings.Replace(string(q.JSON), `service=\"checkout\"`, `service=\"gone\"`, 2))
		resp, _ := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}, Headers: fromAlert})
		dr := resp.Responses["A"]
		if dr.Error != nil {
			t.Fatalf("%s", grafana.Describe(dr))
		}
		if res, err := grafana.Convert(dr.Frames); err != nil || res.Kind != grafana.KindNoData {
			t.Fatalf("Grafana reads %s, %v; want no data", res.Describe(), err)
		}
	})
	t.Run("unknown field is a user error naming the fields", func(t *testing.T) {
		resp, _ := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{liveQuery("A", `,"queryType":"decision","fields":["reason"]`)}, Headers: fromAlert})
		dr := resp.Responses["A"]
		if dr.Error == nil || dr.ErrorSource != backend.ErrorSourceDownstream || !strings.Contains(dr.Error.Error(), "evidence_statistic") {
			t.Fatalf("%s", grafana.Describe(dr))
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
