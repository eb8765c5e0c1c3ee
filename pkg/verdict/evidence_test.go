package verdict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

func TestLLR(t *testing.T) {
	tests := []struct {
		name       string
		k, b, f, a float64
		want       float64
	}{
		{name: "no tail observations, no evidence", k: 0, b: 0, f: 0.05, a: 2, want: 0},
		// theta = 0.5*2/(0.5*2+0.5) = 2/3: 10 ln(4/3) + 10 ln(2/3).
		{name: "even split at half share leans to identical", k: 10, b: 10, f: 0.5, a: 2, want: 10*math.Log(4.0/3) + 10*math.Log(2.0/3)},
		{name: "all tail in the canary at half share", k: 20, b: 0, f: 0.5, a: 2, want: 20 * math.Log(4.0/3)},
		{name: "alt 1 tells nothing", k: 7, b: 3, f: 0.2, a: 1, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LLR(tt.k, tt.b, tt.f, tt.a); math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("LLR = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMixture(t *testing.T) {
	tests := []struct {
		name string
		llr  []float64
		want float64
	}{
		{name: "all zero", llr: []float64{0, 0}, want: 0},
		{name: "equal", llr: []float64{3, 3, 3, 3}, want: 3},
		{name: "one large: its value less ln 4", llr: []float64{-1e9, 200, -1e9, -1e9}, want: 200 - math.Log(4)},
		{name: "one of eight: less ln 8", llr: []float64{-1e9, 200, -1e9, -1e9, -1e9, -1e9, -1e9, -1e9}, want: 200 - math.Log(8)},
		{name: "beyond the limit: held at it", llr: []float64{900, 2000, 900, 900}, want: MixtureLimit},
		{name: "one beyond the limit, less ln 4", llr: []float64{-1e9, 2000, -1e9, -1e9}, want: MixtureLimit - math.Log(4)},
		{name: "far below: held at minus the limit", llr: []float64{-900, -2000, -1e9}, want: -MixtureLimit},
		{name: "infinite sums are held too", llr: []float64{math.Inf(1), 0}, want: MixtureLimit - math.Log(2)},
		{name: "NaN stays NaN", llr: []float64{math.NaN(), 0}, want: math.NaN()},
		{name: "none", llr: nil, want: math.Inf(-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Mixture(tt.llr...); math.Abs(got-tt.want) > 1e-9 || math.IsNaN(got) != math.IsNaN(tt.want) {
				t.Fatalf("Mixture = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScrapeScale(t *testing.T) {
	tests := []struct {
		interval int
		n, want  float64
	}{
		{15, 4, 1}, {15, 3, 3.0 / 4 * 5 / 4}, {15, 5, 5.0 / 6 * 5 / 4}, {30, 2, 1}, {10, 6, 1}, {60, 1, 1},
		{15, 0, math.NaN()}, {15, math.Inf(1), math.NaN()},
	}
	for _, tt := range tests {
		c := Default()
		c.ScrapeIntervalSeconds = tt.interval
		got := c.ScrapeScale(tt.n)
		if !(math.Abs(got-tt.want) < 1e-15 || math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("interval %d s: ScrapeScale(%v) = %v, want %v", tt.interval, tt.n, got, tt.want)
		}
	}
}

func TestBoundaries(t *testing.T) {
	c := Default()
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"anchored whole window: Ville with half the budget", c.RollbackBoundary(true), math.Log(2 / 0.001)},
		{"anchored recent runs: the other half over 60 looks", c.RecentBoundary(true), math.Log(2 * 60 / 0.001)},
		{"sliding: a day of looks", c.RollbackBoundary(false), math.Log(1440 / 0.001)},
		{"sliding recent runs share it", c.RecentBoundary(false), math.Log(1440 / 0.001)},
		{"a minute's cap: half an anchored rollback of one alternative", c.MinuteCap(), (math.Log(2/0.001) + math.Log(9)) / 2},
		{"anchored promote", c.PromoteBoundary(true), math.Log(100)},
		{"sliding promote", c.PromoteBoundary(false), math.Log(1440 * 100)},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if got := c.RecentLengths(); len(got) != 6 || got[0] != 1 || got[5] != 32 {
		t.Errorf("recent lengths %v, want 1..32", got)
	}
}

// classic builds a histogram with `body` observations in (0, 1], `tail` in
// (1, 2] and `far` in (2, 4].
func classic(t *testing.T, body, tail, far float64) *histogram.Histogram {
	t.Helper()
	h, err := histogram.FromClassic([]float64{1, 2, 4, math.Inf(1)}, []float64{body, body + tail, body + tail + far, body + tail + far})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPromoteReadsWholeBuckets: the promote test reads the observations
// beyond the bound of the bucket holding the threshold, not the ones
// interpolated inside it. A canary whose tail is 1.6 times as frequent
// beyond 2, and less so in the wide bucket (1, 2] that holds the p99, shows
// as many observations as the baseline beyond the interpolated p99 (as if
// the bucket's were spread evenly): read there, the minute would count for
// promotion.
func TestPromoteReadsWholeBuckets(t *testing.T) {
	c := Default()
	e := MinuteEvidence(c, classic(t, 9800, 150, 50), classic(t, 9860, 60, 80), 1, 1)
	v := e.Votes[0]
	if v.BoundBaseline != 50 || v.BoundCanary != 80 {
		t.Fatalf("beyond the bucket bound: baseline %v, canary %v, want 50 and 80", v.BoundBaseline, v.BoundCanary)
	}
	a := c.PromoteAlternative()
	if interpolated := LLR(v.Canary, v.Baseline, e.Share, a); !(interpolated < 0) || !(v.Promote > 2) {
		t.Errorf("promote term %v (beyond the bound), want > 2 against promotion; interpolated at the p99 %v (canary %v, baseline %v)", v.Promote, interpolated, v.Canary, v.Baseline)
	}
	if got, want := v.PromoteExpected(e.Share), 65.0; got != want {
		t.Errorf("expected beyond the bound %v, want %v", got, want)
	}
}

// TestDeepPromoteCap: a clump in the baseline's deep tail (one of its pods
// stalled) moves a minute's promote term towards promotion by at most
// DeepPromoteCap beyond what the observations short of the deep tail show;
// without a clump the term is the plain LLR.
func TestDeepPromoteCap(t *testing.T) {
	c := Default()
	a := c.PromoteAlternative()
	quiet := onBound(Vote{Canary: 50, Baseline: 50})
	if _, p := c.voteLLR(quiet, 0.5); p != LLR(50, 50, 0.5, a) {
		t.Errorf("no deep tail: promote term %v, want the plain %v", p, LLR(50, 50, 0.5, a))
	}
	stalled := onBound(Vote{Canary: 50, Baseline: 300, DeepBaseline: 250})
	_, p := c.voteLLR(stalled, 0.5)
	if want := math.Min(LLR(50, 50, 0.5, a), -c.DeepPromoteCap()); math.Abs(p-want) > 1e-12 || !(LLR(50, 300, 0.5, a) < p) {
		t.Errorf("baseline's deep clump: promote term %v, want %v (uncapped %v)", p, want, LLR(50, 300, 0.5, a))
	}
	if got := c.DeepPromoteCap(); math.Abs(got-math.Log(100)/4) > 1e-12 {
		t.Errorf("DeepPromoteCap %v, want ln(100)/4", got)
	}
}

func TestMinuteEvidence(t *testing.T) {
	c := Default()
	tests := []struct {
		name              string
		base, canary      *histogram.Histogram
		scale             float64
		valid             bool
		wantSign          float64 // sign of the mildest alternative's LLR
		wantShare         float64
		wantCanaryAtLeast float64
	}{
		{name: "no canary", base: classic(t, 990, 10, 0), scale: 1},
		{name: "no scrape scale", base: classic(t, 990, 10, 0), canary: classic(t, 990, 10, 0), scale: math.NaN()},
		{name: "identical halves lean to identical", base: classic(t, 9900, 100, 0), canary: classic(t, 9900, 100, 0), scale: 1, valid: true, wantSign: -1, wantShare: 0.5},
		{name: "a heavier canary tail leans to rollback", base: classic(t, 9900, 100, 0), canary: classic(t, 9700, 100, 200), scale: 1, valid: true, wantSign: 1, wantShare: 0.5, wantCanaryAtLeast: 150},
		{name: "increase() extrapolation is taken out", base: classic(t, 9900, 100, 0), canary: classic(t, 9900, 100, 0), scale: 0.75, valid: true, wantSign: -1, wantShare: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MinuteEvidence(c, tt.base, tt.canary, tt.scale, tt.scale)
			if e.Valid != tt.valid {
				t.Fatalf("valid %v, want %v: %+v", e.Valid, tt.valid, e)
			}
			if !tt.valid {
				return
			}
			if v := e.Votes[0]; math.Signbit(v.LLR[0]) != (tt.wantSign < 0) || e.Share != tt.wantShare || v.Canary < tt.wantCanaryAtLeast {
				t.Fatalf("%+v", e)
			}
			if want := (tt.base.Count + tt.canary.Count) * tt.scale; math.Abs(e.BaselineCount+e.CanaryCount-want) > 1e-9 {
				t.Fatalf("counts %v + %v, want %v in all", e.BaselineCount, e.CanaryCount, want)
			}
		})
	}
}

// nullMinute draws one minute of identical fleets straight from the
// evidence model: tailPerMinute observations beyond the verdict quantile on
// average, ten times as many beyond the decade below and a tenth beyond the
// decade above (each set within the one before), each observation the
// canary's with its share.
func nullMinute(r *rand.Rand, c Config, share, tailPerMinute float64) Evidence {
	qs := c.VoteQuantiles()
	// Beyond the decade below, in order of depth: 0 the decade below, 1 the
	// verdict quantile, 2 the decade above.
	var k, b [3]float64
	for range poisson(r, 10*tailPerMinute) {
		canary := r.Float64() < share
		for depth := 0; depth < 3; depth++ {
			if depth > 0 && r.Float64() >= 0.1 {
				break
			}
			if canary {
				k[depth]++
			} else {
				b[depth]++
			}
		}
	}
	e := Evidence{Valid: true, Share: share}
	for i, depth := range [NumVotes]int{1, 0} {
		e.Votes[i] = onBound(Vote{Quantile: qs[i], Canary: k[depth], Baseline: b[depth]})
		e.Votes[i].LLR, e.Votes[i].Promote = c.voteLLR(e.Votes[i], share)
	}
	return e
}

func poisson(r *rand.Rand, mean float64) int {
	if mean > 50 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= r.Float64()
		if p < l {
			return k
		}
		k++
	}
}

// TestFalseRollbackBudget checks the derivation, not a tuning: with a budget
// loose enough to measure (5%), identical fleets of any share and traffic
// are rolled back in at most that share of anchored deployments, over
// every look of two windows' length: the deployment's evidence pools past
// its window, and the window's 60 looks past it add at most 60/1440 of the
// budget (the sliding recent boundary). The bound is conservative, so the measured
// rate must be under it; a mistake in the boundaries (a forgotten look, a
// wrong sign, a missing half of the budget) breaks it.
func TestFalseRollbackBudget(t *testing.T) {
	c := Default()
	c.FalseRollback = 0.05
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for _, cell := range []struct{ share, tail float64 }{{0.01, 5}, {0.05, 15}, {0.5, 150}, {0.2, 1}} {
		const deployments = 400
		rolled := 0
		for range deployments {
			minutes := make([]Minute, 2*c.WindowMinutes)
			for i := range minutes {
				minutes[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: nullMinute(r, c, cell.share, cell.tail)}
			}
			w := Decide(c, minutes, Options{Shown: len(minutes), Anchored: true})
			for _, m := range w.Minutes {
				if m.Decision == Rollback {
					rolled++
					break
				}
			}
		}
		if rate := float64(rolled) / deployments; rate > c.FalseRollback {
			t.Errorf("share %.2f, %.0f tail observations a minute: %d of %d deployments rolled back, above the budget %.2f", cell.share, cell.tail, rolled, deployments, c.FalseRollback)
		} else {
			t.Logf("share %.2f, %.0f tail observations a minute: %d of %d deployments rolled back (budget %.0f)", cell.share, cell.tail, rolled, deployments, c.FalseRollback*deployments)
		}
	}
}

// TestRegressionIsCaught: a canary whose tail is twice as frequent is rolled
// back; one whose tail grows late in the window is caught by the recent runs
// although the earlier minutes speak for it.
func TestRegressionIsCaught(t *testing.T) {
	c := Default()
	r := rand.New(rand.NewPCG(3, 4))
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	build := func(onset int, factor float64) []Minute {
		minutes := make([]Minute, c.WindowMinutes)
		for i := range minutes {
			e := nullMinute(r, c, 0.5, 300)
			if i >= onset {
				// Only the verdict quantile's tail grows.
				v := &e.Votes[0]
				v.Canary = float64(poisson(r, 150*factor))
				*v = onBound(*v)
				v.LLR, v.Promote = c.voteLLR(*v, 0.5)
			}
			minutes[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: e}
		}
		return minutes
	}
	first := func(w Window) int {
		for i, m := range w.Minutes {
			if m.Decision == Rollback {
				return i
			}
		}
		return -1
	}
	w := Decide(c, build(0, 2), Options{Shown: c.WindowMinutes, Anchored: true})
	if got := first(w); got != 1 {
		t.Fatalf("a tail twice as frequent from the start rolled back at minute %d, want 1: no minute decides alone (%s)", got, w.Minutes[0].DecisionReason)
	}
	// Sliding, a run needs (its boundary + ln Components) / MinuteCap
	// minutes at least: 4 with the defaults.
	need := int(math.Ceil((c.RecentBoundary(false) + math.Log(float64(Components))) / c.MinuteCap()))
	w = Decide(c, build(50, 2), Options{})
	if got := first(w); got < 50 || got > 50+need {
		t.Fatalf("a regression from minute 50 rolled back at %d, want within %d minutes of it (%s)", got, need, w.Minutes[len(w.Minutes)-1].DecisionReason)
	}
	if w.Minutes[len(w.Minutes)-1].Window.PromoteStatistic > -w.Minutes[len(w.Minutes)-1].Window.Promote {
		t.Log("the whole window alone would not have promoted either")
	}
}

// TestDeploymentPoolsSinceStart: a regression too slight to show within
// one window is rolled back once the deployment's evidence since its start
// reaches the anchored boundary, past the window's length; watched as a
// sliding window, the same minutes never roll back. Every minute carries
// the evidence a canary whose p99 tail is RollbackThreshold^4 times as
// frequent shows on average: 30 observations beyond the p99, the canary's
// share 5%.
func TestDeploymentPoolsSinceStart(t *testing.T) {
	c := Default()
	const f, tail = 0.05, 30.0
	a := math.Pow(c.RollbackThreshold, TailIndices[0]) // the mildest rollback alternative
	theta := f * a / (f*a + 1 - f)
	e := Evidence{Valid: true, Share: f}
	e.Votes[0] = onBound(Vote{Quantile: c.VerdictQuantile, Canary: tail * theta, Baseline: tail * (1 - theta)})
	e.Votes[0].LLR, e.Votes[0].Promote = c.voteLLR(e.Votes[0], f)
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	minutes := make([]Minute, 3*c.WindowMinutes)
	for i := range minutes {
		minutes[i] = Minute{Time: start.Add(time.Duration(i+1) * time.Minute), Evidence: e}
	}
	// The first minute whose pooled evidence reaches the boundary: the
	// mixture of the one growing alternative with five that stay at 0 (the
	// absent vote's) or fall.
	want := -1
	for n := 1; n <= len(minutes); n++ {
		var all [Components]float64
		for j := range all {
			all[j] = math.Inf(-1)
		}
		for j := range TailIndices {
			all[j] = float64(n) * e.Votes[0].LLR[j]
		}
		for j := len(TailIndices); j < Components; j++ {
			all[j] = 0
		}
		if Mixture(all[:]...) >= c.RollbackBoundary(true) {
			want = n - 1
			break
		}
	}
	if want <= c.WindowMinutes {
		t.Fatalf("the test's regression is caught at minute %d, within the window (%d): it must be slighter", want, c.WindowMinutes)
	}
	first := func(w Window) (int, string) {
		for i, m := range w.Minutes {
			if m.Decision == Rollback {
				return i, m.DecisionReason
			}
		}
		return -1, w.Reason
	}
	t.Logf("caught at minute %d of the deployment, its window %d minutes", want+1, c.WindowMinutes)
	w := Decide(c, slices.Clone(minutes), Options{Shown: len(minutes), Anchored: true})
	got, reason := first(w)
	if got != want || !strings.Contains(reason, fmt.Sprintf("over %d minutes since the deployment's start", want+1)) {
		t.Fatalf("anchored: rollback at minute %d (%s), want %d", got, reason, want)
	}
	if m := w.Minutes[got-1].Window; m.Minutes != got || m.Rollback != c.RollbackBoundary(true) || m.RecentBoundary != c.RecentBoundary(false) {
		t.Fatalf("the minute before: %d minutes, boundaries %.2f and %.2f, want %d, the anchored and the sliding recent", m.Minutes, m.Rollback, m.RecentBoundary, got)
	}
	if got, reason := first(Decide(c, slices.Clone(minutes), Options{Shown: len(minutes)})); got >= 0 {
		t.Fatalf("sliding: rollback at minute %d (%s), want none", got, reason)
	}
}

func TestVoteQuantiles(t *testing.T) {
	tests := []struct {
		q    float64
		want [NumVotes]float64
	}{
		{0.99, [NumVotes]float64{0.99, 0.9, 0.99}},
		{0.999, [NumVotes]float64{0.999, 0.99, 0.999}},
		{0.95, [NumVotes]float64{0.95, 0.5, 0.95}},
		{0.9, [NumVotes]float64{0.9, 0, 0.9}}, // the decade below would be p0
		{0.5, [NumVotes]float64{0.5, 0, 0.5}},
	}
	for _, tt := range tests {
		c := Default()
		c.VerdictQuantile = tt.q
		if got := c.VoteQuantiles(); got != tt.want {
			t.Errorf("VoteQuantiles at %v = %v, want %v", tt.q, got, tt.want)
		}
	}
}

// Each vote counts beyond its own quantile of the merged histogram: with
// 10,000 observations per fleet spread evenly over (0, 100] (classic buckets
// of width 1), the thresholds are 90 and 99, and a canary that moved 5% of
// its observations from the body to (99, 100] shows more beyond p99 than
// beyond p90, relative to what is expected. The bound vote counts whole
// buckets beyond the bound of the bucket holding the p99.
func TestMinuteEvidenceVotes(t *testing.T) {
	even := func(extraTop float64) *histogram.Histogram {
		t.Helper()
		var bounds, cum []float64
		total := 0.0
		for i := 1; i <= 100; i++ {
			n := 100.0
			if i == 1 {
				n -= extraTop
			}
			if i == 100 {
				n += extraTop
			}
			total += n
			bounds, cum = append(bounds, float64(i)), append(cum, total)
		}
		bounds, cum = append(bounds, math.Inf(1)), append(cum, total)
		h, err := histogram.FromClassic(bounds, cum)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	c := Default()
	same := MinuteEvidence(c, even(0), even(0), 1, 1)
	if !same.Valid {
		t.Fatal("identical fleets carry no evidence")
	}
	for i, want := range []struct{ q, x, beyond float64 }{{0.99, 99, 100}, {0.9, 90, 1000}} {
		v := same.Votes[i]
		if v.Quantile != want.q || math.Abs(v.Threshold-want.x) > 1e-9 || math.Abs(v.Canary-want.beyond) > 1e-6 || math.Abs(v.Baseline-want.beyond) > 1e-6 || !(v.LLR[0] < 0) {
			t.Errorf("identical fleets, vote %d: %+v, want p%v at %v with %v beyond each and a negative LLR", i, v, want.q*100, want.x, want.beyond)
		}
	}
	// The p99, 99, is a bucket's upper bound: the bound vote counts the
	// bucket (99, 100].
	if v := same.Votes[BoundVote]; v.Quantile != 0.99 || v.Threshold != 99 || math.Abs(v.Canary-100) > 1e-6 || math.Abs(v.Baseline-100) > 1e-6 {
		t.Errorf("identical fleets, the bound vote: %+v, want the p99's bound 99 with 100 beyond each", v)
	}
	worse := MinuteEvidence(c, even(0), even(500), 1, 1)
	ratio := func(v Vote) float64 { return v.Canary / v.Expected(worse.Share) }
	below, at := ratio(worse.Votes[1]), ratio(worse.Votes[0])
	if !(1 < below && below < at) {
		t.Errorf("canary/expected beyond p90 %.3f, p99 %.3f: want 1 < p90 < p99", below, at)
	}
	for i, v := range worse.Votes[:BoundVote] {
		if !(v.LLR[0] > 0) {
			t.Errorf("vote %d (p%v) does not lean to rollback: %+v", i, v.Quantile*100, v)
		}
	}
	// The canary's extra observations lie in (99, 100], which now holds the
	// p99: nothing lies beyond its bound, and the bound vote reads nothing.
	if v := worse.Votes[BoundVote]; v.Threshold != 100 || v.Canary != 0 || v.Baseline != 0 || v.LLR != [len(TailIndices)]float64{} {
		t.Errorf("the bound vote: %+v, want the bound 100 with nothing beyond", v)
	}
	// Without the decade below (verdict quantile p90), that vote abstains.
	c.VerdictQuantile = 0.9
	if e := MinuteEvidence(c, even(0), even(500), 1, 1); e.Votes[1] != (Vote{}) || e.Votes[0].Quantile != 0.9 || !(e.Votes[0].LLR[0] > 0) {
		t.Errorf("verdict quantile p90: votes %+v, want the decade below absent and p90 leaning to rollback", e.Votes)
	}
}

// Promotion needs the verdict quantile and the decade below to show the
// canary not worse; the bound vote takes no part. A vote speaking for
// rollback alone rolls back, at the mixture's price: with its three tail
// indices speaking alike, ln(9/3).
func TestVotesDecide(t *testing.T) {
	c := Default()
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	minute := func(i int, llr [NumVotes]float64) Minute {
		e := Evidence{Valid: true, Share: 0.5}
		for v, q := range c.VoteQuantiles() {
			e.Votes[v] = onBound(Vote{Quantile: q, Canary: 10, Baseline: 10})
			for j := range e.Votes[v].LLR {
				e.Votes[v].LLR[j] = llr[v]
			}
			e.Votes[v].Promote = llr[v]
		}
		return Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: e}
	}
	run := func(llr [NumVotes]float64) Window {
		ms := make([]Minute, c.WindowMinutes)
		for i := range ms {
			ms[i] = minute(i, llr)
		}
		return Decide(c, ms, Options{Anchored: true, Shown: 1})
	}
	tests := []struct {
		name string
		llr  [NumVotes]float64 // each minute's LLR, for every tail index of each vote
		want Decision
	}{
		{"every vote for the canary promotes", [NumVotes]float64{-1, -1, -1}, Promote},
		{"the decade below must agree", [NumVotes]float64{-1, 0, -1}, Hold},
		{"the verdict quantile must agree", [NumVotes]float64{0, -1, -1}, Hold},
		{"the bound vote takes no part in promotion", [NumVotes]float64{-1, -1, 0}, Promote},
		{"the verdict quantile alone rolls back", [NumVotes]float64{1, -1, -1}, Rollback},
		{"the decade below alone rolls back", [NumVotes]float64{-1, 1, -1}, Rollback},
		{"the bound vote alone rolls back", [NumVotes]float64{-1, -1, 1}, Rollback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := run(tt.llr)
			if w.Decision != tt.want {
				t.Fatalf("%s, want %s: %s", w.Decision, tt.want, w.Reason)
			}
		})
	}
	// One vote at +1 a minute: the window's statistic is 60 - ln 3 (the
	// other six components, at -60, vanish beside it).
	w := run([NumVotes]float64{-1, 1, -1})
	if got, want := w.Evidence.Statistic, 60-math.Log(3); math.Abs(got-want) > 1e-9 {
		t.Errorf("statistic %v, want %v", got, want)
	}
	if !strings.Contains(w.Reason, "canary p99 exceedances 600 vs 600.0 expected (p90 600 vs 600.0, p99 bound 600 vs 600.0) over 60 minutes") {
		t.Errorf("reason %q does not pool every vote", w.Reason)
	}
}

// TestMinuteCap: one minute carries at most MinuteCap for any alternative,
// however many canary observations land in its tail (a stalled pod's
// clump), so it cannot roll a deployment back alone; two such minutes do.
func TestMinuteCap(t *testing.T) {
	c := Default()
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	// 5% of the observations are the canary's, 40% of the tail.
	clump := MinuteEvidence(c, classic(t, 9500, 60, 0), classic(t, 460, 40, 0), 1, 1)
	if !clump.Valid {
		t.Fatal("the minute carries no evidence")
	}
	uncapped := LLR(clump.Votes[0].Canary, clump.Votes[0].Baseline, clump.Share, math.Pow(c.RollbackThreshold, TailIndices[1]))
	if uncapped < 2*c.MinuteCap() {
		t.Fatalf("the clump's uncapped evidence %.1f is no clump", uncapped)
	}
	for _, v := range clump.Votes {
		for j, l := range v.LLR {
			if l > c.MinuteCap() {
				t.Errorf("vote %v, tail index %v: LLR %v above the cap %v", v.Quantile, TailIndices[j], l, c.MinuteCap())
			}
		}
	}
	quiet := Evidence{Valid: true, Share: clump.Share}
	quiet.Votes[0] = Vote{Quantile: c.VerdictQuantile, Threshold: 1, Canary: 5, Baseline: 95}
	decide := func(ev ...Evidence) Decision {
		ms := make([]Minute, len(ev))
		for i, e := range ev {
			ms[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: e}
		}
		return Decide(c, ms, Options{Anchored: true, Shown: 1}).Decision
	}
	if got := decide(clump); got == Rollback {
		t.Errorf("one minute's clump rolled the deployment back")
	}
	if got := decide(quiet, clump); got == Rollback {
		t.Errorf("one minute's clump after a quiet minute rolled the deployment back")
	}
	if got := decide(clump, clump); got != Rollback {
		t.Errorf("two minutes of clumps: %s, want rollback", got)
	}
	// Promotion adds up the uncapped ratios: after 30 good minutes, one
	// bad minute stops a promotion, as it would without the cap.
	if l := clump.Votes[0].Promote; l != uncappedOf(c, clump.Votes[0], clump.Share) {
		t.Errorf("promote term %v, want the uncapped %v", l, uncappedOf(c, clump.Votes[0], clump.Share))
	}
	minuteOf := func(k, b float64) Evidence { return boundMinute(c, k, b) }
	history := make([]Evidence, 30)
	for i := range history {
		history[i] = minuteOf(12, 288)
	}
	if got := decide(history...); got != Promote {
		t.Fatalf("30 good minutes: %s, want promote", got)
	}
	if got := decide(append(history, minuteOf(200, 60))...); got == Promote {
		t.Errorf("a bad minute after 30 good ones still promotes")
	}
	// A longer good history outweighs the bad minute in the promote sum;
	// the minute alone still holds the promotion, the window's own reason.
	history = history[:0]
	for range 59 {
		history = append(history, minuteOf(12, 288))
	}
	ms := make([]Minute, 60)
	for i, e := range append(history, minuteOf(200, 60)) {
		ms[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: e}
	}
	w := Decide(c, ms, Options{Anchored: true, Shown: 1})
	if w.Evidence.PromoteStatistic > -w.Evidence.Promote {
		t.Fatalf("promote evidence %.1f: the good minutes should outweigh the bad one", w.Evidence.PromoteStatistic)
	}
	if w.Decision != Hold || !strings.Contains(w.Reason, "the last minute alone weighs") {
		t.Errorf("%s: %s; want a hold for the last minute", w.Decision, w.Reason)
	}
}

// TestRecentEvidenceHoldsPromotion: in a sliding window, an hour's good
// minutes outweigh a regression's first ones in the promote sum, and its
// last minute alone weighs little; its recent run, on its way to the
// rollback boundary, holds the promotion (it promoted between two rollbacks).
func TestRecentEvidenceHoldsPromotion(t *testing.T) {
	c := Default()
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	minuteOf := func(k, b float64) Evidence { return boundMinute(c, k, b) }
	ms := make([]Minute, 60)
	for i := range ms {
		e := minuteOf(12, 288) // 4% of the tail at a 5% share
		if i >= 56 {
			e = minuteOf(22, 278) // half again its share
		}
		ms[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: e}
	}
	w := Decide(c, ms, Options{Shown: 1})
	ev := w.Evidence
	if !(ev.PromoteStatistic <= -ev.Promote) || ev.LastPromote >= c.MinuteCap() || ev.Statistic >= ev.Rollback || ev.RecentStatistic >= ev.RecentBoundary {
		t.Fatalf("promote %.1f (boundary %.1f), last minute %.1f, statistic %.1f, recent %.1f: not the case tested", ev.PromoteStatistic, -ev.Promote, ev.LastPromote, ev.Statistic, ev.RecentStatistic)
	}
	if ev.RecentStatistic < c.MinuteCap() {
		t.Fatalf("recent evidence %.1f over %d minutes: not the case tested", ev.RecentStatistic, ev.RecentMinutes)
	}
	if w.Decision != Hold || !strings.Contains(w.Reason, "minutes weigh") {
		t.Errorf("%s: %s; want a hold for the recent minutes", w.Decision, w.Reason)
	}
	// Without the regression's minutes, the same window promotes.
	for i := 56; i < 60; i++ {
		ms[i].Evidence = minuteOf(12, 288)
	}
	if w := Decide(c, ms, Options{Shown: 1}); w.Decision != Promote {
		t.Errorf("an hour of good minutes: %s (%s), want promote", w.Decision, w.Reason)
	}
}

// TestMinRollbackMinutes: a minute counts at most the anchored boundary
// divided by MinRollbackMinutes, so that many minutes of clumps roll a
// deployment back and one fewer holds it.
func TestMinRollbackMinutes(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	// Every budget the limits allow: at 0.01 and above, (k-1) ln 9 can
	// reach the boundary, and k-1 minutes rolled back before the cap took
	// the budget into account (1 minute at 0.25 with k 2, 2 at 0.05 with
	// k 3, 3 at 0.01 with k 4).
	for _, budget := range []float64{0.001, 0.01, 0.05, 0.25, 0.5} {
		for _, k := range []int{2, 3, 4} {
			c := Default()
			c.MinRollbackMinutes, c.FalseRollback = k, budget
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			a := math.Log(2 / c.FalseRollback)
			if want := (a + math.Log(float64(Components))) / float64(k); budget == 0.001 && math.Abs(c.MinuteCap()-want) > 1e-12 {
				t.Errorf("k %d: cap %v, want %v", k, c.MinuteCap(), want)
			}
			clump := MinuteEvidence(c, classic(t, 9500, 60, 0), classic(t, 460, 40, 0), 1, 1)
			decide := func(n int) Decision {
				ms := make([]Minute, n)
				for i := range ms {
					ms[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: clump}
				}
				return Decide(c, ms, Options{Anchored: true, Shown: 1}).Decision
			}
			if got := decide(k - 1); got == Rollback {
				t.Errorf("falseRollback %v, k %d: %d minutes of clumps rolled the deployment back", budget, k, k-1)
			}
			if got := decide(k); got != Rollback {
				t.Errorf("falseRollback %v, k %d: %d minutes of clumps: %s, want rollback", budget, k, k, got)
			}
		}
	}
	for _, k := range []int{0, 1, 5} {
		c := Default()
		c.MinRollbackMinutes = k
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "minRollbackMinutes") {
			t.Errorf("k %d: Validate() = %v", k, err)
		}
	}
}

// boundMinute is a minute at a 5% share in which every vote counts k of the
// canary's and b of the baseline's observations beyond its threshold, all
// of them beyond its bucket bound.
func boundMinute(c Config, k, b float64) Evidence {
	e := Evidence{Valid: true, Share: 0.05}
	for i, q := range c.VoteQuantiles() {
		e.Votes[i] = onBound(Vote{Quantile: q, Threshold: 1, Canary: k, Baseline: b})
		e.Votes[i].LLR, e.Votes[i].Promote = c.voteLLR(e.Votes[i], 0.05)
	}
	return e
}

// uncappedOf is the promote alternative's LLR of a vote beyond its bound,
// without a cap.
func uncappedOf(c Config, v Vote, share float64) float64 {
	return LLR(v.BoundCanary, v.BoundBaseline, share, c.PromoteAlternative())
}

// onBound is v with its threshold on a bucket bound: the promote test reads
// the same observations as the others.
func onBound(v Vote) Vote {
	v.BoundCanary, v.BoundBaseline = v.Canary, v.Baseline
	return v
}

// TestDispersion: counts that vary as chance lets them, or around a
// change that begins within the run, are not discounted; counts that clump
// in many minutes are, by about how much more they vary. A run's changes
// are those between its own minutes.
// TestDeepTail: a minute's evidence from observations beyond DeepFactor
// times a vote's threshold alone (a stalled pod's clump) counts at most
// DeepMinuteCap towards a rollback, where the same excess just beyond the
// threshold (a slower canary) counts up to MinuteCap; a canary whose excess
// stays deep minute after minute (timeouts) still rolls back, later.
func TestDeepTail(t *testing.T) {
	c := Default()
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	// body in (0, 1], tail in (1, 2], deep in (8, 100]: the pooled p99 lies
	// in (1, 2], so four times it lies below 8.
	hist := func(body, tail, deep float64) *histogram.Histogram {
		t.Helper()
		h, err := histogram.FromClassic([]float64{1, 2, 8, 100, math.Inf(1)}, []float64{body, body + tail, body + tail, body + tail + deep, body + tail + deep})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := hist(9900, 100, 0)
	near := MinuteEvidence(c, base, hist(9800, 200, 0), 1, 1)
	deep := MinuteEvidence(c, base, hist(9800, 100, 100), 1, 1)
	if !near.Valid || !deep.Valid {
		t.Fatalf("no evidence: %+v %+v", near, deep)
	}
	if v := deep.Votes[0]; v.DeepCanary != 100 || v.DeepBaseline != 0 {
		t.Fatalf("deep counts %v and %v, want 100 and 0", v.DeepCanary, v.DeepBaseline)
	}
	if v := near.Votes[0]; v.DeepCanary != 0 || v.DeepBaseline != 0 {
		t.Fatalf("deep counts %v and %v, want none", v.DeepCanary, v.DeepBaseline)
	}
	top := func(e Evidence) float64 {
		m := math.Inf(-1)
		for _, v := range e.Votes {
			for _, l := range v.LLR {
				m = math.Max(m, l)
			}
		}
		return m
	}
	if got := top(near); got != c.MinuteCap() {
		t.Errorf("excess just beyond the threshold: largest LLR %v, want the minute cap %v", got, c.MinuteCap())
	}
	if got := top(deep); got != c.DeepMinuteCap() {
		t.Errorf("excess in the deep tail: largest LLR %v, want the deep cap %v", got, c.DeepMinuteCap())
	}
	// Promotion reads the deep excess in full.
	if p, want := deep.Votes[0].Promote, LLR(deep.Votes[0].BoundCanary, deep.Votes[0].BoundBaseline, deep.Share, c.PromoteAlternative()); p != want || !(p > c.DeepMinuteCap()) {
		t.Errorf("deep minute's promote term %v, want the uncapped %v", p, want)
	}
	decide := func(e Evidence, n int) Decision {
		ms := make([]Minute, n)
		for i := range ms {
			ms[i] = Minute{Time: start.Add(time.Duration(i) * time.Minute), Evidence: e}
		}
		return Decide(c, ms, Options{Anchored: true, Shown: 1}).Decision
	}
	if got := decide(near, 2); got != Rollback {
		t.Errorf("two minutes of a slower canary: %s, want rollback", got)
	}
	if got := decide(deep, MinChanges); got == Rollback {
		t.Errorf("%d minutes of deep clumps rolled the deployment back", MinChanges)
	}
	if got := decide(deep, 10); got != Rollback {
		t.Errorf("ten minutes of a deep excess: %s, want rollback", got)
	}
}

func TestDispersion(t *testing.T) {
	c := Default()
	// A minute of K = 200 observations beyond at share 1/2, the canary's
	// count z standard errors above what identical fleets give.
	minute := func(z float64) Evidence {
		K, f := 200.0, 0.5
		k := f*K + z*math.Sqrt(f*(1-f)*K)
		return Evidence{Valid: true, Share: f, Votes: [NumVotes]Vote{{Quantile: 0.99, Canary: k, Baseline: K - k}}}
	}
	noise := rand.New(rand.NewPCG(3, 5))
	for _, tc := range []struct {
		name     string
		z        func(m int) float64
		min, max float64
	}{
		{"chance", func(int) float64 { return noise.NormFloat64() }, 1, 1},
		{"a canary 8 standard errors worse from minute 50", func(m int) float64 {
			return noise.NormFloat64() + map[bool]float64{true: 8}[m >= 50]
		}, 1, 1},
		{"a canary 8 standard errors worse throughout", func(int) float64 { return noise.NormFloat64() + 8 }, 1, 1},
		// 4 standard errors one way or the other every third minute:
		// changes of about 16 + 2 into and out of each clump and 2 between,
		// phi about (18 + 18 + 2) / 6 = 6.3.
		{"clumps every third minute", func(m int) float64 {
			if m%3 == 0 {
				return noise.NormFloat64() + 4*float64(1-2*(m/3%2))
			}
			return noise.NormFloat64()
		}, 3, 9},
	} {
		ev := make([]Evidence, 60)
		for m := range ev {
			ev[m] = minute(tc.z(m))
		}
		_, votes := newRunningSums(ev, c.ChangeCap()).run(0, len(ev))
		if votes[0].Changes != len(ev)-1 {
			t.Errorf("%s: %d changes in %d minutes, want %d", tc.name, votes[0].Changes, len(ev), len(ev)-1)
		}
		if d := votes[0].Dispersion(c.DispersionZ()); d < tc.min || d > tc.max {
			t.Errorf("%s: dispersion %v, want %v to %v", tc.name, d, tc.min, tc.max)
		}
	}
	// At a small share a canary whose tail is heavier varies more from
	// minute to minute than an identical one, by theta(1-theta) / (f(1-f)):
	// 2.7 for theta = 0.15 at f = 0.05. That is chance's, not clumps': its
	// evidence is not discounted (it was, to about 2.7, before
	// ChanceVariance). Clumps at that share still are.
	small := func(theta float64, clump func(m int) float64) [NumVotes]VoteSums {
		const K, f = 200.0, 0.05
		ev := make([]Evidence, 60)
		for m := range ev {
			var k float64
			for range int(K) {
				if noise.Float64() < theta {
					k++
				}
			}
			k = min(K, k+clump(m))
			ev[m] = Evidence{Valid: true, Share: f, Votes: [NumVotes]Vote{{Quantile: 0.99, Canary: k, Baseline: K - k}}}
		}
		_, votes := newRunningSums(ev, c.ChangeCap()).run(0, len(ev))
		return votes
	}
	steady := small(0.15, func(int) float64 { return 0 })
	if v := steady[0].ChanceVariance(); v < 2 || v > 3.5 {
		t.Errorf("a canary at theta 0.15, share 0.05: chance variance %v, want about 2.7", v)
	}
	if d := steady[0].Dispersion(c.DispersionZ()); d != 1 {
		t.Errorf("a canary at theta 0.15, share 0.05, binomial: dispersion %v, want 1", d)
	}
	for _, v := range []VoteSums{{}, {Canary: 3, Baseline: 0, Expected: 0}, {Canary: 1, Baseline: 1, Expected: 2}} {
		if got := v.ChanceVariance(); got != 1 {
			t.Errorf("chance variance of %+v: %v, want 1 (not finite)", v, got)
		}
	}
	clumped := small(0.05, func(m int) float64 { return map[bool]float64{true: 25}[m%3 == 0] })
	if d := clumped[0].Dispersion(c.DispersionZ()); d < 2 {
		t.Errorf("an identical canary at share 0.05 with 25 more every third minute: dispersion %v, want 2 or more", d)
	}
	// Read inside a longer range, a run leaves out the change into its
	// first minute: a clump just before it is not its own.
	ev := make([]Evidence, 10)
	for m := range ev {
		ev[m] = minute(0)
	}
	ev[4] = minute(10)
	sums := newRunningSums(ev, c.ChangeCap())
	for _, tc := range []struct {
		a       int
		change  float64
		changes int
	}{{5, 0, 4}, {4, c.ChangeCap(), 5}, {3, 2 * c.ChangeCap(), 6}} {
		if _, votes := sums.run(tc.a, 10); votes[0].Change != tc.change || votes[0].Changes != tc.changes {
			t.Errorf("minutes %d to 9, a clump at 4: change %v over %d, want %v over %d", tc.a, votes[0].Change, votes[0].Changes, tc.change, tc.changes)
		}
	}
}

// TestDiscounted: a dispersion beyond 1 shrinks a vote's evidence towards 0
// in both directions, evidence of a heavier tail (positive LLR sums) and
// evidence that it is not heavier (a negative Promote sum), and leaves the
// rest; a dispersion of 1 changes nothing.
func TestDiscounted(t *testing.T) {
	votes := [NumVotes]VoteSums{
		{Quantile: 0.99, LLR: [len(TailIndices)]float64{6, -2, 3}, Promote: -8},
		{Quantile: 0.9, LLR: [len(TailIndices)]float64{4, 2, -1}, Promote: 5},
	}
	got := discounted(votes, [NumVotes]float64{2, 1})
	want := votes
	want[0].LLR, want[0].Promote = [len(TailIndices)]float64{3, -2, 1.5}, -4
	if got != want {
		t.Errorf("discounted by 2 and 1:\n got %+v\nwant %+v", got, want)
	}
	if got := discounted(votes, [NumVotes]float64{1, 1}); got != votes {
		t.Errorf("discounted by 1: %+v, want the votes unchanged", got)
	}
}

// custom is a native histogram with custom buckets (as Prometheus records
// classic buckets with convert_classic_histograms_to_nhcb): counts[0] in
// [-Inf, bounds[0]], counts[i] in (bounds[i-1], bounds[i]], the last in
// (bounds[last], +Inf]; empty buckets left out, as the API leaves them.
func custom(t *testing.T, bounds, counts []float64) *histogram.Histogram {
	t.Helper()
	var bs []histogram.APIBucket
	var total float64
	for i, c := range counts {
		b := histogram.APIBucket{Boundaries: 0, Lower: math.Inf(-1), Upper: math.Inf(1), Count: c}
		if i == 0 {
			b.Boundaries = 3
		} else {
			b.Lower = bounds[i-1]
		}
		if i < len(bounds) {
			b.Upper = bounds[i]
		}
		if c > 0 {
			bs = append(bs, b)
			total += c
		}
	}
	h, err := histogram.FromNative(bs, total, 0)
	if err != nil || h.Kind != histogram.NativeCustom {
		t.Fatalf("%v %+v", err, h)
	}
	return h
}

// lognormalAtSchema is n observations of a log-normal latency (median 50 ms)
// in the native buckets of the schema, times slow (1: none slower).
func lognormalAtSchema(t *testing.T, schema int, n, slow float64) *histogram.Histogram {
	t.Helper()
	var bs []histogram.APIBucket
	var total float64
	per := int32(1) << max(schema, 0)
	for idx := -12 * per; idx < 4*per; idx++ {
		lo, hi := histogram.ExponentialBound(idx-1, int32(schema)), histogram.ExponentialBound(idx, int32(schema))
		cdf := func(x float64) float64 { return 0.5 * math.Erfc(-(math.Log(x/slow)-math.Log(0.05))/(0.6*math.Sqrt2)) }
		if c := math.Round(n * (cdf(hi) - cdf(lo))); c > 0 {
			bs = append(bs, histogram.APIBucket{Boundaries: 0, Lower: lo, Upper: hi, Count: c})
			total += c
		}
	}
	h, err := histogram.FromNative(bs, total, total*0.06)
	if err != nil || h.Schema != int32(schema) {
		t.Fatalf("schema %d: %v, %+v", schema, err, h)
	}
	return h
}

// TestMinuteEvidenceCommonLayout: fleets recorded in different layouts (a
// canary whose release changed the classic buckets, or whose series kept a
// finer native schema than the baseline's) are counted in the layout both
// have, exactly as if both had been recorded in it, not left without
// evidence.
func TestMinuteEvidenceCommonLayout(t *testing.T) {
	c := Default()
	finer, err := histogram.FromClassic([]float64{0.5, 1, 1.5, 2, 3, 4, math.Inf(1)}, []float64{500, 9650, 9690, 9740, 9800, 9850, 9850})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                     string
		base, canary             *histogram.Histogram
		commonBase, commonCanary *histogram.Histogram // both recorded in the layout both have
	}{
		{"classic, a bound added and removed", classic(t, 9900, 100, 0), finer, classic(t, 9900, 100, 0), classic(t, 9650, 90, 110)},
		{"native, the canary finer", lognormalAtSchema(t, 1, 20000, 1), lognormalAtSchema(t, 3, 1000, 1.1), lognormalAtSchema(t, 1, 20000, 1), nil},
		{"custom buckets, a bound added and removed", custom(t, []float64{1, 2, 4}, []float64{9900, 100, 0, 0}), custom(t, []float64{0.5, 1, 1.5, 2, 3, 4}, []float64{500, 9150, 40, 50, 60, 50, 0}),
			custom(t, []float64{1, 2, 4}, []float64{9900, 100, 0, 0}), custom(t, []float64{1, 2, 4}, []float64{9650, 90, 110, 0})},
		{"native, the baseline finer", lognormalAtSchema(t, 3, 20000, 1), lognormalAtSchema(t, 0, 1000, 1.1), nil, lognormalAtSchema(t, 0, 1000, 1.1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cb, cc := tc.commonBase, tc.commonCanary
			if cb == nil {
				cb, _, err = histogram.Common(tc.base, tc.canary)
			}
			if cc == nil {
				_, cc, err = histogram.Common(tc.base, tc.canary)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, want := MinuteEvidence(c, tc.base, tc.canary, 1, 1), MinuteEvidence(c, cb, cc, 1, 1)
			if !got.Valid || !want.Valid {
				t.Fatalf("valid %v and %v: different layouts must be counted", got.Valid, want.Valid)
			}
			for i := range got.Votes {
				g, w := got.Votes[i], want.Votes[i]
				if math.Abs(g.Canary-w.Canary) > 1e-9 || math.Abs(g.Baseline-w.Baseline) > 1e-9 || math.Abs(g.Threshold-w.Threshold) > 1e-12*w.Threshold {
					t.Errorf("vote %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestInfiniteCountsCarryNoEvidence: a minute one of whose bucket counts is
// +Inf (a broken exporter) carries no evidence, and evidence with a figure
// that is not finite does not reach the running sums: before, its NaN made
// every later window's statistic NaN, far beyond the windows that hold it,
// and a regression after it could no longer roll back.
func TestInfiniteCountsCarryNoEvidence(t *testing.T) {
	c := Default()
	native := func(c1, c2, count float64) *histogram.Histogram {
		h, err := histogram.FromNative([]histogram.APIBucket{{Lower: 0.5, Upper: 1, Count: c1}, {Lower: 1, Upper: 2, Count: c2}, {Lower: 2, Upper: 4, Count: 1}}, count, count)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if e := MinuteEvidence(c, native(1900, 100, 2001), native(100, math.Inf(1), 200), 1, 1); e.Valid {
		t.Fatalf("a minute with an infinite count carries evidence: %+v", e.Votes[0])
	}
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	minutes := func(poisoned bool) []Minute {
		ms := make([]Minute, 200)
		for i := range ms {
			ms[i] = Minute{Time: start.Add(time.Duration(i+1) * time.Minute), Baseline: fleet(1, 20), Canary: fleet(1, 20)}
			ms[i].Baseline.Count, ms[i].Canary.Count = 1900, 100
			ms[i].Evidence = nullMinute(r, c, 0.05, 15)
			if i >= 140 { // the canary holds three times its share of the tail
				ms[i].Evidence = nullMinute(r, c, 0.15, 15)
				ms[i].Evidence.Share = 0.05
				for v := range ms[i].Evidence.Votes {
					if ms[i].Evidence.Votes[v].Quantile > 0 {
						ms[i].Evidence.Votes[v].LLR, ms[i].Evidence.Votes[v].Promote = c.voteLLR(ms[i].Evidence.Votes[v], 0.05)
					}
				}
			}
		}
		if poisoned { // far before the judged window, 141..200
			ms[5].Evidence.Votes[0].Canary = math.Inf(1)
			ms[5].Evidence.Votes[0].LLR[0] = math.NaN()
		}
		return ms
	}
	for _, poisoned := range []bool{false, true} {
		w := Decide(c, minutes(poisoned), Options{Shown: 60})
		if w.Decision != Rollback || math.IsNaN(w.Evidence.Statistic) {
			t.Errorf("poisoned %v: %s, statistic %v", poisoned, w.Decision, w.Evidence.Statistic)
		}
	}
}

// TestLLRStaysFinite: where theta = f alt/(f alt + 1 - f) rounds to 1 (a
// rollback threshold of 10 at half the traffic, alt = 10^16), the LLR is
// still finite and right: the form with theta gave NaN for a minute whose
// baseline had no tail (the most damning), and the minute was dropped.
func TestLLRStaysFinite(t *testing.T) {
	for _, tt := range []struct{ k, b, f, alt float64 }{
		{100, 0, 0.5, 1e16}, {100, 5, 0.5, 1e16}, {100, 0, 0.99, math.Pow(8, 16)}, {3, 40, 0.05, 1.46},
	} {
		got := LLR(tt.k, tt.b, tt.f, tt.alt)
		want := tt.k*math.Log(tt.alt) - (tt.k+tt.b)*math.Log1p(tt.f*(tt.alt-1))
		if math.IsNaN(got) || math.IsInf(got, 0) || math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("LLR(%v, %v, %v, %v) = %v, want %v", tt.k, tt.b, tt.f, tt.alt, got, want)
		}
	}
}

// TestRollbackThresholdAboveOne: a rollback threshold of 1 or less is no
// heavier tail to test for: at 1 the rule never decided (a 1.5x slower
// canary was never rolled back), below 1 it promoted slower canaries.
func TestRollbackThresholdAboveOne(t *testing.T) {
	for _, r := range []float64{1, 0.98} {
		c := Default()
		c.PromoteThreshold, c.RollbackThreshold = 0.9, r
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "rollbackThreshold") {
			t.Errorf("rollbackThreshold %v: Validate() = %v", r, err)
		}
	}
	c := Default()
	c.RollbackThreshold = 1.01
	if err := c.Validate(); err != nil {
		t.Errorf("rollbackThreshold 1.01: %v", err)
	}
}

// TestDecidePrecedence: the whole window's rollback comes first, then a
// recent run's, then hold or promote; a whole-window statistic that is not
// a number never hides a recent run past its boundary.
func TestDecidePrecedence(t *testing.T) {
	c := Default()
	base := WindowEvidence{Minutes: 30, Rollback: 11.5, Promote: 5, RecentMinutes: 8, RecentBoundary: 9}
	for _, tc := range []struct {
		name              string
		statistic, recent float64
		want              Decision
		reason            string
	}{
		{"the window", 12, 12, Rollback, " over 30 minutes: evidence 12.0 reached the rollback boundary 11.5"},
		{"a recent run", 3, 10, Rollback, " over the last 8 minutes: evidence 10.0 reached the rollback boundary 9.0"},
		{"a recent run beside a NaN window", math.NaN(), 10, Rollback, " over the last 8 minutes: evidence 10.0"},
		{"neither", 3, 8, Hold, "evidence 3.0, rollback at 11.5"},
	} {
		w := base
		w.Statistic, w.RecentStatistic = tc.statistic, tc.recent
		if d, reason := w.decide(c); d != tc.want || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %s %q, want %s with %q", tc.name, d, reason, tc.want, tc.reason)
		}
	}
}
