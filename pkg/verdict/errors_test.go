package verdict

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestErrorEvidenceIsALikelihoodRatio: under identical fleets a minute's K
// failed requests are each the canary's with its share of requests f, and
// the exponential of errorEvidence then has mean exactly 1, whatever K and
// f: the sum over minutes is a test martingale, as the evidence rule's is.
func TestErrorEvidenceIsALikelihoodRatio(t *testing.T) {
	for _, tt := range []struct {
		f float64
		K int
	}{{0.05, 10}, {0.5, 7}, {0.01, 40}, {0.8, 3}} {
		canaryRequests := 1000 * tt.f
		mean := 0.0
		for k := 0; k <= tt.K; k++ {
			m := Minute{Errors: &ErrorCounts{
				Baseline: RequestCounts{Requests: 1000 - canaryRequests, Errors: float64(tt.K - k)},
				Canary:   RequestCounts{Requests: canaryRequests, Errors: float64(k)},
			}}
			llr, expected, ok := errorEvidence(m)
			if !ok || math.Abs(expected-tt.f*float64(tt.K)) > 1e-9 {
				t.Fatalf("f %v, K %d, k %d: ok %v, expected %v", tt.f, tt.K, k, ok, expected)
			}
			mean += binomial(tt.K, k) * math.Pow(tt.f, float64(k)) * math.Pow(1-tt.f, float64(tt.K-k)) * math.Exp(llr)
		}
		if math.Abs(mean-1) > 1e-9 {
			t.Errorf("f %v, K %d: E[exp(llr)] = %v, want 1", tt.f, tt.K, mean)
		}
	}
}

// TestErrorEvidenceAsThePackRecordsIt: the minutes of rules/tests/errors.yml,
// 40,000 requests a minute in each fleet, give the engine the error
// evidence that test pins the pack's canary:<metric>:error_llr_1m to.
func TestErrorEvidenceAsThePackRecordsIt(t *testing.T) {
	for _, tt := range []struct{ canaryErrors, want float64 }{{1600, 298.105}, {400, -47.113}} {
		llr, _, ok := errorEvidence(Minute{Errors: &ErrorCounts{
			Baseline: RequestCounts{Requests: 40000, Errors: 400},
			Canary:   RequestCounts{Requests: 40000, Errors: tt.canaryErrors},
		}})
		if !ok || math.Abs(llr-tt.want) > 0.0005 {
			t.Errorf("canary failing %v of 40,000: evidence %.4f (ok %v), want %.3f", tt.canaryErrors, llr, ok, tt.want)
		}
	}
}

