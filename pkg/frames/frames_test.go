package frames

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// fleet is a classic histogram of n observations a minute, a share slow of
// them in the 0.5 s bucket and the rest below 0.1 s.
func fleet(t *testing.T, n, slow float64) *histogram.Histogram {
	t.Helper()
	h, err := histogram.FromClassic([]float64{0.05, 0.1, 0.2, 0.5, math.Inf(1)}, []float64{n * (1 - slow) / 2, n * (1 - slow), n * (1 - slow), n, n})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// analysis judges 20 minutes of a 20% canary whose tail turns five times as
// frequent for the last 6, as the engine would, with a 10-minute window.
func analysis(t *testing.T, rule string) *engine.Result {
	t.Helper()
	c := verdict.Default()
	c.Rule, c.WindowMinutes, c.GoodNeeded = rule, 10, 8
	end := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var minutes []verdict.Minute
	for i := 0; i < 20; i++ {
		slow := 0.01
		if i >= 14 {
			slow = 0.05
		}
		b, k := fleet(t, 40000, 0.01), fleet(t, 10000, slow)
		minutes = append(minutes, verdict.Minute{Time: end.Add(time.Duration(i-19) * time.Minute),
			Baseline: verdict.Stats(c, b), Canary: verdict.Stats(c, k), Evidence: verdict.MinuteEvidence(c, b, k, 1, 1)})
	}
	req := engine.Request{Metric: "m", Config: c, Window: pairing.Window{First: end.Add(-14 * time.Minute), Last: end}}
	return &engine.Result{Window: verdict.Decide(c, minutes, verdict.Options{Shown: 15}), Request: req, BaselineKind: "classic", CanaryKind: "classic"}
}

func column(t *testing.T, tb Table, name string) any {
	t.Helper()
	for _, c := range tb.Columns {
		if c.Name == name {
			return c.Values
		}
	}
	t.Fatalf("%s has no column %s", tb.Name, name)
	return nil
}

func TestMinutesCarryEachWindowsDecision(t *testing.T) {
	for _, rule := range []string{verdict.RuleEvidence, verdict.RuleReference} {
		t.Run(rule, func(t *testing.T) {
			res := analysis(t, rule)
			tb := Minutes(res)
			seen := map[string]bool{}
			for _, c := range tb.Columns {
				if seen[c.Name] {
					t.Fatalf("column %s twice", c.Name)
				}
				seen[c.Name] = true
				if n := reflect.ValueOf(c.Values).Len(); n != len(res.Minutes) || n != 15 {
					t.Fatalf("column %s has %d rows for %d minutes", c.Name, n, len(res.Minutes))
				}
			}
			decisions := column(t, tb, "decision").([]string)
			codes := column(t, tb, "decision_code").([]*float64)
			reasons := column(t, tb, "decision_reason").([]string)
			stat := column(t, tb, "evidence_statistic").([]*float64)
			rb := column(t, tb, "rollback_boundary").([]*float64)
			pb := column(t, tb, "promote_boundary").([]*float64)
			exp := column(t, tb, "expected_canary_tail").([]*float64)
			firstRollback := -1
			for i, m := range res.Minutes {
				if decisions[i] != string(m.Decision) || *codes[i] != float64(m.Decision.Code()) || reasons[i] != m.DecisionReason || reasons[i] == "" {
					t.Fatalf("row %d: %s %v %q, minute %s %q", i, decisions[i], *codes[i], reasons[i], m.Decision, m.DecisionReason)
				}
				if *stat[i] != m.Window.Statistic || *rb[i] != m.Window.Rollback || *pb[i] != -m.Window.Promote || *pb[i] >= 0 || *exp[i] != m.Window.Expected {
					t.Fatalf("row %d: evidence %v/%v/%v/%v, window %+v", i, *stat[i], *rb[i], *pb[i], *exp[i], m.Window)
				}
				if firstRollback < 0 && m.Decision == verdict.Rollback {
					firstRollback = i
				}
			}
			// The regression starts at row 9 of the 15 shown (minute 14 of 20).
			if firstRollback < 9 || decisions[len(decisions)-1] != "rollback" || decisions[0] == "rollback" {
				t.Fatalf("decisions %v", decisions)
			}
			if tb.Meta["rule"] != rule || tb.Meta["windowMinutes"] != 10 || tb.Meta["since"] != "" {
				t.Fatalf("meta %v", tb.Meta)
			}
		})
	}
}

func TestDecisionCarriesTheEvidence(t *testing.T) {
	res := analysis(t, verdict.RuleEvidence)
	tb := Decision(res, nil)
	for _, c := range tb.Columns {
		if n := reflect.ValueOf(c.Values).Len(); n != 1 {
			t.Fatalf("column %s has %d rows", c.Name, n)
		}
	}
	one := func(name string) float64 { return *column(t, tb, name).([]*float64)[0] }
	if column(t, tb, "decision").([]string)[0] != "rollback" || one("decision_code") != 2 || column(t, tb, "rule").([]string)[0] != "evidence" {
		t.Fatalf("decision %v", tb.Columns)
	}
	ev := res.Evidence
	if one("evidence_statistic") != ev.Statistic || one("rollback_boundary") != ev.Rollback || one("promote_boundary") != -ev.Promote ||
		one("evidence_minutes") != float64(ev.Minutes) || one("canary_tail") != ev.Canary || one("expected_canary_tail") != ev.Expected {
		t.Fatalf("evidence columns differ from %+v", ev)
	}
	if column(t, tb, "reason").([]string)[0] != res.Reason {
		t.Fatal("reason")
	}
}

func TestRecentRunIsNullWithoutOne(t *testing.T) {
	m, s, b, c, e := recent(verdict.WindowEvidence{RecentStatistic: math.Inf(-1)})
	if m != nil || s != nil || b != nil || c != nil || e != nil {
		t.Fatal("a window without a recent run has recent values")
	}
	m, s, _, _, _ = recent(verdict.WindowEvidence{RecentMinutes: 4, RecentStatistic: 3})
	if *m != 4 || *s != 3 {
		t.Fatal("recent run lost")
	}
}
