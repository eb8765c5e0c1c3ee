package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

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
		cmd := exec.Command("go", "build", "-o", tmp, "./cmd/pairwise-gen")
		cmd.Dir = filepath.Join(root, "tools")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			genErr = fmt.Errorf("go build ./cmd/pairwise-gen in %s: %v\n%s\n(if go.mod updates are needed after a change of the root go.mod: cd tools && go mod tidy)", cmd.Dir, err, out)
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
	bin := GeneratorBinary(t)
	dir := t.TempDir()
	dataDir = filepath.Join(dir, "data")
	truthFile = filepath.Join(dir, "truth.json")
	cmd := exec.Command(bin, append([]string{"--out", dataDir, "--truth", truthFile, "--quiet"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("testenv: pairwise-gen %q: %v\n%s", args, err, out.String())
	}
	t.Logf("%s", bytes.TrimSpace(out.Bytes()))
	return dataDir, truthFile
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
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	var tr Truth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("testenv: %s: %v", path, err)
	}
	return &tr
}
