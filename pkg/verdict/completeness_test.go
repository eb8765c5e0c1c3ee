package verdict

import (
	"strings"
	"testing"
	"time"
)

func health(reporting ...float64) []FleetHealth {
	out := make([]FleetHealth, len(reporting))
	for i, r := range reporting {
		out[i] = FleetHealth{Reporting: r}
	}
	return out
}

func withSamples(h []FleetHealth, samples ...float64) []FleetHealth {
	for i, n := range samples {
		h[i].SamplesPerSeries = n
	}
	return h
}

func TestCompleteness(t *testing.T) {
	down := health(10, 10, 10, 10)
	down[2].Down = 1
	tests := []struct {
		name       string
		health     []FleetHealth
		incomplete []bool
		accepted   int
	}{
		{name: "steady fleet", health: health(10, 10, 10), incomplete: []bool{false, false, false}},
		{name: "a target down is incomplete even if its series linger", health: down, incomplete: []bool{false, false, true, false}},
		{name: "scrapes fail for two minutes", health: health(10, 10, 9, 9, 10, 10), incomplete: []bool{false, false, true, true, false, false}},
		{name: "a pod deleted: five incomplete minutes, then accepted",
			health:     health(10, 9, 9, 9, 9, 9, 9, 9),
			incomplete: []bool{false, true, true, true, true, true, false, false}, accepted: 1},
		{name: "a fleet that grows is complete", health: health(9, 10, 11, 11), incomplete: []bool{false, false, false, false}},
		{name: "rolling restart: one pod replaced at a time", health: health(10, 10, 11, 10, 10), incomplete: []bool{false, false, false, true, true}},
		{name: "the first minutes are judged on what there is", health: health(7, 7), incomplete: []bool{false, false}},
		{name: "scraped every 10 s where 15 s is set: every minute would overlap the one before",
			health: withSamples(health(10, 10, 10), 6, 6, 4.5), incomplete: []bool{true, true, true}},
		{name: "missed scrapes and a slower interval only read less", health: withSamples(health(10, 10, 10), 4.4, 3.9, 2),
			incomplete: []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, accepted := Completeness(Default(), tt.health)
			for i, want := range tt.incomplete {
				if (got[i] != "") != want {
					t.Errorf("minute %d: incomplete %q, want %v", i, got[i], want)
				}
			}
			if len(accepted) != tt.accepted {
				t.Errorf("accepted %q, want %d notes", accepted, tt.accepted)
			}
		})
	}
}

// TestPartialMinutes: an incomplete fleet's minutes are partial, carry no
// evidence, and flag the window, which then never promotes.
func TestPartialMinutes(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := Default()
	c.Rule = RuleReference
	ms := window(start, repeat(0.9, 60)...)
	ms[10].Canary.Incomplete = "1 of its scrape targets down (up == 0)"
	ms[10].Evidence = Evidence{Valid: true, Votes: [NumVotes]Vote{{Quantile: 0.99, Canary: 100, LLR: [len(TailIndices)]float64{100, 100, 100}}}}
	w := Decide(c, ms, Options{})
	if m := w.Minutes[10]; m.Verdict != Partial || !strings.Contains(m.Reason, "canary fleet is incomplete") {
		t.Fatalf("minute 10: %s %q", m.Verdict, m.Reason)
	}
	if w.Counts.Partial != 1 || w.Counts.Good != 59 || !contains(w.Flags, FlagPartialFleet) {
		t.Fatalf("counts %+v flags %v", w.Counts, w.Flags)
	}
	if w.Decision != Hold || !strings.Contains(w.Reason, "partial-fleet") {
		t.Fatalf("59 good minutes and a partial one: %s (%s)", w.Decision, w.Reason)
	}
	c.Rule = RuleEvidence
	w = Decide(c, ms, Options{})
	if w.Evidence.Minutes != 0 || w.Decision == Rollback {
		t.Fatalf("the partial minute's evidence counted: %+v", w.Evidence)
	}
}

func TestCallerFlagsHoldAPromotion(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := Default()
	c.Rule = RuleReference
	w := Decide(c, window(start, repeat(0.9, 60)...), Options{Flags: []string{FlagPartialResponse}, Notes: []string{"Prometheus warned: a store was unreachable"}})
	if w.Decision != Hold || !contains(w.Flags, FlagPartialResponse) || w.Minutes[59].Decision != Hold {
		t.Fatalf("%s %v: %s", w.Decision, w.Flags, w.Reason)
	}
}
