package verdict

import (
	"math"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// The engine's figures for the minutes of the hand-written promtool tests
// rules/tests/deep.yml and rules/tests/dispersion.yml: the same histograms,
// and the same expected values, rounded to 1e-6 as those tests round the
// pack's. The pack must agree with the engine (the parity test in
// internal/e2e checks it, slowly); this checks, in milliseconds, that the
// figures those tests pin the pack to are the engine's.

// schema0 is a native histogram of schema 0 with counts[i] observations in
// (2^(i-1), 2^i]: counts[0] in (0.5, 1], counts[1] in (1, 2], ...
func schema0(t *testing.T, counts ...float64) *histogram.Histogram {
	t.Helper()
	var bs []histogram.APIBucket
	total := 0.0
	for i, c := range counts {
		total += c
		if c > 0 {
			bs = append(bs, histogram.APIBucket{Lower: math.Ldexp(1, i-1), Upper: math.Ldexp(1, i), Count: c})
		}
	}
	h, err := histogram.FromNative(bs, total, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// decideMinutes decides every window of the minutes given as pairs of
// baseline and canary histograms, sliding, as the rule pack does.
func decideMinutes(c Config, pairs [][2]*histogram.Histogram) []Minute {
	start := time.Date(2026, 11, 21, 0, 1, 0, 0, time.UTC)
	ms := make([]Minute, len(pairs))
	for i, p := range pairs {
		ms[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: MinuteEvidence(c, p[0], p[1], 1, 1)}
	}
	return Decide(c, ms, Options{Shown: len(ms)}).Minutes
}

func micro(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func checkMicro(t *testing.T, what string, got []float64, want ...float64) {
	t.Helper()
	for i := range want {
		if micro(got[i]) != want[i] {
			t.Errorf("%s: %v, want %v (to 1e-6)", what, got, want)
			return
		}
	}
}

// TestPackDeepTail: rules/tests/deep.yml. 12 more of the canary's
// observations than the baseline's beyond the p99 (1.414s): in its deep tail
// (16s, 32s], each term is held at DeepMinuteCap but a = 4's (below it), and
// the canary rolls back at minute 8; short of it, in (2s, 4s], each term is
// its LLR (at most MinuteCap) and it rolls back at minute 4.
func TestPackDeepTail(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		name               string
		canary             []float64
		terms, bound       []float64
		rollback           int
		before, atRollback float64
	}{
		{"deep", []float64{1176, 12, 0, 0, 0, 12}, []float64{1.854026, 1.900226, 1.900226}, []float64{1.900226, 1.900226, 1.900226}, 8, 12.848968, 14.743469},
		{"band", []float64{1176, 12, 12}, []float64{1.854026, 2.871436, 2.76002}, []float64{2.070735, 3.723162, 4.899064}, 4, 12.533015, 17.408557},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pairs [][2]*histogram.Histogram
			for range tc.rollback {
				pairs = append(pairs, [2]*histogram.Histogram{schema0(t, 1188, 12), schema0(t, tc.canary...)})
			}
			ms := decideMinutes(c, pairs)
			v := ms[0].Evidence.Votes
			if micro(v[0].Canary) != 18 || micro(v[0].Baseline) != 6 || micro(ms[0].Evidence.Share) != 0.5 {
				t.Fatalf("p99 counts %v and %v at share %v, want 18 and 6 at 1/2", v[0].Canary, v[0].Baseline, ms[0].Evidence.Share)
			}
			checkMicro(t, "p99 terms", v[0].LLR[:], tc.terms...)
			checkMicro(t, "bound terms", v[BoundVote].LLR[:], tc.bound...)
			n := tc.rollback
			if w := ms[n-2]; micro(w.Window.Statistic) != tc.before || w.Decision != Hold {
				t.Errorf("minute %d: %s at %v, want hold at %v", n-1, w.Decision, w.Window.Statistic, tc.before)
			}
			if w := ms[n-1]; micro(w.Window.Statistic) != tc.atRollback || w.Decision != Rollback {
				t.Errorf("minute %d: %s at %v, want rollback at %v", n, w.Decision, w.Window.Statistic, tc.atRollback)
			}
		})
	}
}

// TestPackDispersion: rules/tests/dispersion.yml. A canary whose p99 excess
// comes in clumps every other minute has dispersion 16/3 from its fourth
// minute on and holds; the same excess spread evenly, with the same sums for
// a = 4 and 8, has none and rolls back at minute 13.
func TestPackDispersion(t *testing.T) {
	c := Default()
	clump := [2]*histogram.Histogram{schema0(t, 1192, 8), schema0(t, 1160, 40)}
	quiet := [2]*histogram.Histogram{schema0(t, 1176, 24), schema0(t, 1176, 24)}
	even := [2]*histogram.Histogram{schema0(t, 1184, 16), schema0(t, 1168, 32)}
	var clumped, spread [][2]*histogram.Histogram
	for i := range 16 {
		spread = append(spread, even)
		if i%2 == 0 {
			clumped = append(clumped, clump)
		} else {
			clumped = append(clumped, quiet)
		}
	}
	ms := decideMinutes(c, clumped)
	checkMicro(t, "clumped residuals of minutes 15 and 16", []float64{ms[14].Evidence.Votes[0].Residual(0.5), ms[15].Evidence.Votes[0].Residual(0.5)}, 3.265986, 0)
	if d := ms[2].Window.Dispersion[0]; d != 1 {
		t.Errorf("clumped, minute 3 (2 changes): p99 dispersion %v, want 1", d)
	}
	last := ms[15].Window
	checkMicro(t, "clumped dispersions", last.Dispersion[:], 5.333333, 1, 1)
	checkMicro(t, "clumped p99 sums", last.Votes[0].LLR[:], 17.464716, 21.543575, -11.925552)
	checkMicro(t, "clumped evidence", []float64{last.Statistic}, 2.259758)
	for i, m := range ms {
		if m.Decision != Hold {
			t.Errorf("clumped, minute %d: %s (%s), want hold", i+1, m.Decision, m.DecisionReason)
		}
	}

	ms = decideMinutes(c, spread)
	last = ms[15].Window
	checkMicro(t, "even dispersions", last.Dispersion[:], 1, 1, 1)
	checkMicro(t, "even p99 sums", last.Votes[0].LLR[:], 17.464716, 21.543575, -4.638495)
	checkMicro(t, "even evidence at minutes 12, 13 and 16", []float64{ms[11].Window.Statistic, ms[12].Window.Statistic, last.Statistic}, 14.006317, 15.342652, 19.363135)
	if ms[11].Decision != Hold || ms[12].Decision != Rollback {
		t.Errorf("even: %s at minute 12 and %s at 13, want hold and rollback", ms[11].Decision, ms[12].Decision)
	}
}
