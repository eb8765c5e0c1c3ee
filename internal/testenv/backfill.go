package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

var (
	backfillOnce sync.Once
	backfillPath string
	backfillErr  error
)

// BackfillBinary builds tools/cmd/pairwise-backfill once per test binary, as
// GeneratorBinary builds pairwise-gen, and returns its path.
func BackfillBinary(t testing.TB) string {
	t.Helper()
	backfillOnce.Do(func() {
		root, err := Root()
		if err != nil {
			backfillErr = err
			return
		}
		dir := filepath.Join(root, ".tools", "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			backfillErr = err
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf(".pairwise-backfill.%d", os.Getpid()))
		cmd := exec.Command("go", "build", "-o", tmp, "./cmd/pairwise-backfill")
		cmd.Dir = filepath.Join(root, "tools")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			backfillErr = fmt.Errorf("go build ./cmd/pairwise-backfill in %s: %v\n%s", cmd.Dir, err, out)
			return
		}
		backfillPath = filepath.Join(dir, "pairwise-backfill")
		backfillErr = os.Rename(tmp, backfillPath)
	})
	if backfillErr != nil {
		t.Fatalf("testenv: %v", backfillErr)
	}
	return backfillPath
}

// Backfill evaluates the rule file over [start, end] of the TSDB in dataDir
// (no Prometheus may run on it) and adds what the rules record to it, with
// pairwise-backfill. interval is the evaluation interval of groups that set
// none (0: one minute).
func Backfill(t testing.TB, dataDir, ruleFile string, start, end time.Time, interval time.Duration) {
	t.Helper()
	bin := BackfillBinary(t)
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
		t.Fatalf("testenv: pairwise-backfill %q: %v\n%s%s", args, err, progress.String(), out.String())
	}
	t.Logf("%s", bytes.TrimSpace(out.Bytes()))
}
