package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/pairwise-canary/pairwise/pkg/sim"
)

// ZeroThreshold is client_golang's DefNativeHistogramZeroThreshold (2^-128),
// the zero threshold it writes for native histograms.
const ZeroThreshold = 2.938735877055719e-39

// DefaultClassicBuckets is the classic bucket layout (le values, seconds).
// +Inf is added by the generator.
var DefaultClassicBuckets = []float64{
	0.001, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
	0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10,
}

// Quantiles are the quantiles of the ground truth file.
var Quantiles = []float64{0.5, 0.99, 0.999, 0.9999}

// Restart resets one pod's counters (see sim.Restart).
type Restart = sim.Restart

// ScrapeGap fails every scrape of one pod at times in (From, To].
type ScrapeGap struct {
	Fleet    string
	Index    int
	From, To time.Time
}

// Options configure a generation run.
type Options struct {
	Sim            sim.Config // Start is the first scrape's minute
	Minutes        int
	OutDir         string
	TruthFile      string
	ScrapeInterval time.Duration
	ScrapeOffset   time.Duration
	Metric         string
	Service        string
	Job            string
	Schema         int32
	ClassicBuckets []float64
	// CanarySchema and CanaryBuckets are the canary's layout when it differs
	// from the baseline's (a canary whose series kept a finer schema, or
	// whose release changed the buckets); nil: the same as Schema and
	// ClassicBuckets.
	CanarySchema  *int32
	CanaryBuckets []float64
	// NHCBMetric, when set, is the name of a third histogram of every pod:
	// its classic buckets as a native histogram with custom buckets (NHCB,
	// as Prometheus's convert_classic_histograms_to_nhcb records them).
	NHCBMetric string
	Restarts   []Restart
	// ScrapeGaps are stretches in which one pod's scrapes fail: it keeps
	// serving and counting, but none of its series gets a sample and its
	// target reports up == 0.
	ScrapeGaps  []ScrapeGap
	TruthPodP99 bool
	// RenameLabels names the service, track and pod labels otherwise, in
	// every series (an OpenTelemetry SDK exporting to Prometheus 3 without
	// escaping writes service.name, k8s.pod.name): label -> its new name.
	RenameLabels map[string]string
	Workers      int
	Progress     io.Writer // nil: silent
}

// Summary is what a run wrote.
type Summary struct {
	Series           int
	FloatSamples     int64
	HistogramSamples int64
	Observations     int64
	Blocks           int
	Elapsed          time.Duration
}

// Samples is the total sample count.
func (s Summary) Samples() int64 { return s.FloatSamples + s.HistogramSamples }

// pod is one simulated pod: its labels, its cumulative counters and its
// per-minute truth buffer.
type pod struct {
	fleet    string
	fi       int
	idx      int
	name     string
	restarts []int64 // Unix seconds of its restarts
	nativeL  labels.Labels
	nhcbL    labels.Labels // empty without Options.NHCBMetric
	bucketL  []labels.Labels
	countL   labels.Labels
	sumL     labels.Labels
	okL      labels.Labels
	errL     labels.Labels
	upL      labels.Labels
	lay      *layout
	gaps     [][2]int64          // scrape gaps (from, to], Unix seconds
	refs     []storage.SeriesRef // one per series, valid for the current block writer
	count    uint64
	sum      float64
	zero     uint64
	nMin     int      // native key of nat[0]
	nat      []uint64 // native bucket counts (not cumulative), keys nMin..
	classic  []uint64 // classic bucket counts (not cumulative), last is +Inf
	ok, errs uint64
	minute   int       // minute index of vals
	vals     []float64 // covered observations of minute `minute`
}

// layout is one fleet's bucket layout.
type layout struct {
	schema  int32
	bounds  []float64 // native bucket bounds of frac for schema > 0
	buckets []float64 // classic upper bounds, +Inf left out
}

func newLayout(schema int32, buckets []float64) (*layout, error) {
	if schema < -4 || schema > 8 {
		return nil, fmt.Errorf("schema must be in [-4, 8], got %d", schema)
	}
	if err := sim.CheckClassicBuckets(buckets); err != nil {
		return nil, fmt.Errorf("classic buckets %v: %w", buckets, err)
	}
	l := &layout{schema: schema, buckets: buckets}
	if schema > 0 {
		n := 1 << schema
		l.bounds = make([]float64, n)
		for i := range n {
			l.bounds[i] = math.Exp2(float64(i)/float64(n) - 1)
		}
	}
	return l, nil
}

