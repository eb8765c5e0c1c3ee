// Package sim is the one definition of what the simulated baseline and canary
// fleets do: their request rate (a smooth daily curve plus bursts), the canary's
// share of the traffic, the per-request latency distribution, errors, and the
// scenario effects (regression, gc-burst, cold-start, bad-pod, traffic-mix).
//
// It is pure and deterministic: the observations of a (fleet, pod, second) are
// drawn from a random number generator seeded from a hash of (Seed, fleet, pod,
// Unix second), so any interval always yields the same observations whatever
// the order or the split of the calls. Both the TSDB generator
// (tools/cmd/pairwise-gen) and a live simulator serving /metrics use it.
//
// Time model: time is cut into whole Unix seconds ("ticks"). Observe(from, to)
// covers the ticks s with trunc(from) <= s < trunc(to), where trunc drops the
// sub-second part, so consecutive calls [a,b), [b,c) partition the ticks.
// Scenario minutes count from Config.Start (minute 0 is [Start, Start+60s)).
package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Fleet names, as used in the track label.
const (
	FleetBaseline = "baseline"
	FleetCanary   = "canary"
)

// Fleets lists the two fleets in a fixed order.
var Fleets = []string{FleetBaseline, FleetCanary}

// Scenario names.
const (
	ScenarioClean      = "clean"       // identical fleets
	ScenarioRegression = "regression"  // canary latency x RegressionFactor from RegressionStartMinute on
	ScenarioGCBurst    = "gc-burst"    // canary tail spikes while a traffic burst is under way
	ScenarioColdStart  = "cold-start"  // canary slow for its first ColdStartMinutes, decaying linearly
	ScenarioBadPod     = "bad-pod"     // canary pod BadPod is BadPodFactor x slower
	ScenarioTrafficMix = "traffic-mix" // canary gets a cheaper request mix: a fake win
	ScenarioTail       = "tail"        // canary tail heavier from RegressionStartMinute on (see shapes.go)
)

// Scenarios lists every scenario name.
var Scenarios = []string{ScenarioClean, ScenarioRegression, ScenarioGCBurst, ScenarioColdStart, ScenarioBadPod, ScenarioTrafficMix, ScenarioTail}

