package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// The judgement matrix is too large to run every cell through Prometheus on
// two cores (a day of 5,000 req/s is 430 million observations per cell). So
// the fleets' per-minute merged histograms are built in process, exactly as
// Prometheus 3.x answers the engine's
//
//	sum(increase(h{sel}[75s])) * 0.8                 (native)
//	sum by (le) (increase(h_bucket{sel}[75s])) * 0.8 (classic)
//
// for pods scraped every 15 s (offset 0) as tools/cmd/pairwise-gen writes
// them: the same pkg/sim observations, the same bucket layouts, and for every
// series (one per pod, or one per pod and le) the same extrapolation as
// promql's extrapolatedRate, counter zero point included (it matters in a
// restarted pod's first minute and in the data's first minute). The engine's
// per-minute code (verdict.Stats, verdict.MinuteEvidence with
// ScrapeScale(4) = 1) then runs on them unchanged. TestInProcessMatchesPrometheus
// checks, minute by minute, that this path and engine.Analyze on the real
// Prometheus give the same verdicts and decisions for every kind.

// histKind is the histogram a judge reads.
type histKind int

const (
	kindNative0 histKind = iota // native, exponential schema 0 (factor-2 buckets)
	kindNative3                 // native, exponential schema 3 (the generator's default)
	kindClassic                 // classic le buckets (classicBuckets, or simSpec.Classic)
	numKinds
)

func (k histKind) String() string {
	return [...]string{"native schema 0", "native schema 3", "classic"}[k]
}

// classicBuckets is tools/cmd/pairwise-gen's DefaultClassicBuckets (a
// separate module, so copied; the parity test catches a drift).
var classicBuckets = []float64{
	0.001, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
	0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10,
}

// schema3Frac is Prometheus's exponentialBounds for schema 3
// (model/histogram/generic.go, as pkg/histogram/expbounds.go holds it): the
// bucket bounds the HTTP API returns, bit for bit.
var schema3Frac = [8]float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// keyBounds3 are the generator's bucket-key bounds for schema 3.
var keyBounds3 = func() []float64 {
	b := make([]float64, 8)
	for i := range b {
		b[i] = math.Exp2(float64(i)/8 - 1)
	}
	return b
}()

// expBound is the upper bound of native bucket idx (Prometheus's getBound).
func expBound(idx int, schema int) float64 {
	if schema == 0 {
		return math.Ldexp(1, idx)
	}
	return math.Ldexp(schema3Frac[idx&7], (idx>>3)+1)
}

// Bucket keys as the generator computes them: bucket k of schema s holds
// (2^((k-1)/2^s), 2^(k/2^s)].
func key3(v float64) int {
	frac, exp := math.Frexp(v)
	return sort.SearchFloat64s(keyBounds3, frac) + (exp-1)*8
}

func key0(v float64) int {
	frac, exp := math.Frexp(v)
	if frac == 0.5 {
		exp--
	}
	return exp
}

const (
	off3, len3 = 512, 1024 // schema 3 keys -512..511: 2^-64 s to 2^64 s
	off0, len0 = 64, 128
)

// counts is one series group's bucket counts: native schema 0 and 3 by key
// (offset), classic by le index (the last is +Inf).
type counts struct {
	n, sum  float64
	s0, s3  []float64
	les     []float64 // the classic buckets' finite upper bounds, ascending
	classic []float64
	// touched key ranges, to clear and to read only what is there
	lo0, hi0, lo3, hi3 int
}

func newCounts(les []float64) *counts {
	c := &counts{s0: make([]float64, len0), s3: make([]float64, len3), les: les, classic: make([]float64, len(les)+1)}
	c.clear()
	return c
}

func (c *counts) clear() {
	if c.lo0 <= c.hi0 {
		clear(c.s0[c.lo0 : c.hi0+1])
	}
	if c.lo3 <= c.hi3 {
		clear(c.s3[c.lo3 : c.hi3+1])
	}
	clear(c.classic)
	c.n, c.sum = 0, 0
	c.lo0, c.hi0, c.lo3, c.hi3 = len0, -1, len3, -1
}