type generator struct {
	o       Options
	s       *sim.Sim
	layouts [2]*layout // by fleet index
	pods    []*pod
	start   time.Time
	end     time.Time
	scrape  []int64 // scrape times, Unix seconds
	// truth, indexed [fleet][minute]; kept only with a truth file to write
	// (every observation, for exact quantiles: gigabytes over a week)
	keepTruth bool
	fleetVals [2][][]float64
	fleetErrs [2][]int
	podP99    [2][]float64 // [fleet][minute*pods+pod], NaN when no observation
	nSeries   int
	sum       Summary
}

func newGenerator(o Options) (*generator, error) {
	if o.Minutes < 1 {
		return nil, fmt.Errorf("minutes must be >= 1")
	}
	if o.ScrapeInterval < time.Second || o.ScrapeInterval%time.Second != 0 || o.ScrapeInterval > time.Minute {
		return nil, fmt.Errorf("scrape interval must be whole seconds in [1s, 60s], got %v", o.ScrapeInterval)
	}
	if o.ScrapeOffset < 0 || o.ScrapeOffset >= o.ScrapeInterval || o.ScrapeOffset%time.Second != 0 {
		return nil, fmt.Errorf("scrape offset must be whole seconds in [0, interval), got %v", o.ScrapeOffset)
	}
	if o.Sim.Start.IsZero() || !o.Sim.Start.Equal(o.Sim.Start.Truncate(time.Minute)) {
		return nil, fmt.Errorf("start must be a whole UTC minute, got %v", o.Sim.Start)
	}
	if o.Metric == "" || o.Service == "" || o.Job == "" {
		return nil, fmt.Errorf("metric, service and job must be set")
	}
	if o.NHCBMetric == o.Metric || o.NHCBMetric == o.Metric+"_bucket" {
		return nil, fmt.Errorf("the NHCB metric %q must differ from the histogram's own names", o.NHCBMetric)
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.TruthFile == "" {
		o.TruthPodP99 = false // nothing to write them to
	}
	s, err := sim.New(o.Sim)
	if err != nil {
		return nil, err
	}
	g := &generator{o: o, s: s, start: o.Sim.Start.UTC(), keepTruth: o.TruthFile != ""}
	g.end = g.start.Add(time.Duration(o.Minutes) * time.Minute)
	canarySchema, canaryBuckets := o.Schema, o.ClassicBuckets
	if o.CanarySchema != nil {
		canarySchema = *o.CanarySchema
	}
	if o.CanaryBuckets != nil {
		canaryBuckets = o.CanaryBuckets
	}
	if g.layouts[0], err = newLayout(o.Schema, o.ClassicBuckets); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	if g.layouts[1], err = newLayout(canarySchema, canaryBuckets); err != nil {
		return nil, fmt.Errorf("canary: %w", err)
	}
	for t := g.start.Add(o.ScrapeOffset); !t.After(g.end); t = t.Add(o.ScrapeInterval) {
		g.scrape = append(g.scrape, t.Unix())
	}
	// A pod may restart several times: keep every restart, not the last.
	restarts := map[[2]int][]int64{}
	last := g.scrape[len(g.scrape)-1]
	for _, r := range o.Restarts {
		fi := 0
		if r.Fleet == sim.FleetCanary {
			fi = 1
		}
		if r.Index < 0 || r.Index >= o.Sim.PodsPerFleet {
			return nil, fmt.Errorf("restart of pod %s-%d: no such pod", r.Fleet, r.Index)
		}
		// No scrape would see a later restart, yet the truth would list it.
		if r.Time.Unix() > last {
			return nil, fmt.Errorf("restart of pod %s at %s: after the data's last scrape at %s, so no sample would show it "+
				"(--restart POD@MINUTE restarts it --scrape-offset plus half a --scrape-interval after the minute's start)",
				sim.PodName(o.Service, r.Fleet, r.Index), r.Time.UTC().Format(time.RFC3339), time.Unix(last, 0).UTC().Format(time.RFC3339))
		}
		restarts[[2]int{fi, r.Index}] = append(restarts[[2]int{fi, r.Index}], r.Time.Unix())
	}
	nMinutes := o.Minutes
	for fi, fleet := range sim.Fleets {
		if g.keepTruth {
			g.fleetVals[fi] = make([][]float64, nMinutes)
			g.fleetErrs[fi] = make([]int, nMinutes)
		}
		if o.TruthPodP99 {
			g.podP99[fi] = make([]float64, nMinutes*o.Sim.PodsPerFleet)
			for i := range g.podP99[fi] {
				g.podP99[fi][i] = math.NaN()
			}
		}
		for i := 0; i < o.Sim.PodsPerFleet; i++ {
			p := &pod{fleet: fleet, fi: fi, idx: i, name: sim.PodName(o.Service, fleet, i), restarts: restarts[[2]int{fi, i}], minute: -1, lay: g.layouts[fi]}
			named := func(l string) string { return cmp.Or(o.RenameLabels[l], l) }
			base := func(name string, extra ...string) labels.Labels {
				kv := append([]string{"__name__", name, "job", o.Job, named("service"), o.Service, named("track"), fleet,
					named("pod"), p.name, "instance", p.name + ":8080"}, extra...)
				return labels.FromStrings(kv...)
			}
			p.nativeL = base(o.Metric)
			if o.NHCBMetric != "" {
				p.nhcbL = base(o.NHCBMetric)
			}
			for _, le := range p.lay.buckets {
				p.bucketL = append(p.bucketL, base(o.Metric+"_bucket", "le", labels.FormatOpenMetricsFloat(le)))
			}
			p.bucketL = append(p.bucketL, base(o.Metric+"_bucket", "le", "+Inf"))
			p.countL = base(o.Metric + "_count")
			p.sumL = base(o.Metric + "_sum")
			p.okL = base("http_requests_total", "code", "200")
			p.errL = base("http_requests_total", "code", "500")
			p.upL = base("up")
			for _, gap := range o.ScrapeGaps {
				if gap.Fleet == fleet && gap.Index == i {
					p.gaps = append(p.gaps, [2]int64{gap.From.Unix(), gap.To.Unix()})
				}
			}
			p.classic = make([]uint64, len(p.lay.buckets)+1)
			g.pods = append(g.pods, p)
		}
	}
	for _, gap := range o.ScrapeGaps {
		if gap.Index < 0 || gap.Index >= o.Sim.PodsPerFleet || (gap.Fleet != sim.FleetBaseline && gap.Fleet != sim.FleetCanary) || !gap.To.After(gap.From) {
			return nil, fmt.Errorf("scrape gap of pod %s-%d from %v to %v: no such pod or an empty gap", gap.Fleet, gap.Index, gap.From, gap.To)
		}
	}
	for _, p := range g.pods {
		g.nSeries += p.series()
	}
	return g, nil
}

// series is the number of series the pod writes: its native histogram, its
// NHCB when asked for, its classic buckets with +Inf, count, sum, two
// request counters and up.
func (p *pod) series() int {
	n := 1 + len(p.lay.buckets) + 1 + 4 + 1
	if !p.nhcbL.IsEmpty() {
		n++
	}
	return n
}

// key returns the native histogram bucket index of v > 0 at the schema, the
// way client_golang and Prometheus compute it: bucket k holds
// (2^((k-1)/2^schema), 2^(k/2^schema)].
func (l *layout) key(v float64) int {
	frac, exp := math.Frexp(v)
	if l.schema > 0 {
		return sort.SearchFloat64s(l.bounds, frac) + (exp-1)*len(l.bounds)
	}
	k := exp
	if frac == 0.5 {
		k--
	}
	off := (1 << -l.schema) - 1
	return (k + off) >> -l.schema
}

func (p *pod) reset() {
	p.count, p.sum, p.zero, p.ok, p.errs = 0, 0, 0, 0, 0
	p.nat, p.nMin = p.nat[:0], 0
	clear(p.classic)
}

// inGap reports whether the pod's scrape at sec fails.
func (p *pod) inGap(sec int64) bool {
	for _, gap := range p.gaps {
		if sec > gap[0] && sec <= gap[1] {
			return true
		}
	}
	return false
}

// reported is the index of the pod's first scrape from k on that is not in
// a scrape gap, or len(g.scrape).
func (g *generator) reported(p *pod, k int) int {
	for k < len(g.scrape) && p.inGap(g.scrape[k]) {
		// Skip to the first scrape after the gaps that hold this one.
		for _, gap := range p.gaps {
			if g.scrape[k] > gap[0] && g.scrape[k] <= gap[1] {
				k = sort.Search(len(g.scrape), func(i int) bool { return g.scrape[i] > gap[1] })
				break
			}
		}
	}
	return k
}

// lastRestart is the pod's last restart in (prev, cur], or 0.
func (p *pod) lastRestart(prev, cur int64) int64 {
	var last int64
	for _, r := range p.restarts {
		if r > prev && r <= cur && r > last {
			last = r
		}
	}
	return last
}

func (g *generator) observe(p *pod, v float64, isErr bool) {
	p.count++
	p.sum += v
	if isErr {
		p.errs++
	} else {
		p.ok++
	}
	if v <= ZeroThreshold {
		p.zero++
	} else {
		k := p.lay.key(v)
		switch {
		case len(p.nat) == 0:
			p.nMin = k
			p.nat = append(p.nat, 1)
		case k < p.nMin:
			grow := p.nMin - k
			p.nat = append(make([]uint64, grow, grow+len(p.nat)), p.nat...)
			p.nMin = k
			p.nat[0]++
		case k-p.nMin >= len(p.nat):
			for k-p.nMin >= len(p.nat) {
				p.nat = append(p.nat, 0)
			}
			p.nat[k-p.nMin]++
		default:
			p.nat[k-p.nMin]++
		}
	}
	i := sort.SearchFloat64s(p.lay.buckets, v) // first le >= v
	p.classic[i]++
}

// nativeHistogram snapshots the pod's cumulative native histogram. Spans join
// gaps of up to two empty buckets, as client_golang does.
func (g *generator) nativeHistogram(p *pod) *histogram.Histogram {
	h := &histogram.Histogram{
		Schema:        p.lay.schema,
		ZeroThreshold: ZeroThreshold,
		ZeroCount:     p.zero,
		Count:         p.count,
		Sum:           p.sum,
	}
	var prev int64
	lastKey := 0
	for i, c := range p.nat {
		if c == 0 {
			continue
		}
		k := p.nMin + i
		gap := k - lastKey - 1
		switch {
		case len(h.PositiveSpans) == 0:
			// The first span's offset is the absolute index of its first bucket.
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: int32(k), Length: 1})
		case gap <= 2:
			// A gap of at most two empty buckets extends the span.
			for range gap {
				h.PositiveBuckets = append(h.PositiveBuckets, -prev)
				prev = 0
			}
			h.PositiveSpans[len(h.PositiveSpans)-1].Length += uint32(gap + 1)
		default:
			// Later offsets count the empty buckets since the previous span.
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: int32(gap), Length: 1})
		}
		h.PositiveBuckets = append(h.PositiveBuckets, int64(c)-prev)
		prev = int64(c)
		lastKey = k
	}
	return h
}

