package main

// The rules-scale mode measures the rule pack at scale and the readers of
// its recorded minute series, side by side in one run:
//
//  1. reader: engine.Analyze of a long window read from the recorded
//     minute series vs from raw pods (the rule pack's classic records,
//     backfilled by pairwise-backfill from the generated pods);
//  2. per canary: the evaluation time of one canary's rule group (rendered
//     by pkg/rulegen.Render, whatever pack the branch holds) vs a floor
//     group that only records the whole-minute sum(increase(h{fleet}[75s])) * 0.8 for both fleets,
//     at several pod counts and window lengths;
//  3. fleet: many canaries at a one-minute interval: missed iterations,
//     evaluation time against the interval, memory and series per canary.
//
// Part 2 and part 3's evaluation times come from pairwise-backfill
// --timings: Prometheus's own rule engine (rules.Group.Eval, promql.Engine)
// over the generated TSDB, evaluating the pack and the floor group once a
// minute over history, so every evaluation reads a minute full of raw
// samples and, after the first window's minutes, window rules read a whole
// window of the group's own records (the steady state of a pack running for
// hours). The last steadyEvaluations of each group are kept. Part 3 also
// runs the canaries in a live Prometheus at the one-minute interval for
// missed iterations, memory and series; its data end when the run starts,
// so its live evaluations read empty raw minutes and say nothing of time.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// rulesPlan is the sizes of one rules-scale run.
type rulesPlan struct {
	ReaderPods, ReaderMinutes, ReaderReps int
	GroupPods, GroupWindows               []int
	FleetCanaries, FleetPods              int
	FleetSeconds                          int
	EveryServices, EveryPods              int
	// EveryGroupServices services are judged by one judgeEvery group at
	// each of GroupPods pods a fleet and GroupWindows windows.
	EveryGroupServices int
	// NoListed leaves out the every part's listed group (every service
	// listed as a canary), which takes most of that part's time and is not
	// a target row.
	NoListed bool
}

func rulesFullPlan() rulesPlan {
	return rulesPlan{ReaderPods: 1000, ReaderMinutes: 1440, ReaderReps: 5,
		GroupPods: []int{10, 100}, GroupWindows: []int{60, 240},
		FleetCanaries: 200, FleetPods: 20, FleetSeconds: 330, EveryServices: 200, EveryPods: 20,
		EveryGroupServices: 20}
}

func rulesSmokePlan() rulesPlan {
	return rulesPlan{ReaderPods: 10, ReaderMinutes: 120, ReaderReps: 3,
		GroupPods: []int{10}, GroupWindows: []int{60, 240},
		FleetCanaries: 20, FleetPods: 20, FleetSeconds: 140, EveryServices: 5, EveryPods: 4,
		EveryGroupServices: 3}
}

type readerRow struct {
	Pods, Minutes   int
	Recorded, Raw   timing
	Equal           bool
	Served          string
	BackfillSeconds float64
}

type groupRow struct {
	Pods, Window       int
	Pack, Floor        []float64 // evaluation seconds, one per evaluation
	PackRules, Samples int
}

type fleetRow struct {
	Canaries, Pods            int
	Seconds                   int
	Missed                    float64
	Evaluations               int
	Groups                    int     // groups evaluated at least once in the run
	MaxGroup, SumGroups       float64 // seconds, over history: the slowest group's median evaluation, and the most all groups took in one minute
	RSSBefore, RSSAfter       float64
	HeapBefore, HeapAfter     float64
	SeriesBefore, SeriesAfter float64
}

