package verdict

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// evidenceMinutes is consecutive minutes from start, each carrying its evidence.
func evidenceMinutes(start time.Time, es ...Evidence) []Minute {
	ms := make([]Minute, len(es))
	for i, e := range es {
		ms[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: e}
	}
	return ms
}

func repeatEvidence(e Evidence, n int) []Evidence {
	out := make([]Evidence, n)
	for i := range out {
		out[i] = e
	}
	return out
}

// TestPromoteConditions holds each of promotion's conditions on its own,
// with a promote statistic far past its boundary: the too-small floor of a
// sliding window (613) above a deployment's (238), the minutes promotion
// needs (half the window, rounded up), and a last minute that weighs just
// more than a minute's cap against the canary, whose excess lies in the
// deep tail so that no recent run holds the window instead.
func TestPromoteConditions(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c := Default()
	// A canary that shows none of its expected tail: 6 expected
	// observations a minute beyond the bucket bound, 360 over 60 minutes,
	// between the two floors.
	none := boundMinute(c, 0, 120)
	odd := c
	odd.WindowMinutes = 61
	if err := odd.Validate(); err != nil {
		t.Fatal(err)
	}
	good := boundMinute(c, 12, 288) // 15 expected a minute, 12 shown
	// A last minute: 44 of 300 tail observations where 15 are expected, 29
	// of them beyond the deep tail.
	last := Evidence{Valid: true, Share: 0.05}
	for i, q := range c.VoteQuantiles() {
		last.Votes[i] = onBound(Vote{Quantile: q, Threshold: 1, Canary: 44, Baseline: 256, DeepCanary: 29})
		last.Votes[i].LLR, last.Votes[i].Promote = c.voteLLR(last.Votes[i], 0.05)
	}
	if p := last.Votes[0].Promote; !(p > c.MinuteCap() && p < 1.2*c.MinuteCap()) {
		t.Fatalf("the last minute weighs %.2f for promotion, want just above the cap %.2f", p, c.MinuteCap())
	}
	tests := []struct {
		name     string
		c        Config
		minutes  []Evidence
		anchored bool
		want     Decision
		reason   string
	}{
		{"a deployment expected to show 360 promotes", c, repeatEvidence(none, 60), true, Promote, ""},
		{"a sliding window expected to show 360 holds", c, repeatEvidence(none, 60), false, Hold, "expected to show 613 observations"},
		{"29 minutes of evidence hold", c, repeatEvidence(good, 29), true, Hold, "29 minutes carry evidence and promotion needs 30"},
		{"30 minutes of evidence promote", c, repeatEvidence(good, 30), true, Promote, ""},
		{"30 minutes of a 61-minute window hold", odd, repeatEvidence(good, 30), true, Hold, "promotion needs 31"},
		{"31 minutes of a 61-minute window promote", odd, repeatEvidence(good, 31), true, Promote, ""},
		{"59 good minutes promote", c, repeatEvidence(good, 59), true, Promote, ""},
		{"a last minute just over the cap holds", c, append(repeatEvidence(good, 59), last), true, Hold, "the last minute alone weighs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Decide(tt.c, evidenceMinutes(start, tt.minutes...), Options{Anchored: tt.anchored, Shown: 1})
			if w.Decision != tt.want || !strings.Contains(w.Reason, tt.reason) {
				t.Fatalf("%s: %s; want %s (%q)", w.Decision, w.Reason, tt.want, tt.reason)
			}
			if !(w.Evidence.PromoteStatistic <= -w.Evidence.Promote) {
				t.Fatalf("promote evidence %.1f short of %.1f: the test holds nothing", w.Evidence.PromoteStatistic, -w.Evidence.Promote)
			}
			if w.Evidence.RecentStatistic >= c.MinuteCap() {
				t.Fatalf("a recent run weighs %.1f: it, not the condition tested, would hold", w.Evidence.RecentStatistic)
			}
		})
	}
}

