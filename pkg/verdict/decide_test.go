package verdict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// longDay is a day of identical fleets, each minute with its ratio verdict's
// stats and its evidence (5% share, 15 tail observations a minute), ready
// for Decide.
func longDay(c Config, n int) []Minute {
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	ms := make([]Minute, n)
	for i := range ms {
		ms[i] = Minute{Time: start.Add(time.Duration(i+1) * time.Minute), Baseline: fleet(1, 20), Canary: fleet(0.9+0.2*r.Float64(), 20)}
		ms[i].Baseline.Count, ms[i].Canary.Count = 1900, 100
		ms[i].Evidence = nullMinute(r, c, 0.05, 15)
	}
	return ms
}

// readWindow reads the window whose minutes' evidence is ev alone, from
// running sums that start at its first minute.
func readWindow(c Config, ev []Evidence, anchored bool) WindowEvidence {
	return readRun(c, newRunningSums(ev, c.ChangeCap()), 0, len(ev), anchored)
}

// TestDecideWindowsAsRead: every shown minute's window evidence is what
// reading its window's minutes directly gives, to the last bit, for
// windows that start with the minutes (a day judged as one window) and
// windows that slide (an hour's window shown over a day), and a
// deployment's evidence since its start, past its window, for a day.
func TestDecideWindowsAsRead(t *testing.T) {
	for _, tc := range []struct {
		window, minutes, shown int
		anchored               bool
	}{{1440, 1440, 1440, false}, {60, 1499, 1440, false}, {60, 60, 0, false}, {30, 100, 100, false}, {30, 100, 100, true}, {60, 1500, 1500, true}} {
		c := Default()
		c.WindowMinutes = tc.window
		ms := longDay(c, tc.minutes)
		w := Decide(c, ms, Options{Shown: tc.shown, Anchored: tc.anchored})
		first := len(ms) - len(w.Minutes)
		for k, m := range w.Minutes {
			i := first + k
			// Anchored, a deployment's first day pools from its start.
			n, anchored := min(i+1, c.WindowMinutes), tc.anchored && i < MinutesPerDay
			if anchored {
				n = i + 1
			}
			ev := make([]Evidence, n)
			for j := range ev {
				ev[j] = evidenceOf(ms[i-n+1+j])
			}
			if got, want := fmt.Sprintf("%+v", m.Window), fmt.Sprintf("%+v", readWindow(c, ev, anchored)); got != want {
				t.Fatalf("window %d, %d minutes, minute %d: Decide's window\n%s\nread directly\n%s", tc.window, tc.minutes, i, got, want)
			}
		}
	}
}

// BenchmarkDecide: a day judged as one window (every minute's window
// starts with the day) and an hour's window shown over a day.
func BenchmarkDecide(b *testing.B) {
	for _, tc := range []struct{ window, minutes int }{{1440, 1440}, {60, 1499}, {60, 60}} {
		b.Run(fmt.Sprintf("window %d, %d minutes", tc.window, tc.minutes), func(b *testing.B) {
			c := Default()
			c.WindowMinutes = tc.window
			day := longDay(c, tc.minutes)
			ms := make([]Minute, len(day))
			b.ReportAllocs()
			for b.Loop() {
				copy(ms, day)
				Decide(c, ms, Options{Shown: min(1440, tc.minutes)})
			}
		})
	}
}

// TestTallyAsRead: a window tally kept as minutes enter and leave raises
// the flags, with the same notes, that reading the window's minutes raises;
// its medians are the sorted middles, NaN and infinities included.
func TestTallyAsRead(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	c := Default()
	c.ExpectedCanaryShare = 0.05
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	ms := make([]Minute, 400)
	for i := range ms {
		m := Minute{Time: start.Add(time.Duration(i) * time.Minute), Verdict: []Verdict{Good, Neutral, Bad, Insufficient, NoData, Partial}[r.IntN(6)],
			Ratio: []float64{0.5, 0.7, 1, 1.25, math.Inf(1), math.NaN()}[r.IntN(6)] * (1 + float64(r.IntN(4))/8), Warmup: r.IntN(10) == 0}
		m.Baseline.Count, m.Canary.Count = float64(r.IntN(3)*900), float64(r.IntN(3)*50+r.IntN(40))
		m.Baseline.Value, m.Canary.Value = 0.2, 0.25
		if r.IntN(8) == 0 {
			m.LB = &LoadBalancerQuantiles{Baseline: 0.2 * (1 + r.Float64()/2), Canary: math.NaN()}
		}
		ms[i] = m
	}
	o := Options{Flags: []string{FlagPartialResponse}, Notes: []string{"partial"}}
	for _, width := range []int{1, 2, 7, 60} {
		var tally windowTally
		for i := range ms {
			tally.step(c, ms, i, width)
			judged := ms[max(0, i-width+1) : i+1]
			gotF, gotN := tally.flags(c, o, judged, true)
			wantF, wantN := readFlags(c, judged, o)
			if fmt.Sprint(gotF, gotN) != fmt.Sprint(wantF, wantN) {
				t.Fatalf("width %d, minute %d: tally %q %q, read %q %q", width, i, gotF, gotN, wantF, wantN)
			}
			if only, _ := tally.flags(c, o, nil, false); fmt.Sprint(only) != fmt.Sprint(wantF) {
				t.Fatalf("width %d, minute %d: flags without notes %q, with %q", width, i, only, wantF)
			}
		}
	}
}

