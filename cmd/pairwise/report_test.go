package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// TestMinuteTailJSON: each vote of a minute's evidence in the judge's JSON
// carries its deep tail's counts beside its counts beyond the threshold, so
// a reader can see why a minute's LLR was held at the deep tail's cap, and
// its name: the bound vote shares the verdict quantile's.
func TestMinuteTailJSON(t *testing.T) {
	e := verdict.Evidence{Valid: true, Share: 0.5}
	e.Votes[0] = verdict.Vote{Quantile: 0.99, Threshold: 0.2, Canary: 180, Baseline: 100, DeepCanary: 80, DeepBaseline: 1}
	e.Votes[1] = verdict.Vote{Quantile: 0.9, Threshold: 0.1, Canary: 1100, Baseline: 1000, DeepCanary: 90, DeepBaseline: 3}
	e.Votes[verdict.BoundVote] = verdict.Vote{Quantile: 0.99, Threshold: 0.25, Canary: 120, Baseline: 50, DeepCanary: 80, DeepBaseline: 1}
	b, err := json.Marshal(minuteTailJSON(e))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"vote":"p99","quantile":0.99,"threshold":0.2,"canary":180,"baseline":100,"canary_deep":80,"baseline_deep":1,`,
		`{"vote":"p90","quantile":0.9,"threshold":0.1,"canary":1100,"baseline":1000,"canary_deep":90,"baseline_deep":3,`,
		`{"vote":"p99 bound","quantile":0.99,"threshold":0.25,"canary":120,"baseline":50,"canary_deep":80,"baseline_deep":1,`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s\nlacks %s", b, want)
		}
	}
}

// TestSharedSeriesJSON: a minute whose series both fleets selected says how
// many in the judge's JSON; the others say nothing of it.
func TestSharedSeriesJSON(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	res := &engine.Result{Window: verdict.Window{Config: verdict.Default(), Worst: -1,
		Minutes: []verdict.Minute{{Time: at.Add(-time.Minute), Shared: 2}, {Time: at}}}}
	b, err := json.Marshal(report(res))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"shared_series"`); n != 1 || !strings.Contains(string(b), `"shared_series":2`) {
		t.Fatalf("shared_series %d times in %s", n, b)
	}
}