// customHistogram snapshots the pod's classic buckets as a native histogram
// with custom buckets: one span over every bucket, +Inf's last.
func customHistogram(p *pod) *histogram.Histogram {
	h := &histogram.Histogram{
		Schema:          histogram.CustomBucketsSchema,
		CustomValues:    p.lay.buckets,
		Count:           p.count,
		Sum:             p.sum,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: uint32(len(p.classic))}},
		PositiveBuckets: make([]int64, len(p.classic)),
	}
	var prev int64
	for i, c := range p.classic {
		h.PositiveBuckets[i] = int64(c) - prev
		prev = int64(c)
	}
	return h
}

// minuteOf returns the index of the minute that reads the scrape interval
// (prev, cur], or -1. Minute i ends at T = start+(i+1)m and is read over a
// minute and one scrape interval (prom.MinuteRange): from the last sample
// before T-60s to the last sample at or before T. So it reads the intervals
// that end inside (T-60s, T], a whole minute of them: with a 15 s interval
// and offset 0 the samples T-60, T-45, T-30, T-15 and T, four intervals.
func (g *generator) minuteOf(prev, cur int64) int {
	s := g.start.Unix()
	i := int((cur - s + 59) / 60) // T = s + 60*i is the first whole minute >= cur
	if i < 1 || i > g.o.Minutes {
		return -1
	}
	return i - 1
}