// runRulesScale is `pairwise-bench rules-scale`.
func runRulesScale(args []string) error {
	fs := flag.NewFlagSet("rules-scale", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "small sizes (a few minutes)")
	cache := fs.String("cache", "", "directory keeping generated data sets (and backfilled records) between runs")
	only := fs.String("only", "", "comma-separated parts: reader,group,every-group,fleet,every (default all)")
	listed := fs.Bool("every-listed", true, "in the every part, also time the same services listed as canaries (most of that part's time; not a target row)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p := rulesFullPlan()
	if *smoke {
		p = rulesSmokePlan()
	}
	p.NoListed = !*listed
	want := func(s string) bool { return *only == "" || slices.Contains(strings.Split(*only, ","), s) }
	started := time.Now()
	e, err := newEnv(*cache, stderrLog(started))
	if err != nil {
		return err
	}
	defer e.close()
	ctx := context.Background()
	var readers []readerRow
	var groups []groupRow
	var fleet *fleetRow
	var every *everyRow
	var everyGroups []everyGroupRow
	if want("reader") {
		row, err := benchReader(ctx, e, p)
		if err != nil {
			return fmt.Errorf("reader: %w", err)
		}
		readers = append(readers, row)
	}
	if want("group") {
		for _, pods := range p.GroupPods {
			for _, w := range p.GroupWindows {
				row, err := benchGroup(ctx, e, p, pods, w)
				if err != nil {
					return fmt.Errorf("group %d pods %d minutes: %w", pods, w, err)
				}
				groups = append(groups, row)
			}
		}
	}
	if want("every-group") {
		for _, pods := range p.GroupPods {
			for _, w := range p.GroupWindows {
				row, err := benchEveryGroup(ctx, e, p, pods, w)
				if err != nil {
					return fmt.Errorf("every-group %d pods %d minutes: %w", pods, w, err)
				}
				everyGroups = append(everyGroups, row)
			}
		}
	}
	if want("fleet") {
		row, err := benchFleet(ctx, e, p)
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		fleet = &row
	}
	if want("every") {
		row, err := benchEvery(ctx, e, p)
		if err != nil {
			return fmt.Errorf("every: %w", err)
		}
		every = &row
	}
	var table strings.Builder
	printRulesScale(io.MultiWriter(os.Stdout, &table), started, readers, groups, everyGroups, fleet, every)
	if *smoke || *only != "" {
		return nil
	}
	doc := "# Rule pack at scale: the last full run\n\nWritten by `go run ./cmd/pairwise-bench rules-scale --cache DIR` (method: `docs/benchmarks.md`).\n\n```" + table.String() + "```\n"
	return os.WriteFile(filepath.Join(e.root, "docs", "benchmarks-rules-scale.md"), []byte(doc), 0o644)
}

// backfillRecords writes into recDir the blocks the rule pack text (rendered
// by pkg/rulegen for the checkout fleets, classic) records over the data set's
// minutes from start to the minute before the window's end, evaluated by
// pairwise-backfill over a linked copy of dataDir: the blocks it adds to
// the copy are the records. It returns the backfill's duration.
func backfillRecords(e *env, dataDir, recDir string, text []byte, p rulesPlan, start time.Time) (float64, error) {
	rules := filepath.Join(e.tmp, "records.yml")
	if err := os.WriteFile(rules, text, 0o644); err != nil {
		return 0, err
	}
	bin, err := e.backfillBinary()
	if err != nil {
		return 0, err
	}
	work, tmp := recDir+".data", recDir+".tmp"
	os.RemoveAll(work)
	os.RemoveAll(tmp)
	defer os.RemoveAll(work)
	if err := linkTree(dataDir, work); err != nil {
		return 0, err
	}
	before, err := os.ReadDir(work)
	if err != nil {
		return 0, err
	}
	e.logf("reader: backfilling the rule pack's minute records of %d pods x %d minutes with pairwise-backfill", p.ReaderPods, p.ReaderMinutes)
	t0 := time.Now()
	summary, err := procs.Backfill(bin, work, []string{rules}, start, benchEnd.Add(-time.Second), 0, "")
	if err != nil {
		return 0, err
	}
	took := time.Since(t0).Seconds()
	e.logf("reader: %s", summary)
	after, err := os.ReadDir(work)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return 0, err
	}
	added := 0
	for _, a := range after {
		// New blocks only: the copy's WAL, lock and head chunks are not records.
		if !a.IsDir() || a.Name() == "wal" || a.Name() == "chunks_head" || slices.ContainsFunc(before, func(b os.DirEntry) bool { return b.Name() == a.Name() }) {
			continue
		}
		if err := os.Rename(filepath.Join(work, a.Name()), filepath.Join(tmp, a.Name())); err != nil {
			return 0, err
		}
		added++
	}
	if added == 0 {
		return 0, fmt.Errorf("pairwise-backfill added no block to %s: %s", work, summary)
	}
	return took, os.Rename(tmp, recDir)
}

