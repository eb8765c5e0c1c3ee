package verdict

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Minute is one judged wall-clock minute: the window (Time-60s, Time].
type Minute struct {
	Time     time.Time
	Baseline FleetStats
	Canary   FleetStats
	Ratio    float64
	Verdict  Verdict
	Warmup   bool // shown but not counted
	Reason   string
	// Evidence is what the minute adds to the evidence rule (set by the
	// caller with MinuteEvidence; the zero value carries none).
	Evidence Evidence
	// Decision is the decision of the window ending at this minute, with its
	// reason and, for the evidence rule, the window's evidence.
	Decision       Decision
	DecisionReason string
	Window         WindowEvidence
	// LB, when set, is each fleet's verdict quantile from a load-balancer-
	// side histogram of the same requests (NaN where absent), checked
	// against the application's (FlagMeasurementDivergence).
	LB *LoadBalancerQuantiles
	// Errors, when set, are both fleets' requests and failed requests in the
	// minute (the judge's --errors-metric): a canary shown to fail more often
	// than its baseline raises FlagTrafficParity.
	Errors *ErrorCounts
	// Shared is how many series both fleets' selectors selected at the
	// minute's end (prom.SharedSeriesQuery, the rule pack's shared_series
	// record): a window that holds such a minute never promotes
	// (FlagSharedSeries).
	Shared int
}

// LoadBalancerQuantiles are both fleets' verdict quantiles read off a
// load-balancer-side histogram in one minute.
type LoadBalancerQuantiles struct{ Baseline, Canary float64 }

// Counts of minutes by verdict; warm-up minutes are counted only in Warmup.
type Counts struct {
	Good, Neutral, Bad, Insufficient, NoData, Partial, Warmup int
}

// Flags raised over a window: facts that make a result suspect.
const (
	FlagSuspiciousWin = "suspicious-win"
	FlagTrafficParity = "traffic-parity"
	FlagFleetMissing  = "fleet-missing"
	// FlagMeasurementDivergence: the application-side and load-balancer-side
	// histograms of the same requests disagree (coordinated omission).
	FlagMeasurementDivergence = "measurement-divergence"
	// FlagPartialFleet: in some minutes a fleet member that was serving
	// did not report (verdict Partial).
	FlagPartialFleet = "partial-fleet"
	// FlagPartialResponse: Prometheus (or Thanos, Mimir) answered with
	// warnings that its answer may be partial.
	FlagPartialResponse = "partial-response"
	// FlagSharedSeries: some series were selected by both fleets in a
	// minute of the window (Minute.Shared). The judge and the data source
	// refuse fleets that share one at the end of what they read
	// (engine.ErrSharedSeries) and raise this flag over the windows of
	// earlier such minutes; the rule pack, which cannot refuse, raises it
	// over every window of such a minute.
	FlagSharedSeries = "shared-series"
)

// Every flag means the comparison may not be what it seems: a window with
// any flag never promotes; it holds, and says why.

// Window is the judged window and its decision.
type Window struct {
	Config Config
	// Minutes are the minutes shown, each with the decision of the window
	// ending at it; the last one's window is the judged window.
	Minutes []Minute
	// Counts, Decision, Reason, Evidence, Worst and Flags are those of the
	// judged window: the WindowMinutes minutes ending at the last minute.
	Counts   Counts
	Decision Decision
	Evidence WindowEvidence
	// Worst is the index in Minutes of the judged window's counted minute
	// with the highest ratio, or -1 when no minute has one.
	Worst  int
	Reason string
	Flags  []string
	// Notes explain each flag in a sentence, in the order of Flags.
	Notes []string
}

// Options says which minutes Decide shows and where windows start.
type Options struct {
	// Shown is how many of the last minutes are shown, each with the
	// decision of the window ending at it; 0 shows the last WindowMinutes.
	// The minutes before them only serve as the earlier minutes of windows.
	Shown int
	// Anchored says the first minute is a deployment's first (the judge's
	// --since): windows never reach before it, and the evidence rule pools
	// every minute since it as one sequential test with the anchored
	// boundaries, past the window's length too (its recent runs then have
	// the sliding boundary), for MinutesPerDay minutes; later minutes are
	// judged as sliding windows.
	Anchored bool
	// CanaryHadTrafficAt reports whether the canary had traffic at a time,
	// WarmupMinutes before a minute (nil: no warm-up).
	CanaryHadTrafficAt func(time.Time) bool
	// Flags and Notes are raised on every window by the caller: facts about
	// the whole answer, such as a partial response.
	Flags, Notes []string
}