// observe adds one observation and returns its classic bucket index; -1
// when it falls outside the key range.
func (c *counts) observe(v float64) int {
	k0, k3 := key0(v)+off0, key3(v)+off3
	if !(v > 0) || k0 < 0 || k0 >= len0 || k3 < 0 || k3 >= len3 {
		return -1
	}
	c.n++
	c.sum += v
	c.s0[k0]++
	c.s3[k3]++
	c.lo0, c.hi0 = min(c.lo0, k0), max(c.hi0, k0)
	c.lo3, c.hi3 = min(c.lo3, k3), max(c.hi3, k3)
	i := sort.SearchFloat64s(c.les, v)
	c.classic[i]++
	return i
}

// addScaled adds f x o's native counts (schema 0 and 3) and count and sum.
func (c *counts) addNativeScaled(o *counts, f float64) {
	c.n += f * o.n
	c.sum += f * o.sum
	for k := o.lo0; k <= o.hi0; k++ {
		if o.s0[k] != 0 {
			c.s0[k] += f * o.s0[k]
			c.lo0, c.hi0 = min(c.lo0, k), max(c.hi0, k)
		}
	}
	for k := o.lo3; k <= o.hi3; k++ {
		if o.s3[k] != 0 {
			c.s3[k] += f * o.s3[k]
			c.lo3, c.hi3 = min(c.lo3, k), max(c.hi3, k)
		}
	}
}

// native is the merged native histogram of schema 0 or 3, as the engine
// reads it from the HTTP API (empty buckets are not sent).
func (c *counts) native(schema int) (*histogram.Histogram, error) {
	s, lo, hi, off := c.s0, c.lo0, c.hi0, off0
	if schema == 3 {
		s, lo, hi, off = c.s3, c.lo3, c.hi3, off3
	}
	var bs []histogram.APIBucket
	for k := lo; k <= hi; k++ {
		if s[k] == 0 {
			continue
		}
		idx := k - off
		bs = append(bs, histogram.APIBucket{Boundaries: 0, Lower: expBound(idx-1, schema), Upper: expBound(idx, schema), Count: s[k]})
	}
	return histogram.FromNative(bs, c.n, c.sum)
}

// extrapolation is promql's extrapolatedRate factor for a one-minute
// extrapolation is the factor by which promql's extrapolatedRate scales the
// increase() of a counter sampled every 15 s whose samples span sampled
// seconds of the range (45 over (T-60s, T]; 60 over the range of a minute
// and one interval, (T-75s, T]), the last sample shift seconds before T (0
// to 14): first is the value at the first sample, inc the increase from
// there to the last (a reset inside the range counted as promql does). The
// 15-shift seconds before the first sample are extrapolated, unless the
// counter would reach zero sooner, and the shift seconds after the last.
func extrapolation(first, inc float64, shift int64, sampled float64) float64 {
	d := 15 - float64(shift)
	if inc > 0 && first >= 0 {
		if z := sampled * (first / inc); z < d {
			d = z
		}
	}
	return (sampled + d + float64(shift)) / sampled
}