// TestWarmupCarriesNoEvidence: minutes in warm-up add nothing to the
// evidence, however much their counts speak against the canary.
func TestWarmupCarriesNoEvidence(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c := Default()
	c.WarmupMinutes = 5
	bad := boundMinute(c, 100, 60)
	minutes := append(repeatEvidence(bad, 5), repeatEvidence(boundMinute(c, 5, 95), 5)...)
	w := Decide(c, evidenceMinutes(start, minutes...), Options{Anchored: true, Shown: 1, CanaryHadTrafficAt: func(at time.Time) bool { return !at.Before(start) }})
	if w.Counts.Warmup != 5 {
		t.Fatalf("%d warm-up minutes, want 5", w.Counts.Warmup)
	}
	if w.Decision == Rollback || w.Evidence.Minutes != 5 || w.Evidence.Statistic > 0 {
		t.Fatalf("%s over %d minutes, evidence %.1f: warm-up minutes counted (%s)", w.Decision, w.Evidence.Minutes, w.Evidence.Statistic, w.Reason)
	}
	// The same minutes out of warm-up roll back.
	if w := Decide(c, evidenceMinutes(start, minutes...), Options{Anchored: true, Shown: 1}); w.Decision != Rollback {
		t.Fatalf("without warm-up: %s (%s)", w.Decision, w.Reason)
	}
}

// TestEachFleetItsOwnScale: each fleet's counts, beyond every threshold,
// its bucket bound and its deep tail, are scaled by its own scrape scale
// (a fleet that missed a scrape reads fewer of its minute's observations).
func TestEachFleetItsOwnScale(t *testing.T) {
	c := Default()
	base, canary := classic(t, 9500, 60, 10), classic(t, 480, 6, 2)
	one := MinuteEvidence(c, base, canary, 1, 1)
	scaled := MinuteEvidence(c, base, canary, 0.5, 0.8)
	if !one.Valid || !scaled.Valid {
		t.Fatal("no evidence")
	}
	var nonzero [6]bool
	for i, v := range one.Votes {
		s := scaled.Votes[i]
		if v.Quantile == 0 {
			continue
		}
		for _, f := range []struct {
			what      string
			got, want float64
		}{
			{"canary", s.Canary, 0.8 * v.Canary}, {"baseline", s.Baseline, 0.5 * v.Baseline},
			{"canary beyond the bound", s.BoundCanary, 0.8 * v.BoundCanary}, {"baseline beyond the bound", s.BoundBaseline, 0.5 * v.BoundBaseline},
			{"canary's deep tail", s.DeepCanary, 0.8 * v.DeepCanary}, {"baseline's deep tail", s.DeepBaseline, 0.5 * v.DeepBaseline},
		} {
			if math.Abs(f.got-f.want) > 1e-9*math.Max(1, f.want) {
				t.Errorf("vote %d, %s: %v, want %v", i, f.what, f.got, f.want)
			}
		}
		for j, x := range []float64{v.Canary, v.Baseline, v.BoundCanary, v.BoundBaseline, v.DeepCanary, v.DeepBaseline} {
			if x > 0 {
				nonzero[j] = true
			}
		}
	}
	if slices.Contains(nonzero[:], false) {
		t.Fatalf("counts empty in every vote %v: the test scales nothing", nonzero)
	}
}

// TestDispersionHoldsClumps: minutes whose tail comes in clumps (a canary
// pod that stalls every other minute) add up to far past the rollback
// boundary read as independent observations; divided by their dispersion,
// over the window and over every recent run, they do not roll back. The
// same excess spread evenly over the minutes does.
func TestDispersionHoldsClumps(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c := Default()
	clump, none := boundMinute(c, 15, 85), boundMinute(c, 0, 100)
	var clumped, even []Evidence
	for i := range 60 {
		even = append(even, boundMinute(c, 7.5, 92.5))
		if i%2 == 0 {
			clumped = append(clumped, clump)
		} else {
			clumped = append(clumped, none)
		}
	}
	w := Decide(c, evidenceMinutes(start, clumped...), Options{Shown: 1})
	if w.Decision == Rollback || !(w.Evidence.Dispersion[0] > 2) {
		t.Fatalf("clumps: %s, dispersion %v (%s)", w.Decision, w.Evidence.Dispersion, w.Reason)
	}
	if e := Decide(c, evidenceMinutes(start, even...), Options{Shown: 1}); e.Decision != Rollback {
		t.Fatalf("the same excess spread evenly: %s (%s)", e.Decision, e.Reason)
	}
}
