package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/exposition"
	"github.com/pairwise-canary/pairwise/pkg/sim"
)

func init() { extraCommands["simulate"] = simulate }

// simulateFlags are the knobs of pkg/sim, named as tools/cmd/pairwise-gen
// names them so that a backfill and a live run describe the same fleets.
type simulateFlags struct {
	cfg                   sim.Config
	listen, start, end    string
	metric, service, job  string
	buckets               string
	bucketFactor          float64
	backfill, gen, truth  string
	minutes               int
	scrapeInterval        time.Duration
	quiet                 bool
	regressionStartMinute int
}

func newSimulateFlags(stderr io.Writer) (*flag.FlagSet, *simulateFlags) {
	d := sim.DefaultConfig(time.Time{})
	f := &simulateFlags{cfg: d}
	c := &f.cfg
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage:
  pairwise simulate [--listen 127.0.0.1:9464] [--scenario regression] [--start TIME] [knobs]
      serve /metrics for a baseline and a canary fleet, driven in real time by pkg/sim
  pairwise simulate --backfill DIR [--minutes 60] [--start TIME | --end TIME] [knobs]
      write the same scenario as a Prometheus TSDB (runs pairwise-gen), then exit

Scrape the live endpoint with honor_labels: true (the exposed job and instance
labels are those of the backfill) and scrape_native_histograms: true.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.listen, "listen", "127.0.0.1:9464", "address of the /metrics endpoint")
	fs.StringVar(&f.start, "start", "", "scenario minute 0, RFC 3339 or Unix seconds, a whole minute (default: the current minute; with --backfill: --end minus --minutes). Counters count from it: a past start is replayed at startup, so the live counters continue a backfill that began at the same start")
	fs.StringVar(&f.end, "end", "", "--backfill only: end of the history, a whole minute (default: the current minute)")
	fs.StringVar(&f.backfill, "backfill", "", "write a TSDB of --minutes minutes into this directory and exit")
	fs.IntVar(&f.minutes, "minutes", 60, "--backfill: minutes of history")
	fs.StringVar(&f.truth, "truth", "", "--backfill: also write the ground truth JSON here")
	fs.StringVar(&f.gen, "gen", "", "--backfill: the pairwise-gen binary (default: $PATH, then .tools/bin/pairwise-gen, built from tools/ when missing)")
	fs.DurationVar(&f.scrapeInterval, "scrape-interval", 15*time.Second, "--backfill: scrape interval the history is sampled at")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	fs.StringVar(&f.metric, "metric", "http_request_duration_seconds", "histogram metric name")
	fs.StringVar(&f.service, "service", "checkout", "service label value (and pod name prefix)")
	fs.StringVar(&f.job, "job", "checkout", "job label value")
	fs.StringVar(&f.buckets, "buckets", exposition.FormatBuckets(exposition.DefaultClassicBuckets), "classic bucket upper bounds, comma separated, strictly increasing (+Inf is added)")
	fs.Float64Var(&f.bucketFactor, "bucket-factor", exposition.DefaultBucketFactor, "native histogram bucket growth factor (1.1: schema 3, as the backfill)")
	fs.Int64Var(&c.Seed, "seed", d.Seed, "random seed: the same seed, scenario and start give the same requests")
	fs.StringVar(&c.Scenario, "scenario", d.Scenario, "scenario: "+strings.Join(sim.Scenarios, ", "))
	fs.IntVar(&c.PodsPerFleet, "pods", d.PodsPerFleet, "pods per fleet")
	fs.Float64Var(&c.TotalRPS, "total-rps", d.TotalRPS, "mean request rate of both fleets together (before bursts)")
	fs.Float64Var(&c.CanaryShare, "canary-share", d.CanaryShare, "canary share of the traffic")
	fs.Float64Var(&c.ErrorRatio, "error-ratio", d.ErrorRatio, "share of requests answered 500")
	fs.Float64Var(&c.MedianLatency, "median-latency", d.MedianLatency, "median latency of cheap requests, seconds")
	fs.Float64Var(&c.CostlyShare, "costly-share", d.CostlyShare, "share of costly requests")
	fs.Float64Var(&c.BurstProbability, "burst-probability", d.BurstProbability, "probability of a traffic burst per burst slot")
	fs.IntVar(&c.BurstSlotMinutes, "burst-slot-minutes", d.BurstSlotMinutes, "burst slot length in minutes (at most one burst per slot)")
	fs.Float64Var(&c.RegressionFactor, "regression-factor", d.RegressionFactor, "regression: canary latency factor")
	fs.IntVar(&c.RegressionStartMinute, "regression-start-minute", d.RegressionStartMinute, "regression: first slow minute, counted from --start")
	fs.Float64Var(&c.GCBurstFactor, "gc-burst-factor", d.GCBurstFactor, "gc-burst: factor on the canary's slow share and slow latency during bursts")
	fs.IntVar(&c.ColdStartMinutes, "cold-start-minutes", d.ColdStartMinutes, "cold-start: minutes until the canary is warm")
	fs.Float64Var(&c.ColdStartFactor, "cold-start-factor", d.ColdStartFactor, "cold-start: canary latency factor at minute 0")
	fs.IntVar(&c.BadPod, "bad-pod", d.BadPod, "bad-pod: index of the slow canary pod")
	fs.Float64Var(&c.BadPodFactor, "bad-pod-factor", d.BadPodFactor, "bad-pod: its latency factor")
	fs.Float64Var(&c.MixCostlyShare, "mix-costly-share", d.MixCostlyShare, "traffic-mix: canary's share of costly requests")
	fs.Float64Var(&c.MixShareFactor, "mix-share-factor", d.MixShareFactor, "traffic-mix: factor on the canary's traffic share")
	return fs, f
}