// TestErrorDispersionAsThePackReadsIt: the clumped failures of
// rules/tests/errors.yml's last test (the canary failing 1,600 of 40,000
// requests in one minute and none in the next, the baseline 400 of 40,000
// every minute), read over the window that test's 75m reads: the
// dispersion 1,096.66 the pack computes, and a strongest run that, divided
// by it, stays far below the boundary. Without the dispersion, one failing
// minute alone would pass it.
func TestErrorDispersionAsThePackReadsIt(t *testing.T) {
	c := Default()
	ms := make([]Minute, 61) // the minutes ending 15m .. 75m
	for k := range ms {
		canary := 0.0
		if k%2 == 0 {
			canary = 1600
		}
		ms[k].Errors = &ErrorCounts{Baseline: RequestCounts{40000, 400}, Canary: RequestCounts{40000, canary}}
	}
	runs := newErrorRuns(ms)
	phi := runs.dispersion(1, 60)
	if math.Abs(phi-1096.66) > 0.005 {
		t.Fatalf("dispersion %.4f, want 1096.66 as the pack's", phi)
	}
	best := runs.strongest(1, 60)
	if best.minutes != 60 || math.Abs(best.llr/phi-3.7) > 0.05 || best.errorNote(c) != "" {
		t.Fatalf("strongest run %d minutes, evidence %.2f / %.2f, note %q; want the window, 3.7, none", best.minutes, best.llr, phi, best.errorNote(c))
	}
	if one := runs.strongest(60, 60); !(one.llr >= c.ErrorBoundary()) {
		t.Fatalf("one failing minute weighs %.1f, want past the boundary %.1f undivided", one.llr, c.ErrorBoundary())
	}
}

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// TestErrorRatioHoldsPromotion: a canary whose latency would promote it is
// held, flagged traffic-parity, once its failed requests show it failing
// more often than its baseline at promotion's confidence (a canary that
// fails fast can look faster); one that fails as often, or 1.2 times as
// often, is not; warm-up minutes and counts that are not numbers carry
// nothing.
func TestErrorRatioHoldsPromotion(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c := Default()
	good := boundMinute(c, 12, 288) // a canary that promotes by its tail, sliding too
	// A 5% canary of 30,000 requests a minute; the baseline fails 0.5% of
	// its requests.
	errs := func(canaryErrors float64) *ErrorCounts {
		return &ErrorCounts{Baseline: RequestCounts{Requests: 28500, Errors: 142.5}, Canary: RequestCounts{Requests: 1500, Errors: canaryErrors}}
	}
	tests := []struct {
		name     string
		errors   func(i int) *ErrorCounts
		anchored bool
		want     Decision
		note     string
	}{
		{"no request counts", func(int) *ErrorCounts { return nil }, true, Promote, ""},
		{"failing as often promotes", func(int) *ErrorCounts { return errs(7.5) }, true, Promote, ""},
		{"failing 1.2x as often promotes", func(int) *ErrorCounts { return errs(9) }, true, Promote, ""},
		{"failing 4x as often holds", func(int) *ErrorCounts { return errs(30) }, true, Hold, "the canary's requests failed 1770 times where 508.9 were expected at its share of requests over 59 minutes (2.00% of the canary's requests against 0.50% of the baseline's"},
		{"failing 4x as often holds, sliding", func(int) *ErrorCounts { return errs(30) }, false, Hold, "reached 11.9"},
		// The evidence is the strongest run of minutes ending at the window's
		// last: a minute that failed 4x as often weighs 12.4, and each of the
		// 55 after it that fail as often weighs -2.1.
		{"a minute of failures outweighed by the window promotes", func(i int) *ErrorCounts {
			if i == 3 {
				return errs(30)
			}
			return errs(7.5)
		}, true, Promote, ""},
		{"failing 8x as often in the last 3 minutes holds a deployment", func(i int) *ErrorCounts {
			if i >= 56 {
				return errs(60)
			}
			return errs(7.5)
		}, true, Hold, "failed 188 times where 37.9 were expected at its share of requests over 4 minutes"},
		{"a minute whose counts are not numbers carries nothing", func(i int) *ErrorCounts {
			e := errs(30)
			if i == 10 {
				e.Baseline.Errors = math.NaN()
			}
			return e
		}, true, Hold, "failed 1740 times where 500.2 were expected at its share of requests over 58 minutes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := evidenceMinutes(start, repeatEvidence(good, 59)...)
			for i := range ms {
				ms[i].Errors = tt.errors(i)
			}
			w := Decide(c, ms, Options{Anchored: tt.anchored, Shown: 1})
			if w.Decision != tt.want {
				t.Fatalf("%s: %s; want %s", w.Decision, w.Reason, tt.want)
			}
			note := strings.Join(w.Notes, "\n")
			if tt.note == "" {
				if len(w.Flags) > 0 {
					t.Fatalf("flagged %v: %s", w.Flags, note)
				}
				return
			}
			if len(w.Flags) != 1 || w.Flags[0] != FlagTrafficParity || !strings.Contains(note, tt.note) || !strings.Contains(w.Reason, "flagged traffic-parity") {
				t.Fatalf("flags %v, reason %q, notes:\n%s\nwant traffic-parity with %q", w.Flags, w.Reason, note, tt.note)
			}
		})
	}
	// Warm-up minutes carry no failed requests.
	ms := evidenceMinutes(start, repeatEvidence(good, 59)...)
	for i := range ms {
		ms[i].Errors = errs(30)
	}
	warm := c
	warm.WarmupMinutes = 1
	w := Decide(warm, ms, Options{Anchored: true, Shown: 1, CanaryHadTrafficAt: func(time.Time) bool { return false }})
	if len(w.Flags) > 0 {
		t.Fatalf("warm-up minutes raised %v: %v", w.Flags, w.Notes)
	}
}
