package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

type dsNote struct {
	Purpose string
	DS      *dataset
}

// report gathers every figure of a run.
type report struct {
	Plan      plan
	Started   time.Time
	Elapsed   time.Duration
	Command   string
	Machine   machineInfo
	Datasets  []dsNote
	Eff       []effRow
	Acc       []accRow
	Avg       []avgRow
	Scale     []scaleRow
	Clean     []cleanCell
	Reg       []regCell
	Parity    []parityRow
	Panel     []panelRow
	PanelNote string
}

type machineInfo struct {
	NProc      int
	CPU        string
	MemTotal   string
	GoVersion  string
	Prometheus string
	Kernel     string
	// Tree is the commit the run was built from, and the Go files under
	// pkg/ and cmd/ that differed from it.
	Tree string
}

func machine() machineInfo {
	m := machineInfo{NProc: runtime.NumCPU(), GoVersion: runtime.Version()}
	m.CPU = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if bin, err := toolsBinary("prometheus"); err == nil {
		if out, err := exec.Command(bin, "--version").CombinedOutput(); err == nil {
			m.Prometheus = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
		}
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	}
	m.Tree = tree()
	return m
}

// tree names the commit and the uncommitted Go files of pkg/ and cmd/.
func tree() string {
	root, err := procs.Root()
	if err != nil {
		return "?"
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	t := "commit " + strings.TrimSpace(string(head))
	out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", "pkg/*.go", "cmd/*.go").Output()
	if err == nil {
		var dirty []string
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			if len(line) > 3 {
				dirty = append(dirty, strings.TrimSpace(line[3:]))
			}
		}
		if len(dirty) > 0 {
			t += " with uncommitted changes to " + strings.Join(dirty, ", ")
		}
	}
	return t
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func metStr(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func pct(x float64) string { return fmt.Sprintf("%.2f%%", x*100) }
func ms(s float64) string  { return fmt.Sprintf("%.1f ms", s*1000) }

// summaryRow is one line of the targets table.
type summaryRow struct{ Item, Measured, Target, Status string }

func (r *report) targets() []summaryRow {
	var rows []summaryRow
	for _, e := range r.Eff {
		rows = append(rows,
			summaryRow{fmt.Sprintf("1 efficiency %d pods %s: dashboard sequential / engine", e.Pods, e.Kind), fmt.Sprintf("%.2fx (%s vs %s)", e.ratioSeq(), ms(e.DashSeq), ms(e.Engine)), ">= 3x", metStr(e.ratioSeq() >= 3)},
			summaryRow{fmt.Sprintf("1 efficiency %d pods %s: dashboard concurrent / engine", e.Pods, e.Kind), fmt.Sprintf("%.2fx (%s vs %s)", e.ratioConc(), ms(e.DashConc), ms(e.Engine)), ">= 3x", metStr(e.ratioConc() >= 3)})
	}
	for _, e := range r.Eff {
		rows = append(rows, summaryRow{fmt.Sprintf("2 overhead %d pods %s: engine / raw HTTP", e.Pods, e.Kind), fmt.Sprintf("%.3f (%s vs %s)", e.overhead(), ms(e.Engine), ms(e.Raw)), "<= 1.10", metStr(e.overhead() <= 1.10)})
	}
	if len(r.Scale) > 0 {
		big := r.Scale[0]
		for _, s := range r.Scale {
			if s.Pods*s.Minutes > big.Pods*big.Minutes {
				big = s
			}
		}
		mb := float64(big.HWMKiB) / 1024
		rows = append(rows,
			summaryRow{fmt.Sprintf("3 scale %d pods x %d min: peak RSS", big.Pods, big.Minutes), fmt.Sprintf("%.1f MiB", mb), "< 200 MB", metStr(mb*1.048576 < 200)},
			summaryRow{fmt.Sprintf("3 scale %d pods x %d min: engine / raw", big.Pods, big.Minutes), fmt.Sprintf("%.3f (%s vs %s)", big.ratio(), ms(big.Engine), ms(big.Raw)), "<= 1.2", metStr(big.ratio() <= 1.2)})
		if big.RawAll > 0 {
			rows = append(rows, summaryRow{fmt.Sprintf("3 scale %d pods x %d min: engine / raw of all its requests (with health)", big.Pods, big.Minutes), fmt.Sprintf("%.3f (%s vs %s)", big.ratioAll(), ms(big.Engine), ms(big.RawAll)), "<= 1.2", metStr(big.ratioAll() <= 1.2)})
		}
	}
	for _, a := range r.Acc {
		rows = append(rows, summaryRow{fmt.Sprintf("4 accuracy %d pods %s %s: max rel. error", a.Pods, a.Kind, verdict.QuantileLabel(a.Quantile)),
			fmt.Sprintf("%s (%d/%d minutes within bound, bound up to %s)", pct(a.ErrMax), a.WithinBound, a.N, pct(a.BoundMax)), "within bucket bound", metStr(a.WithinBound == a.N)})
	}
	rows = append(rows, r.judgementTargets()...)
	for _, pr := range r.Panel {
		rows = append(rows, summaryRow{fmt.Sprintf("6 panel render %d minutes", pr.Minutes), fmt.Sprintf("%.0f ms", pr.RenderMs), "(no target)", "reported"})
	}
	if r.PanelNote != "" {
		rows = append(rows, summaryRow{"6 panel render", r.PanelNote, "(no target)", "not measured"})
	}
	return rows
}

func (r *report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nPairwise benchmark (%s mode), %s, %d CPU (%s), %s, %s; %.0fs\n\n", r.Plan.Name, r.Started.Format(time.RFC3339), r.Machine.NProc, r.Machine.CPU, r.Machine.GoVersion, r.Machine.Prometheus, r.Elapsed.Seconds())
	rows := r.targets()
	w := [3]int{4, 8, 6}
	for _, x := range rows {
		w[0], w[1], w[2] = max(w[0], len(x.Item)), max(w[1], len(x.Measured)), max(w[2], len(x.Target))
	}
	fmt.Fprintf(&b, "%-*s  %-*s  %-*s  %s\n", w[0], "item", w[1], "measured", w[2], "target", "status")
	for _, x := range rows {
		fmt.Fprintf(&b, "%-*s  %-*s  %-*s  %s\n", w[0], x.Item, w[1], x.Measured, w[2], x.Target, x.Status)
	}
	return b.String()
}

// complete reports what a smoke run failed to measure.
func (r *report) complete() error {
	var errs []error
	if len(r.Eff) == 0 {
		errs = append(errs, errors.New("no efficiency figures"))
	}
	if len(r.Acc) == 0 || len(r.Avg) == 0 {
		errs = append(errs, errors.New("no accuracy figures"))
	}
	if len(r.Scale) == 0 {
		errs = append(errs, errors.New("no scale figures"))
	}
	if len(r.Clean) == 0 || len(r.Reg) == 0 {
		errs = append(errs, errors.New("no judgement figures"))
	}
	if len(r.Parity) == 0 {
		errs = append(errs, errors.New("no judgement parity figures"))
	}
	for _, p := range r.Parity {
		if p.Decisions == 0 || p.Mismatches > 0 {
			errs = append(errs, fmt.Errorf("judgement parity %s: %d decisions compared, %d differ between the in-process path and Prometheus + engine (%s)", p.Kind, p.Decisions, p.Mismatches, p.FirstMismatch))
		}
	}
	for _, e := range r.Eff {
		if !(e.Engine > 0 && e.DashSeq > 0 && e.DashConc > 0 && e.Raw > 0) {
			errs = append(errs, fmt.Errorf("efficiency %d pods %s: a timing is zero", e.Pods, e.Kind))
		}
	}
	for _, s := range r.Scale {
		if !(s.Engine > 0 && s.Raw > 0 && s.HWMKiB > 0) {
			errs = append(errs, fmt.Errorf("scale %d pods %d min: a figure is zero", s.Pods, s.Minutes))
		}
	}
	return errors.Join(errs...)
}

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...); b.WriteString("\n") }
	p("# Pairwise benchmarks")
	p("")
	p("Generated by `scripts/bench.sh` (`cmd/pairwise-bench`); do not edit by hand, re-run it. Every figure below comes from one run,")
	p("on the pinned Prometheus 3.13.5 serving data written by `tools/cmd/pairwise-gen` (simulated fleets with an exact ground-truth file).")
	p("Timings are the **median of %d repetitions** after one untimed warm-up round; in each repetition the measured sides take turns", r.Plan.Reps)
	p("going first, so both meet equally warm Prometheus caches. Targets that are missed are reported here, not hidden.")
	p("")
	p("- Command: `%s` (%s mode)", r.Command, r.Plan.Name)
	p("- Date: %s (run took %.0f s)", r.Started.Format(time.RFC3339), r.Elapsed.Seconds())
	p("- Machine: %d CPUs (nproc), %s, %s RAM, Linux %s", r.Machine.NProc, r.Machine.CPU, r.Machine.MemTotal, r.Machine.Kernel)
	p("- Go: %s; Prometheus: %s, on 127.0.0.1, compaction off (generated 2 h blocks served as they are)", r.Machine.GoVersion, r.Machine.Prometheus)
	p("- Source: %s", r.Machine.Tree)
	p("")
	p("## Summary")
	p("")
	p("| item | measured | target | status |")
	p("|---|---|---|---|")
	for _, x := range r.targets() {
		p("| %s | %s | %s | %s |", x.Item, x.Measured, x.Target, x.Status)
	}
	p("")

	if len(r.Eff) > 0 {
		p("## 1. Efficiency, and 2. overhead")
		p("")
		p("A 60-minute window, 2 fleets, 4 quantiles (p50, p99, p99.9, p99.99) and the request rate.")
		p("")
		p("- **engine**: `engine.Analyze` in process, reading raw series: per fleet the histogram range query `sum(increase(h{sel}[75s])) * 0.8` or `sum by (le) (increase(h_bucket{sel}[75s])) * 0.8` (a whole minute at a 15 s scrape) and beside it the health query (`prom.HealthCountsQuery`: the samples per series, read once), all four at once; JSON decoding (one pass, straight into histograms), quantiles, bounds, pairing and verdicts in Go.")
		p("- **dashboard**: what a Grafana dashboard issues for the same figures: per fleet, one `histogram_quantile(q, sum(rate(h{sel}[1m])))` (classic: `sum by (le) (rate(h_bucket{sel}[1m]))`) range query per quantile and one rate query (`histogram_count(sum(rate(h{sel}[1m])))`, classic `sum(rate(h_count{sel}[1m]))`): 10 range queries at step 60 s, each response JSON-decoded. *Sequential* issues them one after another; *concurrent* all at once (Grafana runs panel queries concurrently).")
		p("- **raw**: the engine's own requests, recorded from one analysis (same queries, ranges and phases: the requests the engine sent before reading any answer go out at once, then the next phase; read raw, the engine sends its four at once, each fleet's health beside its histograms), sent again with `net/http`, bodies read and discarded: the floor the engine cannot go below.")
		p("")
		p("| pods/fleet | kind | engine (min-max) | dashboard seq. | dashboard conc. | raw | seq./engine | conc./engine | engine/raw | reps |")
		p("|---|---|---|---|---|---|---|---|---|---|")
		for _, e := range r.Eff {
			p("| %d | %s | %s (%.0f-%.0f) | %s | %s | %s | %.2fx | %.2fx | %.3f | %d |", e.Pods, e.Kind, ms(e.Engine), e.EngineMin*1000, e.EngineMax*1000, ms(e.DashSeq), ms(e.DashConc), ms(e.Raw), e.ratioSeq(), e.ratioConc(), e.overhead(), e.Reps)
		}
		p("")
		p("Where the engine's time over raw goes: `pairwise-bench analyze --url URL --minutes 60 --cpuprofile cpu.prof` profiles repeated analyses. On 10 pods x 60 minutes (native), measured 2026-11-26 (400 analyses), an analysis took about 8.3 ms of CPU in the engine (16 ms on 2026-11-25): reading the two histogram answers 2.4 ms (`pkg/prom`'s one-pass reader, which reads a bucket in one step, 0.7 ms of it gunzip with klauspost/compress), turning them into histograms 0.8 ms, each fleet's minutes' quantiles and bounds 0.8 ms, the tail counts of the pooled thresholds 1.0 ms (both spread over every CPU) and the decision 0.6 ms. Raw pays only net/http's own gunzip of the same bodies. Measured from the end of the last answer's body to the result (a transport around the engine's client noting when each body ends), an analysis takes 2.3 ms (median of 180): the last fleet's statistics, the tail counts and the decision; the reading itself overlaps the answers' arrival only in part. On 2 cores this competes with Prometheus answering the same queries, so with few pods engine/raw stays above 1.10 for native histograms in most runs; with many pods Prometheus's own work dominates and the ratio approaches 1.")
		p("")
	}

	if len(r.Scale) > 0 {
		p("## 3. Scale")
		p("")
		p("Clean fleets, default 500 requests/s in total (the per-pod rate falls as pods grow; the series count is what costs Prometheus), native histograms (schema 3) read by the engine. One data set per pod count holds %d minutes; the 1 h, 6 h and 24 h windows all end at its last minute. Classic buckets were cut to `%s` (+Inf) for these data sets only, to keep generation time down: the engine reads the native histogram and does not touch them.", r.Plan.ScaleWindows[len(r.Plan.ScaleWindows)-1]+1, r.Plan.ClassicScale)
		p("The engine runs in a child process (this binary re-executed with a hidden `analyze` subcommand) that does nothing but two `engine.Analyze` calls: the first is *cold* (new connection, JSON reflection caches, heap growth: what a one-shot CLI judge pays), the second *warm* (what the long-running data source pays; the ratio uses it). Times are measured inside the child; its peak RSS is `VmHWM` from `/proc/self/status` (maximum over the repetitions). *raw* is the same two range queries via `net/http`, concurrently, bodies discarded. *raw, all* is every request the engine sends, its health queries included, recorded from one analysis and sent again as section 2's raw: the engine's own floor.")
		p("")
		p("| pods/fleet | series | window | engine warm | engine cold | raw | warm/raw | raw, all | warm/raw, all | peak RSS | reps | data generation |")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, s := range r.Scale {
			all, allRatio := "-", "-"
			if s.RawAll > 0 {
				all, allRatio = ms(s.RawAll), fmt.Sprintf("%.3f", s.ratioAll())
			}
			p("| %d | %s | %d min | %s | %s | %s | %.3f | %s | %s | %.1f MiB | %d | %.0f s |", s.Pods, s.Series, s.Minutes, ms(s.Engine), ms(s.EngineCold), ms(s.Raw), s.ratio(), all, allRatio, float64(s.HWMKiB)/1024, s.Reps, s.GenSeconds)
		}
		p("")
	}

	if len(r.Acc) > 0 {
		p("## 4. Accuracy")
		p("")
		p("Per fleet-minute p99 and p99.9 from the engine against the exact quantile of the minute's observations, those between each series' last scrape before the minute and its last scrape in it, which the engine's whole-minute read covers (the generator's truth file), over the 60 analysed minutes x 2 fleets. Relative error = |engine - truth| / truth. The bound is the relative width of the bucket holding the true quantile: for native schema 3, 2^(1/8) - 1 = 9.05%%; for classic buckets, (upper - lower) / truth of that minute's bucket. The canary serves 5%% of the traffic (~1,100 observations per minute), so its p99.9 rests on about one observation.")
		p("")
		p("| pods/fleet | kind | quantile | minutes | median | p95 | max | within bound | bound |")
		p("|---|---|---|---|---|---|---|---|---|")
		for _, a := range r.Acc {
			p("| %d | %s | %s | %d | %s | %s | %s | %d/%d | %s |", a.Pods, a.Kind, verdict.QuantileLabel(a.Quantile), a.N, pct(a.ErrMedian), pct(a.ErrP95), pct(a.ErrMax), a.WithinBound, a.N, boundText(a))
		}
		p("")
		p("The common mistake, averaging the pods' exact p99s (from the truth file, so no bucket error at all) instead of taking the quantile of the merged histogram:")
		p("")
		p("| pods/fleet | fleet-minutes | median signed error | p95 abs. error | max abs. error | minutes understated | median / max understatement factor |")
		p("|---|---|---|---|---|---|---|")
		for _, a := range r.Avg {
			p("| %d | %d | %s | %s | %s | %d | %.2fx / %.2fx |", a.Pods, a.N, pct(a.SignedMedian), pct(a.AbsP95), pct(a.AbsMax), a.Understated, a.UnderMedianFactor, a.UnderMaxFact)
		}
		p("")
	}

	if len(r.Clean) > 0 {
		b.WriteString(r.judgementMarkdown())
	}

	p("## 6. Panel render time")
	p("")
	if len(r.Panel) > 0 {
		p("Headless Chromium (`/usr/bin/chromium`, playwright-core) loading the harness page built by `tests/harness` with its sample frames files (sample data of the right shape, not engine output), driven by `cmd/pairwise-bench/panel/bench.mjs`. *Render* is measured in the page: from the harness handing the frames to React (`data-harness=\"ready\"`) until the strip and a chart path exist and two animation frames have passed. *Load* is from navigation start to the same point (includes loading the 8 MB bundle). 1,400 x 900 viewport; fresh browser context per load.")
		p("")
		p("| minutes | frames file | strip cells | render (median) | load (median) |")
		p("|---|---|---|---|---|")
		for _, pr := range r.Panel {
			p("| %d | `%s` | %d | %.0f ms | %.0f ms |", pr.Minutes, pr.File, pr.Cells, pr.RenderMs, pr.Load)
		}
		if len(r.Panel) == 2 && r.Panel[0].RenderMs > 0 {
			p("")
			p("1,440 minutes take %.2fx the render time of 60 minutes.", r.Panel[1].RenderMs/r.Panel[0].RenderMs)
		}
	} else {
		p("%s", r.PanelNote)
	}
	p("")

	p("## Rule pack at scale and the recorded-series reader (`rules-scale`)")
	p("")
	p("A separate mode, not part of the run above (its rule groups evaluate at the wall clock, so it waits for them):")
	p("")
	p("    go run ./cmd/pairwise-bench rules-scale [--smoke] [--cache DIR] [--only reader,group,every-group,fleet,every] [--every-listed=false]")
	p("")
	p("It prints one table, every ratio measured side by side in the same run:")
	p("")
	p("- **reader**: `engine.Analyze` of a %s-minute window of %s pods per fleet (classic, six buckets) read from the rule pack's recorded minute series (`engine.ReadRecorded`) vs from raw pods (`engine.ReadRaw`), on one Prometheus, alternating; both results must be equal. The records are the rule pack's own (rendered by `pkg/rulegen` for the fleets, classic), backfilled over the data's history by `pairwise-backfill` with Prometheus's rule engine, up to the minute before the window's end, so the newest minute and the minutes before the data are read raw, as live. Target: <= 0.5 s.", "1,440", "1,000")
	p("- **group**: the evaluation time of one canary's group rendered by `pkg/rulegen.Render` from the branch's pack vs a floor group recording only `sum(increase(h{fleet}[75s])) * 0.8` for both fleets, at 10 and 100 pods per fleet and 60- and 240-minute windows. Both are evaluated once a minute over the generated history by `pairwise-backfill --timings` (Prometheus's own rule engine and TSDB), so every evaluation reads a minute full of raw samples and, after the first window's minutes, the pack's window rules read a whole window of its own records; the median of each group's last 15 evaluations is compared. Targets: <= 3x the floor, flat in window length.")
	p("- **fleet**: 200 canaries x 20 pods: in a live Prometheus at a one-minute interval for 5 minutes, `prometheus_rule_group_iterations_missed_total` (target 0), `process_resident_memory_bytes` and `go_memstats_heap_inuse_bytes` before and after loading the pack, and `prometheus_tsdb_head_series` added per canary (the live data end when the run starts, so these evaluations read empty raw minutes); and over history as for **group**, the most all groups took in one minute, against the interval (target < 10%%).")
	p("- **every-group**: the same comparison for the pack's form for many canaries: one generic group with `judgeEvery` judging 20 services (each its own baseline and canary fleets, label `service`, fleets by `track`) vs a floor group recording every fleet's whole-minute `sum by (service, track) (increase(h[75s])) * 0.8`, at 10 and 100 pods per fleet and 60- and 240-minute windows, both evaluated in one pass over the same history; the ratio is also the ratio per canary. Targets: <= 3x the floor, flat in window length.")
	p("- **every**: 200 services x 20 pods a fleet: the `judgeEvery` group, the same group with every service listed as a canary, and the floor, each evaluated over the same history on its own; per canary and against the floor (target 3x), and against the one-minute interval (target < 10%%). `--every-listed=false` leaves out the listed form, which takes most of the part's time (28 of 31 minutes on a 2-core machine) and has no target.")
	p("")
	p("The last full run's table is in `docs/benchmarks-rules-scale.md` (written by `rules-scale` without `--smoke`).")
	p("")
	p("`--smoke` runs 10 pods x 120 minutes (reader), 10 pods (group), 3 services of 10 pods (every-group), 20 canaries for 140 s (fleet) and 5 services of 4 pods (every): about 7 minutes on 2 cores, mostly waiting for evaluations.")
	p("")
	p("## Reading these figures")
	p("")
	for _, line := range r.findings() {
		p("- %s", line)
	}
	p("")
	p("## Data sets")
	p("")
	p("| purpose | pairwise-gen arguments | generation | summary |")
	p("|---|---|---|---|")
	for _, d := range r.Datasets {
		p("| %s | `%s` | %.1f s | %s |", d.Purpose, strings.Join(d.DS.Args, " "), d.DS.GenSeconds, d.DS.Summary)
	}
	p("")
	return b.String()
}

func minOrDash(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.0f min", x)
}

func boundText(a accRow) string {
	if a.Kind == prom.Native {
		return fmt.Sprintf("%s (%s)", pct(a.BoundMax), a.BoundNote)
	}
	return fmt.Sprintf("per minute, up to %s", pct(a.BoundMax))
}

func toolsBinary(name string) (string, error) {
	dir, err := procs.ToolsBin()
	if err != nil {
		return "", err
	}
	return dir + "/" + name, nil
}

// findings are sentences computed from the figures, so the prose cannot drift
// from the tables.
func (r *report) findings() []string {
	var out []string
	out = append(out, r.judgementFindings()...)
	out = append(out, "Averaging per-pod p99s understates the fleet p99 when pods hold few observations each (many pods, or the small canary); with few pods of identical behaviour it is close to the fleet p99 on these clean data. The engine's error stays inside the bucket bound in every minute.")
	if r.PanelNote != "" {
		out = append(out, "Panel: "+r.PanelNote+".")
	}
	return out
}