// readFlags raises a window's flags the plain way: medians of sorted
// copies, every minute read.
func readFlags(c Config, judged []Minute, o Options) (flags, notes []string) {
	med := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return sortedMedian(s)
	}
	var ratios, shares []float64
	missing, partial := 0, 0
	for i, m := range judged {
		if s, ok := shareOf(m); ok && i >= len(judged)-c.ShareMinutes() {
			shares = append(shares, s)
		}
		if m.Warmup {
			continue
		}
		if counted(m.Verdict) {
			ratios = append(ratios, m.Ratio)
		}
		if m.Verdict == Partial {
			partial++
		}
		if (m.Baseline.Count > 0) != (m.Canary.Count > 0) {
			missing++
		}
	}
	if r := med(ratios); len(ratios) > 0 && r <= c.SuspiciousWin {
		flags, notes = append(flags, FlagSuspiciousWin), append(notes, fmt.Sprintf("the median ratio is %.2fx, a win this large usually means the canary gets different traffic: check request mix, payload sizes and error ratios before promoting", r))
	}
	if s := med(shares); len(shares) > 0 && s > 0 {
		drifted := 0
		for _, x := range shares {
			if math.Abs(x-s)/s > c.MaxShareDrift {
				drifted++
			}
		}
		var parts []string
		if drifted > 0 {
			parts = append(parts, fmt.Sprintf("the canary's share of requests moved more than %.0f%% from its median %.1f%% in %d of %d minutes (the window's last %d)", c.MaxShareDrift*100, s*100, drifted, len(shares), c.ShareMinutes()))
		}
		if e := c.ExpectedCanaryShare; e > 0 && math.Abs(s/e-1) > c.MaxShareDeviation {
			parts = append(parts, fmt.Sprintf("the canary served %.2f%% of requests (median), not the %.2f%% it should: the router splits differently or the canary gets another request mix", s*100, e*100))
		}
		if len(parts) > 0 {
			flags, notes = append(flags, FlagTrafficParity), append(notes, strings.Join(parts, "; and ")+": the fleets may not see the same traffic, so a difference in latency may not be the release's")
		}
	}
	if missing > 0 {
		flags, notes = append(flags, FlagFleetMissing), append(notes, fmt.Sprintf("in %d minutes one fleet served traffic and the other had none", missing))
	}
	if partial > 0 {
		flags, notes = append(flags, FlagPartialFleet), append(notes, fmt.Sprintf("in %d minutes a fleet member that was serving did not report (target down or series stopped): those minutes are neither good nor bad nor evidence", partial))
	}
	if note := measurementNote(c, judged); note != "" {
		flags, notes = append(flags, FlagMeasurementDivergence), append(notes, note)
	}
	for i, f := range o.Flags {
		flags, notes = append(flags, f), append(notes, o.Notes[i])
	}
	return flags, notes
}

