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
