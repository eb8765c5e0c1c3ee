package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// The judgement section judges identical fleets and injected regressions
// with three rules side by side:
//
//   - reference: the chapter's rule (bad >= 5 of 60 minutes rolls back),
//     verdict.Config{Rule: "reference"} with the other defaults;
//   - gate: the reference rule with the significance gate at 0.99;
//   - evidence: verdict.Default(), the evidence rule.
//
// Every cell's minutes come from simulateFleets (fleetsim.go): the merged
// histograms a Prometheus would return, built in process. The parity
// section runs smaller cells through the real Prometheus and engine.Analyze
// and compares.

// ruleSpec is one judging rule.
type ruleSpec struct {
	Name string
	Cfg  verdict.Config
}

// judgeRules are the rules compared, in table order.
func judgeRules() []ruleSpec {
	ref := verdict.Default()
	ref.Rule = verdict.RuleReference
	gate := ref
	gate.Significance = 0.99
	return []ruleSpec{{"reference", ref}, {"gate 0.99", gate}, {"evidence", verdict.Default()}}
}

const numRules = 3

const (
	deployEvery   = 30  // a fresh deployment every 30 minutes
	deployMinutes = 60  // identical fleets: each judged over its first 60 minutes
	regHorizon    = 120 // regressions: minutes judged after the deployment's start
	oracleP       = 0.99
)

// cellKey names one (shape, traffic, share) data set.
type cellKey struct {
	Shape string
	RPS   float64
	Share float64
}

func (k cellKey) String() string {
	return fmt.Sprintf("%s, %s req/s, %s canary", k.Shape, rpsStr(k.RPS), shareStr(k.Share))
}

func rpsStr(r float64) string {
	if r >= 1000 {
		return fmt.Sprintf("%.0f,%03.0f", math.Floor(r/1000), math.Mod(r, 1000))
	}
	return fmt.Sprintf("%.0f", r)
}

func shareStr(s float64) string { return fmt.Sprintf("%g%%", s*100) }

// seed gives every data set its own random stream; a regression uses its
// identical-fleet cell's seed, so both share the baseline's observations.
func (k cellKey) seed() int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%g/%g", k.Shape, k.RPS, k.Share)
	return int64(h.Sum64() >> 2)
}

// regression is one injected canary regression.
type regression struct {
	Name     string
	Scenario string
	Factor   float64 // uniform: latency x Factor; bad pod: that pod x Factor
}

var regressions = []regression{
	{"uniform x1.2", sim.ScenarioRegression, 1.2},
	{"uniform x1.5", sim.ScenarioRegression, 1.5},
	{"tail only", sim.ScenarioTail, 0},
	{"bad pod x2 (1 of 5)", sim.ScenarioBadPod, 2},
}

// benchPods is the pods per fleet of every judgement data set: five, so
// that one bad pod is a fifth of the canary.
const benchPods = 5

// benchLoadLatency couples latency to load in every data set: both fleets
// are (rate / mean rate)^0.25 slower, so the p99 moves with the diurnal
// curve (-9% to +7%) and in bursts (up to +40% at the daily peak).
const benchLoadLatency = 0.25

// simConfig is the simulation of a cell: its shape, traffic and share, the
// default diurnal curve and bursts, load-coupled latency, five pods.
func simConfig(k cellKey, start time.Time) sim.Config {
	c := sim.DefaultConfig(start)
	c.Seed = k.seed()
	c.Shape = k.Shape
	c.TotalRPS = k.RPS
	c.CanaryShare = k.Share
	c.PodsPerFleet = benchPods
	c.LoadLatency = benchLoadLatency
	if k.Shape != sim.ShapeBimodal {
		c.CostlyShare = 0 // the shape alone
	}
	return c
}

// restartsFor restarts one pod of each fleet every four hours (in turn),
// 7 s into a minute, as pairwise-gen --restart POD@MINUTE does.
func restartsFor(start time.Time, minutes int) []sim.Restart {
	var out []sim.Restart
	for i, m := 0, 100; m < minutes; i, m = i+1, m+120 {
		fleet := sim.Fleets[i%2]
		idx := (i / 2) % benchPods
		out = append(out, sim.Restart{Fleet: fleet, Index: idx, Pod: sim.PodName("checkout", fleet, idx), Time: start.Add(time.Duration(m)*time.Minute + 7*time.Second).UTC()})
	}
	return out
}