// Config describes a simulation. Start from DefaultConfig and change fields;
// Validate reports invalid values. Zero values are not replaced by defaults.
type Config struct {
	Seed     int64
	Scenario string
	// Start is minute 0 of the run: scenario minutes count from it. Required.
	Start time.Time

	PodsPerFleet int
	// TotalRPS is the mean request rate of both fleets together, before
	// bursts (requests per second).
	TotalRPS float64
	// CanaryShare is the canary fleet's share of the traffic (0..1).
	CanaryShare float64
	// RampStep and RampEveryMinutes raise the canary's weight as Flagger's
	// stepWeight or Argo Rollouts' setWeight steps do: its share is RampStep
	// from Start, RampStep more every RampEveryMinutes, up to CanaryShare.
	// RampStep 0: CanaryShare throughout. RampPeriodMinutes above 0 starts
	// the ramp over every RampPeriodMinutes from Start, as each of a series
	// of deployments would (its weight back at RampStep).
	RampStep          float64
	RampEveryMinutes  int
	RampPeriodMinutes int
	// ErrorRatio is the probability that a request fails (code 500).
	ErrorRatio float64
	// CanaryErrorFactor multiplies the canary's ErrorRatio (up to 1): a
	// canary failing more often than its baseline, its latencies unchanged.
	// 0 is 1.
	CanaryErrorFactor float64

	// Latency model: a request is "costly" with probability CostlyShare
	// (latency x CostlyFactor); its latency is drawn from a mixture of a
	// log-normal body (median MedianLatency, log-sd BodySigma) with probability
	// 1-SlowShare and a slower log-normal component (median
	// MedianLatency*SlowFactor, log-sd SlowSigma) with probability SlowShare.
	MedianLatency float64 // seconds
	BodySigma     float64
	SlowShare     float64
	SlowFactor    float64
	SlowSigma     float64
	CostlyShare   float64
	CostlyFactor  float64

	// Traffic shape. The rate follows 1 + DiurnalAmplitude*sin(...) over the
	// UTC day (trough 06:00, peak 18:00). Time is cut into slots of
	// BurstSlotMinutes aligned on the Unix epoch; a slot holds a burst with
	// probability BurstProbability: a trapezoid (one-minute ramps) of 3 to 6
	// minutes whose peak multiplies the rate by 2 to 3.
	DiurnalAmplitude float64
	BurstSlotMinutes int
	BurstProbability float64

	// regression
	RegressionFactor      float64
	RegressionStartMinute int
	// gc-burst: during a burst the canary's slow share and slow latency are
	// both multiplied by GCBurstFactor.
	GCBurstFactor float64
	// cold-start: at minute 0 the canary is ColdStartFactor x slower, decaying
	// linearly to 1 at minute ColdStartMinutes.
	ColdStartMinutes int
	ColdStartFactor  float64
	// bad-pod
	BadPod       int
	BadPodFactor float64
	// traffic-mix: the canary's costly share is MixCostlyShare instead of
	// CostlyShare, and it receives MixShareFactor x its nominal share of
	// requests (extra cheap requests routed to it).
	MixCostlyShare float64
	MixShareFactor float64

	// Shape, LognormalSigma, HeavyTailIndex, LoadLatency and the Tail fields
	// are described in shapes.go. Shape "" is ShapeBimodal, the model above.
	Shape          string
	LognormalSigma float64
	HeavyTailIndex float64
	LoadLatency    float64
	TailSlowShare  float64
	TailPivot      float64
	TailStretch    float64

	// Stalls, off at 0 and the same in both fleets: each pod pauses for
	// StallSeconds (at most 1) at the start of a second, with probability
	// 1/(60 StallEveryMinutes) per second (a long GC pause, CPU
	// throttling, a noisy neighbour). A request arriving during the pause
	// waits for its end. The exact quantiles (CDF, FleetQuantile) leave
	// stalls out.
	StallEveryMinutes float64
	StallSeconds      float64

	// Slow episodes, off at 0 and the same in both fleets: each pod is
	// EpisodeFactor times slower for EpisodeSeconds at a time, about once
	// every EpisodeEveryMinutes (a noisy neighbour, a node under pressure,
	// a pod warming up again). Time is cut into slots of EpisodeSeconds
	// from the Unix epoch, and each slot of each pod is slow with
	// probability EpisodeSeconds/(60 EpisodeEveryMinutes). The exact
	// quantiles leave episodes out.
	EpisodeEveryMinutes float64
	EpisodeSeconds      int64
	EpisodeFactor       float64
}

