// Command pairwise-backfill evaluates Prometheus rule files over the history
// of a TSDB data directory, with Prometheus's own rule engine, and writes what
// the rules record into the same directory as blocks. A Prometheus started on
// the directory afterwards finds the recorded series as if it had evaluated
// the rules all along.
//
// It exists because `promtool tsdb create-blocks-from rules` (Prometheus
// 3.13.5) imports float results only, never native histograms, and evaluates
// each rule on its own over raw data, so a rule that reads what another rule
// records sees nothing in the same pass. Here every group is evaluated as a
// live Prometheus evaluates it: rule after rule in file order at one
// evaluation time, each rule reading everything recorded before it (the
// earlier rules of this evaluation, and earlier evaluations of every group),
// native histograms included. Alerting rules write their ALERTS and
// ALERTS_FOR_STATE series as Prometheus does; no notification is sent. No
// alert state is restored from an earlier run: every alert is inactive at
// --start, so one already active before it counts its for: again from
// there.
//
// Evaluation times are Prometheus's: each group's interval (its own
// interval, else --interval) at the offset Prometheus derives from the
// group's name and file (rules.Group.EvalTimestamp), every one in
// [--start, --end]. The offset depends on the file path as given, so it may
// differ from the offset a Prometheus loading the same file from another path
// uses; the pack's rules do not depend on it. --end may be at most two
// minutes ahead of the clock: Prometheus refuses live scrapes older than the
// newest block's end. All groups' evaluations run in one time order, so a
// group reading another group's series sees them as a live Prometheus
// would.
//
// Usage:
//
//	pairwise-backfill --tsdb DIR --rules FILE [--rules FILE...] --start TIME --end TIME [--interval 1m] [--timings FILE]
//
// Stop any Prometheus using DIR first. The data directory's blocks and WAL
// are read; nothing in it is changed or deleted; the results are added as
// new blocks, one per two-hour range, which Prometheus merges with the
// others when it starts. Out-of-order samples still in its WBL (Prometheus's
// out_of_order_time_window) are not read: reading them takes a Prometheus
// that writes into the directory.
//
// SIGINT (Ctrl-C) or SIGTERM stops it: its temporary files are removed, the
// data directory is left as it was (unless the blocks were being written:
// then the error says how many were added), and it exits 130 or 143.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/tools/internal/stop"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/fileutil"
	"github.com/prometheus/prometheus/tsdb/wlog"
)

type fileList []string

func (l *fileList) String() string     { return strings.Join(*l, ",") }
func (l *fileList) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	// Without a handler, SIGINT or SIGTERM would end the process before the
	// deferred cleanups run, leaving the temporary head in $TMPDIR.
	if err := run(stop.OnSignal(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pairwise-backfill:", err)
		os.Exit(stop.ExitCode(err))
	}
}