// worker accumulates truth for a slab of scrape intervals.
type slabTruth struct {
	vals [2]map[int][]float64
	errs [2]map[int]int
	obs  int64
}

func (g *generator) finishPodMinute(p *pod) {
	if p.minute < 0 || !g.o.TruthPodP99 {
		p.vals = p.vals[:0]
		return
	}
	if len(p.vals) > 0 {
		slices.Sort(p.vals)
		g.podP99[p.fi][p.minute*g.o.Sim.PodsPerFleet+p.idx] = sim.Quantile(p.vals, 0.99)
	}
	p.vals = p.vals[:0]
}

// runSlab simulates scrape indices [k0, k1) of the given pods and appends
// their samples. k0 >= 1: sample 0 (all zeros) is written by the caller.
func (g *generator) runSlab(app storage.Appender, pods []*pod, k0, k1 int, tr *slabTruth) (floats, hists int64, err error) {
	for _, p := range pods {
		for k := k0; k < k1; k++ {
			prev, cur := g.scrape[k-1], g.scrape[k]
			// The interval's observations are read in the minute of the
			// pod's next reported sample, as the truth's coverage says: cur,
			// or after a scrape gap the first scrape after it. None if the
			// gap runs to the end, or if the pod restarts before that sample
			// (its counters reset: no sample ever shows them).
			m := -1
			if kr := g.reported(p, k); kr < len(g.scrape) && p.lastRestart(cur, g.scrape[kr]) == 0 {
				m = g.minuteOf(prev, g.scrape[kr])
			}
			if m != p.minute {
				g.finishPodMinute(p)
				p.minute = m
			}
			from := prev
			if r := p.lastRestart(prev, cur); r > 0 {
				// The process restarted inside this interval (the last time,
				// if more than once): what it counted since the last scrape
				// is lost.
				p.reset()
				from = r
			}
			fi := p.fi
			g.s.Observe(p.fleet, p.idx, time.Unix(from, 0), time.Unix(cur, 0), func(v float64, isErr bool) {
				g.observe(p, v, isErr)
				tr.obs++
				if m >= 0 && g.keepTruth {
					tr.vals[fi][m] = append(tr.vals[fi][m], v)
					if isErr {
						tr.errs[fi][m]++
					}
					if g.o.TruthPodP99 {
						p.vals = append(p.vals, v)
					}
				}
			})
			f, h, err := g.appendPod(app, p, cur)
			if err != nil {
				return floats, hists, err
			}
			floats += f
			hists += h
		}
	}
	return floats, hists, nil
}