// benchReader times the engine over the recorded minute series and over
// raw pods on the same Prometheus, and checks that both give one result.
func benchReader(ctx context.Context, e *env, p rulesPlan) (readerRow, error) {
	row := readerRow{Pods: p.ReaderPods, Minutes: p.ReaderMinutes}
	ds, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(p.ReaderPods), "--minutes", strconv.Itoa(p.ReaderMinutes+1),
		"--end", benchEnd.Format(time.RFC3339), "--seed", "7", "--buckets", "0.01,0.025,0.05,0.1,0.25,1", "--truth-pod-p99=false")
	if err != nil {
		return row, err
	}
	// The records are backfilled once per data set, next to it, from the
	// data's first minute (the pack ran before the canary) up to the minute
	// before the window's end (the newest minute is not recorded yet, as in
	// a live Prometheus).
	// They are kept per pack: a pack whose records differ (another label,
	// another rule) records them again.
	start := benchEnd.Add(-time.Duration(p.ReaderMinutes+1) * time.Minute)
	text, err := rulegen.Render(rulegen.File{Canaries: []rulegen.Canary{{Name: "checkout", Metric: metric,
		Baseline: baseSel.String(), Canary: canSel.String(), Histogram: string(prom.Classic)}}})
	if err != nil {
		return row, err
	}
	sum := sha256.Sum256(text)
	recDir := filepath.Join(filepath.Dir(ds.Dir), fmt.Sprintf("records-%d-%x", start.Unix(), sum[:6]))
	if _, err := os.Stat(recDir); err != nil {
		if row.BackfillSeconds, err = backfillRecords(e, ds.Dir, recDir, text, p, start); err != nil {
			return row, err
		}
	}
	withRecords := &dataset{Dir: filepath.Join(e.tmp, fmt.Sprintf("reader-%d", p.ReaderPods))}
	os.RemoveAll(withRecords.Dir)
	if err := linkTree(ds.Dir, withRecords.Dir); err != nil {
		return row, err
	}
	if err := linkTree(recDir, withRecords.Dir); err != nil {
		return row, err
	}
	srv, err := e.serve(withRecords)
	if err != nil {
		return row, err
	}
	defer srv.Stop()
	client, err := newClient(srv.URL)
	if err != nil {
		return row, err
	}
	req, err := analysisRequest(benchEnd, p.ReaderMinutes, prom.Classic)
	if err != nil {
		return row, err
	}
	results := map[engine.Reading]*engine.Result{}
	analyze := func(read engine.Reading) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			r := req
			r.Read = read
			t0 := time.Now()
			res, err := engine.Analyze(ctx, client, r)
			results[read] = res
			return time.Since(t0), err
		}
	}
	e.logf("reader: %d pods x %d minutes, %d reps", p.ReaderPods, p.ReaderMinutes, p.ReaderReps)
	ts, err := alternate(p.ReaderReps, analyze(engine.ReadRecorded), analyze(engine.ReadRaw))
	if err != nil {
		return row, err
	}
	row.Recorded, row.Raw = ts[0], ts[1]
	rec, raw := results[engine.ReadRecorded], results[engine.ReadRaw]
	row.Equal = fmt.Sprintf("%+v", rec.Window) == fmt.Sprintf("%+v", raw.Window)
	var served []string
	for _, s := range rec.Served {
		served = append(served, fmt.Sprintf("%s: %s %d+%d raw", s.What, s.Path, s.RecordedMinutes, s.RawMinutes))
	}
	row.Served = strings.Join(served, "; ")
	return row, nil
}

// liveData generates fleets whose data ends at a whole minute far enough
// ahead for the generation and the start of Prometheus to finish before it,
// for rule groups evaluating at the wall clock.
func liveData(e *env, pods, minutes int) (*dataset, time.Time, error) {
	// pairwise-gen writes about a pod-minute per millisecond here; twice that, and 30 s.
	lead := 30*time.Second + time.Duration(2*pods*minutes)*time.Millisecond
	end := time.Now().Add(lead).UTC().Truncate(time.Minute).Add(time.Minute)
	ds, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(pods), "--minutes", strconv.Itoa(minutes),
		"--end", end.Format(time.RFC3339), "--seed", "7", "--buckets", "0.1,1", "--truth-pod-p99=false")
	return ds, end, err
}

