package procs

import (
	"bytes"
	"fmt"
	"os/exec"
	"time"
)

// BuildBackfill builds tools/cmd/pairwise-backfill into out with the go
// command.
func BuildBackfill(out string) error { return buildTool("pairwise-backfill", out) }

// Backfill runs the pairwise-backfill binary bin: the rule files evaluated
// over [start, end] of the TSDB in dataDir (no Prometheus may run on it),
// groups without an interval of their own every interval (0: one minute),
// their results added to it as new blocks, each group evaluation's duration
// written to timings when it is not empty. It returns the tool's summary
// line.
func Backfill(bin, dataDir string, ruleFiles []string, start, end time.Time, interval time.Duration, timings string) (string, error) {
	if interval == 0 {
		interval = time.Minute
	}
	// To the nanosecond: a group evaluates at its offset in the interval
	// (from its file's path), so a range that ends one second short of a
	// minute misses the evaluations of groups whose offset is in the last
	// second.
	args := []string{"--tsdb", dataDir, "--start", start.UTC().Format(time.RFC3339Nano), "--end", end.UTC().Format(time.RFC3339Nano), "--interval", interval.String()}
	for _, f := range ruleFiles {
		args = append(args, "--rules", f)
	}
	if timings != "" {
		args = append(args, "--timings", timings)
	}
	cmd := exec.Command(bin, args...)
	// The summary is on stdout; progress and errors on stderr.
	var out, progress bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pairwise-backfill %q: %v\n%s%s", args, err, progress.String(), out.String())
	}
	return string(bytes.TrimSpace(out.Bytes())), nil
}