// restartArgs are the pairwise-gen flags for rs.
func restartArgs(rs []sim.Restart, start time.Time) []string {
	var out []string
	for _, r := range rs {
		out = append(out, "--restart", fmt.Sprintf("%s-%d@%d", r.Fleet, r.Index, int(r.Time.Sub(start)/time.Minute)))
	}
	return out
}

// cleanRule is one rule's figures over a day of identical fleets.
type cleanRule struct {
	Windows, WindowsRolledBack                  int
	Deploys, DeploysRolledBack, DeploysPromoted int
	// Evidence rule only: its closest approach to rolling back, the largest
	// statistic minus its boundary (whole window or recent run, whichever
	// is nearer) over the sliding windows and over the deployments'
	// anchored windows; below 0 it never fired.
	MarginSliding, MarginAnchored float64
}

// cleanCell is one identical-fleet cell: a data set read as one kind.
type cleanCell struct {
	Key     cellKey
	Kind    string
	Minutes int
	// CanaryTail is the mean number of canary observations beyond the
	// baseline's p99 per minute (what a minute can tell).
	CanaryTail float64
	Rules      [numRules]cleanRule
	// The oracle's threshold calibrated on this cell's deployments (the same
	// for every kind: the oracle reads no histogram), the stricter one
	// calibrated on a deployment starting at every minute of the day, and
	// the whole-minute oracle's (fleetData.WholeN), the two-sample
	// oracle's (twoSampleZ) and the strict two-sample oracle's (twoSampleZ
	// calibrated as the strict oracle is).
	OracleThreshold, StrictThreshold, WholeThreshold, TwoSampleThreshold, StrictTwoSampleThreshold float64
	GenSeconds                                                                                     float64
}

// regCell is one regression deployed fresh: minutes from the deployment's
// start to the first rollback, over deployments every deployEvery minutes.
type regCell struct {
	Key        cellKey
	Regression string
	Kind       string
	Deploys    int
	Oracle     delays
	// Strict is the oracle with the threshold that never fires on a
	// deployment starting at any minute of the identical fleets' day
	// (about 1,400 deployments: near the evidence rule's budget of 1 in
	// 1,000), for reading the targets; the target uses Oracle.
	Strict delays
	// Whole is the oracle reading every observation of each minute, the
	// quarter that no one-minute increase() covers too (a 15 s scrape),
	// calibrated as Oracle is; the target does not use it.
	Whole delays
	// TwoSample is the oracle that reads exact observations beyond the
	// exact p99 but learns what an identical canary would show from the
	// baseline's own count (twoSampleZ), calibrated as Oracle is; the
	// target does not use it.
	TwoSample delays
	// StrictTwoSample is the two-sample oracle calibrated as Strict is:
	// what a rule that reads data can do at a budget near the evidence
	// rule's, given exact observations and the exact p99 (the target does
	// not use it).
	StrictTwoSample delays
	Rules           [numRules]delays
	// Promoted counts, per rule, the deployments it promoted before rolling
	// them back, or without rolling them back: a regression shipped.
	Promoted [numRules]int
	// Within counts deployments where evidence <= 1.5 x oracle + 1.
	Within                                                                                         int
	OracleThreshold, StrictThreshold, WholeThreshold, TwoSampleThreshold, StrictTwoSampleThreshold float64
	GenSeconds                                                                                     float64
}

// delays are minutes to rollback of each deployment; 0 is none within
// regHorizon minutes.
type delays []int

// median treats "none" as later than any minute; NaN when more than half
// never rolled back.
func (d delays) median() float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := make([]float64, len(d))
	for i, x := range d {
		s[i] = float64(x)
		if x <= 0 {
			s[i] = math.Inf(1)
		}
	}
	sort.Float64s(s)
	var m float64
	if len(s)%2 == 1 {
		m = s[len(s)/2]
	} else {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if math.IsInf(m, 1) {
		return math.NaN()
	}
	return m
}

func (d delays) missed() int {
	n := 0
	for _, x := range d {
		if x <= 0 {
			n++
		}
	}
	return n
}

func (d delays) max() int {
	m := 0
	for _, x := range d {
		if x <= 0 {
			return -1
		}
		m = max(m, x)
	}
	return m
}