func (g *generator) appendPod(app storage.Appender, p *pod, sec int64) (floats, hists int64, err error) {
	t := sec * 1000
	r := p.refs
	up := len(r) - 1
	if p.inGap(sec) {
		// The scrape failed: only the target's up says so.
		if r[up], err = app.Append(r[up], p.upL, t, 0); err != nil {
			return 0, 0, fmt.Errorf("%s at %d: %w", p.upL, t, err)
		}
		return 1, 0, nil
	}
	if r[up], err = app.Append(r[up], p.upL, t, 1); err != nil {
		return 0, 0, fmt.Errorf("%s at %d: %w", p.upL, t, err)
	}
	floats++
	i := 0
	add := func(l labels.Labels, v float64) {
		if err != nil {
			return
		}
		r[i], err = app.Append(r[i], l, t, v)
		i++
		floats++
	}
	r[i], err = app.AppendHistogram(r[i], p.nativeL, t, g.nativeHistogram(p), nil)
	if err != nil {
		return 0, 0, fmt.Errorf("%s at %d: %w", p.nativeL, t, err)
	}
	i++
	hists++
	if !p.nhcbL.IsEmpty() {
		if r[i], err = app.AppendHistogram(r[i], p.nhcbL, t, customHistogram(p), nil); err != nil {
			return 0, 0, fmt.Errorf("%s at %d: %w", p.nhcbL, t, err)
		}
		i++
		hists++
	}
	var cum uint64
	for b, c := range p.classic {
		cum += c
		add(p.bucketL[b], float64(cum))
	}
	add(p.countL, float64(p.count))
	add(p.sumL, p.sum)
	add(p.okL, float64(p.ok))
	add(p.errL, float64(p.errs))
	return floats, hists, err
}