// loadRules writes rule files and a configuration naming them next to the
// server's configuration and asks Prometheus to reload it.
func loadRules(srv *procs.Prometheus, interval time.Duration, files map[string]string) error {
	dir := srv.ConfigDir
	var names []string
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
		names = append(names, strconv.Quote(name))
	}
	slices.Sort(names)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 15s\n  evaluation_interval: %s\nrule_files: [%s]\n", interval, strings.Join(names, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	return srv.Reload()
}

// ruleGroup is one group of GET /api/v1/rules.
type ruleGroup struct {
	Name           string    `json:"name"`
	File           string    `json:"file"`
	EvaluationTime float64   `json:"evaluationTime"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	Rules          []struct {
		Health    string `json:"health"`
		LastError string `json:"lastError"`
	} `json:"rules"`
}

func apiGet(ctx context.Context, base, path string, q url.Values, into any) error {
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Status != "success" {
		return fmt.Errorf("GET %s: %s %s %s", path, resp.Status, env.Error, procs.TailLines(string(b), 3))
	}
	return json.Unmarshal(env.Data, into)
}

func ruleGroups(ctx context.Context, base string) ([]ruleGroup, error) {
	var data struct {
		Groups []ruleGroup `json:"groups"`
	}
	err := apiGet(ctx, base, "/api/v1/rules", url.Values{"type": {"record"}}, &data)
	return data.Groups, err
}

// selfMetric sums the samples of a metric Prometheus exposes about itself
// on /metrics (it does not scrape itself here).
func selfMetric(ctx context.Context, base, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sum, found := 0.0, false
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("/metrics: %s: %q", name, line)
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("/metrics has no %s", name)
	}
	return sum, nil
}

// collect polls the rule groups until a few seconds past until and returns
// each group's evaluation times of evaluations in (from, until], one per
// evaluation.
func collect(ctx context.Context, base string, from, until time.Time) (map[string][]float64, []ruleGroup, error) {
	out := map[string][]float64{}
	seen := map[string]time.Time{}
	var last []ruleGroup
	for time.Now().Before(until.Add(3 * time.Second)) {
		groups, err := ruleGroups(ctx, base)
		if err != nil {
			return nil, nil, err
		}
		last = groups
		for _, g := range groups {
			if g.LastEvaluation.After(from) && !g.LastEvaluation.After(until) && !g.LastEvaluation.Equal(seen[g.Name]) {
				seen[g.Name] = g.LastEvaluation
				out[g.Name] = append(out[g.Name], g.EvaluationTime)
			}
		}
		time.Sleep(time.Second)
	}
	return out, last, nil
}

// ruleErrors names the first failing rule of the groups last evaluated
// after from, if any (evaluations before the generated data's end fail to
// append, out of bounds).
func ruleErrors(groups []ruleGroup, from time.Time) error {
	for _, g := range groups {
		if !g.LastEvaluation.After(from) {
			continue
		}
		for _, r := range g.Rules {
			if r.LastError != "" {
				return fmt.Errorf("group %s: %s", g.Name, r.LastError)
			}
		}
	}
	return nil
}

// packFile renders the pack on the branch for n canaries over the bench's
// fleets (same fleets, distinct names).
func packFile(n, window int) (string, error) {
	f := rulegen.File{}
	for i := 0; i < n; i++ {
		c := rulegen.Canary{Name: fmt.Sprintf("c%03d", i), Metric: metric, Baseline: baseSel.String(), Canary: canSel.String(), Histogram: string(prom.Native)}
		if window > 0 {
			c.Overrides = verdict.Overrides{WindowMinutes: &window}
		}
		f.Canaries = append(f.Canaries, c)
	}
	b, err := rulegen.Render(f)
	return string(b), err
}

// floorGroup only records each fleet's merged histogram of the last minute.
func floorGroup() string {
	return "groups:\n- name: floor\n  rules:\n" +
		"  - record: floor:" + metric + ":increase_1m\n    expr: " + strconv.Quote(prom.NativeQuery(metric, baseSel, prom.DefaultScrapeInterval)) + "\n    labels: {fleet: baseline}\n" +
		"  - record: floor:" + metric + ":increase_1m\n    expr: " + strconv.Quote(prom.NativeQuery(metric, canSel, prom.DefaultScrapeInterval)) + "\n    labels: {fleet: canary}\n"
}

// steadyEvaluations is how many of each group's last evaluations a timing
// keeps: all of them read a whole window of the group's own records.
const steadyEvaluations = 15

// benchGroup times one canary's group beside the floor group.
func benchGroup(ctx context.Context, e *env, p rulesPlan, pods, window int) (groupRow, error) {
	row := groupRow{Pods: pods, Window: window}
	evaluated := window + steadyEvaluations + 5
	ds, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(pods), "--minutes", strconv.Itoa(evaluated+5),
		"--end", benchEnd.Format(time.RFC3339), "--seed", "7", "--buckets", "0.1,1", "--truth-pod-p99=false")
	if err != nil {
		return row, err
	}
	pack, err := packFile(1, window)
	if err != nil {
		return row, err
	}
	row.PackRules = strings.Count(pack, "- record:")
	e.logf("group: %d pods, %d-minute window: evaluating the pack and the floor group over %d minutes", pods, window, evaluated)
	row.Pack, row.Floor, err = e.pairTimings(ds, map[string]string{"pack.yml": pack, "floor.yml": floorGroup()}, evaluated, "pairwise-c000", "floor")
	return row, err
}

// pairTimings evaluates the rule files over the last evaluated minutes of
// the data set in one pass and returns groups a's and b's last
// steadyEvaluations evaluation durations, in seconds.
func (e *env) pairTimings(ds *dataset, files map[string]string, evaluated int, a, b string) ([]float64, []float64, error) {
	times, _, err := e.groupTimings(ds, files, benchEnd.Add(-time.Duration(evaluated)*time.Minute), benchEnd)
	if err != nil {
		return nil, nil, err
	}
	ta, tb := lastN(times[a], steadyEvaluations), lastN(times[b], steadyEvaluations)
	if len(ta) < steadyEvaluations || len(tb) < steadyEvaluations {
		return nil, nil, fmt.Errorf("too few evaluations (%s %d, %s %d)", a, len(ta), b, len(tb))
	}
	return ta, tb, nil
}

// groupTimings evaluates the rule files over [start, end] of a private copy
// of the data set with pairwise-backfill and returns each group's evaluation
// durations in seconds, in time order, and the sum over groups at each
// evaluation minute.
func (e *env) groupTimings(ds *dataset, files map[string]string, start, end time.Time) (map[string][]float64, map[int64]float64, error) {
	bin, err := e.backfillBinary()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(e.tmp, "timings-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	if err := linkTree(ds.Dir, data); err != nil {
		return nil, nil, err
	}
	var ruleFiles []string
	for name, text := range files {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			return nil, nil, err
		}
		ruleFiles = append(ruleFiles, f)
	}
	slices.Sort(ruleFiles)
	timingsFile := filepath.Join(dir, "timings.tsv")
	summary, err := procs.Backfill(bin, data, ruleFiles, start, end, time.Minute, timingsFile)
	if err != nil {
		return nil, nil, err
	}
	e.logf("%s", summary)
	b, err := os.ReadFile(timingsFile)
	if err != nil {
		return nil, nil, err
	}
	perGroup, perMinute := map[string][]float64{}, map[int64]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, nil, fmt.Errorf("pairwise-backfill --timings: line %q", line)
		}
		at, err1 := strconv.ParseInt(f[1], 10, 64)
		secs, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return nil, nil, fmt.Errorf("pairwise-backfill --timings: line %q", line)
		}
		perGroup[f[0]] = append(perGroup[f[0]], secs)
		perMinute[at/60000] += secs
	}
	return perGroup, perMinute, nil
}

// backfillBinary builds pairwise-backfill once per run.
func (e *env) backfillBinary() (string, error) {
	bin := filepath.Join(e.tmp, "pairwise-backfill")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	return bin, procs.BuildBackfill(bin)
}

// lastN is the last n values of xs (all of them when there are fewer).
func lastN(xs []float64, n int) []float64 {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}

// benchFleet runs many canaries at a one-minute interval.
func benchFleet(ctx context.Context, e *env, p rulesPlan) (fleetRow, error) {
	row := fleetRow{Canaries: p.FleetCanaries, Pods: p.FleetPods, Seconds: p.FleetSeconds}
	ds, end, err := liveData(e, p.FleetPods, 2*verdict.Default().WindowMinutes+10)
	if err != nil {
		return row, err
	}
	srv, err := e.serve(ds)
	if err != nil {
		return row, err
	}
	defer srv.Stop()
	pack, err := packFile(p.FleetCanaries, 0)
	if err != nil {
		return row, err
	}
	figures := func() (rss, heap, series float64, err error) {
		if rss, err = selfMetric(ctx, srv.URL, "process_resident_memory_bytes"); err != nil {
			return
		}
		if heap, err = selfMetric(ctx, srv.URL, "go_memstats_heap_inuse_bytes"); err != nil {
			return
		}
		series, err = selfMetric(ctx, srv.URL, "prometheus_tsdb_head_series")
		return
	}
	if row.RSSBefore, row.HeapBefore, row.SeriesBefore, err = figures(); err != nil {
		return row, err
	}
	if err := loadRules(srv, time.Minute, map[string]string{"pack.yml": pack}); err != nil {
		return row, err
	}
	from := end
	if now := time.Now(); now.After(from) {
		from = now
	}
	e.logf("fleet: %d canaries x %d pods, 1-minute interval, for %ds", p.FleetCanaries, p.FleetPods, p.FleetSeconds)
	evals, last, err := collect(ctx, srv.URL, from, from.Add(time.Duration(p.FleetSeconds)*time.Second))
	if err != nil {
		return row, err
	}
	if err := ruleErrors(last, from); err != nil {
		return row, err
	}
	for _, ts := range evals {
		row.Evaluations += len(ts)
	}
	row.Groups = len(evals)
	if row.Missed, err = selfMetric(ctx, srv.URL, "prometheus_rule_group_iterations_missed_total"); err != nil {
		return row, err
	}
	if row.RSSAfter, row.HeapAfter, row.SeriesAfter, err = figures(); err != nil {
		return row, err
	}
	srv.Stop()

	// The time: the same canaries evaluated once a minute over history with
	// full raw minutes and full windows (groupTimings).
	window := verdict.Default().WindowMinutes
	evaluated := window + steadyEvaluations + 5
	hist, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(p.FleetPods), "--minutes", strconv.Itoa(evaluated+5),
		"--end", benchEnd.Format(time.RFC3339), "--seed", "7", "--buckets", "0.1,1", "--truth-pod-p99=false")
	if err != nil {
		return row, err
	}
	e.logf("fleet: evaluating %d canaries over %d minutes of history", p.FleetCanaries, evaluated)
	perGroup, perMinute, err := e.groupTimings(hist, map[string]string{"pack.yml": pack}, benchEnd.Add(-time.Duration(evaluated)*time.Minute), benchEnd)
	if err != nil {
		return row, err
	}
	for _, ts := range perGroup {
		row.MaxGroup = max(row.MaxGroup, median(lastN(ts, steadyEvaluations)))
	}
	var minutes []int64
	for m := range perMinute {
		minutes = append(minutes, m)
	}
	slices.Sort(minutes)
	for _, m := range minutes[max(0, len(minutes)-steadyEvaluations):] {
		row.SumGroups = max(row.SumGroups, perMinute[m])
	}
	return row, nil
}

func printRulesScale(w io.Writer, started time.Time, readers []readerRow, groups []groupRow, everyGroups []everyGroupRow, fleet *fleetRow, every *everyRow) {
	m := machine()
	fmt.Fprintf(w, "\nPairwise rules-scale benchmark, %s, %d CPU (%s), %s, %s; %s\n\n", started.UTC().Format(time.RFC3339), m.NProc, m.CPU, m.GoVersion, m.Prometheus, time.Since(started).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "item\tmeasured\ttarget\tstatus")
	for _, r := range readers {
		rec, raw := r.Recorded.median(), r.Raw.median()
		fmt.Fprintf(tw, "reader %d pods x %d min: recorded vs raw\t%s vs %s (%.1fx faster; same result: %v)\t<= 0.5 s\t%s\n",
			r.Pods, r.Minutes, ms(rec), ms(raw), raw/rec, r.Equal, metStr(rec <= 0.5 && r.Equal))
	}
	for _, g := range groups {
		pack, floor := median(g.Pack), median(g.Floor)
		fmt.Fprintf(tw, "group %d pods, %d-min window: pack (%d rules) / floor\t%.1fx (%s vs %s; %d and %d evaluations)\t<= 3x\t%s\n",
			g.Pods, g.Window, g.PackRules, pack/floor, ms(pack), ms(floor), len(g.Pack), len(g.Floor), metStr(pack <= 3*floor))
	}
	// Flatness: the longest window's pack time over the shortest's, per pod count.
	for i, a := range groups {
		for _, b := range groups[i+1:] {
			if a.Pods == b.Pods && b.Window > a.Window {
				ratio := median(b.Pack) / median(a.Pack)
				fmt.Fprintf(tw, "group %d pods: pack %d-min / %d-min window\t%.2fx\t~1x (flat)\t%s\n", a.Pods, b.Window, a.Window, ratio, metStr(ratio <= 1.5))
			}
		}
	}
	for _, g := range everyGroups {
		ev, floor, n := median(g.Every), median(g.Floor), float64(g.Services)
		fmt.Fprintf(tw, "every-group %d services x %d pods, %d-min window: judgeEvery (%d rules) / floor\t%.1fx (%s vs %s a canary; %d and %d evaluations)\t<= 3x\t%s\n",
			g.Services, g.Pods, g.Window, g.Rules, ev/floor, ms(ev/n), ms(floor/n), len(g.Every), len(g.Floor), metStr(ev <= 3*floor))
	}
	for i, a := range everyGroups {
		for _, b := range everyGroups[i+1:] {
			if a.Pods == b.Pods && b.Window > a.Window {
				ratio := median(b.Every) / median(a.Every)
				fmt.Fprintf(tw, "every-group %d pods: judgeEvery %d-min / %d-min window\t%.2fx\t~1x (flat)\t%s\n", a.Pods, b.Window, a.Window, ratio, metStr(ratio <= 1.5))
			}
		}
	}
	if f := fleet; f != nil {
		fmt.Fprintf(tw, "fleet %d canaries x %d pods, live %ds: missed iterations\t%.0f (%d of %d groups evaluated, %d evaluations)\t0\t%s\n", f.Canaries, f.Pods, f.Seconds, f.Missed, f.Groups, f.Canaries, f.Evaluations, metStr(f.Missed == 0 && f.Groups == f.Canaries))
		fmt.Fprintf(tw, "fleet: evaluation / 1-min interval (history, full windows)\tslowest group %.2f%%, all groups at most %.1f%% in a minute\t< 10%%\t%s\n",
			100*f.MaxGroup/60, 100*f.SumGroups/60, metStr(f.SumGroups < 6))
		fmt.Fprintf(tw, "fleet: memory\tRSS %.0f -> %.0f MiB, heap in use %.0f -> %.0f MiB\t\t\n", f.RSSBefore/(1<<20), f.RSSAfter/(1<<20), f.HeapBefore/(1<<20), f.HeapAfter/(1<<20))
		fmt.Fprintf(tw, "fleet: head series added per canary\t%.1f (%.0f -> %.0f)\t\t\n", (f.SeriesAfter-f.SeriesBefore)/float64(f.Canaries), f.SeriesBefore, f.SeriesAfter)
	}
	if v := every; v != nil {
		floor, ev, listed := median(v.Floor), median(v.Every), median(v.Listed)
		n := float64(v.Services)
		fmt.Fprintf(tw, "every %d services x %d pods: judgeEvery group (%d rules) / floor\t%.1fx (%s vs %s; %s a canary)\t<= 3x\t%s\n",
			v.Services, v.Pods, v.EveryRules, ev/floor, ms(ev), ms(floor), ms(ev/n), metStr(ev <= 3*floor))
		if len(v.Listed) > 0 {
			fmt.Fprintf(tw, "every: the same services listed as canaries (%d rules) / floor\t%.1fx (%s; %s a canary)\t\t\n", v.ListedRules, listed/floor, ms(listed), ms(listed/n))
		}
		fmt.Fprintf(tw, "every: judgeEvery group / 1-min interval\t%.2f%%\t< 10%%\t%s\n", 100*ev/60, metStr(ev < 6))
	}
	tw.Flush()
	for _, r := range readers {
		fmt.Fprintf(w, "\nreader: %s\n", r.Served)
	}
}