// Decide judges each minute, marks warm-up minutes, and decides the window
// ending at every shown minute. minutes must be consecutive, in time order.
func Decide(c Config, minutes []Minute, o Options) Window {
	for i := range minutes {
		m := &minutes[i]
		m.Verdict, m.Ratio, m.Reason = Judge(c, m.Baseline, m.Canary)
		if c.WarmupMinutes > 0 && o.CanaryHadTrafficAt != nil &&
			!o.CanaryHadTrafficAt(m.Time.Add(-time.Duration(c.WarmupMinutes)*time.Minute)) {
			m.Warmup = true
			m.Reason = fmt.Sprintf("warm-up, not counted (the canary had no traffic %d minutes earlier); %s", c.WarmupMinutes, m.Reason)
		}
	}
	shown := o.Shown
	if shown <= 0 {
		shown = c.WindowMinutes
	}
	shown = min(shown, len(minutes))
	first := len(minutes) - shown
	evidence := make([]Evidence, len(minutes))
	for i, m := range minutes {
		evidence[i] = evidenceOf(m)
	}
	var counts Counts
	// Every window and recent run is a difference of the running sums.
	sums := newRunningSums(evidence, c.ChangeCap())
	var tally windowTally // the flags' figures of the window ending at i
	// A deployment's evidence pools every minute since its start, so the
	// flags of minutes whose counts cannot be trusted and still count as
	// evidence (shared series, a load balancer that disagrees) are pooled
	// since its start too: such a minute holds every promotion its
	// evidence is in, not only those of the window it is in.
	var pooled windowTally
	errs := newErrorRuns(minutes)
	for i := range minutes {
		counts.add(minutes[i], 1)
		tally.step(c, minutes, i, c.WindowMinutes)
		pooled.addUntrusted(c, minutes[i])
		if j := i - c.WindowMinutes; j >= 0 {
			counts.add(minutes[j], -1)
		}
		if i < first {
			continue
		}
		n := min(i+1, c.WindowMinutes)
		m := &minutes[i]
		// A deployment's evidence pools from its start for a day: the
		// sequential test that starts with it holds at every look, however
		// long it runs. Later minutes are judged as sliding windows.
		from, anchored := i-n+1, o.Anchored && i < MinutesPerDay
		if anchored {
			from = 0
		}
		m.Window = readRun(c, sums, from, i+1, anchored)
		if c.Rule == RuleReference {
			m.Decision, m.DecisionReason = decide(c, counts, n)
		} else {
			m.Decision, m.DecisionReason = m.Window.decide(c)
		}
		if m.Decision == Promote {
			t := tally.since(pooled, anchored)
			t.errs = errs.strongest(from, i)
			if flags, _ := t.flags(c, o, nil, false); len(flags) > 0 {
				m.Decision, m.DecisionReason = Hold, holdReason(flags, m.DecisionReason)
			}
		}
	}
	w := Window{Config: c, Minutes: minutes[first:], Worst: -1, Counts: counts}
	if len(w.Minutes) == 0 {
		w.Decision, w.Reason = Hold, "no minutes to judge"
		return w
	}
	last := w.Minutes[len(w.Minutes)-1]
	w.Decision, w.Reason, w.Evidence = last.Decision, last.DecisionReason, last.Window
	judged := minutes[max(0, len(minutes)-c.WindowMinutes):]
	for i, m := range w.Minutes {
		if m.Time.Before(judged[0].Time) || m.Warmup || !counted(m.Verdict) {
			continue
		}
		if w.Worst < 0 || m.Ratio > w.Minutes[w.Worst].Ratio {
			w.Worst = i
		}
	}
	// The tally now holds the judged window's minutes; a deployment's
	// pooled evidence, every minute since its start.
	if w.Evidence.Anchored {
		t := tally.since(pooled, true)
		t.errs = errs.strongest(0, len(minutes)-1)
		w.Flags, w.Notes = t.flags(c, o, minutes, true)
	} else {
		tally.errs = errs.strongest(len(minutes)-len(judged), len(minutes)-1)
		w.Flags, w.Notes = tally.flags(c, o, judged, true)
	}
	return w
}

