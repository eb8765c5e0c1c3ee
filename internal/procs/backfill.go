package procs

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// BuildBackfill builds tools/cmd/pairwise-backfill into out with the go
// command, as BuildGenerator builds pairwise-gen.
func BuildBackfill(out string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/pairwise-backfill")
	cmd.Dir = filepath.Join(root, "tools")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/pairwise-backfill in %s: %v\n%s", cmd.Dir, err, b)
	}
	return nil
}

// Backfill runs the pairwise-backfill binary bin: the rule files evaluated
// over [start, end] of the TSDB in dataDir (no Prometheus may run on it),
// groups without an interval of their own every interval (0: one minute),
// their results added to it, each group evaluation's duration written to
// timings when it is not empty. It returns the tool's summary line.
func Backfill(bin, dataDir string, ruleFiles []string, start, end time.Time, interval time.Duration, timings string) (string, error) {
	if interval == 0 {
		interval = time.Minute
	}
	args := []string{"--tsdb", dataDir, "--start", strconv.FormatInt(start.Unix(), 10), "--end", strconv.FormatInt(end.Unix(), 10), "--interval", interval.String()}
	for _, f := range ruleFiles {
		args = append(args, "--rules", f)
	}
	if timings != "" {
		args = append(args, "--timings", timings)
	}
	cmd := exec.Command(bin, args...)
	var out, progress bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pairwise-backfill %q: %v\n%s%s", args, err, progress.String(), out.String())
	}
	return string(bytes.TrimSpace(out.Bytes())), nil
}