// DefaultConfig returns the default simulation for a run starting at start.
func DefaultConfig(start time.Time) Config {
	return Config{
		Seed:                  1,
		Scenario:              ScenarioClean,
		Start:                 start,
		PodsPerFleet:          10,
		TotalRPS:              500,
		CanaryShare:           0.05,
		ErrorRatio:            0.002,
		MedianLatency:         0.012,
		BodySigma:             0.30,
		SlowShare:             0.02,
		SlowFactor:            5,
		SlowSigma:             0.50,
		CostlyShare:           0.10,
		CostlyFactor:          2.5,
		DiurnalAmplitude:      0.30,
		BurstSlotMinutes:      30,
		BurstProbability:      0.5,
		RegressionFactor:      1.20,
		RegressionStartMinute: 30,
		GCBurstFactor:         3,
		ColdStartMinutes:      10,
		ColdStartFactor:       3,
		BadPod:                0,
		BadPodFactor:          3,
		MixCostlyShare:        0.02,
		MixShareFactor:        1.2,
		Shape:                 ShapeBimodal,
		LognormalSigma:        0.5,
		HeavyTailIndex:        3,
		LoadLatency:           0,
		TailSlowShare:         0.03,
		TailPivot:             0.97,
		TailStretch:           1.5,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	known := false
	for _, s := range Scenarios {
		if c.Scenario == s {
			known = true
		}
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	// An infinite latency or factor passes the range checks below, then
	// gives infinite sums, or a truth file JSON cannot hold: every float
	// must be finite, whether its scenario uses it or not.
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"total rps", c.TotalRPS}, {"canary share", c.CanaryShare}, {"ramp step", c.RampStep},
		{"error ratio", c.ErrorRatio}, {"canary error factor", c.CanaryErrorFactor},
		{"median latency", c.MedianLatency}, {"body sigma", c.BodySigma}, {"slow share", c.SlowShare},
		{"slow factor", c.SlowFactor}, {"slow sigma", c.SlowSigma}, {"costly share", c.CostlyShare},
		{"costly factor", c.CostlyFactor}, {"diurnal amplitude", c.DiurnalAmplitude},
		{"burst probability", c.BurstProbability}, {"regression factor", c.RegressionFactor},
		{"gc-burst factor", c.GCBurstFactor}, {"cold-start factor", c.ColdStartFactor},
		{"bad-pod factor", c.BadPodFactor}, {"mix costly share", c.MixCostlyShare},
		{"mix share factor", c.MixShareFactor}, {"lognormal sigma", c.LognormalSigma},
		{"heavy tail index", c.HeavyTailIndex}, {"load latency exponent", c.LoadLatency},
		{"tail slow share", c.TailSlowShare}, {"tail pivot", c.TailPivot}, {"tail stretch", c.TailStretch},
		{"stall interval", c.StallEveryMinutes}, {"stall length", c.StallSeconds},
		{"slow-episode interval", c.EpisodeEveryMinutes}, {"slow-episode factor", c.EpisodeFactor},
	} {
		check(!math.IsNaN(f.v) && !math.IsInf(f.v, 0), "%s must be a finite number, got %v", f.name, f.v)
	}
	check(known, "unknown scenario %q (known: %v)", c.Scenario, Scenarios)
	check(!c.Start.IsZero(), "start time must be set")
	check(c.PodsPerFleet >= 1, "pods per fleet must be >= 1, got %d", c.PodsPerFleet)
	check(c.TotalRPS > 0 && !math.IsInf(c.TotalRPS, 0), "total rps must be > 0, got %v", c.TotalRPS)
	check(c.CanaryShare > 0 && c.CanaryShare < 1, "canary share must be in (0,1), got %v", c.CanaryShare)
	check(c.RampStep >= 0 && c.RampStep <= c.CanaryShare, "ramp step must be in [0, canary share], got %v", c.RampStep)
	check(c.RampStep == 0 || c.RampEveryMinutes >= 1, "ramp interval must be >= 1 minute, got %d", c.RampEveryMinutes)
	check(c.RampPeriodMinutes >= 0, "ramp period must be >= 0 minutes, got %d", c.RampPeriodMinutes)
	check(c.ErrorRatio >= 0 && c.ErrorRatio <= 1, "error ratio must be in [0,1], got %v", c.ErrorRatio)
	check(c.CanaryErrorFactor >= 0 && !math.IsInf(c.CanaryErrorFactor, 0), "canary error factor must be >= 0, got %v", c.CanaryErrorFactor)
	check(c.MedianLatency > 0, "median latency must be > 0, got %v", c.MedianLatency)
	check(c.BodySigma >= 0 && c.SlowSigma >= 0, "sigmas must be >= 0")
	check(c.SlowShare >= 0 && c.SlowShare <= 1, "slow share must be in [0,1], got %v", c.SlowShare)
	check(c.SlowFactor > 0, "slow factor must be > 0, got %v", c.SlowFactor)
	check(c.CostlyShare >= 0 && c.CostlyShare <= 1, "costly share must be in [0,1], got %v", c.CostlyShare)
	check(c.CostlyFactor > 0, "costly factor must be > 0, got %v", c.CostlyFactor)
	check(c.DiurnalAmplitude >= 0 && c.DiurnalAmplitude < 1, "diurnal amplitude must be in [0,1), got %v", c.DiurnalAmplitude)
	check(c.BurstSlotMinutes >= 8, "burst slot must be >= 8 minutes, got %d", c.BurstSlotMinutes)
	check(c.BurstProbability >= 0 && c.BurstProbability <= 1, "burst probability must be in [0,1], got %v", c.BurstProbability)
	check(c.RegressionFactor > 0, "regression factor must be > 0, got %v", c.RegressionFactor)
	check(c.RegressionStartMinute >= 0, "regression start minute must be >= 0, got %d", c.RegressionStartMinute)
	check(c.GCBurstFactor > 0, "gc-burst factor must be > 0, got %v", c.GCBurstFactor)
	check(c.ColdStartMinutes >= 0, "cold-start minutes must be >= 0, got %d", c.ColdStartMinutes)
	check(c.ColdStartFactor > 0, "cold-start factor must be > 0, got %v", c.ColdStartFactor)
	check(c.BadPod >= 0 && c.BadPod < c.PodsPerFleet, "bad pod must be in [0,%d), got %d", c.PodsPerFleet, c.BadPod)
	check(c.BadPodFactor > 0, "bad-pod factor must be > 0, got %v", c.BadPodFactor)
	check(c.MixCostlyShare >= 0 && c.MixCostlyShare <= 1, "mix costly share must be in [0,1], got %v", c.MixCostlyShare)
	check(c.MixShareFactor > 0 && c.CanaryShare*c.MixShareFactor < 1, "mix share factor must be > 0 and keep the canary share below 1, got %v", c.MixShareFactor)
	check(c.StallEveryMinutes >= 0, "stall interval must be >= 0 minutes, got %v", c.StallEveryMinutes)
	check(c.StallSeconds >= 0 && c.StallSeconds <= 1, "stall must last 0 to 1 s, got %v", c.StallSeconds)
	check(c.EpisodeEveryMinutes >= 0 && c.EpisodeSeconds >= 0, "slow episodes must be >= 0 minutes apart and last >= 0 s, got %v and %d", c.EpisodeEveryMinutes, c.EpisodeSeconds)
	check(c.EpisodeEveryMinutes == 0 || float64(c.EpisodeSeconds) <= 60*c.EpisodeEveryMinutes, "a slow episode must be shorter than the time between them, got %d s every %v minutes", c.EpisodeSeconds, c.EpisodeEveryMinutes)
	check(c.EpisodeEveryMinutes == 0 || c.EpisodeFactor > 0, "slow-episode factor must be > 0, got %v", c.EpisodeFactor)
	errs = append(errs, c.validateShape())
	return errors.Join(errs...)
}