// options are the parsed command line.
type options struct {
	dir        string
	ruleFiles  []string
	start, end time.Time
	interval   time.Duration
	quiet      bool
	timings    string // file for each evaluation's duration, or ""
	ruleTimes  string // file for each rule evaluation's duration, or ""
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("pairwise-backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var files fileList
	var startS, endS string
	fs.StringVar(&o.dir, "tsdb", "", "Prometheus TSDB data directory to read and add the recorded series to (required; no Prometheus may run on it)")
	fs.Var(&files, "rules", "rule file (Prometheus rule file format); repeat for several (required)")
	fs.StringVar(&startS, "start", "", "first evaluation time, RFC 3339 or Unix seconds (required)")
	fs.StringVar(&endS, "end", "", "last evaluation time, RFC 3339 or Unix seconds, at most two minutes ahead of the clock (required)")
	fs.DurationVar(&o.interval, "interval", time.Minute, "evaluation interval of groups that set none (Prometheus's global evaluation_interval; its default is 1m)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	fs.StringVar(&o.timings, "timings", "", "write each group evaluation's duration to this file, one line per evaluation: group, evaluation time (Unix ms), seconds (tab-separated); the rule engine and storage are Prometheus's own, so these are the group evaluation times a Prometheus would report")
	fs.StringVar(&o.ruleTimes, "rule-timings", "", "write each rule evaluation's duration to this file, one line per rule and evaluation: group, rule index in its group, rule name, evaluation time (Unix ms), seconds (tab-separated): where a group's time goes")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.ruleFiles = files
	switch {
	case o.dir == "":
		return o, errors.New("--tsdb is required")
	case len(o.ruleFiles) == 0:
		return o, errors.New("--rules is required")
	case startS == "" || endS == "":
		return o, errors.New("--start and --end are required")
	case o.interval <= 0:
		return o, fmt.Errorf("--interval %s is not positive", o.interval)
	}
	var err error
	if o.start, err = parseTime(startS); err != nil {
		return o, fmt.Errorf("--start: %w", err)
	}
	if o.end, err = parseTime(endS); err != nil {
		return o, fmt.Errorf("--end: %w", err)
	}
	if o.end.Before(o.start) {
		return o, fmt.Errorf("--end %s is before --start %s", o.end.Format(time.RFC3339), o.start.Format(time.RFC3339))
	}
	// The rules record without input too (the pack's vector(...) rules), so
	// every evaluation up to --end writes samples, and the last block ends
	// at --end. Prometheus refuses samples before the newest block's end, so
	// an --end ahead of the clock drops live scrapes until then. Up to two
	// minutes ahead is allowed, as pairwise simulate allows: a history ending
	// at the next whole minute leaves no gap before the first live scrape.
	if now := time.Now(); o.end.After(now.Add(maxAhead)) {
		return o, fmt.Errorf("--end %s is more than two minutes ahead of the clock (%s): the last block would end then, and Prometheus would refuse live scrapes until then",
			o.end.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if fi, err := os.Stat(o.dir); err != nil || !fi.IsDir() {
		return o, fmt.Errorf("--tsdb %s is not a directory", o.dir)
	}
	return o, nil
}

// maxAhead is how far --end may be ahead of the clock.
const maxAhead = 2 * time.Minute

// parseTime reads RFC 3339 or Unix seconds (with an optional fraction).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor Unix seconds", s)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	sum, err := backfill(ctx, o, stderr)
	if err != nil {
		return err
	}
	if !o.quiet {
		fmt.Fprintf(stdout, "pairwise-backfill: %d groups, %d evaluations from %s to %s, %d series recorded into %d blocks, %.1fs\n",
			sum.groups, sum.evaluations, o.start.Format(time.RFC3339), o.end.Format(time.RFC3339), sum.series, sum.blocks, sum.elapsed.Seconds())
	}
	return nil
}

// summary reports a backfill.
type summary struct {
	groups, evaluations, blocks int
	series                      uint64
	elapsed                     time.Duration
}

// evaluation is one group's evaluation at one time.
type evaluation struct {
	at    time.Time
	order int // the group's position in the rule files, to break ties
	group *rules.Group
}

const blockMs = int64(2 * time.Hour / time.Millisecond)

func backfill(ctx context.Context, o options, stderr io.Writer) (summary, error) {
	began := time.Now()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	tmp, err := os.MkdirTemp("", "pairwise-backfill-head")
	if err != nil {
		return summary{}, err
	}
	defer os.RemoveAll(tmp)
	src, err := openSource(o.dir, tmp, logger)
	if err != nil {
		return summary{}, fmt.Errorf("open the TSDB in %s: %w", o.dir, err)
	}
	srcOpen := true
	defer func() {
		if srcOpen {
			src.close()
		}
	}()
	if src.oooSkipped {
		fmt.Fprintf(stderr, "pairwise-backfill: %s holds out-of-order samples, which are not read (Prometheus compacts them into blocks)\n", filepath.Join(o.dir, wlog.WblDirName))
	}

	// What the rules record goes to a head of its own, written out as blocks
	// at the end; queries read the data directory and that head together.
	headOpts := tsdb.DefaultHeadOptions()
	headOpts.ChunkRange = blockMs
	headOpts.ChunkDirRoot = tmp
	head, err := tsdb.NewHead(nil, logger, nil, nil, headOpts, tsdb.NewHeadStats())
	if err != nil {
		return summary{}, fmt.Errorf("recording head: %w", err)
	}
	defer head.Close()
	if err := head.Init(math.MinInt64); err != nil {
		return summary{}, fmt.Errorf("recording head: %w", err)
	}
	queryable := storage.QueryableFunc(func(mint, maxt int64) (storage.Querier, error) {
		return src.querier(mint, maxt, head)
	})

	engine := promql.NewEngine(promql.EngineOpts{
		Logger:               logger,
		MaxSamples:           50000000, // Prometheus's --query.max-samples default
		Timeout:              10 * time.Minute,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
	})
	manager := rules.NewManager(&rules.ManagerOptions{
		Appendable: head,
		Queryable:  queryable,
		QueryFunc:  rules.EngineQueryFunc(engine, queryable),
		NotifyFunc: func(context.Context, string, ...*rules.Alert) {},
		Context:    ctx,
		Logger:     logger,
	})
	loaded, errs := manager.LoadGroups(o.interval, labels.EmptyLabels(), "", nil, false, o.ruleFiles...)
	if len(errs) > 0 {
		return summary{}, fmt.Errorf("load rules: %w", errors.Join(errs...))
	}
	// An alerting rule writes its ALERTS and ALERTS_FOR_STATE samples only
	// once it is marked restored (rules.AlertingRule.Eval). A Prometheus
	// marks it so when the group's first run has restored the `for` state of
	// its alerts from ALERTS_FOR_STATE; Group.Eval, called here, never does.
	// The backfill starts with no alert active, which is what a restored
	// rule with no state holds.
	for _, g := range loaded {
		for _, r := range g.Rules() {
			if a, ok := r.(*rules.AlertingRule); ok {
				a.SetRestored(true)
			}
		}
	}
	evals, err := schedule(loaded, o)
	if err != nil {
		return summary{}, err
	}

	var timings, ruleTimes io.Writer = io.Discard, io.Discard
	for _, out := range []struct {
		path string
		w    *io.Writer
	}{{o.timings, &timings}, {o.ruleTimes, &ruleTimes}} {
		if out.path == "" {
			continue
		}
		f, err := os.Create(out.path)
		if err != nil {
			return summary{}, err
		}
		defer f.Close()
		*out.w = f
	}
	var failures int
	var firstFailure error
	lastProgress := time.Now()
	// A signal cancels ctx: the evaluation it interrupts fails, and nothing
	// is written.
	interrupted := func(done int) error {
		if ctx.Err() == nil {
			return nil
		}
		return fmt.Errorf("%w after %d of %d evaluations; nothing written to %s", context.Cause(ctx), done, len(evals), o.dir)
	}
	for i, e := range evals {
		if err := interrupted(i); err != nil {
			return summary{}, err
		}
		t0 := time.Now()
		e.group.Eval(ctx, e.at)
		if _, err := fmt.Fprintf(timings, "%s\t%d\t%.6f\n", e.group.Name(), e.at.UnixMilli(), time.Since(t0).Seconds()); err != nil {
			return summary{}, fmt.Errorf("--timings: %w", err)
		}
		for j, r := range e.group.Rules() {
			if _, err := fmt.Fprintf(ruleTimes, "%s\t%d\t%s\t%d\t%.6f\n", e.group.Name(), j, r.Name(), e.at.UnixMilli(), r.GetEvaluationDuration().Seconds()); err != nil {
				return summary{}, fmt.Errorf("--rule-timings: %w", err)
			}
			if r.Health() == rules.HealthBad {
				failures++
				if firstFailure == nil {
					firstFailure = fmt.Errorf("group %s, rule %s at %s: %w", e.group.Name(), r.Name(), e.at.Format(time.RFC3339), r.LastError())
				}
			}
		}
		if !o.quiet && time.Since(lastProgress) > 10*time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(stderr, "pairwise-backfill: %d/%d evaluations, at %s, %.0fs\n", i+1, len(evals), e.at.Format(time.RFC3339), time.Since(began).Seconds())
		}
	}
	if err := interrupted(len(evals)); err != nil {
		return summary{}, err
	}
	if failures > 0 {
		return summary{}, fmt.Errorf("%d rule evaluations failed, nothing written; the first: %w", failures, firstFailure)
	}

	// Close the data directory before adding blocks to it.
	srcOpen = false
	if err := src.close(); err != nil {
		return summary{}, fmt.Errorf("close the TSDB: %w", err)
	}
	blocks, err := writeBlocks(ctx, head, o.dir, logger)
	if err != nil {
		if ctx.Err() != nil {
			// Each block is written whole or not at all.
			return summary{}, fmt.Errorf("%w while writing blocks: %d of them added to %s", context.Cause(ctx), blocks, o.dir)
		}
		return summary{}, err
	}
	return summary{groups: len(loaded), evaluations: len(evals), blocks: blocks, series: head.NumSeries(), elapsed: time.Since(began)}, nil
}

// source is the data directory, opened for reading only. tsdb.Open would
// write into it (a lock file, chunks_head, a new WAL segment, and it deletes
// blocks compacted into others), and tsdb.DBReadOnly's Querier reopens every
// block and replays the whole WAL for each querier. Here its blocks are
// opened once by DBReadOnly, and its WAL is replayed once, read-only, into a
// head whose chunks go to a temporary directory; queriers read the blocks
// and heads that overlap their range, as tsdb.DB's do.
type source struct {
	lock   fileutil.Releaser // the lock of a Prometheus that ran on it, held; or nil
	db     *tsdb.DBReadOnly
	blocks []tsdb.BlockReader
	wal    *tsdb.Head // the WAL's samples, or nil without a WAL
	// oooSkipped: the WBL holds out-of-order samples, which are not read
	// (only tsdb.DB's querier reads them, and it needs a writable head).
	oooSkipped bool
}

// openSource opens dir for reading; its temporary files go under tmp.
func openSource(dir, tmp string, logger *slog.Logger) (*source, error) {
	s := &source{}
	// A Prometheus running on dir holds the lock file it created there:
	// refuse to run beside it. Holding the lock changes nothing in the file;
	// without one, none is created.
	if lockFile := filepath.Join(dir, "lock"); fileExists(lockFile) {
		var err error
		if s.lock, _, err = fileutil.Flock(lockFile); err != nil {
			return nil, fmt.Errorf("lock %s (is a Prometheus running on it?): %w", lockFile, err)
		}
	}
	db, err := tsdb.OpenDBReadOnly(dir, tmp, logger)
	if err != nil {
		s.close()
		return nil, err
	}
	s.db = db
	if s.blocks, err = db.Blocks(); err != nil {
		s.close()
		return nil, err
	}
	if n, err := fileutil.DirSize(filepath.Join(dir, wlog.WblDirName)); err == nil && n > 0 {
		s.oooSkipped = true
	}
	walDir := filepath.Join(dir, "wal")
	if !fileExists(walDir) {
		return s, nil
	}
	// wlog.Open only reads: the WAL is never written to, and closing it
	// writes nothing. Prometheus's m-mapped head chunks (chunks_head) are
	// not read: the WAL holds their samples too.
	w, err := wlog.Open(logger, walDir)
	if err != nil {
		s.close()
		return nil, err
	}
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = filepath.Join(tmp, "wal")
	if s.wal, err = tsdb.NewHead(nil, logger, w, nil, opts, tsdb.NewHeadStats()); err != nil {
		s.close()
		return nil, err
	}
	// As Prometheus does: WAL samples before the newest block's end are in
	// blocks already.
	minValid := int64(math.MinInt64)
	if len(s.blocks) > 0 {
		minValid = s.blocks[len(s.blocks)-1].Meta().MaxTime
	}
	if err := s.wal.Init(minValid); err != nil {
		s.close()
		return nil, fmt.Errorf("read the WAL: %w", err)
	}
	return s, nil
}

// querier reads [mint, maxt] of the data directory and of the recording head.
func (s *source) querier(mint, maxt int64, recording *tsdb.Head) (storage.Querier, error) {
	var readers []tsdb.BlockReader
	for _, b := range s.blocks {
		if m := b.Meta(); m.MinTime <= maxt && mint < m.MaxTime {
			readers = append(readers, b)
		}
	}
	if s.wal != nil && maxt >= s.wal.MinTime() {
		readers = append(readers, tsdb.NewRangeHead(s.wal, mint, maxt))
	}
	readers = append(readers, tsdb.NewRangeHead(recording, mint, maxt))
	queriers := make([]storage.Querier, 0, len(readers))
	for _, r := range readers {
		q, err := tsdb.NewBlockQuerier(r, mint, maxt)
		if err != nil {
			for _, q := range queriers {
				q.Close()
			}
			return nil, err
		}
		queriers = append(queriers, q)
	}
	return storage.NewMergeQuerier(queriers, nil, storage.ChainedSeriesMerge), nil
}

// close closes the WAL's head and the blocks, and removes DBReadOnly's
// sandbox.
func (s *source) close() error {
	var errs []error
	if s.wal != nil {
		errs = append(errs, s.wal.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Release())
	}
	return errors.Join(errs...)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// schedule lists every group's evaluation times in [start, end], aligned as
// Prometheus aligns them, in time order (at equal times, by file, then by
// group name).
func schedule(loaded map[string]*rules.Group, o options) ([]evaluation, error) {
	groups := make([]*rules.Group, 0, len(loaded))
	for _, g := range loaded {
		groups = append(groups, g)
	}
	position := map[string]int{}
	for i, f := range o.ruleFiles {
		position[f] = i
	}
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if position[a.File()] != position[b.File()] {
			return position[a.File()] < position[b.File()]
		}
		return a.Name() < b.Name()
	})
	var evals []evaluation
	for order, g := range groups {
		at := g.EvalTimestamp(o.start.UnixNano())
		if at.Before(o.start) {
			at = at.Add(g.Interval())
		}
		for ; !at.After(o.end); at = at.Add(g.Interval()) {
			evals = append(evals, evaluation{at: at, order: order, group: g})
		}
	}
	if len(evals) == 0 {
		return nil, fmt.Errorf("no group evaluates between %s and %s", o.start.Format(time.RFC3339), o.end.Format(time.RFC3339))
	}
	sort.SliceStable(evals, func(i, j int) bool {
		if !evals[i].at.Equal(evals[j].at) {
			return evals[i].at.Before(evals[j].at)
		}
		return evals[i].order < evals[j].order
	})
	return evals, nil
}

// writeBlocks writes the recorded head into dir as blocks on Prometheus's
// two-hour boundaries and returns how many were written.
func writeBlocks(ctx context.Context, head *tsdb.Head, dir string, logger *slog.Logger) (int, error) {
	if head.NumSeries() == 0 {
		return 0, nil
	}
	compactor, err := tsdb.NewLeveledCompactor(ctx, nil, logger, []int64{blockMs}, chunkenc.NewPool(), nil)
	if err != nil {
		return 0, fmt.Errorf("block writer: %w", err)
	}
	n := 0
	for lo := head.MinTime() / blockMs * blockMs; lo <= head.MaxTime(); lo += blockMs {
		// A block ends just after its last sample (never at the two-hour
		// boundary, possibly in the future): Prometheus accepts new samples
		// only after the last block's end.
		mint, maxt := max(lo, head.MinTime()), min(lo+blockMs, head.MaxTime()+1)
		ids, err := compactor.Write(dir, tsdb.NewRangeHead(head, mint, maxt-1), mint, maxt, nil)
		if err != nil {
			return n, fmt.Errorf("write block [%s, %s): %w", time.UnixMilli(mint).UTC().Format(time.RFC3339), time.UnixMilli(maxt).UTC().Format(time.RFC3339), err)
		}
		n += len(ids)
	}
	return n, nil
}