func (g *generator) progress(format string, args ...any) {
	if g.o.Progress != nil {
		fmt.Fprintf(g.o.Progress, format+"\n", args...)
	}
}

const blockMs = int64(2 * time.Hour / time.Millisecond)

// slabLen is the number of scrape intervals the workers write in lockstep.
const slabLen = 40

// block is one 2-hour TSDB block to write: the scrapes [first, end).
type block struct{ first, end int }

// planBlocks cuts the scrapes into the 2-hour blocks Prometheus would cut.
func (g *generator) planBlocks() []block {
	var out []block
	for k := 0; k < len(g.scrape); {
		start := (g.scrape[k] * 1000) / blockMs * blockMs
		end := k
		for end < len(g.scrape) && g.scrape[end]*1000 < start+blockMs {
			end++
		}
		out = append(out, block{first: k, end: end})
		k = end
	}
	return out
}

// shards deals the pods out to the workers.
func (g *generator) shards() [][]*pod {
	shards := make([][]*pod, g.o.Workers)
	for i, p := range g.pods {
		shards[i%g.o.Workers] = append(shards[i%g.o.Workers], p)
	}
	return shards
}

// run writes the blocks and the truth file.
func (g *generator) run(ctx context.Context) (Summary, error) {
	began := time.Now()
	// Blocks added to an existing TSDB overlap its own, its series stay
	// (pods 5-9 of a run with more pods), and the truth file describes only
	// this run: write into a new or empty directory only.
	switch entries, err := os.ReadDir(g.o.OutDir); {
	case err == nil && len(entries) > 0:
		return Summary{}, fmt.Errorf("--out %s is not empty (it holds %s): pairwise-gen writes a new TSDB and would mix its blocks with what is there; remove it or name a new or empty directory",
			g.o.OutDir, entries[0].Name())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Summary{}, fmt.Errorf("--out %s: %w", g.o.OutDir, err)
	}
	// An empty wal/ lets read-only openers (tsdb.OpenDBReadOnly, promtool
	// tsdb) open the directory too; Prometheus starts a fresh WAL in it.
	if err := os.MkdirAll(filepath.Join(g.o.OutDir, "wal"), 0o755); err != nil {
		return Summary{}, err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	shards := g.shards()
	blocks := g.planBlocks()
	var fl flusher
	defer fl.wait() // on error paths: never leave a flush writing behind
	// Stopped (a signal cancels ctx), the blocks written so far stay and no
	// truth file is written: say that --out is incomplete.
	defer func() {
		if ctx.Err() != nil && g.sum.Blocks > 0 {
			g.progress("pairwise-gen: stopped: %s holds %d of %d blocks and no truth file; remove it", g.o.OutDir, g.sum.Blocks, len(blocks))
		}
	}()
	for _, b := range blocks {
		w, err := tsdb.NewBlockWriter(logger, g.o.OutDir, blockMs)
		if err != nil {
			return Summary{}, err
		}
		if err := g.writeBlock(ctx, w, b, shards); err != nil {
			w.Close()
			return Summary{}, err
		}
		// Compact this block in the background while the next one is
		// generated: at most one flush in flight.
		if err := fl.wait(); err != nil {
			return Summary{}, err
		}
		fl.start(ctx, w, func() {
			g.progress("pairwise-gen: block [%s, %s] written, %.1fs",
				time.Unix(g.scrape[b.first], 0).UTC().Format(time.RFC3339),
				time.Unix(g.scrape[b.end-1], 0).UTC().Format(time.RFC3339), time.Since(began).Seconds())
		})
		g.sum.Blocks++
		g.progress("pairwise-gen: block %d/%d generated, %d samples so far, %.1fs", g.sum.Blocks, len(blocks), g.sum.Samples(), time.Since(began).Seconds())
	}
	if err := fl.wait(); err != nil {
		return Summary{}, err
	}
	if err := context.Cause(ctx); err != nil {
		return Summary{}, err
	}
	for _, p := range g.pods {
		g.finishPodMinute(p)
	}
	g.sum.Series = g.nSeries
	if g.o.TruthFile != "" {
		if err := g.writeTruth(); err != nil {
			return Summary{}, err
		}
	}
	g.sum.Elapsed = time.Since(began)
	return g.sum, nil
}

// writeBlock appends the block's scrapes of every pod to w: the first
// scrape of all (zeros) alone, then slabs of slabLen scrapes, one worker a
// shard of pods.
func (g *generator) writeBlock(ctx context.Context, w *tsdb.BlockWriter, b block, shards [][]*pod) error {
	for _, p := range g.pods {
		p.refs = make([]storage.SeriesRef, p.series())
	}
	k := b.first
	if k == 0 {
		if err := g.writeFirstScrape(ctx, w); err != nil {
			return err
		}
		k = 1
	}
	for s0 := k; s0 < b.end; s0 += slabLen {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		if err := g.writeSlab(ctx, w, shards, s0, min(s0+slabLen, b.end)); err != nil {
			return err
		}
	}
	return nil
}

// writeFirstScrape appends every pod's first scrape.
func (g *generator) writeFirstScrape(ctx context.Context, w *tsdb.BlockWriter) error {
	app := w.Appender(ctx)
	for _, p := range g.pods {
		f, h, err := g.appendPod(app, p, g.scrape[0])
		if err != nil {
			_ = app.Rollback()
			return err
		}
		g.sum.FloatSamples += f
		g.sum.HistogramSamples += h
	}
	return app.Commit()
}

// writeSlab appends the scrapes [s0, s1) of every shard concurrently, then
// adds the shards' samples and truth to the summary and the fleets' truth.
func (g *generator) writeSlab(ctx context.Context, w *tsdb.BlockWriter, shards [][]*pod, s0, s1 int) error {
	truths := make([]*slabTruth, len(shards))
	errs := make([]error, len(shards))
	counts := make([][2]int64, len(shards))
	var wg sync.WaitGroup
	for si, shard := range shards {
		tr := &slabTruth{}
		for fi := range 2 {
			tr.vals[fi] = map[int][]float64{}
			tr.errs[fi] = map[int]int{}
		}
		truths[si] = tr
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := w.Appender(ctx)
			f, h, err := g.runSlab(app, shard, s0, s1, tr)
			if err != nil {
				_ = app.Rollback()
				errs[si] = err
				return
			}
			counts[si] = [2]int64{f, h}
			errs[si] = app.Commit()
		}()
	}
	wg.Wait()
	for si, tr := range truths {
		if errs[si] != nil {
			return errs[si]
		}
		g.sum.FloatSamples += counts[si][0]
		g.sum.HistogramSamples += counts[si][1]
		g.sum.Observations += tr.obs
		for fi := range 2 {
			for m, v := range tr.vals[fi] {
				g.fleetVals[fi][m] = append(g.fleetVals[fi][m], v...)
			}
			for m, e := range tr.errs[fi] {
				g.fleetErrs[fi][m] += e
			}
		}
	}
	return nil
}

// flusher compacts written blocks to disk in the background, one at a time.
type flusher struct{ done chan error }

// start flushes and closes w in the background; written runs on success.
func (f *flusher) start(ctx context.Context, w *tsdb.BlockWriter, written func()) {
	f.done = make(chan error, 1)
	go func() {
		_, err := w.Flush(ctx)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			written()
		}
		f.done <- err
	}()
}

// wait waits for the flush in flight, if any.
func (f *flusher) wait() error {
	if f.done == nil {
		return nil
	}
	err := <-f.done
	f.done = nil
	if err != nil {
		return fmt.Errorf("flush block: %w", err)
	}
	return nil
}

// formatQ is the JSON key of a quantile: "0.5", "0.99", "0.999", "0.9999".
func formatQ(q float64) string { return strconv.FormatFloat(q, 'f', -1, 64) }