// target is the bar for the evidence rule: within 1.5x the oracle's
// minutes + 1.
func target(oracle float64) float64 { return 1.5*oracle + 1 }

// deployStarts are the first minutes (indices) of the deployments over n
// minutes, each followed by length minutes, beginning at first.
func deployStarts(first, n, length int) []int {
	return deployStartsEvery(first, n, length, deployEvery)
}

func deployStartsEvery(first, n, length, step int) []int {
	var out []int
	for s := first; s+length <= n; s += step {
		out = append(out, s)
	}
	return out
}

// judgeDeploy decides every minute of a deployment anchored at minutes[0]
// and returns the first rollback and the first promote (1-based minutes
// since the start, 0: none) and the evidence rule's closest approach to its
// rollback boundary over the anchored windows.
func judgeDeploy(cfg verdict.Config, minutes []verdict.Minute) (rollback, promote int, maxStat float64) {
	w := verdict.Decide(cfg, slices.Clone(minutes), verdict.Options{Shown: len(minutes), Anchored: true})
	maxStat = math.Inf(-1)
	for i, m := range w.Minutes {
		if m.Decision == verdict.Rollback && rollback == 0 {
			rollback = i + 1
		}
		if m.Decision == verdict.Promote && promote == 0 {
			promote = i + 1
		}
		if i < cfg.WindowMinutes {
			maxStat = math.Max(maxStat, margin(m.Window))
		}
	}
	return rollback, promote, maxStat
}

// promotedFirst says whether a regressed deployment whose first rollback
// and first promote fell at those minutes (0: never) was promoted before it
// was rolled back, or without being rolled back: a pipeline would have
// shipped the regression, whatever the rule said afterwards.
func promotedFirst(rollback, promote int) bool {
	return promote > 0 && (rollback == 0 || promote < rollback)
}

// judgeClean fills one rule's figures for a day of identical fleets: the
// windows ending at each of the last shown minutes, and the deployments.
func judgeClean(cfg verdict.Config, minutes []verdict.Minute, shown int, starts []int) cleanRule {
	var r cleanRule
	w := verdict.Decide(cfg, slices.Clone(minutes), verdict.Options{Shown: shown})
	r.Windows = len(w.Minutes)
	r.MarginSliding = math.Inf(-1)
	for _, m := range w.Minutes {
		if m.Decision == verdict.Rollback {
			r.WindowsRolledBack++
		}
		r.MarginSliding = math.Max(r.MarginSliding, margin(m.Window))
	}
	r.MarginAnchored = math.Inf(-1)
	for _, s := range starts {
		r.Deploys++
		rb, pr, st := judgeDeploy(cfg, minutes[s:s+deployMinutes])
		if rb > 0 {
			r.DeploysRolledBack++
		}
		if pr > 0 {
			r.DeploysPromoted++
		}
		r.MarginAnchored = math.Max(r.MarginAnchored, st)
	}
	return r
}

// margin is how far a window's evidence stands above its rollback boundary
// (negative: below), the whole window or its most telling recent run.
func margin(w verdict.WindowEvidence) float64 {
	m := w.Statistic - w.Rollback
	if w.RecentMinutes > 0 {
		m = math.Max(m, w.RecentStatistic-w.RecentBoundary)
	}
	return m
}

// oracleZ is the oracle's statistic after each minute of a deployment: the
// canary's observations beyond the baseline's exact p99, pooled since the
// start, as a one-sided binomial z against the 1% identical fleets give.
func oracleZ(n, k []float64) []float64 {
	out := make([]float64, len(n))
	var N, K float64
	for i := range n {
		N += n[i]
		K += k[i]
		out[i] = math.Inf(-1)
		if N > 0 {
			p := 1 - oracleP
			out[i] = (K - p*N) / math.Sqrt(p*(1-p)*N)
		}
	}
	return out
}