// Sim generates observations for a validated Config. It is immutable and safe
// for concurrent use.
type Sim struct {
	c         Config
	startUnix int64
}

// New validates c and returns a simulator.
func New(c Config) (*Sim, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Sim{c: c, startUnix: c.Start.Unix()}, nil
}

// Config returns the simulator's configuration.
func (s *Sim) Config() Config { return s.c }

// PodName returns the pod label value used for a fleet's i-th pod.
func PodName(service, fleet string, i int) string {
	return fmt.Sprintf("%s-%s-%d", service, fleet, i)
}

func fleetIndex(fleet string) uint64 {
	switch fleet {
	case FleetBaseline:
		return 0
	case FleetCanary:
		return 1
	}
	panic(fmt.Sprintf("sim: unknown fleet %q", fleet))
}

// splitmix64 finaliser: a strong 64-bit mixer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (s *Sim) hash(parts ...uint64) uint64 {
	h := mix64(uint64(s.c.Seed) ^ 0x9e3779b97f4a7c15)
	for _, p := range parts {
		h = mix64(h ^ (p + 0x9e3779b97f4a7c15))
	}
	return h
}

func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// Burst is one traffic burst: the rate ramps up linearly over the first
// minute, holds Peak x, and ramps down over the last minute.
type Burst struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Peak  float64   `json:"peak"`
}

const (
	hashBurst   = 0x62757273 // "burs"
	hashStall   = 0x7374616c // "stal"
	hashEpisode = 0x65706973 // "epis"
)

// burstInSlot returns the burst of a slot (start/end in Unix seconds), if any.
func (s *Sim) burstInSlot(slot int64) (start, end int64, peak float64, ok bool) {
	h := s.hash(hashBurst, uint64(slot))
	if unit(h) >= s.c.BurstProbability {
		return 0, 0, 0, false
	}
	h2 := mix64(h ^ 1)
	dur := int64(180 + h2%181) // 3..6 minutes
	slotLen := int64(s.c.BurstSlotMinutes) * 60
	h3 := mix64(h ^ 2)
	off := int64(h3 % uint64(slotLen-dur))
	peak = 2 + unit(mix64(h^3))
	start = slot*slotLen + off
	return start, start + dur, peak, true
}

// burstMultiplier is the traffic multiplier at Unix time t (seconds, float).
func (s *Sim) burstMultiplier(t float64) float64 {
	slotLen := float64(s.c.BurstSlotMinutes * 60)
	slot := int64(math.Floor(t / slotLen))
	start, end, peak, ok := s.burstInSlot(slot)
	if !ok || t < float64(start) || t >= float64(end) {
		return 1
	}
	ramp := 60.0
	shape := 1.0
	if d := t - float64(start); d < ramp {
		shape = d / ramp
	}
	if d := float64(end) - t; d < ramp {
		shape = math.Min(shape, d/ramp)
	}
	return 1 + (peak-1)*shape
}

