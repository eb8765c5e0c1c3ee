// Package exposition serves the simulated baseline and canary fleets of
// pkg/sim as a Prometheus /metrics endpoint (client_golang), in real time.
//
// Every pod is one set of series on a single endpoint, labelled exactly like
// tools/cmd/pairwise-gen writes them: job, service, track, pod and
// instance="<pod>:8080". Scrape the endpoint with honor_labels: true so the
// exposed job and instance labels are kept; then the live series and the
// backfilled ones are the same series, and the rule pack and the dashboard
// work on both.
//
//	<metric>                          one histogram: native (exponential schema from
//	                                  BucketFactor) and classic buckets side by side
//	http_requests_total{code="200"|"500"}
//
// Counters start at From (the same origin as the generator's, so a live
// scrape continues the backfilled counters without a reset): a From in the
// past is replayed when the fleets are created. Tick semantics are pkg/sim's:
// after AdvanceTo(t) the counters hold every request of the whole seconds in
// [From, trunc(t)), which is what the generator writes for a scrape at t.
package exposition

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/pairwise-canary/pairwise/pkg/sim"
)

// DefaultClassicBuckets are the classic bucket upper bounds (seconds) of
// tools/cmd/pairwise-gen, so classic queries see the same layout on backfilled
// and live data. +Inf is implicit.
var DefaultClassicBuckets = []float64{
	0.001, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
	0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10,
}

// DefaultBucketFactor gives native schema 3 (growth 2^(1/8) ≈ 1.0905 per
// bucket), the generator's default schema.
const DefaultBucketFactor = 1.1

// RequestsMetric is the request counter's name.
const RequestsMetric = "http_requests_total"

// Options configure the fleets. Zero strings and slices take the defaults.
type Options struct {
	Sim          *sim.Sim
	Metric       string    // default http_request_duration_seconds
	Service      string    // default checkout
	Job          string    // default checkout
	Buckets      []float64 // default DefaultClassicBuckets
	BucketFactor float64   // default DefaultBucketFactor
	// From is where the counters start (default: the simulation's Start).
	From time.Time
}

type podObservers struct {
	fleet    string
	index    int
	latency  prometheus.Observer
	ok, errs prometheus.Counter
}

// Fleets is the live exposition of both fleets. It is safe for concurrent use.
type Fleets struct {
	sim  *sim.Sim
	reg  *prometheus.Registry
	pods []podObservers

	mu   sync.Mutex
	next int64 // first tick (Unix second) not yet observed

	observed uint64 // guarded by mu
}

// New registers the series of every pod and replays the ticks from
// Options.From up to now.
func New(o Options, now time.Time) (*Fleets, error) {
	if o.Sim == nil {
		return nil, errors.New("exposition: no simulation")
	}
	if o.Metric == "" {
		o.Metric = "http_request_duration_seconds"
	}
	if o.Service == "" {
		o.Service = "checkout"
	}
	if o.Job == "" {
		o.Job = o.Service
	}
	if o.Buckets == nil {
		o.Buckets = DefaultClassicBuckets
	}
	if err := sim.CheckClassicBuckets(o.Buckets); err != nil {
		return nil, fmt.Errorf("exposition: classic buckets %v: %w", o.Buckets, err)
	}
	if o.BucketFactor == 0 {
		o.BucketFactor = DefaultBucketFactor
	}
	if !(o.BucketFactor > 1) { // NaN too
		return nil, fmt.Errorf("exposition: native bucket factor must be > 1, got %v", o.BucketFactor)
	}
	if o.From.IsZero() {
		o.From = o.Sim.Config().Start
	}
	labelNames := []string{"job", "service", "track", "pod", "instance"}
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                        o.Metric,
		Help:                        "Simulated request latency in seconds (pkg/sim), native and classic buckets.",
		Buckets:                     o.Buckets,
		NativeHistogramBucketFactor: o.BucketFactor,
		// No bucket limit: a limit would reset or widen the native histogram
		// mid-run, which the backfilled data never does.
		NativeHistogramMaxBucketNumber: 0,
	}, labelNames)
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RequestsMetric,
		Help: "Simulated requests by status code.",
	}, append(labelNames, "code"))
	reg := prometheus.NewRegistry()
	if err := reg.Register(latency); err != nil {
		return nil, err
	}
	if err := reg.Register(requests); err != nil {
		return nil, err
	}
	f := &Fleets{sim: o.Sim, reg: reg, next: o.From.Unix()}
	for _, fleet := range sim.Fleets {
		for i := range o.Sim.Config().PodsPerFleet {
			pod := sim.PodName(o.Service, fleet, i)
			lv := []string{o.Job, o.Service, fleet, pod, pod + ":8080"}
			f.pods = append(f.pods, podObservers{
				fleet: fleet, index: i,
				latency: latency.WithLabelValues(lv...),
				ok:      requests.WithLabelValues(append(lv, "200")...),
				errs:    requests.WithLabelValues(append(lv, "500")...),
			})
		}
	}
	f.AdvanceTo(now)
	return f, nil
}

// AdvanceTo observes every request of the whole seconds in [next, trunc(t)).
// It returns the number of requests observed by this call.
func (f *Fleets) AdvanceTo(t time.Time) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.advanceLocked(t)
}

func (f *Fleets) advanceLocked(t time.Time) uint64 {
	end := t.Unix()
	if end <= f.next {
		return 0
	}
	var n uint64
	from, to := time.Unix(f.next, 0), time.Unix(end, 0)
	for _, p := range f.pods {
		f.sim.Observe(p.fleet, p.index, from, to, func(latency float64, isError bool) {
			p.latency.Observe(latency)
			if isError {
				p.errs.Inc()
			} else {
				p.ok.Inc()
			}
			n++
		})
	}
	f.next = end
	f.observed += n
	return n
}

// Observed is the number of requests observed so far.
func (f *Fleets) Observed() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.observed
}

// Handler serves the registry; promhttp negotiates the protobuf format that
// native histograms need, and falls back to text (classic buckets only).
// Each scrape first catches up to the current second, so a scrape at t holds
// the ticks before trunc(t), as the generator's sample at t does, and never a
// half-advanced set of pods.
func (f *Fleets) Handler(now func() time.Time) http.Handler {
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.advanceLocked(now())
		return f.reg.Gather()
	})
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Gatherer exposes the registry (tests).
func (f *Fleets) Gatherer() prometheus.Gatherer { return f.reg }

// Run advances the fleets every second, just after each whole second, until
// stop is closed.
func (f *Fleets) Run(stop <-chan struct{}, now func() time.Time) {
	for {
		t := now()
		wait := time.Second - time.Duration(t.Nanosecond()) + 5*time.Millisecond
		select {
		case <-stop:
			return
		case <-time.After(wait):
			f.AdvanceTo(now())
		}
	}
}

// FormatBuckets renders bucket bounds for flags and messages.
func FormatBuckets(b []float64) string {
	s := make([]byte, 0, len(b)*6)
	for i, v := range b {
		if i > 0 {
			s = append(s, ',')
		}
		s = strconv.AppendFloat(s, v, 'g', -1, 64)
	}
	return string(s)
}
