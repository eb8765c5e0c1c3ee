// Command pairwise-gen writes simulated baseline and canary fleets (pkg/sim)
// as a Prometheus 3.x TSDB data directory, with a ground-truth JSON file.
//
// Every pod exposes, sampled every scrape interval like a real scrape:
//
//	<metric>                       native histogram (exponential schema, client_golang's zero threshold)
//	<metric>_bucket{le=...}        classic histogram (le formatted as Prometheus 3.x stores it: "1.0", "+Inf")
//	<metric>_count, <metric>_sum
//	http_requests_total{code="200"|"500"}
//
// with labels job, service, track="baseline"|"canary", pod="<service>-<track>-<i>",
// instance="<pod>:8080". Open the result with prometheus --storage.tsdb.path=DIR
// (and a long --storage.tsdb.retention.time, the data is in the past).
//
// Usage:
//
//	pairwise-gen --out DIR [--truth FILE] [--minutes 120] [--pods 10] [--scenario regression] ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/tools/internal/stop"
)

type restartFlags []string

func (r *restartFlags) String() string     { return strings.Join(*r, ",") }
func (r *restartFlags) Set(s string) error { *r = append(*r, s); return nil }

type floatList []float64

func (l *floatList) String() string {
	var s []string
	for _, v := range *l {
		s = append(s, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

func (l *floatList) Set(s string) error {
	*l = nil
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return err
		}
		*l = append(*l, v)
	}
	return nil
}

func main() {
	// Ctrl-C or SIGTERM stops the run between slabs: the block writer's
	// temporary head is removed (without a handler the process would end
	// first and leave it in $TMPDIR). A second signal ends it at once.
	if err := run(stop.OnSignal(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pairwise-gen:", err)
		os.Exit(stop.ExitCode(err))
	}
}

func run(ctx context.Context, args []string) error {
	o, cpuProfile, err := parseFlags(args)
	if err != nil {
		return err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	g, err := newGenerator(o)
	if err != nil {
		return err
	}
	sum, err := g.run(ctx)
	if err != nil {
		// A flush the signal interrupted says only "context canceled".
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %v", cause, err)
		}
		return err
	}
	fmt.Printf("pairwise-gen: %s %s..%s: %d series, %d samples (%d float, %d native histogram), %d observations, %d blocks in %s, %.1fs\n",
		o.Sim.Scenario, o.Sim.Start.Format(time.RFC3339), g.end.Format(time.RFC3339), sum.Series, sum.Samples(), sum.FloatSamples,
		sum.HistogramSamples, sum.Observations, sum.Blocks, o.OutDir, sum.Elapsed.Seconds())
	return nil
}

// parseFlags reads the command line into the generator's options (and the
// CPU profile to write, if any).
func parseFlags(args []string) (o Options, cpuProfile string, err error) {
	fs := flag.NewFlagSet("pairwise-gen", flag.ContinueOnError)
	d := sim.DefaultConfig(time.Time{})
	c := d
	out := fs.String("out", "", "TSDB data directory to write (required), new or empty; open it with prometheus --storage.tsdb.path=DIR")
	truth := fs.String("truth", "", "ground truth JSON file to write (optional)")
	startS := fs.String("start", "", "start, RFC 3339, a whole UTC minute (default: --end minus --minutes)")
	endS := fs.String("end", "", "end, RFC 3339 (default: now floored to the whole UTC minute); ignored when --start is set")
	minutes := fs.Int("minutes", 120, "minutes of data")
	fs.IntVar(&c.PodsPerFleet, "pods", d.PodsPerFleet, "pods per fleet")
	fs.Int64Var(&c.Seed, "seed", d.Seed, "random seed")
	fs.StringVar(&c.Scenario, "scenario", d.Scenario, "scenario: "+strings.Join(sim.Scenarios, ", "))
	fs.Float64Var(&c.TotalRPS, "total-rps", d.TotalRPS, "mean request rate of both fleets together (before bursts)")
	fs.Float64Var(&c.CanaryShare, "canary-share", d.CanaryShare, "canary share of the traffic")
	fs.Float64Var(&c.RampStep, "ramp-step", d.RampStep, "raise the canary's weight as Flagger or Argo Rollouts do: its share starts at this and rises by it every --ramp-every minutes up to --canary-share (0: no ramp)")
	fs.IntVar(&c.RampEveryMinutes, "ramp-every", d.RampEveryMinutes, "minutes between the weight's steps (with --ramp-step)")
	fs.Float64Var(&c.StallEveryMinutes, "stall-every", d.StallEveryMinutes, "every pod of both fleets pauses about once every this many minutes (a long GC pause, CPU throttling; 0: never)")
	fs.Float64Var(&c.StallSeconds, "stall-seconds", d.StallSeconds, "how long a pause lasts, at most 1 s (with --stall-every)")
	fs.Float64Var(&c.ErrorRatio, "error-ratio", d.ErrorRatio, "share of requests answered 500")
	fs.Float64Var(&c.CanaryErrorFactor, "canary-error-factor", 1, "the canary fails this many times as often as --error-ratio (up to every request), its latencies unchanged")
	fs.Float64Var(&c.MedianLatency, "median-latency", d.MedianLatency, "median latency of cheap requests, seconds")
	fs.Float64Var(&c.BurstProbability, "burst-probability", d.BurstProbability, "probability of a traffic burst per burst slot")
	fs.IntVar(&c.BurstSlotMinutes, "burst-slot-minutes", d.BurstSlotMinutes, "burst slot length in minutes (at most one burst per slot)")
	fs.Float64Var(&c.RegressionFactor, "regression-factor", d.RegressionFactor, "regression: canary latency factor")
	fs.IntVar(&c.RegressionStartMinute, "regression-start-minute", d.RegressionStartMinute, "regression: first slow minute (0 = the minute after --start)")
	fs.Float64Var(&c.GCBurstFactor, "gc-burst-factor", d.GCBurstFactor, "gc-burst: factor on the canary's slow share and slow latency during bursts")
	fs.IntVar(&c.ColdStartMinutes, "cold-start-minutes", d.ColdStartMinutes, "cold-start: minutes until the canary is warm")
	fs.Float64Var(&c.ColdStartFactor, "cold-start-factor", d.ColdStartFactor, "cold-start: canary latency factor at minute 0")
	fs.IntVar(&c.BadPod, "bad-pod", d.BadPod, "bad-pod: index of the slow canary pod")
	fs.Float64Var(&c.BadPodFactor, "bad-pod-factor", d.BadPodFactor, "bad-pod: its latency factor")
	fs.Float64Var(&c.MixCostlyShare, "mix-costly-share", d.MixCostlyShare, "traffic-mix: canary's share of costly requests (baseline: costly-share)")
	fs.Float64Var(&c.MixShareFactor, "mix-share-factor", d.MixShareFactor, "traffic-mix: factor on the canary's traffic share")
	fs.Float64Var(&c.CostlyShare, "costly-share", d.CostlyShare, "share of costly requests")
	fs.StringVar(&c.Shape, "shape", d.Shape, "latency shape: "+strings.Join(sim.Shapes, ", ")+" (see pkg/sim/shapes.go)")
	fs.Float64Var(&c.LognormalSigma, "lognormal-sigma", d.LognormalSigma, "lognormal shape: log-sd")
	fs.Float64Var(&c.HeavyTailIndex, "heavy-tail-index", d.HeavyTailIndex, "heavy shape: tail index of the log-logistic")
	fs.Float64Var(&c.LoadLatency, "load-latency", d.LoadLatency, "latency x (rate/total-rps)^this in every second, both fleets (0: latency independent of load)")
	fs.Float64Var(&c.TailSlowShare, "tail-slow-share", d.TailSlowShare, "tail: the canary's slow-path share (bimodal shape)")
	fs.Float64Var(&c.TailPivot, "tail-pivot", d.TailPivot, "tail: quantile beyond which the canary's latency is stretched (other shapes)")
	fs.Float64Var(&c.TailStretch, "tail-stretch", d.TailStretch, "tail: stretch exponent beyond the pivot (other shapes)")
	interval := fs.Duration("scrape-interval", 15*time.Second, "scrape interval (whole seconds)")
	offset := fs.Duration("scrape-offset", 0, "scrape offset after each whole minute (whole seconds, < interval)")
	metric := fs.String("metric", "http_request_duration_seconds", "histogram metric name")
	service := fs.String("service", "checkout", "service label value (and pod name prefix)")
	job := fs.String("job", "checkout", "job label value")
	schema := fs.Int("schema", 3, "native histogram exponential schema (-4..8)")
	buckets := floatList(DefaultClassicBuckets)
	fs.Var(&buckets, "buckets", "classic bucket upper bounds, comma separated, strictly increasing (+Inf is added)")
	canarySchema := fs.String("canary-schema", "", "the canary's native schema when it differs from --schema (a canary whose series kept a finer schema than the baseline's; default: --schema)")
	nhcb := fs.String("nhcb-metric", "", "also write every pod's classic buckets as a native histogram with custom buckets (NHCB, as Prometheus's convert_classic_histograms_to_nhcb records them) under this name")
	var canaryBuckets floatList
	fs.Var(&canaryBuckets, "canary-buckets", "the canary's classic bucket upper bounds when they differ from --buckets (a release that changed the buckets; default: --buckets)")
	var restarts restartFlags
	fs.Var(&restarts, "restart", "POD@MINUTE: restart a pod (counters reset) --scrape-offset plus half a --scrape-interval after the start of minute MINUTE (0-based from --start), which is in the next minute when that passes 60s; refused after the last scrape; POD is canary-3, baseline-0 or the full pod name; repeatable, also for one pod")
	var gaps restartFlags
	fs.Var(&gaps, "scrape-gap", "POD@FROM-TO: the pod's scrapes fail from minute FROM to minute TO (0-based from --start, whole minutes, up == 0 and no samples); POD as for --restart; repeatable")
	podP99 := fs.Bool("truth-pod-p99", true, "include per-pod p99 in the truth file")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "parallel workers")
	rename := fs.String("rename-labels", "", "name the service, track and pod labels otherwise in every series, e.g. service=service.name,track=deployment.track,pod=k8s.pod.name (Prometheus 3's UTF-8 names, as OpenTelemetry writes them)")
	quiet := fs.Bool("quiet", false, "no progress lines")
	profile := fs.String("cpuprofile", "", "write a CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		return o, "", err
	}
	if fs.NArg() > 0 {
		return o, "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return o, "", fmt.Errorf("--out is required")
	}
	if *minutes < 1 {
		return o, "", fmt.Errorf("--minutes must be >= 1")
	}
	// Checked as an int: int32 would wrap 4294967299 to schema 3.
	if *schema < -4 || *schema > 8 {
		return o, "", fmt.Errorf("--schema %d: Prometheus's native histogram schemas are -4 to 8", *schema)
	}
	start, err := startTime(*startS, *endS, *minutes, time.Now())
	if err != nil {
		return o, "", err
	}
	c.Start = start
	o = Options{
		Sim: c, Minutes: *minutes, OutDir: *out, TruthFile: *truth,
		ScrapeInterval: *interval, ScrapeOffset: *offset,
		Metric: *metric, Service: *service, Job: *job, Schema: int32(*schema),
		ClassicBuckets: buckets, CanaryBuckets: canaryBuckets, NHCBMetric: *nhcb, TruthPodP99: *podP99, Workers: *workers,
	}
	if !*quiet {
		o.Progress = os.Stderr
	}
	// Before anything is written (a +Inf bound failed only in the NHCB's
	// first sample, after --out was created).
	if err := sim.CheckClassicBuckets(buckets); err != nil {
		return o, "", fmt.Errorf("--buckets %s: %w", buckets.String(), err)
	}
	if err := sim.CheckClassicBuckets(canaryBuckets); canaryBuckets != nil && err != nil {
		return o, "", fmt.Errorf("--canary-buckets %s: %w", canaryBuckets.String(), err)
	}
	if *rename != "" {
		o.RenameLabels = map[string]string{}
		for _, kv := range strings.Split(*rename, ",") {
			from, to, ok := strings.Cut(kv, "=")
			if !ok || to == "" || !slices.Contains([]string{"service", "track", "pod"}, from) {
				return o, "", fmt.Errorf("--rename-labels: %q is not service=NAME, track=NAME or pod=NAME", kv)
			}
			o.RenameLabels[from] = to
		}
	}
	if *canarySchema != "" {
		cs, err := strconv.ParseInt(*canarySchema, 10, 32)
		if err != nil || cs < -4 || cs > 8 {
			return o, "", fmt.Errorf("--canary-schema %s: Prometheus's native histogram schemas are -4 to 8", *canarySchema)
		}
		o.CanarySchema = new(int32(cs))
	}
	for _, r := range restarts {
		rs, err := parseRestart(r, o)
		if err != nil {
			return o, "", err
		}
		o.Restarts = append(o.Restarts, rs)
	}
	for _, gs := range gaps {
		gap, err := parseScrapeGap(gs, o)
		if err != nil {
			return o, "", err
		}
		o.ScrapeGaps = append(o.ScrapeGaps, gap)
	}
	return o, *profile, nil
}

// startTime is the first minute's start: --start, else --end (else now)
// less the minutes.
func startTime(startS, endS string, minutes int, now time.Time) (time.Time, error) {
	dur := time.Duration(minutes) * time.Minute
	switch {
	case startS != "":
		t, err := time.Parse(time.RFC3339, startS)
		if err != nil {
			return time.Time{}, fmt.Errorf("--start: %w", err)
		}
		start := t.UTC()
		if !start.Equal(start.Truncate(time.Minute)) {
			return time.Time{}, fmt.Errorf("--start must be a whole UTC minute, got %s", startS)
		}
		return start, nil
	case endS != "":
		t, err := time.Parse(time.RFC3339, endS)
		if err != nil {
			return time.Time{}, fmt.Errorf("--end: %w", err)
		}
		return t.UTC().Add(-dur).Truncate(time.Minute), nil
	default:
		return now.UTC().Add(-dur).Truncate(time.Minute), nil
	}
}

// parseScrapeGap parses POD@FROM-TO.
func parseScrapeGap(s string, o Options) (ScrapeGap, error) {
	podS, span, ok := strings.Cut(s, "@")
	fromS, toS, ok2 := strings.Cut(span, "-")
	from, err1 := strconv.Atoi(fromS)
	to, err2 := strconv.Atoi(toS)
	if !ok || !ok2 || err1 != nil || err2 != nil || from < 0 || to <= from || to > o.Minutes {
		return ScrapeGap{}, fmt.Errorf("--scrape-gap %q: want POD@FROM-TO with 0 <= FROM < TO <= %d", s, o.Minutes)
	}
	r, err := parseRestart(podS+"@0", o)
	if err != nil {
		return ScrapeGap{}, fmt.Errorf("--scrape-gap %q: %w", s, err)
	}
	return ScrapeGap{Fleet: r.Fleet, Index: r.Index,
		From: o.Sim.Start.Add(time.Duration(from) * time.Minute), To: o.Sim.Start.Add(time.Duration(to) * time.Minute)}, nil
}

// parseRestart parses POD@MINUTE.
func parseRestart(s string, o Options) (Restart, error) {
	podS, minS, ok := strings.Cut(s, "@")
	if !ok {
		return Restart{}, fmt.Errorf("--restart %q: want POD@MINUTE", s)
	}
	m, err := strconv.Atoi(minS)
	if err != nil || m < 0 || m >= o.Minutes {
		return Restart{}, fmt.Errorf("--restart %q: minute must be in [0, %d)", s, o.Minutes)
	}
	podS = strings.TrimPrefix(podS, o.Service+"-")
	fleet, idxS, ok := strings.Cut(podS, "-")
	idx, err := strconv.Atoi(idxS)
	if !ok || err != nil || (fleet != sim.FleetBaseline && fleet != sim.FleetCanary) {
		return Restart{}, fmt.Errorf("--restart %q: pod must be like canary-3 or %s-canary-3", s, o.Service)
	}
	half := (o.ScrapeInterval / 2).Truncate(time.Second)
	at := o.Sim.Start.Add(time.Duration(m)*time.Minute + o.ScrapeOffset + half)
	return Restart{Fleet: fleet, Index: idx, Pod: sim.PodName(o.Service, fleet, idx), Time: at.UTC()}, nil
}
