package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pairwise-canary/pairwise/internal/procs"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/sim"
)

var (
	genOnce sync.Once
	genPath string
	genErr  error
)

// GeneratorBinary builds tools/cmd/pairwise-gen once per test binary (go build
// inside tools/, incremental thanks to the build cache) and returns its path.
// Each process builds to its own name and renames it into place, so test
// binaries running in parallel never see a half-written file.
func GeneratorBinary(t testing.TB) string {
	t.Helper()
	genOnce.Do(func() {
		root, err := Root()
		if err != nil {
			genErr = err
			return
		}
		dir := filepath.Join(root, ".tools", "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			genErr = err
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf(".pairwise-gen.%d", os.Getpid()))
		if genErr = procs.BuildGenerator(tmp); genErr != nil {
			os.Remove(tmp)
			return
		}
		genPath = filepath.Join(dir, "pairwise-gen")
		genErr = os.Rename(tmp, genPath)
	})
	if genErr != nil {
		t.Fatalf("testenv: %v", genErr)
	}
	return genPath
}

// Generate runs pairwise-gen with args into a new t.TempDir() and returns the
// TSDB data directory (for PromOptions.DataDir) and the ground-truth file.
// --out, --truth and --quiet are set by Generate.
func Generate(t testing.TB, args ...string) (dataDir, truthFile string) {
	t.Helper()
	g, err := procs.Generate(GeneratorBinary(t), t.TempDir(), args...)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Logf("%s", g.Summary)
	return g.DataDir, g.TruthFile
}

// Truth and TruthMinute are the ground-truth file pairwise-gen --truth
// writes, defined once in pkg/sim.
type (
	Truth       = sim.Truth
	TruthMinute = sim.TruthMinute
)

// LoadTruth reads a ground-truth file.
func LoadTruth(t testing.TB, path string) *Truth {
	t.Helper()
	tr, err := procs.LoadTruth(path)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return tr
}

// GeneratedMetric is the histogram pairwise-gen writes.
const GeneratedMetric = "http_request_duration_seconds"

// GeneratedFleets are the selectors of the two fleets pairwise-gen writes.
func GeneratedFleets(t testing.TB) (baseline, canary selector.Selector) {
	t.Helper()
	b, err := selector.Parse(`{service="checkout",track="baseline"}`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := selector.Parse(`{service="checkout",track="canary"}`)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}
