package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// TestSimulatorEntrypoint runs the compose stack's simulator entrypoint
// (provisioning/simulator/entrypoint.sh) with the binaries its image holds:
// it writes the scenario's history and the rule pack's records over it into
// the data volume, so a Prometheus opened on it has the pack's decisions for
// the whole history at once (before, only the raw series: the pack's panels
// stayed empty for an hour and its decision disagreed with the judge's);
// then it serves live; and it refuses a volume that holds another
// scenario's history, which would break every counter.
func TestSimulatorEntrypoint(t *testing.T) {
	bin := dashBuild(t)
	gen, backfill := testenv.GeneratorBinary(t), testenv.BackfillBinary(t)
	path := strings.Join([]string{filepath.Dir(bin), filepath.Dir(backfill), os.Getenv("PATH")}, string(os.PathListSeparator))
	data := t.TempDir()
	port := testenv.FreePort(t)
	entrypoint := filepath.Join(dashRoot, "provisioning", "simulator", "entrypoint.sh")
	run := func(scenario string) *exec.Cmd {
		cmd := exec.Command("sh", entrypoint)
		cmd.Env = append(os.Environ(),
			"PATH="+path,
			"PAIRWISE_DATA="+data, "PAIRWISE_SCENARIO="+scenario, "PAIRWISE_MINUTES=30",
			"PAIRWISE_RULES="+filepath.Join(dashRoot, "rules", "pairwise.rules.yml"),
			"PAIRWISE_GEN="+gen,
			"PAIRWISE_LISTEN=127.0.0.1:"+strconv.Itoa(port))
		return cmd
	}

	var out testenv.SyncBuffer
	sim := run("regression")
	sim.Stdout, sim.Stderr = &out, &out
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	served := false
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline) && !served; time.Sleep(500 * time.Millisecond) {
		served = strings.Contains(out.String(), "serving http://")
	}
	sim.Process.Kill()
	sim.Wait()
	if !served {
		t.Fatalf("the entrypoint did not come to serve:\n%s", out.String())
	}

	// The pack's decision of every backfilled minute is in the volume.
	prom := testenv.Prometheus(t, testenv.PromOptions{DataDir: data})
	got := testenv.Query(t, prom.URL, `count_over_time(canary:http_request_duration_seconds:decision_60m{canary="checkout"}[40m])`, time.Time{})
	n := 0.0
	if len(got) == 1 {
		n, _ = got[0].Float()
	}
	if n < 25 {
		t.Fatalf("the pack's decisions over the backfilled half hour: %v; want one series with about 29 minutes\nentrypoint:\n%s", got, out.String())
	}
	prom.Stop()

	// Another scenario on the same volume is refused, with what to do.
	b, err := run("clean").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "docker compose down -v") {
		t.Fatalf("another scenario on the same volume: %v\n%s", err, b)
	}

	// A first start stopped before it finished (no pairwise-start) is
	// refused with what to do, not backfilled again over what it wrote.
	if err := os.Remove(filepath.Join(data, "pairwise-start")); err != nil {
		t.Fatal(err)
	}
	b, err = run("regression").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "no finished backfill") || !strings.Contains(string(b), "docker compose down -v") {
		t.Fatalf("a volume a first start left half-written: %v\n%s", err, b)
	}
}

// TestSimulatorImageHasItsSources: the simulator image's build context
// (provisioning/simulator/Dockerfile.dockerignore, an allow list) holds
// every repository file its three binaries are built from, so a new package
// (tools/internal/stop was one) does not break `docker compose up --build`,
// which no test here can run.
func TestSimulatorImageHasItsSources(t *testing.T) {
	root, err := filepath.Abs(dashRoot)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "provisioning", "simulator", "Dockerfile.dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		pattern string
		allow   bool
	}
	var rules []rule
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		allow := strings.HasPrefix(line, "!")
		rules = append(rules, rule{strings.TrimSuffix(strings.TrimPrefix(line, "!"), "/"), allow})
	}
	// As BuildKit reads it: the last pattern matching the path or one of
	// its parent directories decides.
	sent := func(rel string) bool {
		in := false
		for _, r := range rules {
			for p := rel; p != "."; p = filepath.Dir(p) {
				if ok, _ := filepath.Match(r.pattern, p); ok {
					in = r.allow
					break
				}
			}
		}
		return in
	}
	files := 0
	for _, build := range []struct{ dir, pkg string }{{".", "./cmd/pairwise"}, {"tools", "./cmd/pairwise-gen"}, {"tools", "./cmd/pairwise-backfill"}} {
		cmd := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}`, build.pkg)
		cmd.Dir = filepath.Join(root, build.dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", build.pkg, err)
		}
		for _, f := range strings.Fields(string(out)) {
			rel, err := filepath.Rel(root, f)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue // a module's source, downloaded in the image
			}
			files++
			if !sent(rel) {
				t.Errorf("%s (built into %s) is not in the simulator image's build context: add it to Dockerfile.dockerignore", rel, build.pkg)
			}
		}
	}
	for _, f := range []string{"go.mod", "go.sum", "tools/go.mod", "tools/go.sum", "provisioning/simulator/entrypoint.sh"} {
		if !sent(f) {
			t.Errorf("%s is not in the simulator image's build context", f)
		}
	}
	if files < 50 {
		t.Fatalf("%d repository files found in the builds: the listing is wrong", files)
	}
}
