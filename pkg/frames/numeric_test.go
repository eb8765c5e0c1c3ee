package frames

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

func withSelectors(t *testing.T, res *engine.Result) *engine.Result {
	t.Helper()
	var err error
	if res.Request.Baseline, err = selector.Parse(`{service="checkout",track="baseline",env=~"prod|staging"}`); err != nil {
		t.Fatal(err)
	}
	if res.Request.Canary, err = selector.Parse(`{service="checkout",track="canary",env=~"prod|staging"}`); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSeriesLabelsAreTheFleetsCommonEqualities(t *testing.T) {
	res := withSelectors(t, analysis(t, verdict.RuleEvidence))
	want := map[string]string{"service": "checkout", "metric": "m"}
	if got := SeriesLabels(res); !reflect.DeepEqual(got, want) {
		t.Fatalf("labels %v, want %v (track differs, env is a regex)", got, want)
	}
}

// TestNumericShape: every query type's numeric table has one time column
// first and then only numbers, each labelled and named; strings went to meta.
func TestNumericShape(t *testing.T) {
	res := withSelectors(t, analysis(t, verdict.RuleEvidence))
	labels := SeriesLabels(res)
	spread := []engine.Spread{
		{Time: res.Minutes[0].Time, Fleet: "baseline", Min: 0.1, Median: 0.2, Max: 0.3, WorstPod: "b-1", Pods: 3},
		{Time: res.Minutes[0].Time, Fleet: "canary", Min: 0.1, Median: 0.2, Max: 0.9, WorstPod: "c-2", Pods: 1},
		{Time: res.Minutes[1].Time, Fleet: "baseline", Min: 0.1, Median: 0.2, Max: 0.4, WorstPod: "b-0", Pods: 3},
	}
	for _, tt := range []struct {
		table  Table
		fields []string
		want   []string // column names after time
		series int
	}{
		{Minutes(res), nil, []string{"decision_code"}, 1},
		{Decision(res, nil), nil, []string{"decision_code"}, 1},
		{Decision(res, nil), []string{"decision_code", "evidence_statistic", "rollback_boundary", "bad"}, []string{"decision_code", "evidence_statistic", "rollback_boundary", "bad"}, 4},
		{Minutes(res), []string{"ratio", "warmup", "decision_code"}, []string{"ratio", "warmup", "decision_code"}, 3},
		{Pods(res, spread), nil, []string{"max", "max"}, 2},
		{Pods(res, spread), []string{"max", "pods"}, []string{"max", "max", "pods", "pods"}, 4},
	} {
		t.Run(tt.table.Name+"/"+strings.Join(tt.fields, ","), func(t *testing.T) {
			n, err := Numeric(tt.table, labels, tt.fields)
			if err != nil {
				t.Fatal(err)
			}
			if n.Columns[0].Name != "time" {
				t.Fatalf("first column %s", n.Columns[0].Name)
			}
			if _, ok := n.Columns[0].Values.([]time.Time); !ok {
				t.Fatalf("time column is %T, want non-nullable times", n.Columns[0].Values)
			}
			var names []string
			seen := map[string]bool{}
			for _, c := range n.Columns[1:] {
				names = append(names, c.Name)
				if _, ok := c.Values.([]*float64); !ok {
					t.Errorf("%s is %T, not numbers", c.Name, c.Values)
				}
				if c.Labels[FieldLabel] != c.Name || c.Labels["service"] != "checkout" {
					t.Errorf("%s labels %v", c.Name, c.Labels)
				}
				key := c.Labels[FieldLabel] + "/" + c.Labels[FleetLabel]
				if seen[key] {
					t.Errorf("two series with labels %v", c.Labels)
				}
				seen[key] = true
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Errorf("fields %v, want %v", names, tt.want)
			}
			last, _ := n.Meta["lastValues"].(map[string]string)
			if tt.table.Name == DecisionName && (last["decision"] != string(res.Decision) || last["reason"] != res.Reason) {
				t.Errorf("meta lastValues %v lacks the decision and its reason", last)
			}
		})
	}
}

func TestNumericPivotsPodsByFleet(t *testing.T) {
	res := withSelectors(t, analysis(t, verdict.RuleEvidence))
	t0, t1 := res.Minutes[0].Time, res.Minutes[1].Time
	spread := []engine.Spread{
		{Time: t1, Fleet: "canary", Max: 0.8},
		{Time: t0, Fleet: "baseline", Max: 0.3},
		{Time: t0, Fleet: "canary", Max: 0.9},
	}
	n, err := Numeric(Pods(res, spread), SeriesLabels(res), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Columns[0].Values.([]time.Time); !reflect.DeepEqual(got, []time.Time{t0, t1}) {
		t.Fatalf("times %v, want the union ascending", got)
	}
	byFleet := map[string][]*float64{}
	for _, c := range n.Columns[1:] {
		byFleet[c.Labels[FleetLabel]] = c.Values.([]*float64)
	}
	if b := byFleet["baseline"]; *b[0] != 0.3 || b[1] != nil {
		t.Errorf("baseline max %v, want 0.3 then null", b)
	}
	if c := byFleet["canary"]; *c[0] != 0.9 || *c[1] != 0.8 {
		t.Errorf("canary max %v, want 0.9, 0.8", c)
	}
}

func TestNumericRefusesUnknownFields(t *testing.T) {
	res := analysis(t, verdict.RuleEvidence)
	for _, fields := range [][]string{{"reason"}, {"nope"}, {"decision_code", "decision_code"}, {"worst_minute"}} {
		if _, err := Numeric(Decision(res, nil), nil, fields); err == nil {
			t.Errorf("fields %v accepted", fields)
		} else if fields[0] == "nope" && !strings.Contains(err.Error(), "decision_code") {
			t.Errorf("the error does not list the numeric fields: %v", err)
		}
	}
}
