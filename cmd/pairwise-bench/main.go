// Command pairwise-bench measures Pairwise side by side with the dashboard
// way of doing the same thing, in one run, on the pinned Prometheus 3.13.5
// serving generated fleets of known ground truth:
//
//  1. efficiency: engine.Analyze vs one histogram_quantile range query per
//     quantile per fleet (+ one rate query per fleet), sequential and concurrent;
//  2. overhead: engine time / time of its own two raw HTTP range queries;
//  3. scale: 10/100/1,000 pods per fleet x 1 h/6 h/24 h windows, engine time,
//     peak RSS of a child process running only the analysis, raw query time;
//  4. accuracy: engine p99/p99.9 vs the exact ground truth, the error of
//     averaging per-pod p99s, and the bucket-width bound;
//  5. judgement: the reference rule, the significance gate and the evidence
//     rule over 24 h of identical fleets (shapes x traffic x shares x
//     histogram kinds), and minutes to roll back injected regressions beside
//     an oracle;
//  6. panel: render time of 60 vs 1,440 minutes in headless Chromium.
//
// Usage (from the project root; scripts/bench.sh does this):
//
//	go run ./cmd/pairwise-bench [--smoke] [--doc docs/benchmarks.md] [--cache DIR] [--reps N]
//
// Timings are medians of --reps repetitions, with one untimed warm-up round,
// rotating which side runs first. Missed targets are reported, not failures:
// the exit status is non-zero only when something could not be measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/sim"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "analyze" {
		if err := childAnalyze(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "pairwise-bench analyze:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "rules-scale" {
		if err := runRulesScale(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "pairwise-bench rules-scale:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pairwise-bench:", err)
		os.Exit(1)
	}
}

// plan is the sizes of one run.
type plan struct {
	Name         string
	Reps         int
	EffReps      int   // repetitions of the (cheap) efficiency timings
	EffPods      []int // pods per fleet of the efficiency/accuracy data sets
	EffMinutes   int   // minutes generated (the analysed window is the last 60)
	ScalePods    []int
	ScaleWindows []int // minutes; the data sets hold the largest window
	ScaleReps    int
	BigScaleReps int    // repetitions at 1,000 pods x 24 h (about 85 s per repetition on 2 cores)
	ClassicScale string // --buckets of the scale data sets
	// Judge is the judgement matrix (judgement.go); ParityMinutes the
	// length of the cell also run through Prometheus and the engine.
	Judge         judgePlan
	ParityMinutes int
	Panel         bool
}

func fullPlan() plan {
	return plan{
		Name: "full", Reps: 9, EffReps: 15,
		EffPods: []int{10, 100}, EffMinutes: 120,
		ScalePods: []int{10, 100, 1000}, ScaleWindows: []int{60, 360, 1440}, ScaleReps: 5, BigScaleReps: 3,
		ClassicScale:  "0.1,1",
		Judge:         fullJudge(),
		ParityMinutes: 180,
		Panel:         true,
	}
}

// fullJudge is the whole judgement matrix: every shape, traffic and share
// over a day of identical fleets; the regressions at 5% and 50% share for
// every shape and traffic (a day at 50 and 500 req/s, 6 hours at 5,000).
func fullJudge() judgePlan {
	return judgePlan{
		Shapes: sim.Shapes, RPS: []float64{50, 500, 5000}, Shares: []float64{0.01, 0.05, 0.20, 0.50}, DayMinutes: 1440,
		RegShares: []float64{0.05, 0.50}, RegRPS: []float64{50, 500, 5000}, RegMinutes: []int{0, 0, 360},
	}
}

// quickJudge is a first look: every shape at 500 req/s, 5% and 50% share,
// 6 hours.
func quickJudge() judgePlan {
	return judgePlan{
		Shapes: sim.Shapes, RPS: []float64{500}, Shares: []float64{0.05, 0.50}, DayMinutes: 360,
		RegShares: []float64{0.05, 0.50}, RegRPS: []float64{500}, RegMinutes: []int{360},
	}
}

// smokeJudge is two cells, minutes long.
func smokeJudge() judgePlan {
	return judgePlan{
		Shapes: []string{sim.ShapeLognormal}, RPS: []float64{500}, Shares: []float64{0.05}, DayMinutes: 120,
		RegShares: []float64{0.05}, RegRPS: []float64{500}, RegMinutes: []int{150},
	}
}