func simulate(args []string, stdout, stderr io.Writer) int {
	fs, f := newSimulateFlags(stderr)
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if f.backfill != "" {
		if err := f.runBackfill(time.Now(), stdout, stderr); err != nil {
			return fail(stderr, fmt.Errorf("backfill: %w", err))
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := f.serve(ctx, time.Now, stdout); err != nil {
		return fail(stderr, fmt.Errorf("simulate: %w", err))
	}
	return 0
}

// wholeMinute parses an RFC 3339 or Unix-seconds time that must be a whole minute.
func wholeMinute(name, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		secs, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil {
			return time.Time{}, fmt.Errorf("--%s %q is neither RFC 3339 (2026-11-21T14:00:00Z) nor Unix seconds", name, s)
		}
		t = time.Unix(secs, 0)
	}
	t = t.UTC()
	if !t.Equal(t.Truncate(time.Minute)) {
		return time.Time{}, fmt.Errorf("--%s %s is not a whole minute", name, t.Format(time.RFC3339))
	}
	return t, nil
}

// simulation validates the flags that both modes share.
func (f *simulateFlags) simulation(start time.Time) (*sim.Sim, []float64, error) {
	// NaN passes a "<= 1" check and gives no schema (Inf is schema -4).
	if !(f.bucketFactor > 1) {
		return nil, nil, fmt.Errorf("--bucket-factor must be > 1, got %v", f.bucketFactor)
	}
	f.cfg.Start = start
	s, err := sim.New(f.cfg)
	if err != nil {
		return nil, nil, err
	}
	buckets, err := parseFloats(f.buckets)
	if err == nil {
		err = sim.CheckClassicBuckets(buckets)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--buckets %s: %w", f.buckets, err)
	}
	return s, buckets, nil
}

// serve runs the live exposition until ctx ends.
func (f *simulateFlags) serve(ctx context.Context, now func() time.Time, stdout io.Writer) error {
	start := now().UTC().Truncate(time.Minute)
	if f.start != "" {
		var err error
		if start, err = wholeMinute("start", f.start); err != nil {
			return err
		}
	}
	if now().Sub(start) > 7*24*time.Hour {
		return fmt.Errorf("--start %s is more than a week ago: the counters would replay all of it", start.Format(time.RFC3339))
	}
	s, buckets, err := f.simulation(start)
	if err != nil {
		return err
	}
	began := time.Now()
	fleets, err := exposition.New(exposition.Options{
		Sim: s, Metric: f.metric, Service: f.service, Job: f.job,
		Buckets: buckets, BucketFactor: f.bucketFactor,
	}, now())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", fleets.Handler(now))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "pairwise simulate: %s scenario, seed %d, start %s; metrics at /metrics\n",
			f.cfg.Scenario, f.cfg.Seed, start.Format(time.RFC3339))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if !f.quiet {
		fmt.Fprintf(stdout, "pairwise simulate: %s scenario, seed %d, %d pods per fleet, canary share %g, start %s (%d requests replayed in %.1fs)\n",
			f.cfg.Scenario, f.cfg.Seed, f.cfg.PodsPerFleet, f.cfg.CanaryShare, start.Format(time.RFC3339),
			fleets.Observed(), time.Since(began).Seconds())
		fmt.Fprintf(stdout, "pairwise simulate: serving http://%s/metrics (%s native+classic, %s)\n", ln.Addr(), f.metric, exposition.RequestsMetric)
	}
	stop := make(chan struct{})
	go fleets.Run(stop, now)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		close(stop)
		return err
	case <-ctx.Done():
	}
	close(stop)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// genArgs are pairwise-gen's arguments for the same scenario and knobs.