// holdReason says why a window that would promote holds.
func holdReason(flags []string, promote string) string {
	return fmt.Sprintf("would promote (%s), but the comparison is flagged %s: a flagged comparison never promotes", promote, strings.Join(flags, ", "))
}

func evidenceOf(m Minute) Evidence {
	if m.Warmup || m.Verdict == Partial {
		return Evidence{}
	}
	return m.Evidence
}

// add counts a minute in (sign 1) or out (sign -1).
func (n *Counts) add(m Minute, sign int) {
	if m.Warmup {
		n.Warmup += sign
		return
	}
	switch m.Verdict {
	case Good:
		n.Good += sign
	case Neutral:
		n.Neutral += sign
	case Bad:
		n.Bad += sign
	case Insufficient:
		n.Insufficient += sign
	case NoData:
		n.NoData += sign
	case Partial:
		n.Partial += sign
	}
}

func counted(v Verdict) bool { return v == Good || v == Neutral || v == Bad }

// decide applies the window rule: rollback is checked first.
func decide(c Config, n Counts, total int) (Decision, string) {
	switch {
	case n.Bad >= c.BadLimit:
		return Rollback, fmt.Sprintf("%d bad minutes of %d, limit %d", n.Bad, total, c.BadLimit)
	case n.Good >= c.GoodNeeded:
		return Promote, fmt.Sprintf("%d good minutes of %d, needed %d", n.Good, total, c.GoodNeeded)
	default:
		return Hold, fmt.Sprintf("%d good minutes (needed %d) and %d bad (limit %d) of %d", n.Good, c.GoodNeeded, n.Bad, c.BadLimit, total)
	}
}

// windowTally is what a window's flags are raised from, kept as minutes
// enter and leave the window: Decide keeps one for the window ending at
// each minute instead of reading the window's minutes again. The flags are
// the guards the reference script lacks: a win too large to believe
// without a traffic-mix check, a canary share that moves, a fleet missing
// while the other serves, a fleet incomplete, a load balancer that
// disagrees with the application, and the caller's own flags.
type windowTally struct {
	// ratios of counted minutes and the canary's shares of requests, in
	// ascending order (cmp.Compare's). The shares are those of the last
	// half of the window only (ShareMinutes).
	ratios, shares                     []float64
	missing, partial, diverged, shared int
	// errs is the run of the window's minutes (a deployment's: since its
	// start) whose failed requests weigh most against the canary, set by
	// Decide (errorRuns.strongest).
	errs errorSums
}

// ShareMinutes is how many of the window's last minutes the traffic-parity
// flag reads the canary's share of requests over: the half of the window
// that promotion needs minutes of evidence from (PromoteMinutes). A share
// that moved before them (Flagger or Argo Rollouts raising the canary's
// weight step by step) no longer holds a promotion once it has been steady
// for them; each of those minutes' evidence is exact at its own share.
func (c Config) ShareMinutes() int { return c.PromoteMinutes() }

// step moves the tally of a window of width minutes to the one ending at
// minutes[i]: minute i enters, the minute width before it leaves, and the
// shares keep the last ShareMinutes of it.
func (t *windowTally) step(c Config, minutes []Minute, i, width int) {
	t.add(c, minutes[i], 1)
	t.addShare(minutes[i], 1)
	if j := i - width; j >= 0 {
		t.add(c, minutes[j], -1)
	}
	if j := i - min(width, c.ShareMinutes()); j >= 0 {
		t.addShare(minutes[j], -1)
	}
}

// shareOf is the canary's share of a minute's requests, ok when both fleets
// served and the minute is not warm-up.
func shareOf(m Minute) (share float64, ok bool) {
	if m.Warmup || !(m.Baseline.Count > 0 && m.Canary.Count > 0) {
		return 0, false
	}
	return m.Canary.Count / (m.Baseline.Count + m.Canary.Count), true
}