// twoSampleZ is the two-sample oracle's statistic after each minute of a
// deployment. It counts exact observations beyond the baseline's exact p99,
// as the oracle does, but does not know how many of them the canary would
// show if it were identical: like any rule that reads data, it learns that
// from the baseline's own count of the same minute. Of the K observations
// beyond the p99 in a minute where the canary has the share f of all
// observations, an identical canary holds f K on average, with variance
// f (1 - f) K; the statistic pools those since the start:
// z = sum(k - f K) / sqrt(sum(f (1 - f) K)). cn and ck are the canary's
// observations and those beyond the p99, bn and bk the baseline's.
func twoSampleZ(cn, ck, bn, bk []float64) []float64 {
	out := make([]float64, len(cn))
	var excess, variance float64
	for i := range cn {
		if n := cn[i] + bn[i]; n > 0 {
			f, K := cn[i]/n, ck[i]+bk[i]
			excess += ck[i] - f*K
			variance += f * (1 - f) * K
		}
		out[i] = math.Inf(-1)
		if variance > 0 {
			out[i] = excess / math.Sqrt(variance)
		}
	}
	return out
}

// oracleThreshold is the largest oracle statistic over the identical-fleet
// deployments, from the canary's observations n and those beyond the
// baseline's p99 k of each minute: the oracle fires only above it, so it
// never fires on them.
func oracleThreshold(n, k []float64, starts []int) float64 {
	return largestZ(func(s int) []float64 { return oracleZ(n[s:s+deployMinutes], k[s:s+deployMinutes]) }, starts)
}

// largestZ is the largest statistic z(s) reaches over the deployments
// starting at starts: a threshold that never fires on them.
func largestZ(z func(start int) []float64, starts []int) float64 {
	t := math.Inf(-1)
	for _, s := range starts {
		for _, v := range z(s) {
			t = math.Max(t, v)
		}
	}
	return t
}

// oracleDelay is the first minute of a deployment whose statistic exceeds
// the threshold (0: none).
func oracleDelay(n, k []float64, threshold float64) int {
	return firstAbove(oracleZ(n, k), threshold)
}

// firstAbove is the first minute (from 1) whose statistic exceeds the
// threshold, 0 for none.
func firstAbove(z []float64, threshold float64) int {
	for i, v := range z {
		if v > threshold {
			return i + 1
		}
	}
	return 0
}

// judgePlan is the judgement matrix of a run.
type judgePlan struct {
	Shapes     []string
	RPS        []float64
	Shares     []float64
	DayMinutes int // sliding windows judged (each has WindowMinutes-1 earlier minutes)
	RegShares  []float64
	RegRPS     []float64
	// RegMinutes[i] is the data of a regression cell at RegRPS[i] (0: as
	// long as the identical fleets): deployments start every deployEvery
	// minutes and are judged for regHorizon.
	RegMinutes []int
	Workers    int
	// Stalls, when set, pause every pod of the in-process cells (not the
	// parity section's): sim.Config's StallEveryMinutes and StallSeconds.
	Stalls stalls
	// Episodes, when set, slow every pod of the in-process cells now and
	// then (not the parity section's): sim.Config's Episode fields.
	Episodes episodes `json:",omitempty"`
	// Ramp, when set, raises the canary's weight of the in-process cells
	// step by step at each deployment's start (ramp.apply).
	Ramp ramp `json:",omitempty"`
	// ScrapeOffsets, when set, scrapes every pod of the in-process cells
	// at its own offset in the 15 s interval (simSpec.Offsets).
	ScrapeOffsets bool
	// CoveredMinutes, when set, reads every minute of the in-process cells
	// as a one-minute increase() (simSpec.Covered): a measurement of what
	// whole minutes bring, not what the engine does.
	CoveredMinutes bool
	// ClassicBuckets, when set, replaces the classic buckets of the
	// in-process cells (simSpec.Classic): how the rules judge a layout
	// other than pairwise-gen's, such as client_golang's DefBuckets.
	ClassicBuckets []float64 `json:",omitempty"`
	// Model, when set, overrides latency-model and traffic fields of every
	// in-process cell's sim.Config by name (modelFields): another latency
	// model than the matrix's, for the identical fleets and the regressions
	// alike.
	Model map[string]float64 `json:",omitempty"`
}