// scrapeShift is how many seconds before each whole minute a pod's last
// scrape of it lands: 0 for every pod (pairwise-gen's samples), or with
// offsets one of 0 to 14 s per pod, fixed for the run and drawn from the
// data set's seed, as Prometheus spreads its targets over the interval.
func scrapeShift(offsets bool, seed int64, fleet string, pod int) int64 {
	if !offsets {
		return 0
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", seed, fleet, pod)
	return int64(h.Sum64() % 15)
}

// simSpec is one simulated data set: what pairwise-gen --scenario ... would
// write, with its pod restarts.
type simSpec struct {
	Sim      sim.Config // Start is minute 0
	Minutes  int
	Restarts []sim.Restart
	// Offsets scrapes every pod at its own offset (scrapeShift) instead of
	// every pod at the whole minute.
	Offsets bool
	// Covered reads each minute as a one-minute increase(), (T-60s, T],
	// which covers only the scrape intervals inside the minute (45 s of it):
	// how Pairwise read minutes before it read them whole (over a minute
	// and one scrape interval, (T-75s, T], every observation since the
	// previous minute's last scrape). The engine does not read minutes so.
	Covered bool
	// Classic, when set, replaces classicBuckets as the classic buckets'
	// finite upper bounds (ascending).
	Classic []float64
}

// classic is the spec's classic bucket bounds.
func (s simSpec) classic() []float64 {
	if s.Classic != nil {
		return s.Classic
	}
	return classicBuckets
}

// fleetData is what a judge sees of a data set, minute by minute, for every
// histogram kind, plus what the oracle knows.
type fleetData struct {
	Times []time.Time
	Kinds [numKinds][]verdict.Minute
	// The oracle's view of each minute: the baseline's exact p99 from the
	// latency model, the canary's observations that increase() covers and how
	// many of them lie beyond that p99 (exact, not from buckets).
	BaseP99          []float64
	CanaryN, CanaryK []float64
	// WholeN and WholeK are the same over every observation of the minute,
	// the quarter before its first scrape that no increase() covers too:
	// what an oracle reading the whole minute sees.
	WholeN, WholeK []float64
	// BaseN and BaseK are CanaryN and CanaryK for the baseline: its
	// observations that increase() covers and those beyond its exact p99.
	BaseN, BaseK []float64
	Observations int64
}

// twoSample is twoSampleZ over the length minutes of a deployment
// starting at minute s.
func (d *fleetData) twoSample(length int) func(s int) []float64 {
	return func(s int) []float64 {
		e := s + length
		return twoSampleZ(d.CanaryN[s:e], d.CanaryK[s:e], d.BaseN[s:e], d.BaseK[s:e])
	}
}

// podState is one simulated pod: its counters since its last (re)start and
// the current minute's covered observations.
type podState struct {
	fleet    string
	idx      int
	restarts []int64 // Unix seconds of its restarts (a pod may restart more than once a day)
	shift    int64   // its last scrape of a minute lands this many seconds before it
	cumN     float64
	cumCl    []float64 // classic counts since the (re)start, per le (non-cumulative)
	cov      *counts
}

// restartIn is the pod's restart in (from, to], or 0. Restarts lie in a
// minute's first scrape interval, at most one in any such range.
func (p *podState) restartIn(from, to int64) int64 {
	for _, r := range p.restarts {
		if r > from && r <= to {
			return r
		}
	}
	return 0
}

// simulateFleets runs spec's observations through the increase() a
// Prometheus would compute and judges every minute (minute verdicts and
// evidence with cfg; windows are decided later).
func simulateFleets(spec simSpec, cfg verdict.Config) (*fleetData, error) {
	s, err := sim.New(spec.Sim)
	if err != nil {
		return nil, err
	}
	start := spec.Sim.Start.UTC()
	pods := spec.Sim.PodsPerFleet
	bounds := spec.classic()
	var fleets [2][]*podState
	for fi, fleet := range sim.Fleets {
		for i := 0; i < pods; i++ {
			fleets[fi] = append(fleets[fi], &podState{fleet: fleet, idx: i, shift: scrapeShift(spec.Offsets, spec.Sim.Seed, fleet, i), cumCl: make([]float64, len(bounds)+1), cov: newCounts(bounds)})
		}
	}
	for _, r := range spec.Restarts {
		fi := 0
		if r.Fleet == sim.FleetCanary {
			fi = 1
		}
		if r.Index < 0 || r.Index >= pods {
			return nil, fmt.Errorf("restart of %s-%d: no such pod", r.Fleet, r.Index)
		}
		// Only restarts in a minute's first scrape interval, which no
		// minute's increase() covers, as pairwise-gen --restart places them.
		if off := r.Time.Sub(start) % time.Minute; off <= 0 || off > 15*time.Second {
			return nil, fmt.Errorf("restart at %s: the in-process path supports restarts in the first 15 s of a minute only", r.Time)
		}
		// A shifted pod restarts as far into its own first scrape interval.
		p := fleets[fi][r.Index]
		p.restarts = append(p.restarts, r.Time.Unix()-p.shift)
	}
	d := &fleetData{}
	fleetC := [2]*counts{newCounts(bounds), newCounts(bounds)}
	classicCum := [2][]float64{make([]float64, len(bounds)+1), make([]float64, len(bounds)+1)}
	les := append(append([]float64(nil), bounds...), math.Inf(1))
	// A minute's increase() covers the scrape intervals between its
	// samples: all four of the minute (60 s) over (T-75s, T], extrapolated
	// by 5/4 and read per minute (x 60/75), so the scale is 1; a one-minute
	// increase() covers three (45 s) over (T-60s, T], extrapolated by 4/3.
	covered, perMinute, scale := int64(60), 60.0/75, cfg.ScrapeScale(4)
	if spec.Covered {
		covered, perMinute, scale = 45, 1, 0.75
	}
	for m := 0; m < spec.Minutes; m++ {
		T := start.Add(time.Duration(m+1) * time.Minute)
		t45 := T.Unix() - covered
		q99 := s.FleetQuantile(sim.FleetBaseline, time.Unix(t45, 0), T, 0.99)
		var canN, canK, wholeN, wholeK, baseN, baseK float64
		for fi := range fleets {
			fc := fleetC[fi]
			fc.clear()
			clear(classicCum[fi])
			for _, p := range fleets[fi] {
				p.cov.clear()
				// The pod's scrapes of the minute fall at T-45s ... T, each
				// shift seconds earlier: increase() covers (firstScrape,
				// lastScrape]. The first scrape interval before it is
				// uncovered: a restart there loses what the pod counted
				// since the interval began.
				firstScrape, lastScrape := t45-p.shift, T.Unix()-p.shift
				uncovered := func(from, to int64) {
					s.Observe(p.fleet, p.idx, time.Unix(from, 0), time.Unix(to, 0), func(v float64, _ bool) {
						d.Observations++
						p.cumN++
						p.cumCl[sort.SearchFloat64s(bounds, v)]++
						if fi == 1 {
							wholeN++
							if v > q99 {
								wholeK++
							}
						}
					})
				}
				coverFrom := firstScrape
				if spec.Covered {
					from := firstScrape - 15
					if r := p.restartIn(from, firstScrape); r > 0 {
						p.cumN = 0
						clear(p.cumCl)
						from = r
					}
					uncovered(from, firstScrape)
				}
				firstN := p.cumN
				firstCl := cumulate(p.cumCl)
				if r := p.restartIn(firstScrape, firstScrape+15); !spec.Covered && r > 0 {
					// Restarted inside the range: what the old process
					// counted after its last scrape is lost, increase()
					// counts the new one's from zero, and the zero point
					// is the old process's first sample (firstN).
					uncovered(firstScrape, r)
					p.cumN = 0
					clear(p.cumCl)
					coverFrom = r
				}
				var bad bool
				s.Observe(p.fleet, p.idx, time.Unix(coverFrom, 0), time.Unix(lastScrape, 0), func(v float64, _ bool) {
					d.Observations++
					i := p.cov.observe(v)
					if i < 0 {
						bad = true
						return
					}
					p.cumN++
					p.cumCl[i]++
					if fi == 1 {
						canN++
						if v > q99 {
							canK++
						}
					} else {
						baseN++
						if v > q99 {
							baseK++
						}
					}
				})
				if bad {
					return nil, fmt.Errorf("minute %s: an observation outside the bucket key range", T)
				}
				fc.addNativeScaled(p.cov, extrapolation(firstN, p.cov.n, p.shift, float64(covered))*perMinute)
				inc := cumulate(p.cov.classic)
				for j := range inc {
					classicCum[fi][j] += extrapolation(firstCl[j], inc[j], p.shift, float64(covered)) * perMinute * inc[j]
				}
			}
		}
		d.Times = append(d.Times, T)
		d.BaseP99 = append(d.BaseP99, q99)
		d.CanaryN = append(d.CanaryN, canN)
		d.CanaryK = append(d.CanaryK, canK)
		d.WholeN = append(d.WholeN, wholeN+canN)
		d.WholeK = append(d.WholeK, wholeK+canK)
		d.BaseN = append(d.BaseN, baseN)
		d.BaseK = append(d.BaseK, baseK)
		var hs [numKinds][2]*histogram.Histogram
		for fi := range fleets {
			for k := histKind(0); k < numKinds; k++ {
				var h *histogram.Histogram
				var err error
				switch k {
				case kindNative0:
					h, err = fleetC[fi].native(0)
				case kindNative3:
					h, err = fleetC[fi].native(3)
				case kindClassic:
					h, err = histogram.FromClassic(les, append([]float64(nil), classicCum[fi]...))
				}
				if err != nil {
					return nil, fmt.Errorf("minute %s: %v", T, err)
				}
				if h.Count > 0 {
					hs[k][fi] = h
				}
			}
		}
		for k := histKind(0); k < numKinds; k++ {
			b, c := hs[k][0], hs[k][1]
			d.Kinds[k] = append(d.Kinds[k], verdict.Minute{Time: T, Baseline: verdict.Stats(cfg, b), Canary: verdict.Stats(cfg, c),
				Evidence: verdict.MinuteEvidence(cfg, b, c, scale, scale)})
		}
	}
	return d, nil
}

// cumulate returns the running sums of xs.
func cumulate(xs []float64) []float64 {
	out := make([]float64, len(xs))
	var c float64
	for i, x := range xs {
		c += x
		out[i] = c
	}
	return out
}