// addShare counts minute m's share in (sign 1) or out (sign -1).
func (t *windowTally) addShare(m Minute, sign int) {
	if s, ok := shareOf(m); ok {
		t.shares = sortedAdd(t.shares, s, sign)
	}
}

// add counts minute m in (sign 1) or out (sign -1), all but its share;
// warm-up minutes are not counted.
func (t *windowTally) add(c Config, m Minute, sign int) {
	if m.Shared > 0 {
		t.shared += sign // in warm-up too: the rule pack's record knows no warm-up
	}
	if m.Warmup {
		return
	}
	if counted(m.Verdict) {
		t.ratios = sortedAdd(t.ratios, m.Ratio, sign)
	}
	if m.Verdict == Partial {
		t.partial += sign
	}
	if (m.Baseline.Count > 0) != (m.Canary.Count > 0) {
		t.missing += sign
	}
	if _, _, diverged := divergence(c, m); diverged {
		t.diverged += sign
	}
}

// addUntrusted counts minute m in when its counts cannot be trusted though
// they count as evidence: series shared by both fleets, or a load balancer
// that disagrees with the application's histogram.
func (t *windowTally) addUntrusted(c Config, m Minute) {
	if m.Shared > 0 {
		t.shared++
	}
	if _, _, diverged := divergence(c, m); diverged {
		t.diverged++
	}
}

// since is the tally of a window whose evidence pools from the deployment's
// start (anchored): its shared and diverged minutes are those of every
// minute since then, in pooled.
func (t windowTally) since(pooled windowTally, anchored bool) windowTally {
	if anchored {
		t.shared, t.diverged = pooled.shared, pooled.diverged
	}
	return t
}