// Bursts lists the bursts overlapping [from, to).
func (s *Sim) Bursts(from, to time.Time) []Burst {
	slotLen := int64(s.c.BurstSlotMinutes * 60)
	var out []Burst
	for slot := floorDiv(from.Unix(), slotLen); slot*slotLen < to.Unix(); slot++ {
		start, end, peak, ok := s.burstInSlot(slot)
		if !ok || end <= from.Unix() || start >= to.Unix() {
			continue
		}
		out = append(out, Burst{Start: time.Unix(start, 0).UTC(), End: time.Unix(end, 0).UTC(), Peak: peak})
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// totalRate is the request rate of both fleets together at Unix time t.
func (s *Sim) totalRate(t float64) float64 {
	day := math.Mod(t, 86400) / 86400
	diurnal := 1 + s.c.DiurnalAmplitude*math.Sin(2*math.Pi*day-math.Pi)
	return s.c.TotalRPS * diurnal * s.burstMultiplier(t)
}

// fleetShare is a fleet's share of the traffic at Unix time t.
func (s *Sim) fleetShare(fi uint64, t float64) float64 {
	share := s.canaryShare(t)
	if fi == 0 {
		return 1 - share
	}
	if s.c.Scenario == ScenarioTrafficMix {
		return share * s.c.MixShareFactor
	}
	return share
}

// canaryShare is the canary's weight at Unix time t: CanaryShare, or on a
// ramp the step it has reached.
func (s *Sim) canaryShare(t float64) float64 {
	c := &s.c
	if c.RampStep == 0 {
		return c.CanaryShare
	}
	elapsed := t - float64(s.startUnix)
	if c.RampPeriodMinutes > 0 {
		period := float64(60 * c.RampPeriodMinutes)
		elapsed -= period * math.Floor(elapsed/period)
	}
	steps := math.Floor(elapsed/float64(60*c.RampEveryMinutes)) + 1
	return min(c.CanaryShare, c.RampStep*max(steps, 1))
}

// Rate is a fleet's request rate (requests per second, all pods) at t.
func (s *Sim) Rate(fleet string, t time.Time) float64 {
	at := float64(t.UnixNano()) / 1e9
	return s.totalRate(at) * s.fleetShare(fleetIndex(fleet), at)
}

// tickParams are the latency parameters of one (fleet, pod, second).
type tickParams struct {
	rate       float64 // expected requests in the tick
	costly     float64 // probability of the costly class
	factor     float64 // latency multiplier for every request
	slowShare  float64
	slowFactor float64 // slow component median multiplier (relative to body median)
	stretch    float64 // tail scenario, shapes without a slow path: stretch beyond the pivot (0: none)
	errorRatio float64 // probability that a request fails
}

func (s *Sim) params(fi uint64, pod int, sec int64) tickParams {
	c := &s.c
	mid := float64(sec) + 0.5
	p := tickParams{
		rate:       s.totalRate(mid) * s.fleetShare(fi, mid) / float64(c.PodsPerFleet),
		costly:     c.CostlyShare,
		factor:     1,
		slowShare:  c.SlowShare,
		slowFactor: c.SlowFactor,
		errorRatio: c.ErrorRatio,
	}
	if c.LoadLatency != 0 {
		p.factor = math.Pow(s.totalRate(mid)/c.TotalRPS, c.LoadLatency)
	}
	if c.EpisodeEveryMinutes > 0 && c.EpisodeSeconds > 0 {
		slot := floorDiv(sec, c.EpisodeSeconds)
		if unit(s.hash(hashEpisode, fi, uint64(pod), uint64(slot))) < float64(c.EpisodeSeconds)/(60*c.EpisodeEveryMinutes) {
			p.factor *= c.EpisodeFactor
		}
	}
	if fi == 0 {
		return p
	}
	if c.CanaryErrorFactor > 0 {
		p.errorRatio = math.Min(1, c.ErrorRatio*c.CanaryErrorFactor)
	}
	elapsed := sec - s.startUnix // seconds since minute 0
	minute := floorDiv(elapsed, 60)
	switch c.Scenario {
	case ScenarioRegression:
		if minute >= int64(c.RegressionStartMinute) {
			p.factor *= c.RegressionFactor
		}
	case ScenarioGCBurst:
		if s.burstMultiplier(mid) > 1 {
			p.slowShare = math.Min(0.5, c.SlowShare*c.GCBurstFactor)
			p.slowFactor = c.SlowFactor * c.GCBurstFactor
		}
	case ScenarioColdStart:
		k := float64(c.ColdStartMinutes * 60)
		if e := float64(elapsed) + 0.5; e >= 0 && e < k {
			p.factor *= 1 + (c.ColdStartFactor-1)*(1-e/k)
		}
	case ScenarioBadPod:
		if pod == c.BadPod {
			p.factor *= c.BadPodFactor
		}
	case ScenarioTrafficMix:
		p.costly = c.MixCostlyShare
	case ScenarioTail:
		if minute >= int64(c.RegressionStartMinute) {
			if s.shape() == ShapeBimodal {
				p.slowShare = c.TailSlowShare
			} else {
				p.stretch = c.TailStretch
			}
		}
	}
	return p
}

// Observe calls fn for every request that the fleet's pod completes in the
// ticks [trunc(from), trunc(to)), in a deterministic order. The same interval
// always yields the same observations.
func (s *Sim) Observe(fleet string, pod int, from, to time.Time, fn func(latencySeconds float64, isError bool)) {
	fi := fleetIndex(fleet)
	var src rand.PCG
	r := rand.New(&src)
	for sec := from.Unix(); sec < to.Unix(); sec++ {
		s.observeTick(r, &src, fi, pod, sec, fn)
	}
}

// ObserveSecond is Observe for the single tick [sec, sec+1) (Unix seconds).
func (s *Sim) ObserveSecond(fleet string, pod int, sec int64, fn func(latencySeconds float64, isError bool)) {
	var src rand.PCG
	s.observeTick(rand.New(&src), &src, fleetIndex(fleet), pod, sec, fn)
}

func (s *Sim) observeTick(r *rand.Rand, src *rand.PCG, fi uint64, pod int, sec int64, fn func(float64, bool)) {
	h := s.hash(fi, uint64(pod), uint64(sec))
	src.Seed(h, mix64(h^0x5851f42d4c957f2d))
	p := s.params(fi, pod, sec)
	n := poisson(r, p.rate)
	c := &s.c
	if s.stalled(fi, pod, sec) {
		observe, d := fn, c.StallSeconds
		fn = func(l float64, isErr bool) {
			if at := r.Float64(); at < d {
				l += d - at // arrived during the pause: waits for its end
			}
			observe(l, isErr)
		}
	}
	logBody := math.Log(c.MedianLatency * p.factor)
	if s.shape() != ShapeBimodal {
		s.observeShape(r, p, n, logBody, fn)
		return
	}
	logSlow := math.Log(p.slowFactor)
	logCostly := math.Log(c.CostlyFactor)
	for i := 0; i < n; i++ {
		l := logBody
		if r.Float64() < p.costly {
			l += logCostly
		}
		if r.Float64() < p.slowShare {
			l += logSlow + c.SlowSigma*r.NormFloat64()
		} else {
			l += c.BodySigma * r.NormFloat64()
		}
		isErr := r.Float64() < p.errorRatio
		fn(math.Exp(l), isErr)
	}
}

// stalled reports whether the pod pauses at the start of second sec.
func (s *Sim) stalled(fi uint64, pod int, sec int64) bool {
	c := &s.c
	return c.StallEveryMinutes > 0 && c.StallSeconds > 0 &&
		unit(s.hash(hashStall, fi, uint64(pod), uint64(sec))) < 1/(60*c.StallEveryMinutes)
}

// poisson draws from Poisson(lambda): multiplication for small lambda, the
// PTRS transformed rejection of Hörmann (1993) for large lambda.
func poisson(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda < 30 {
		l := math.Exp(-lambda)
		k := 0
		p := r.Float64()
		for p > l {
			k++
			p *= r.Float64()
		}
		return k
	}
	slam := math.Sqrt(lambda)
	loglam := math.Log(lambda)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invalpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lambda + 0.43)
		if us >= 0.07 && v <= vr {
			return int(k)
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(v)+math.Log(invalpha)-math.Log(a/(us*us)+b) <= -lambda+k*loglam-lg {
			return int(k)
		}
	}
}

// Facts are the scenario's injected facts, for ground truth files.
type Facts struct {
	Scenario             string  `json:"scenario"`
	Seed                 int64   `json:"seed"`
	PodsPerFleet         int     `json:"pods_per_fleet"`
	TotalRPS             float64 `json:"total_rps"`
	CanaryShare          float64 `json:"canary_share"`
	EffectiveCanaryShare float64 `json:"effective_canary_share"`
	// RampStep and RampEveryMinutes: the canary's weight rose from RampStep
	// by RampStep every RampEveryMinutes to CanaryShare (0: no ramp).
	RampStep              float64 `json:"ramp_step,omitempty"`
	RampEveryMinutes      int     `json:"ramp_every_minutes,omitempty"`
	ErrorRatio            float64 `json:"error_ratio"`
	CanaryErrorFactor     float64 `json:"canary_error_factor,omitempty"`
	RegressionFactor      float64 `json:"regression_factor,omitempty"`
	RegressionStartMinute *int    `json:"regression_start_minute,omitempty"`
	RegressionStart       string  `json:"regression_start,omitempty"`
	GCBurstFactor         float64 `json:"gc_burst_factor,omitempty"`
	ColdStartMinutes      int     `json:"cold_start_minutes,omitempty"`
	ColdStartFactor       float64 `json:"cold_start_factor,omitempty"`
	BadPod                *int    `json:"bad_pod,omitempty"`
	BadPodFactor          float64 `json:"bad_pod_factor,omitempty"`
	BaselineCostlyShare   float64 `json:"baseline_costly_share"`
	CanaryCostlyShare     float64 `json:"canary_costly_share"`
	CostlyFactor          float64 `json:"costly_factor"`
	Bursts                []Burst `json:"bursts"`
	// Shape is the latency shape (shapes.go); LoadLatency its load exponent.
	Shape       string  `json:"shape,omitempty"`
	LoadLatency float64 `json:"load_latency,omitempty"`
	// tail scenario: the canary's slow share (bimodal), or the pivot
	// quantile and stretch of its tail (other shapes).
	TailSlowShare float64 `json:"tail_slow_share,omitempty"`
	TailPivot     float64 `json:"tail_pivot,omitempty"`
	TailStretch   float64 `json:"tail_stretch,omitempty"`
}

// Facts returns what the scenario injects, with the bursts in [from, to).
func (s *Sim) Facts(from, to time.Time) Facts {
	c := s.c
	end := float64(to.Unix()) // the share the data end with, the ramp's last step
	f := Facts{
		Scenario:             c.Scenario,
		Seed:                 c.Seed,
		PodsPerFleet:         c.PodsPerFleet,
		TotalRPS:             c.TotalRPS,
		CanaryShare:          c.CanaryShare,
		EffectiveCanaryShare: s.fleetShare(1, end) / (s.fleetShare(0, end) + s.fleetShare(1, end)),
		RampStep:             c.RampStep,
		RampEveryMinutes:     c.RampEveryMinutes,
		ErrorRatio:           c.ErrorRatio,
		CanaryErrorFactor:    c.CanaryErrorFactor,
		BaselineCostlyShare:  c.CostlyShare,
		CanaryCostlyShare:    c.CostlyShare,
		CostlyFactor:         c.CostlyFactor,
		Bursts:               s.Bursts(from, to),
		Shape:                s.shape(),
		LoadLatency:          c.LoadLatency,
	}
	if f.Bursts == nil {
		f.Bursts = []Burst{}
	}
	switch c.Scenario {
	case ScenarioRegression:
		m := c.RegressionStartMinute
		f.RegressionFactor = c.RegressionFactor
		f.RegressionStartMinute = &m
		f.RegressionStart = c.Start.Add(time.Duration(m) * time.Minute).UTC().Format(time.RFC3339)
	case ScenarioGCBurst:
		f.GCBurstFactor = c.GCBurstFactor
	case ScenarioColdStart:
		f.ColdStartMinutes = c.ColdStartMinutes
		f.ColdStartFactor = c.ColdStartFactor
	case ScenarioBadPod:
		p := c.BadPod
		f.BadPod = &p
		f.BadPodFactor = c.BadPodFactor
	case ScenarioTrafficMix:
		f.CanaryCostlyShare = c.MixCostlyShare
	case ScenarioTail:
		m := c.RegressionStartMinute
		f.RegressionStartMinute = &m
		f.RegressionStart = c.Start.Add(time.Duration(m) * time.Minute).UTC().Format(time.RFC3339)
		if s.shape() == ShapeBimodal {
			f.TailSlowShare = c.TailSlowShare
		} else {
			f.TailPivot, f.TailStretch = c.TailPivot, c.TailStretch
		}
	}
	return f
}
