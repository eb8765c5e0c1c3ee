package procs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pairwise-canary/pairwise/pkg/sim"
)

// BuildGenerator builds tools/cmd/pairwise-gen (tools/ is a module of its
// own) into out with the go command.
func BuildGenerator(out string) error { return buildTool("pairwise-gen", out) }

// buildTool builds the command tools/cmd/<name> into out.
func buildTool(name, out string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/"+name)
	cmd.Dir = filepath.Join(root, "tools")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/%s in %s: %v\n%s\n(if go.mod updates are needed after a change of the root go.mod: cd tools && go mod tidy)", name, cmd.Dir, err, b)
	}
	return nil
}

// Generated is what one run of pairwise-gen wrote.
type Generated struct {
	DataDir   string // the TSDB blocks, for PromOptions.DataDir
	TruthFile string // the ground truth (sim.Truth as JSON)
	Summary   string // the generator's own report
}

// GeneratedIn is where Generate writes into dir (without its summary).
func GeneratedIn(dir string) Generated {
	return Generated{DataDir: filepath.Join(dir, "data"), TruthFile: filepath.Join(dir, "truth.json")}
}

// Generate runs the generator bin with args, writing the TSDB blocks to
// dir/data and the ground truth to dir/truth.json (--out, --truth and
// --quiet are set here).
func Generate(bin, dir string, args ...string) (Generated, error) {
	g := GeneratedIn(dir)
	cmd := exec.Command(bin, append([]string{"--out", g.DataDir, "--truth", g.TruthFile, "--quiet"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return g, fmt.Errorf("pairwise-gen %q: %v\n%s", args, err, out.String())
	}
	g.Summary = strings.TrimSpace(out.String())
	return g, nil
}

// LoadTruth reads a ground-truth file pairwise-gen --truth wrote.
func LoadTruth(path string) (*sim.Truth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tr sim.Truth
	if err := json.Unmarshal(b, &tr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &tr, nil
}