// sortedAdd inserts x into the ascending s (sign 1) or removes a value
// equal to it (sign -1).
func sortedAdd(s []float64, x float64, sign int) []float64 {
	i, found := slices.BinarySearchFunc(s, x, cmp.Compare[float64])
	if sign > 0 {
		return slices.Insert(s, i, x)
	}
	if found {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// sortedMedian is median of an ascending slice.
func sortedMedian(s []float64) float64 {
	switch {
	case len(s) == 0:
		return math.NaN()
	case len(s)%2 == 1:
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// flags raises the window's flags, with a note for each when withNotes
// (judged, the window's minutes, is read only for the load balancer's note).
func (t *windowTally) flags(c Config, o Options, judged []Minute, withNotes bool) (flags, notes []string) {
	add := func(flag string, note func() string) {
		flags = append(flags, flag)
		if withNotes {
			notes = append(notes, note())
		}
	}
	if r := sortedMedian(t.ratios); len(t.ratios) > 0 && r <= c.SuspiciousWin {
		add(FlagSuspiciousWin, func() string {
			return fmt.Sprintf("the median ratio is %.2fx, a win this large usually means the canary gets different traffic: check request mix, payload sizes and error ratios before promoting", r)
		})
	}
	var parity func() []string // the share's parts of the traffic-parity note
	if s := sortedMedian(t.shares); len(t.shares) > 0 && s > 0 {
		// |x-s|/s grows as x moves away from s on either side: the shares
		// that drifted are a run at each end.
		drifted := func(x float64) bool { return math.Abs(x-s)/s > c.MaxShareDrift }
		below, _ := slices.BinarySearchFunc(t.shares, s, cmp.Compare[float64])
		low := sort.Search(below, func(i int) bool { return !drifted(t.shares[i]) })
		high := len(t.shares) - below - sort.Search(len(t.shares)-below, func(i int) bool { return drifted(t.shares[below+i]) })
		n := low + high
		e := c.ExpectedCanaryShare
		deviates := e > 0 && math.Abs(s/e-1) > c.MaxShareDeviation
		if n > 0 || deviates {
			parity = func() []string {
				var parts []string
				if n > 0 {
					parts = append(parts, fmt.Sprintf("the canary's share of requests moved more than %.0f%% from its median %.1f%% in %d of %d minutes (the window's last %d)", c.MaxShareDrift*100, s*100, n, len(t.shares), c.ShareMinutes()))
				}
				if deviates {
					parts = append(parts, fmt.Sprintf("the canary served %.2f%% of requests (median), not the %.2f%% it should: the router splits differently or the canary gets another request mix", s*100, e*100))
				}
				return parts
			}
		}
	}
	if note := t.errs.errorNote(c); parity != nil || note != "" {
		add(FlagTrafficParity, func() string {
			var parts []string
			if parity != nil {
				parts = append(parts, strings.Join(parity(), "; and ")+": the fleets may not see the same traffic, so a difference in latency may not be the release's")
			}
			if note != "" {
				parts = append(parts, note)
			}
			return strings.Join(parts, "; and ")
		})
	}
	if t.missing > 0 {
		add(FlagFleetMissing, func() string {
			return fmt.Sprintf("in %d minutes one fleet served traffic and the other had none", t.missing)
		})
	}
	if t.partial > 0 {
		add(FlagPartialFleet, func() string {
			return fmt.Sprintf("in %d minutes a fleet member that was serving did not report (target down or series stopped): those minutes are neither good nor bad nor evidence", t.partial)
		})
	}
	if t.shared > 0 {
		add(FlagSharedSeries, func() string {
			return fmt.Sprintf("in %d minutes some series were selected by both fleets' selectors, so their requests counted on both sides: make the selectors exclusive, e.g. with track=\"baseline\" and track=\"canary\"", t.shared)
		})
	}
	if t.diverged > 0 {
		add(FlagMeasurementDivergence, func() string { return measurementNote(c, judged) })
	}
	for i, f := range o.Flags {
		add(f, func() string { return o.Notes[i] })
	}
	return flags, notes
}

// Summary is the decision line the judge prints.
func (w Window) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", strings.ToUpper(string(w.Decision)), w.Reason)
	fmt.Fprintf(&b, " (%s rule; minutes: good %d, neutral %d, bad %d, insufficient %d, no-data %d", w.Config.Rule, w.Counts.Good, w.Counts.Neutral, w.Counts.Bad, w.Counts.Insufficient, w.Counts.NoData)
	if w.Counts.Warmup > 0 {
		fmt.Fprintf(&b, ", warm-up %d", w.Counts.Warmup)
	}
	b.WriteString(")")
	return b.String()
}

// measurementNote compares each fleet's verdict quantile from the
// application histogram with the same quantile of a load-balancer-side
// histogram of the same requests (Minute.LB). Application histograms start
// the clock when a request is picked up, so they miss time spent queueing
// (coordinated omission); a divergence beyond MaxMeasurementDivergence in
// any counted minute flags the window, since the comparison may then rest on
// the wrong clock. "" when nothing diverges.
func measurementNote(c Config, judged []Minute) string {
	worst, minutes := 0.0, 0
	worstFleet := ""
	for _, m := range judged {
		d, fleet, diverged := divergence(c, m)
		if !diverged {
			continue
		}
		minutes++
		if d > worst {
			worst, worstFleet = d, fleet
		}
	}
	if minutes == 0 {
		return ""
	}
	return fmt.Sprintf("in %d minutes the load balancer's %s differs from the application's by more than %.0f%% (up to %.0f%%, %s fleet): the application histogram may miss queueing time; judge on the load-balancer histogram or find where the time goes",
		minutes, QuantileLabel(c.VerdictQuantile), c.MaxMeasurementDivergence*100, worst*100, worstFleet)
}

// divergence tells whether a minute's load-balancer quantile diverges from
// the application's beyond MaxMeasurementDivergence for either fleet (never
// in warm-up), with the larger divergence and its fleet.
func divergence(c Config, m Minute) (worst float64, fleet string, diverged bool) {
	if m.Warmup || m.LB == nil {
		return 0, "", false
	}
	for _, f := range []struct {
		name    string
		app, lb float64
	}{{"baseline", m.Baseline.Value, m.LB.Baseline}, {"canary", m.Canary.Value, m.LB.Canary}} {
		if !(f.app > 0) || math.IsNaN(f.lb) || math.IsInf(f.app, 0) || math.IsInf(f.lb, 0) {
			continue
		}
		if d := math.Abs(f.lb/f.app - 1); d > c.MaxMeasurementDivergence {
			diverged = true
			if d > worst {
				worst, fleet = d, f.name
			}
		}
	}
	return worst, fleet, diverged
}