// setRPS replaces the plan's traffic levels with --judge-rps's, for the
// identical fleets and the regressions alike. A level the plan had keeps its
// regression data's length; another gets the longest of the plan's (the
// whole day when the plan has one).
func (jp *judgePlan) setRPS(text string) error {
	rps, ok := parseFloats(text, func(v float64) bool { return v > 0 && !math.IsInf(v, 0) })
	if !ok {
		return fmt.Errorf("--judge-rps %q: want req/s above 0, separated by commas", text)
	}
	longest, whole := 0, false
	for _, m := range jp.RegMinutes {
		whole = whole || m == 0
		longest = max(longest, m)
	}
	if whole {
		longest = 0
	}
	minutes := make([]int, len(rps))
	for i, v := range rps {
		minutes[i] = longest
		if j := slices.Index(jp.RegRPS, v); j >= 0 {
			minutes[i] = jp.RegMinutes[j]
		}
	}
	jp.RPS, jp.RegRPS, jp.RegMinutes = rps, slices.Clone(rps), minutes
	return nil
}

// setShares replaces the plan's canary shares with --judge-shares's, for the
// identical fleets and the regressions alike: each regression cell is
// timed beside an oracle calibrated on the identical fleets of its share.
func (jp *judgePlan) setShares(text string) error {
	shares, ok := parseFloats(text, func(v float64) bool { return v > 0 && v < 1 })
	if !ok {
		return fmt.Errorf("--judge-shares %q: want canary shares between 0 and 1 (0.05 for 5%%), separated by commas", text)
	}
	jp.Shares, jp.RegShares = shares, slices.Clone(shares)
	return nil
}