func (f *simulateFlags) genArgs(start time.Time) []string {
	c := f.cfg
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args := []string{
		"--out", f.backfill,
		"--start", start.Format(time.RFC3339),
		"--minutes", strconv.Itoa(f.minutes),
		"--scrape-interval", f.scrapeInterval.String(),
		"--metric", f.metric, "--service", f.service, "--job", f.job,
		"--buckets", f.buckets,
		"--seed", strconv.FormatInt(c.Seed, 10),
		"--scenario", c.Scenario,
		"--pods", strconv.Itoa(c.PodsPerFleet),
		"--total-rps", g(c.TotalRPS),
		"--canary-share", g(c.CanaryShare),
		"--error-ratio", g(c.ErrorRatio),
		"--median-latency", g(c.MedianLatency),
		"--costly-share", g(c.CostlyShare),
		"--burst-probability", g(c.BurstProbability),
		"--burst-slot-minutes", strconv.Itoa(c.BurstSlotMinutes),
		"--regression-factor", g(c.RegressionFactor),
		"--regression-start-minute", strconv.Itoa(c.RegressionStartMinute),
		"--gc-burst-factor", g(c.GCBurstFactor),
		"--cold-start-minutes", strconv.Itoa(c.ColdStartMinutes),
		"--cold-start-factor", g(c.ColdStartFactor),
		"--bad-pod", strconv.Itoa(c.BadPod),
		"--bad-pod-factor", g(c.BadPodFactor),
		"--mix-costly-share", g(c.MixCostlyShare),
		"--mix-share-factor", g(c.MixShareFactor),
	}
	if schema, ok := schemaOf(f.bucketFactor); ok {
		args = append(args, "--schema", strconv.Itoa(schema))
	}
	if f.truth != "" {
		args = append(args, "--truth", f.truth)
	}
	if f.quiet {
		args = append(args, "--quiet")
	}
	return args
}

// schemaOf is the exponential schema client_golang picks for a native
// bucket factor (its pickSchema), so the backfill uses the live layout.
func schemaOf(factor float64) (int, bool) {
	if factor <= 1 {
		return 0, false
	}
	floor := math.Floor(math.Log2(math.Log2(factor)))
	switch {
	case floor <= -8:
		return 8, true
	case floor >= 4:
		return -4, true
	}
	return -int(floor), true
}

func (f *simulateFlags) runBackfill(now time.Time, stdout, stderr io.Writer) error {
	if f.minutes < 1 {
		return errors.New("--minutes must be >= 1")
	}
	dur := time.Duration(f.minutes) * time.Minute
	var start time.Time
	var err error
	switch {
	case f.start != "":
		if start, err = wholeMinute("start", f.start); err != nil {
			return err
		}
	case f.end != "":
		end, err := wholeMinute("end", f.end)
		if err != nil {
			return err
		}
		start = end.Add(-dur)
	default:
		start = now.UTC().Truncate(time.Minute).Add(-dur)
	}
	// A history may end up to two minutes ahead (the simulation is
	// deterministic): Prometheus stores live scrapes only after the newest
	// block, so ending the backfill at the next minute leaves no gap.
	if end := start.Add(dur); end.After(now.Add(2 * time.Minute)) {
		return fmt.Errorf("the history would end at %s, more than two minutes ahead: Prometheus would refuse live scrapes until then", end.Format(time.RFC3339))
	}
	if _, _, err := f.simulation(start); err != nil {
		return err
	}
	gen, err := findGen(f.gen, stderr)
	if err != nil {
		return err
	}
	cmd := exec.Command(gen, f.genArgs(start)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", gen, err)
	}
	if !f.quiet {
		fmt.Fprintf(stdout, "pairwise simulate: continue live with --start %s (the same scenario and knobs)\n", start.Format(time.RFC3339))
	}
	return nil
}

// findGen locates pairwise-gen: the flag, $PATH, .tools/bin of the working
// directory or its parents, and finally builds it from tools/ into .tools/bin.
func findGen(flagValue string, stderr io.Writer) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p, err := exec.LookPath("pairwise-gen"); err == nil {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		bin := filepath.Join(dir, ".tools", "bin", "pairwise-gen")
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
		if _, err := os.Stat(filepath.Join(dir, "tools", "cmd", "pairwise-gen")); err == nil {
			fmt.Fprintf(stderr, "pairwise simulate: building pairwise-gen into %s\n", bin)
			build := exec.Command("go", "build", "-o", bin, "./cmd/pairwise-gen")
			build.Dir = filepath.Join(dir, "tools")
			build.Stdout, build.Stderr = stderr, stderr
			if err := build.Run(); err != nil {
				return "", fmt.Errorf("build pairwise-gen: %w", err)
			}
			return bin, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("pairwise-gen not found: pass --gen, put it on $PATH, or run from the Pairwise repository (it builds tools/cmd/pairwise-gen)")
		}
		dir = parent
	}
}