func smokePlan() plan {
	return plan{
		Name: "smoke", Reps: 3, EffReps: 3,
		EffPods: []int{10}, EffMinutes: 70,
		ScalePods: []int{10}, ScaleWindows: []int{60}, ScaleReps: 2, BigScaleReps: 2,
		ClassicScale:  "0.1,1",
		Judge:         smokeJudge(),
		ParityMinutes: 100,
		Panel:         false,
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("pairwise-bench", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "small sizes (< 60 s); prints the summary, writes no document unless --doc is given")
	doc := fs.String("doc", "", "markdown file to write (default docs/benchmarks.md in full mode, none in smoke mode)")
	cache := fs.String("cache", "", "directory to keep generated data sets in between runs (default: a temporary directory)")
	reps := fs.Int("reps", 0, "repetitions per timing (default 9 full, 3 smoke)")
	only := fs.String("only", "", "comma-separated sections to run: efficiency,scale,accuracy,judgement,panel (default all)")
	command := fs.String("command", "", "the command line to record in the document (scripts/bench.sh sets it)")
	results := fs.String("results", "", "also write every figure as JSON to this file")
	render := fs.String("render", "", "measure nothing: render --doc from a --results JSON file of an earlier run")
	matrix := fs.String("judge-matrix", "", "judgement matrix: smoke, quick or full (default: smoke in smoke mode, else full)")
	workers := fs.Int("workers", 2, "goroutines simulating judgement cells")
	offsetsFlag := fs.Bool("scrape-offsets", false, "scrape every pod of the in-process judgement cells at its own offset in the 15 s interval (0 to 14 s, fixed per pod), as Prometheus spreads its targets, instead of every pod on the whole minute (not the parity section)")
	coveredFlag := fs.Bool("covered-minutes", false, "read every minute of the in-process judgement cells as a one-minute increase(), which covers the scrape intervals inside the minute only (three quarters of it at 15 s), as Pairwise read minutes before it read whole minutes: what whole minutes bring (not the parity section)")
	sharesFlag := fs.String("judge-shares", "", "comma-separated canary shares (0.05 for 5%) replacing the judgement matrix's, for its identical fleets and its regressions alike (e.g. 0.02,0.1,0.33 with --judge-matrix quick)")
	rpsFlag := fs.String("judge-rps", "", "comma-separated traffic levels (req/s) replacing the judgement matrix's, for its identical fleets and its regressions alike (e.g. 50,5000 with --judge-matrix quick)")
	episodesFlag := fs.String("episodes", "", "EVERY,SECONDS,FACTOR: every pod of both fleets of the in-process judgement cells is FACTOR times slower for SECONDS about once every EVERY minutes (a noisy neighbour, a node under pressure; not the parity section)")
	stallsFlag := fs.String("stalls", "", "EVERY,SECONDS: every pod of the in-process judgement cells pauses for SECONDS (at most 1) about once every EVERY minutes, the requests arriving meanwhile waiting for its end (clumped tails; not the parity section)")
	rampFlag := fs.String("ramp", "", "STEPS,EVERY: the canary's weight of the in-process judgement cells rises to the cell's share in STEPS equal steps, one every EVERY minutes, from each deployment's start, as Flagger's stepWeight or Argo Rollouts' setWeight raise it (deployments then start every 60 minutes, regressions every 120; not the parity section)")
	classicFlag := fs.String("classic-buckets", "", "comma-separated classic bucket bounds (seconds, ascending) replacing pairwise-gen's for the in-process judgement cells, e.g. client_golang's DefBuckets 0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10 (not the parity section)")
	modelFlag := fs.String("judge-model", "", "NAME=VALUE,... overriding the latency model and traffic of the in-process judgement cells, identical and regressed alike (not the parity section): median, body-sigma, slow-share, slow-factor, slow-sigma, costly-share, costly-factor, lognormal-sigma, heavy-tail-index, load-latency, diurnal, burst-probability, tail-slow-share, tail-stretch (pkg/sim's Config)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p := fullPlan()
	if *smoke {
		p = smokePlan()
	}
	if *reps > 0 {
		p.Reps = *reps
		p.EffReps = *reps
		p.ScaleReps = *reps
	}
	switch *matrix {
	case "":
	case "smoke":
		p.Judge = smokeJudge()
	case "quick":
		p.Judge = quickJudge()
	case "full":
		p.Judge = fullJudge()
	default:
		return fmt.Errorf("--judge-matrix %q: want smoke, quick or full", *matrix)
	}
	p.Judge.Workers = *workers
	if *rpsFlag != "" {
		if err := p.Judge.setRPS(*rpsFlag); err != nil {
			return err
		}
	}
	if *sharesFlag != "" {
		if err := p.Judge.setShares(*sharesFlag); err != nil {
			return err
		}
	}
	st, err := parseStalls(*stallsFlag)
	if err != nil {
		return err
	}
	p.Judge.Stalls = st
	if p.Judge.Episodes, err = parseEpisodes(*episodesFlag); err != nil {
		return err
	}
	if p.Judge.Ramp, err = parseRamp(*rampFlag); err != nil {
		return err
	}
	if p.Judge.ClassicBuckets, err = parseClassicBuckets(*classicFlag); err != nil {
		return err
	}
	if p.Judge.Model, err = parseModel(*modelFlag); err != nil {
		return err
	}
	p.Judge.ScrapeOffsets = *offsetsFlag
	p.Judge.CoveredMinutes = *coveredFlag
	if *doc == "" && !*smoke {
		*doc = "docs/benchmarks.md"
	}
	if *command == "" {
		*command = "go run ./cmd/pairwise-bench " + strings.Join(args, " ")
	}
	if *render != "" {
		b, err := os.ReadFile(*render)
		if err != nil {
			return err
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		fmt.Println(r.summary())
		return os.WriteFile(*doc, []byte(r.markdown()), 0o644)
	}
	sections := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			sections[s] = true
		}
	}
	want := func(s string) bool { return len(sections) == 0 || sections[s] }

	started := time.Now()
	logf := stderrLog(started)
	e, err := newEnv(*cache, logf)
	if err != nil {
		return err
	}
	defer e.close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := context.Background()
	r := &report{Plan: p, Started: started.UTC(), Command: *command, Machine: machine()}

	if want("efficiency") || want("accuracy") {
		if err := benchEfficiency(ctx, e, p, r, want("efficiency"), want("accuracy")); err != nil {
			return fmt.Errorf("efficiency/accuracy: %w", err)
		}
	}
	if want("scale") {
		if err := benchScale(ctx, e, p, r, self); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if want("judgement") {
		if err := benchJudgementMatrix(p.Judge, r, logf); err != nil {
			return fmt.Errorf("judgement: %w", err)
		}
		rows, err := parity(ctx, e, paritySpec(p.ParityMinutes))
		if err != nil {
			return fmt.Errorf("judgement parity: %w", err)
		}
		r.Parity = rows
		for _, row := range rows {
			logf("judgement parity, %s: %d decisions compared, %d mismatches", row.Kind, row.Decisions, row.Mismatches)
		}
	}
	if want("panel") {
		if p.Panel {
			benchPanel(e, p, r)
		} else {
			r.PanelNote = "not measured in smoke mode"
		}
	}
	r.Elapsed = time.Since(started)
	fmt.Println(r.summary())
	if *doc != "" {
		path := *doc
		if !filepath.IsAbs(path) {
			path = filepath.Join(e.root, path)
		}
		if err := os.WriteFile(path, []byte(r.markdown()), 0o644); err != nil {
			return err
		}
		logf("wrote %s", path)
	}
	if *results != "" {
		// Figures can be NaN (no rollback, no minute): JSON cannot hold
		// them, so a failure here is reported and does not lose the run.
		b, err := json.MarshalIndent(r, "", " ")
		if err == nil {
			err = os.WriteFile(*results, b, 0o644)
		}
		if err != nil {
			logf("results JSON not written: %v", err)
		}
	}
	if *smoke {
		// Smoke mode must prove that every section measured something.
		if err := r.complete(); err != nil {
			return err
		}
	}
	return nil
}

// childAnalyze is the hidden `analyze` subcommand: one engine.Analyze in a
// fresh process, printing its duration and the process's peak RSS as JSON.
func childAnalyze(args []string) error {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	u := fs.String("url", "", "Prometheus URL")
	minutes := fs.Int("minutes", 60, "window minutes")
	end := fs.String("end", benchEnd.Format(time.RFC3339), "window end")
	kind := fs.String("kind", "native", "histogram kind")
	read := fs.String("read", "raw", "where the fleets are read from: raw, recorded or auto")
	profile := fs.String("cpuprofile", "", "write a CPU profile of --profile-runs more analyses to this file")
	runs := fs.Int("profile-runs", 20, "analyses to profile")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, *end)
	if err != nil {
		return err
	}
	client, err := newClient(*u)
	if err != nil {
		return err
	}
	req, err := analysisRequest(t, *minutes, prom.Kind(*kind))
	if err != nil {
		return err
	}
	if req.Read, err = engine.ParseReading(*read); err != nil {
		return err
	}
	// The first analysis of a process is cold (connection, JSON reflection
	// caches, heap growth); the second is what a long-running data source sees.
	cold, _, err := runEngine(context.Background(), client, req)
	if err != nil {
		return err
	}
	d, res, err := runEngine(context.Background(), client, req)
	if err != nil {
		return err
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		for i := 0; i < *runs; i++ {
			if _, _, err := runEngine(context.Background(), client, req); err != nil {
				return err
			}
		}
		pprof.StopCPUProfile()
		f.Close()
	}
	hwm, err := vmHWM()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(childResult{Seconds: d.Seconds(), ColdSeconds: cold.Seconds(), HWMKiB: hwm, Minutes: len(res.Minutes), Decision: string(res.Decision)})
}

type childResult struct {
	Seconds     float64 `json:"seconds"`
	ColdSeconds float64 `json:"cold_seconds"`
	HWMKiB      int64   `json:"hwm_kib"`
	Minutes     int     `json:"minutes"`
	Decision    string  `json:"decision"`
}