// parseFloats reads a comma-separated list of numbers; false when an item is
// not a number or valid refuses it.
func parseFloats(text string, valid func(float64) bool) ([]float64, bool) {
	var out []float64
	for _, f := range strings.Split(text, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !valid(v) {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// parseClassicBuckets reads --classic-buckets: finite upper bounds in
// seconds, positive and ascending (+Inf is implied).
func parseClassicBuckets(text string) ([]float64, error) {
	if text == "" {
		return nil, nil
	}
	les, ok := parseFloats(text, func(v float64) bool { return v > 0 && !math.IsInf(v, 0) })
	for i := 1; ok && i < len(les); i++ {
		ok = les[i] > les[i-1]
	}
	if !ok {
		return nil, fmt.Errorf("--classic-buckets %q: want finite upper bounds in seconds, positive and ascending, separated by commas (e.g. 0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10)", text)
	}
	return les, nil
}

// modelFields are the sim.Config fields --judge-model may set, by name.
var modelFields = map[string]func(*sim.Config) *float64{
	"median":            func(c *sim.Config) *float64 { return &c.MedianLatency },
	"body-sigma":        func(c *sim.Config) *float64 { return &c.BodySigma },
	"slow-share":        func(c *sim.Config) *float64 { return &c.SlowShare },
	"slow-factor":       func(c *sim.Config) *float64 { return &c.SlowFactor },
	"slow-sigma":        func(c *sim.Config) *float64 { return &c.SlowSigma },
	"costly-share":      func(c *sim.Config) *float64 { return &c.CostlyShare },
	"costly-factor":     func(c *sim.Config) *float64 { return &c.CostlyFactor },
	"lognormal-sigma":   func(c *sim.Config) *float64 { return &c.LognormalSigma },
	"heavy-tail-index":  func(c *sim.Config) *float64 { return &c.HeavyTailIndex },
	"load-latency":      func(c *sim.Config) *float64 { return &c.LoadLatency },
	"diurnal":           func(c *sim.Config) *float64 { return &c.DiurnalAmplitude },
	"burst-probability": func(c *sim.Config) *float64 { return &c.BurstProbability },
	"tail-slow-share":   func(c *sim.Config) *float64 { return &c.TailSlowShare },
	"tail-stretch":      func(c *sim.Config) *float64 { return &c.TailStretch },
}

// parseModel reads --judge-model NAME=VALUE,...: names from modelFields,
// values numbers (sim.New checks their ranges).
func parseModel(text string) (map[string]float64, error) {
	if text == "" {
		return nil, nil
	}
	m := map[string]float64{}
	for _, item := range strings.Split(text, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		v, err := strconv.ParseFloat(value, 64)
		if _, known := modelFields[name]; !ok || !known || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			names := slices.Sorted(maps.Keys(modelFields))
			return nil, fmt.Errorf("--judge-model %q: want NAME=VALUE pairs separated by commas, NAME one of %s", text, strings.Join(names, ", "))
		}
		m[name] = v
	}
	return m, nil
}

// applyModel sets c's fields named in m.
func applyModel(m map[string]float64, c *sim.Config) {
	for name, v := range m {
		*modelFields[name](c) = v
	}
}

// stalls are sim.Config's pod pauses: one of Seconds about every Every
// minutes per pod; zero is none.
type stalls struct{ Every, Seconds float64 }

// parseStalls reads --stalls EVERY,SECONDS.
func parseStalls(text string) (stalls, error) {
	var st stalls
	if text == "" {
		return st, nil
	}
	var ok bool
	st.Every, st.Seconds, ok = pair(text, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if !ok || !(st.Every > 0) || !(st.Seconds > 0 && st.Seconds <= 1) {
		return stalls{}, fmt.Errorf("--stalls %q: want EVERY,SECONDS, minutes between a pod's pauses (> 0) and their length (0 to 1 s)", text)
	}
	return st, nil
}

// pair reads a flag's "A,B", each side with parse; ok only when both parse.
func pair[T any](text string, parse func(string) (T, error)) (a, b T, ok bool) {
	first, second, found := strings.Cut(text, ",")
	a, err1 := parse(first)
	b, err2 := parse(second)
	return a, b, found && err1 == nil && err2 == nil
}

func (st stalls) apply(c *sim.Config) { c.StallEveryMinutes, c.StallSeconds = st.Every, st.Seconds }

// episodes are sim.Config's slow episodes: each pod Factor times slower for
// Seconds, about every Every minutes; zero is none.
type episodes struct {
	Every   float64
	Seconds int64
	Factor  float64
}

// parseEpisodes reads --episodes EVERY,SECONDS,FACTOR.
func parseEpisodes(text string) (episodes, error) {
	var e episodes
	if text == "" {
		return e, nil
	}
	parts := strings.Split(text, ",")
	bad := fmt.Errorf("--episodes %q: want EVERY,SECONDS,FACTOR: minutes between a pod's slow episodes (> 0), their length in whole seconds (1 to 60 EVERY) and how many times slower the pod is (> 0)", text)
	if len(parts) != 3 {
		return e, bad
	}
	var err [3]error
	e.Every, err[0] = strconv.ParseFloat(parts[0], 64)
	e.Seconds, err[1] = strconv.ParseInt(parts[1], 10, 64)
	e.Factor, err[2] = strconv.ParseFloat(parts[2], 64)
	if errors.Join(err[:]...) != nil || !(e.Every > 0) || e.Seconds < 1 || float64(e.Seconds) > 60*e.Every || !(e.Factor > 0) || math.IsInf(e.Factor, 0) {
		return episodes{}, bad
	}
	return e, nil
}

func (e episodes) apply(c *sim.Config) {
	c.EpisodeEveryMinutes, c.EpisodeSeconds, c.EpisodeFactor = e.Every, e.Seconds, e.Factor
}

// ramp is a canary whose weight is raised as Flagger's stepWeight or Argo
// Rollouts' setWeight steps raise it: Steps equal steps up to the cell's
// share, one every Every minutes; zero is none (the share throughout).
type ramp struct{ Steps, Every int }

// parseRamp reads --ramp STEPS,EVERY.
func parseRamp(text string) (ramp, error) {
	var r ramp
	if text == "" {
		return r, nil
	}
	var ok bool
	r.Steps, r.Every, ok = pair(text, strconv.Atoi)
	if !ok || r.Steps < 2 || r.Every < 1 {
		return ramp{}, fmt.Errorf("--ramp %q: want STEPS,EVERY, how many equal steps raise the canary's weight to its share (2 or more) and the minutes between them (1 or more)", text)
	}
	return r, nil
}

// apply ramps the canary's weight of c at the start of every deployment,
// deployments starting every period minutes from c.Start.
func (r ramp) apply(c *sim.Config, period int) {
	if r.Steps == 0 {
		return
	}
	c.RampStep, c.RampEveryMinutes, c.RampPeriodMinutes = c.CanaryShare/float64(r.Steps), r.Every, period
}

// starts are the first minutes (indices) of the deployments over n minutes,
// each judged for length minutes, from the first at or after first: every
// deployEvery minutes, or with a ramp every length minutes from a multiple
// of length, where ramp.apply(c, length) starts each one's ramp (a
// deployment's weight does not fall back while it is judged).
func (r ramp) starts(first, n, length int) []int {
	if r.Steps == 0 {
		return deployStarts(first, n, length)
	}
	return deployStartsEvery((first+length-1)/length*length, n, length, length)
}

// judgement runs the matrix: every identical-fleet cell, then every
// regression beside the oracle calibrated on its identical-fleet cell.
func benchJudgementMatrix(jp judgePlan, r *report, logf func(string, ...any)) error {
	rules := judgeRules()
	base := verdict.Default()
	window := base.WindowMinutes
	total := jp.DayMinutes + window - 1
	start := benchEnd.Add(-time.Duration(total) * time.Minute)

	var keys []cellKey
	for _, shape := range jp.Shapes {
		for _, rps := range jp.RPS {
			for _, share := range jp.Shares {
				keys = append(keys, cellKey{shape, rps, share})
			}
		}
	}
	thresholds := map[cellKey][5]float64{}
	var mu sync.Mutex
	err := parallel(jp.Workers, len(keys), func(i int) error {
		k := keys[i]
		spec := simSpec{Sim: simConfig(k, start), Minutes: total, Restarts: restartsFor(start, total), Offsets: jp.ScrapeOffsets, Covered: jp.CoveredMinutes, Classic: jp.ClassicBuckets}
		jp.Stalls.apply(&spec.Sim)
		jp.Episodes.apply(&spec.Sim)
		jp.Ramp.apply(&spec.Sim, deployMinutes)
		applyModel(jp.Model, &spec.Sim)
		t0 := time.Now()
		d, err := simulateFleets(spec, base)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		gen := time.Since(t0).Seconds()
		starts := jp.Ramp.starts(window-1, total, deployMinutes)
		th := oracleThreshold(d.CanaryN, d.CanaryK, starts)
		everyMinute := deployStartsEvery(window-1, total, deployMinutes, 1)
		strict := oracleThreshold(d.CanaryN, d.CanaryK, everyMinute)
		whole := oracleThreshold(d.WholeN, d.WholeK, starts)
		two := largestZ(d.twoSample(deployMinutes), starts)
		strictTwo := largestZ(d.twoSample(deployMinutes), everyMinute)
		var cells []cleanCell
		for kind := histKind(0); kind < numKinds; kind++ {
			c := cleanCell{Key: k, Kind: kind.String(), Minutes: total, OracleThreshold: th, StrictThreshold: strict, WholeThreshold: whole, TwoSampleThreshold: two, StrictTwoSampleThreshold: strictTwo, GenSeconds: gen, CanaryTail: mean(d.CanaryK)}
			for ri, rule := range rules {
				c.Rules[ri] = judgeClean(rule.Cfg, d.Kinds[kind], jp.DayMinutes, starts)
			}
			cells = append(cells, c)
		}
		mu.Lock()
		defer mu.Unlock()
		thresholds[k] = [5]float64{th, strict, whole, two, strictTwo}
		r.Clean = append(r.Clean, cells...)
		ev := cells[1].Rules[2]
		logf("judgement: identical fleets, %s: %.1fM observations in %.0fs; evidence (schema 3): %d/%d windows, %d/%d deployments rolled back, %d promoted; oracle threshold z > %.2f (strict %.2f)",
			k, float64(d.Observations)/1e6, gen, ev.WindowsRolledBack, ev.Windows, ev.DeploysRolledBack, ev.Deploys, ev.DeploysPromoted, th, strict)
		return nil
	})
	if err != nil {
		return err
	}

	type regJob struct {
		k   cellKey
		reg regression
	}
	var jobs []regJob
	for _, shape := range jp.Shapes {
		for _, rps := range jp.RegRPS {
			for _, share := range jp.RegShares {
				for _, reg := range regressions {
					k := cellKey{shape, rps, share}
					if _, ok := thresholds[k]; !ok {
						return fmt.Errorf("regression %s %s: no identical-fleet cell to calibrate the oracle on", reg.Name, k)
					}
					jobs = append(jobs, regJob{k, reg})
				}
			}
		}
	}
	return parallel(jp.Workers, len(jobs), func(i int) error {
		j := jobs[i]
		n := 0
		if i := slices.Index(jp.RegRPS, j.k.RPS); i < len(jp.RegMinutes) {
			n = jp.RegMinutes[i]
		}
		if n == 0 {
			n = total
		}
		// The regression data end where the identical fleets' day ends and
		// start at the same minute, so both share the baseline's observations.
		c := simConfig(j.k, start)
		jp.Stalls.apply(&c)
		jp.Episodes.apply(&c)
		jp.Ramp.apply(&c, regHorizon)
		applyModel(jp.Model, &c)
		c.Scenario = j.reg.Scenario
		c.RegressionStartMinute = 0
		switch j.reg.Scenario {
		case sim.ScenarioRegression:
			c.RegressionFactor = j.reg.Factor
		case sim.ScenarioBadPod:
			c.BadPod, c.BadPodFactor = 0, j.reg.Factor
		}
		t0 := time.Now()
		d, err := simulateFleets(simSpec{Sim: c, Minutes: n, Restarts: restartsFor(start, n), Offsets: jp.ScrapeOffsets, Covered: jp.CoveredMinutes, Classic: jp.ClassicBuckets}, base)
		if err != nil {
			return fmt.Errorf("%s %s: %w", j.reg.Name, j.k, err)
		}
		gen := time.Since(t0).Seconds()
		th, strict, whole, two, strictTwo := thresholds[j.k][0], thresholds[j.k][1], thresholds[j.k][2], thresholds[j.k][3], thresholds[j.k][4]
		starts := jp.Ramp.starts(0, n, regHorizon)
		twoSample := d.twoSample(regHorizon)
		var oracle, oracleStrict, oracleWhole, oracleTwo, oracleStrictTwo delays
		for _, s := range starts {
			oracle = append(oracle, oracleDelay(d.CanaryN[s:s+regHorizon], d.CanaryK[s:s+regHorizon], th))
			oracleStrict = append(oracleStrict, oracleDelay(d.CanaryN[s:s+regHorizon], d.CanaryK[s:s+regHorizon], strict))
			oracleWhole = append(oracleWhole, oracleDelay(d.WholeN[s:s+regHorizon], d.WholeK[s:s+regHorizon], whole))
			oracleTwo = append(oracleTwo, firstAbove(twoSample(s), two))
			oracleStrictTwo = append(oracleStrictTwo, firstAbove(twoSample(s), strictTwo))
		}
		var cells []regCell
		for kind := histKind(0); kind < numKinds; kind++ {
			rc := regCell{Key: j.k, Regression: j.reg.Name, Kind: kind.String(), Deploys: len(starts), Oracle: oracle, Strict: oracleStrict, Whole: oracleWhole, TwoSample: oracleTwo, StrictTwoSample: oracleStrictTwo,
				OracleThreshold: th, StrictThreshold: strict, WholeThreshold: whole, TwoSampleThreshold: two, StrictTwoSampleThreshold: strictTwo, GenSeconds: gen}
			for ri, rule := range rules {
				for _, s := range starts {
					rb, pr, _ := judgeDeploy(rule.Cfg, d.Kinds[kind][s:s+regHorizon])
					rc.Rules[ri] = append(rc.Rules[ri], rb)
					if promotedFirst(rb, pr) {
						rc.Promoted[ri]++
					}
				}
			}
			for di := range starts {
				o, e := oracle[di], rc.Rules[2][di]
				if e > 0 && (o <= 0 || float64(e) <= target(float64(o))) {
					rc.Within++
				}
			}
			cells = append(cells, rc)
		}
		mu.Lock()
		defer mu.Unlock()
		r.Reg = append(r.Reg, cells...)
		rc := cells[1]
		logf("judgement: %s, %s: %d deployments; median minutes to rollback: oracle %s (strict %s), reference %s, gate %s, evidence %s (schema 3)",
			j.reg.Name, j.k, rc.Deploys, medStr(rc.Oracle), medStr(rc.Strict), medStr(rc.Rules[0]), medStr(rc.Rules[1]), medStr(rc.Rules[2]))
		return nil
	})
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func medStr(d delays) string {
	m := d.median()
	if math.IsNaN(m) {
		return fmt.Sprintf(">%d", regHorizon)
	}
	return fmt.Sprintf("%g", m)
}

// parallel runs fn(0..n-1) on at most workers goroutines; the first error wins.
func parallel(workers, n int, fn func(int) error) error {
	if workers < 1 {
		workers = max(1, runtime.GOMAXPROCS(0))
	}
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
