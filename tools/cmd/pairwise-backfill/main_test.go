package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/fileutil"
)

// A native histogram counter growing by one observation in bucket 1 every
// 15 s: a rule recording its minute increase (a histogram), a rule reading
// that record in the same group (a sum over 5 recorded minutes), and a rule
// of another group reading the second record must all be backfilled.
func TestBackfillChainsNativeHistograms(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	const minutes = 30
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := tsdb.NewBlockWriter(logger, dir, blockMs)
	if err != nil {
		t.Fatal(err)
	}
	app := w.Appender(context.Background())
	lbls := labels.FromStrings("__name__", "latency", "fleet", "canary")
	for i := 0; i <= minutes*4; i++ {
		h := &histogram.Histogram{
			Schema: 0, Count: uint64(i), Sum: float64(i),
			PositiveSpans:   []histogram.Span{{Offset: 1, Length: 1}},
			PositiveBuckets: []int64{int64(i)},
		}
		if _, err := app.AppendHistogram(0, lbls, start.Add(time.Duration(i)*15*time.Second).UnixMilli(), h, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// An empty WAL, as pairwise-gen writes: DBReadOnly's Querier below
	// needs one (pairwise-backfill creates none).
	if err := os.Mkdir(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	ruleFile := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(ruleFile, []byte(`groups:
  - name: minutes
    rules:
      - record: fleet:latency:increase_1m
        expr: sum(increase(latency[1m]))
      - record: fleet:latency:increase_5m_of_minutes
        expr: sum_over_time(fleet:latency:increase_1m[5m])
  - name: readers
    rules:
      - record: fleet:latency:count_5m
        expr: histogram_count(fleet:latency:increase_5m_of_minutes)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	from, to := start.Add(2*time.Minute), start.Add(minutes*time.Minute)
	timings := filepath.Join(t.TempDir(), "timings.tsv")
	ruleTimings := filepath.Join(t.TempDir(), "rule-timings.tsv")
	if err := run(context.Background(), []string{"--tsdb", dir, "--rules", ruleFile, "--quiet", "--timings", timings, "--rule-timings", ruleTimings,
		"--start", from.Format(time.RFC3339), "--end", strconv.FormatInt(to.Unix(), 10)}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	// --timings: one line per evaluation of each group, in time order.
	tb, err := os.ReadFile(timings)
	if err != nil {
		t.Fatal(err)
	}
	perGroup := map[string][]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(tb)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("timings line %q: want group, time, seconds", line)
		}
		at, err1 := strconv.ParseInt(f[1], 10, 64)
		secs, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || secs < 0 || at < from.UnixMilli() || at > to.UnixMilli() {
			t.Fatalf("timings line %q: bad time or duration", line)
		}
		perGroup[f[0]] = append(perGroup[f[0]], at)
	}
	for _, g := range []string{"minutes", "readers"} {
		ats := perGroup[g]
		if len(ats) < 28 || len(ats) > 29 || !slices.IsSorted(ats) {
			t.Errorf("timings of group %s: %d evaluations %v, want one a minute in order (28 or 29)", g, len(ats), ats)
		}
	}
	// --rule-timings: one line per rule of each evaluation, naming the rule.
	rb, err := os.ReadFile(ruleTimings)
	if err != nil {
		t.Fatal(err)
	}
	perRule := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(rb)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("rule timings line %q: want group, index, rule, time, seconds", line)
		}
		secs, err := strconv.ParseFloat(f[4], 64)
		if err != nil || secs < 0 {
			t.Fatalf("rule timings line %q: bad duration", line)
		}
		perRule[f[0]+"/"+f[1]+"/"+f[2]]++
	}
	if n := perRule["readers/0/fleet:latency:count_5m"]; n != len(perGroup["readers"]) {
		t.Errorf("rule timings: readers' rule 0 evaluated %d times, want %d (its group's evaluations); all: %v", n, len(perGroup["readers"]), perRule)
	}

	db, err := tsdb.OpenDBReadOnly(dir, t.TempDir(), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blocks, err := db.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Errorf("%d blocks in the data directory, want the generated one and one recorded", len(blocks))
	}
	for _, b := range blocks {
		// Prometheus rejects samples before the last block's end: a block
		// must not end after its last sample.
		if maxt := b.Meta().MaxTime; maxt > to.UnixMilli()+1 {
			t.Errorf("block %s ends at %s, after the last evaluation %s", b.Meta().ULID, time.UnixMilli(maxt).UTC(), to)
		}
	}
	q, err := db.Querier(from.UnixMilli(), to.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	read := func(name string) (hist []float64, floats []float64) {
		ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
		for ss.Next() {
			it := ss.At().Iterator(nil)
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				switch vt {
				case chunkenc.ValHistogram:
					_, h := it.AtHistogram(nil)
					hist = append(hist, float64(h.Count))
				case chunkenc.ValFloatHistogram:
					_, h := it.AtFloatHistogram(nil)
					hist = append(hist, h.Count)
				case chunkenc.ValFloat:
					_, f := it.At()
					floats = append(floats, f)
				}
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		return hist, floats
	}
	// 29 evaluations a minute apart (one group offset in the minute).
	minute, _ := read("fleet:latency:increase_1m")
	if len(minute) < 28 || len(minute) > 29 {
		t.Fatalf("fleet:latency:increase_1m has %d histogram samples, want one a minute (28 or 29)", len(minute))
	}
	for i, c := range minute {
		// increase over 1m extrapolates 3 increments of 1 over 45 s to 4.
		if c < 3.9 || c > 4.1 {
			t.Errorf("minute %d: recorded increase count %v, want 4", i, c)
		}
	}
	five, _ := read("fleet:latency:increase_5m_of_minutes")
	if len(five) != len(minute) || five[len(five)-1] < 19.9 || five[len(five)-1] > 20.1 {
		t.Errorf("the chained record has %d samples ending %v, want %d ending 20 (five recorded minutes of 4)", len(five), five, len(minute))
	}
	_, counts := read("fleet:latency:count_5m")
	if len(counts) < 27 || counts[len(counts)-1] < 19.9 || counts[len(counts)-1] > 20.1 {
		t.Errorf("the other group's record has %d samples ending %v, want one a minute ending 20", len(counts), counts)
	}
}

func TestParseArgsRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--rules", "r.yml", "--start", "0", "--end", "60"},
		{"--tsdb", dir, "--start", "0", "--end", "60"},
		{"--tsdb", dir, "--rules", "r.yml", "--start", "0"},
		{"--tsdb", dir, "--rules", "r.yml", "--start", "yesterday", "--end", "60"},
		{"--tsdb", dir, "--rules", "r.yml", "--start", "120", "--end", "60"},
		{"--tsdb", filepath.Join(dir, "missing"), "--rules", "r.yml", "--start", "0", "--end", "60"},
		{"--tsdb", dir, "--rules", "r.yml", "--start", "0", "--end", "60", "--interval", "0s"},
	} {
		if _, err := parseArgs(args, io.Discard); err == nil {
			t.Errorf("parseArgs(%q) accepted bad input", args)
		}
	}
}

// The rules record without input (vector(...)), so an --end ahead of the
// clock writes a block ending then, and Prometheus refuses live scrapes
// until then: more than two minutes ahead is refused, as pairwise simulate
// refuses it; the next whole minute (the demo's end) is accepted.
func TestParseArgsRefusesAnEndAheadOfTheClock(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	args := func(end time.Time) []string {
		return []string{"--tsdb", dir, "--rules", "r.yml", "--start", strconv.FormatInt(now.Add(-time.Hour).Unix(), 10), "--end", end.Format(time.RFC3339)}
	}
	_, err := parseArgs(args(now.Add(30*time.Minute)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--end") || !strings.Contains(err.Error(), "ahead of the clock") {
		t.Errorf("--end 30 minutes ahead: error %v, want one saying --end is ahead of the clock", err)
	}
	if _, err := parseArgs(args(now.Truncate(time.Minute).Add(time.Minute)), io.Discard); err != nil {
		t.Errorf("--end at the next whole minute: %v, want it accepted", err)
	}
}

func TestMain(m *testing.M) {
	// TestSignalStopsTheRunCleanly runs this test binary as the command:
	// its main is pairwise-backfill's, and no second build is needed.
	if os.Getenv("PAIRWISE_BACKFILL_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writeRequests writes a counter "requests" growing by one every 15 s over
// [from, from+minutes) into dir as a block.
func writeRequests(t *testing.T, dir string, from time.Time, minutes int) {
	t.Helper()
	w, err := tsdb.NewBlockWriter(slog.New(slog.NewTextHandler(io.Discard, nil)), dir, blockMs)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	app := w.Appender(context.Background())
	lbls := labels.FromStrings("__name__", "requests", "fleet", "canary")
	for i := 0; i < minutes*4; i++ {
		if _, err := app.Append(0, lbls, from.Add(time.Duration(i)*15*time.Second).UnixMilli(), float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every file and directory under dir with its mode, size and
// content hash.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		desc := fmt.Sprintf("%v %d", info.Mode(), info.Size())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		files[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// changes describes how after differs from before.
func changes(before, after map[string]string) []string {
	var diff []string
	for p, d := range after {
		if b, ok := before[p]; !ok {
			diff = append(diff, "added "+p)
		} else if b != d {
			diff = append(diff, fmt.Sprintf("changed %s (%s, was %s)", p, d, b))
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			diff = append(diff, "removed "+p)
		}
	}
	slices.Sort(diff)
	return diff
}

const countRules = `groups:
  - name: minutes
    rules:
      - record: requests:count_1m
        expr: count_over_time(requests[1m])
`

// The data directory is only read: a directory a Prometheus left (blocks,
// a WAL with m-mapped head chunks, the lock file of a crash) holds exactly
// what it held, plus the new blocks, and the WAL's samples are read (the
// records of its minutes count four samples a minute, as the block's do).
// tsdb.Open added a WAL segment and head chunks (and removed the lock). A
// Prometheus running on it (holding the lock) is still refused.
func TestBackfillReadsTheWALAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	writeRequests(t, dir, start, 30)
	// The next hour in the WAL of a Prometheus that stopped before
	// compacting it into a block.
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := tsdb.Open(dir, logger, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	db.DisableCompactions()
	app := db.Appender(context.Background())
	lbls := labels.FromStrings("__name__", "requests", "fleet", "canary")
	for i := 30 * 4; i <= 90*4; i++ {
		if _, err := app.Append(0, lbls, start.Add(time.Duration(i)*15*time.Second).UnixMilli(), float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	lockFile := filepath.Join(dir, "lock")
	if err := os.WriteFile(lockFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	ruleFile := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(ruleFile, []byte(countRules), 0o644); err != nil {
		t.Fatal(err)
	}
	from, to := start.Add(2*time.Minute), start.Add(90*time.Minute)
	args := []string{"--tsdb", dir, "--rules", ruleFile, "--quiet", "--start", from.Format(time.RFC3339), "--end", to.Format(time.RFC3339)}
	held, _, err := fileutil.Flock(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "Prometheus running") {
		t.Errorf("with the lock held: error %v, want one asking whether a Prometheus is running", err)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}

	after := snapshot(t, dir)
	var added []string
	for p := range after {
		if _, ok := before[p]; !ok && filepath.Dir(p) == "." {
			added = append(added, p)
		}
	}
	for _, b := range added {
		if _, err := os.Stat(filepath.Join(dir, b, "meta.json")); err != nil {
			continue // not a block: changes reports it
		}
		for p := range after {
			if p == b || strings.HasPrefix(p, b+string(filepath.Separator)) {
				delete(after, p)
			}
		}
	}
	if diff := changes(before, after); len(diff) > 0 {
		t.Errorf("the data directory changed beyond new blocks:\n%s", strings.Join(diff, "\n"))
	}

	// The records, from a copy of the new blocks alone.
	records := t.TempDir()
	for _, b := range added {
		if err := os.Rename(filepath.Join(dir, b), filepath.Join(records, b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(records, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	rdb, err := tsdb.OpenDBReadOnly(records, t.TempDir(), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	q, err := rdb.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "requests:count_1m"))
	var inWAL, n int
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			n++
			if ts > start.Add(31*time.Minute).UnixMilli() {
				inWAL++
			}
			if v != 4 {
				t.Errorf("requests:count_1m at %s is %v, want 4 (a sample every 15 s)", time.UnixMilli(ts).UTC().Format(time.RFC3339), v)
			}
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 87 || inWAL < 58 {
		t.Errorf("%d records, %d of them in the WAL's minutes, want one a minute from 10:02 to 11:30 (88 or 89, 58 or 59 after 10:31)", n, inWAL)
	}
}

// SIGTERM during the evaluations stops the command cleanly: exit status
// 143 and a message, no temporary directory left in $TMPDIR, and the data
// directory (pairwise-gen's: blocks and an empty WAL) exactly as it was.
// Unhandled, the signal ended the process at once: its temporary head
// stayed in $TMPDIR, and tsdb.Open's lock, chunks_head and WAL segment in
// the data directory.
func TestSignalStopsTheRunCleanly(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	writeRequests(t, dir, start, 30)
	if err := os.Mkdir(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	work := t.TempDir()
	ruleFile, timings, tmp := filepath.Join(work, "rules.yml"), filepath.Join(work, "timings.tsv"), filepath.Join(work, "tmp")
	if err := os.WriteFile(ruleFile, []byte(countRules), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	// A week at one evaluation a second: far longer than the test waits.
	cmd := exec.Command(os.Args[0], "--tsdb", dir, "--rules", ruleFile, "--interval", "1s", "--timings", timings,
		"--start", start.Format(time.RFC3339), "--end", start.Add(7*24*time.Hour).Format(time.RFC3339))
	cmd.Env = append(os.Environ(), "PAIRWISE_BACKFILL_TEST_MAIN=1", "TMPDIR="+tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Signal once evaluations have begun (the first timings line).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(timings); strings.Contains(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no evaluation within a minute; stderr: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running a minute after SIGTERM; stderr: %s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 143 || !strings.Contains(stderr.String(), "stopped by SIGTERM") {
		t.Errorf("after SIGTERM: %s, stderr %q; want exit status 143 and a message saying it stopped", cmd.ProcessState, stderr.String())
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("left in $TMPDIR: %v (%v)", left, err)
	}
	if diff := changes(before, snapshot(t, dir)); len(diff) > 0 {
		t.Errorf("the data directory changed:\n%s", strings.Join(diff, "\n"))
	}
}

// The generated rule pack over pairwise-gen's regression: the rollback
// alert's ALERTS and ALERTS_FOR_STATE series are written, firing at every
// evaluation whose recorded decision is 2 (the alert has no for:, and the
// canary reports throughout), and only there or within its keep_firing_for
// (10m) after one. The dashboard's rollback annotation selects them.
// Unrestored, as Group.Eval leaves freshly loaded alerting rules, they
// wrote neither series.
func TestBackfillWritesTheRollbackAlert(t *testing.T) {
	gen := filepath.Join(t.TempDir(), "pairwise-gen")
	if b, err := exec.Command("go", "build", "-o", gen, "../pairwise-gen").CombinedOutput(); err != nil {
		t.Fatalf("go build ../pairwise-gen: %v\n%s", err, b)
	}
	dir := filepath.Join(t.TempDir(), "data")
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	// The canary twice as slow from minute 15: the decision holds, then
	// rolls back.
	if b, err := exec.Command(gen, "--out", dir, "--quiet", "--scenario", "regression", "--pods", "2", "--minutes", "40",
		"--start", start.Format(time.RFC3339), "--regression-factor", "2", "--regression-start-minute", "15").CombinedOutput(); err != nil {
		t.Fatalf("pairwise-gen: %v\n%s", err, b)
	}
	from, to := start.Add(2*time.Minute), start.Add(40*time.Minute-time.Nanosecond)
	if err := run(context.Background(), []string{"--tsdb", dir, "--rules", "../../../rules/pairwise.rules.yml", "--quiet",
		"--start", from.Format(time.RFC3339Nano), "--end", to.Format(time.RFC3339Nano)}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}

	db, err := tsdb.OpenDBReadOnly(dir, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	type sample struct {
		t int64
		v float64
	}
	// read returns the samples of every series the matchers select, by
	// canary, stale markers left out.
	read := func(ms ...*labels.Matcher) map[string][]sample {
		t.Helper()
		byCanary := map[string][]sample{}
		ss := q.Select(context.Background(), true, nil, ms...)
		for ss.Next() {
			c := ss.At().Labels().Get("canary")
			if _, ok := byCanary[c]; ok {
				t.Fatalf("more than one series of canary %q for %v: %s", c, ms, ss.At().Labels())
			}
			byCanary[c] = nil
			it := ss.At().Iterator(nil)
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				if vt != chunkenc.ValFloat {
					t.Fatalf("%s: a %s sample, want floats", ss.At().Labels(), vt)
				}
				ts, v := it.At()
				if !value.IsStaleNaN(v) {
					byCanary[c] = append(byCanary[c], sample{ts, v})
				}
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		return byCanary
	}
	rollback := labels.MustNewMatcher(labels.MatchEqual, "alertname", "PairwiseCanaryRollback")
	decisions := read(labels.MustNewMatcher(labels.MatchEqual, "__name__", "canary:http_request_duration_seconds:decision_60m"))
	alerts := read(labels.MustNewMatcher(labels.MatchEqual, "__name__", "ALERTS"), rollback,
		labels.MustNewMatcher(labels.MatchEqual, "alertstate", "firing"))
	forState := read(labels.MustNewMatcher(labels.MatchEqual, "__name__", "ALERTS_FOR_STATE"), rollback)

	// The dashboard's annotation of the rollback alert.
	var dash struct {
		Annotations struct {
			List []struct{ Name, Expr string }
		}
	}
	b, err := os.ReadFile("../../../dashboards/canary.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	var annotation string
	for _, a := range dash.Annotations.List {
		if strings.Contains(a.Expr, "PairwiseCanaryRollback") {
			annotation = a.Expr
		}
	}
	if annotation == "" {
		t.Fatal("dashboards/canary.json: no annotation reading the PairwiseCanaryRollback alert")
	}

	const keepFiringFor = 10 * time.Minute
	if len(decisions) != 2 {
		t.Fatalf("decisions of %d canaries, want the pack's 2 (native and classic)", len(decisions))
	}
	for canary, ds := range decisions {
		var rollbacks, holds int
		firing := map[int64]bool{}
		for _, s := range alerts[canary] {
			firing[s.t] = true
		}
		var lastRollback int64
		rolledBack := false
		for _, d := range ds {
			at := time.UnixMilli(d.t).UTC().Format(time.RFC3339)
			switch {
			case d.v == 2:
				rollbacks++
				lastRollback, rolledBack = d.t, true
				if !firing[d.t] {
					t.Errorf("%s at %s: decision 2 (rollback), no firing ALERTS sample", canary, at)
				}
			case firing[d.t] && (!rolledBack || d.t-lastRollback > keepFiringFor.Milliseconds()):
				t.Errorf("%s at %s: decision %v, not within %s after a rollback decision, yet ALERTS fires", canary, at, d.v, keepFiringFor)
			default:
				holds++
			}
			delete(firing, d.t)
		}
		if rollbacks == 0 || holds == 0 {
			t.Errorf("%s: %d rollback and %d other decisions, want both (the data do not exercise the alert)", canary, rollbacks, holds)
		}
		for ts := range firing {
			t.Errorf("%s: a firing ALERTS sample at %s, where no decision is recorded", canary, time.UnixMilli(ts).UTC().Format(time.RFC3339))
		}
		// ALERTS_FOR_STATE: a sample with each ALERTS one, holding when
		// the alert became active (the first of its run of evaluations a
		// minute apart), in seconds.
		fs := forState[canary]
		if len(fs) != len(alerts[canary]) {
			t.Errorf("%s: %d ALERTS_FOR_STATE samples, want one per firing ALERTS sample (%d)", canary, len(fs), len(alerts[canary]))
		} else {
			var active int64
			for i, s := range fs {
				if s.t != alerts[canary][i].t {
					t.Errorf("%s: ALERTS_FOR_STATE sample %d at %d, ALERTS at %d", canary, i, s.t, alerts[canary][i].t)
					break
				}
				if i == 0 || s.t-fs[i-1].t > time.Minute.Milliseconds() {
					active = s.t / 1000
				}
				if s.v != float64(active) {
					t.Errorf("%s at %s: ALERTS_FOR_STATE %v, want %d (the run's first evaluation)", canary, time.UnixMilli(s.t).UTC().Format(time.RFC3339), s.v, active)
				}
			}
		}
		// The annotation, its $canary set, selects the firing series.
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(strings.ReplaceAll(annotation, "$canary", canary))
		if err != nil {
			t.Fatalf("the dashboard's annotation %q: %v", annotation, err)
		}
		if got := read(ms...)[canary]; !slices.Equal(got, alerts[canary]) {
			t.Errorf("%s: the dashboard's annotation %s selects %d samples, want the %d firing ALERTS samples", canary, annotation, len(got), len(alerts[canary]))
		}
	}
}
