package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
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
		if backfillErr = procs.BuildBackfill(tmp); backfillErr != nil {
			os.Remove(tmp)
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
	summary, err := procs.Backfill(BackfillBinary(t), dataDir, []string{ruleFile}, start, end, interval, "")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Logf("%s", summary)
}
