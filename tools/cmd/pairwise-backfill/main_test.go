package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
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
	if err := run([]string{"--tsdb", dir, "--rules", ruleFile, "--quiet", "--timings", timings, "--rule-timings", ruleTimings,
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
