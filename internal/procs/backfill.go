package procs

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// BuildBackfill builds tools/cmd/pairwise-backfill into out with the go
// command.
func BuildBackfill(out string) error { return buildTool("pairwise-backfill", out) }

// Backfill runs pairwise-backfill (bin): it evaluates the rule file over
// [start, end] of the TSDB in dataDir (no Prometheus may run on it) and adds
// what the rules record to it as new blocks. interval is the evaluation
// interval of groups that set none (0: one minute). It returns the tool's
// summary line.
func Backfill(bin, dataDir, ruleFile string, start, end time.Time, interval time.Duration) (string, error) {
	if interval == 0 {
		interval = time.Minute
	}
	args := []string{"--tsdb", dataDir, "--rules", ruleFile,
		"--start", strconv.FormatInt(start.Unix(), 10), "--end", strconv.FormatInt(end.Unix(), 10),
		"--interval", interval.String()}
	cmd := exec.Command(bin, args...)
	// The summary is on stdout; progress and errors on stderr.
	var out, progress bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pairwise-backfill %q: %v\n%s%s", args, err, progress.String(), out.String())
	}
	return strings.TrimSpace(out.String()), nil
}