// TestPromoteExpected: a canary too small to tell holds, even when a
// shortfall of tail observations puts its promote statistic past the
// boundary; with enough expected observations the same shortfall promotes.
func TestPromoteExpected(t *testing.T) {
	c := Default()
	a := c.PromoteAlternative()
	for _, anchored := range []bool{true, false} {
		// An identical canary adds A - 1 - ln A per expected tail
		// observation at most: the floor is where that reaches the boundary.
		if got, want := c.PromoteExpected(anchored)*(a-1-math.Log(a)), c.PromoteBoundary(anchored); math.Abs(got-want) > 1e-12 {
			t.Errorf("anchored %v: floor x (A-1-ln A) = %v, want the promote boundary %v", anchored, got, want)
		}
	}
	if lo, hi := c.PromoteExpected(true), c.PromoteExpected(false); math.Round(lo) != 238 || math.Round(hi) != 613 {
		t.Errorf("floors %.1f anchored and %.1f sliding, want about 238 and 613", lo, hi)
	}
	window := func(share, tail, canary float64) WindowEvidence {
		ev := make([]Evidence, c.WindowMinutes)
		for i := range ev {
			e := Evidence{Valid: true, Share: share}
			for v, q := range c.VoteQuantiles() {
				// the decade below holds ten times the verdict quantile's tail
				k, b := canary*math.Pow(10, float64(v)), (tail-canary)*math.Pow(10, float64(v))
				e.Votes[v] = onBound(Vote{Quantile: q, Threshold: 1, Canary: k, Baseline: b})
				e.Votes[v].LLR, e.Votes[v].Promote = c.voteLLR(e.Votes[v], share)
			}
			ev[i] = e
		}
		return readWindow(c, ev, true)
	}
	// 1% of the traffic, 100 tail observations a minute, none the canary's:
	// 60 expected over the hour, promote statistic -12.6.
	small := window(0.01, 100, 0)
	if !(small.PromoteStatistic <= -small.Promote) || small.Votes[0].PromoteExpected >= c.PromoteExpected(true) {
		t.Fatalf("the small canary's window: promote statistic %.1f, expected %.1f", small.PromoteStatistic, small.Votes[0].PromoteExpected)
	}
	if d, reason := small.decide(c); d != Hold || !strings.Contains(reason, "promotion needs the canary to be expected to show 238 observations beyond the p99") {
		t.Errorf("small canary: %s, %q", d, reason)
	}
	// It says when the deployment would get there: 1 expected a minute,
	// 177.6 more to go.
	if _, reason := small.decide(c); !strings.Contains(reason, "60.0 expected over 60 minutes: about 178 more minutes at this traffic") {
		t.Errorf("small canary, when: %q", reason)
	}
	// A sliding window never gets there: it says what would.
	sliding := small
	sliding.Anchored = false
	if _, reason := sliding.decide(c); !strings.Contains(reason, "so a 60-minute window expects about 60 at this traffic; judge the deployment from its start (since)") {
		t.Errorf("small canary, sliding: %q", reason)
	}
	// Nor does a deployment far too small for a day.
	tiny := small
	tiny.Votes[0].PromoteExpected = 0.5
	if _, reason := tiny.decide(c); !strings.Contains(reason, "more than a day") {
		t.Errorf("tiny canary: %q", reason)
	}
	// Ten times the traffic, a tenth of the expected tail observations the
	// canary's: 600 expected, well past the floor.
	busy := window(0.01, 1000, 1)
	if d, reason := busy.decide(c); d != Promote {
		t.Errorf("busy canary: %s, %q (expected %.1f)", d, reason, busy.Votes[0].PromoteExpected)
	}
}

// TestShareRampThenSteady: a canary whose weight is raised step by step
// (Flagger's stepWeight 5 up to maxWeight 50, a step a minute) raises the
// traffic-parity flag until its share has been steady for the window's last
// ShareMinutes, not for the whole window; a share that keeps swinging stays
// flagged.
func TestShareRampThenSteady(t *testing.T) {
	c := Default()
	minute := func(share float64) Minute {
		return Minute{Verdict: Neutral, Ratio: 1, Baseline: FleetStats{Count: 6000 * (1 - share)}, Canary: FleetStats{Count: 6000 * share}}
	}
	flagged := func(ms []Minute) []bool {
		var tally windowTally
		out := make([]bool, len(ms))
		for i := range ms {
			tally.step(c, ms, i, c.WindowMinutes)
			flags, _ := tally.flags(c, Options{}, nil, false)
			out[i] = slices.Contains(flags, FlagTrafficParity)
		}
		return out
	}
	var ramp, swing []Minute
	for i := range 120 {
		ramp = append(ramp, minute(min(0.05*float64(i+1), 0.5)))
		swing = append(swing, minute([]float64{0.05, 0.2}[i/5%2]))
	}
	// The share is 50% from minute 10 on. Just after the ramp its first
	// minutes (5% to 20%) are far from the median; once the share has been
	// steady for ShareMinutes (from minute 40) nothing is, though the ramp
	// is still in the window (until minute 64, when the flag used to clear).
	got := flagged(ramp)
	if !got[11] {
		t.Errorf("ramp, minute 12: not flagged")
	}
	for i := 39; i < len(got); i++ { // 30 steady minutes: half of the default window
		if got[i] {
			t.Errorf("ramp, minute %d, %d steady minutes: flagged", i+1, i-8)
		}
	}
	for i, f := range flagged(swing) {
		if i >= 10 && !f {
			t.Errorf("swing, minute %d: not flagged", i+1)
		}
	}
}
