package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// demoTimeout bounds the whole demo: tools/install.sh (cached), two go
// builds, the backfill, four servers and the wait for the rollback alert.
// It takes about 15 s with a warm build cache.
const demoTimeout = 5 * time.Minute

// TestDemoOnce runs the README's first command, scripts/demo.sh --once, on
// the regression scenario: it must print the minute table, a ROLLBACK
// decision, and the PairwiseCanaryRollback alert the webhook received, then
// stop every server it started.
func TestDemoOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("scripts", "demo.sh"), "--once")
	cmd.Dir = dashRoot
	cmd.Env = append(os.Environ(), "PAIRWISE_DEMO_ALERT_WAIT=150", "PAIRWISE_DEMO_DIR="+t.TempDir())
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err := cmd.Run()
	elapsed := time.Since(began)
	text := out.String()
	if err != nil {
		t.Fatalf("scripts/demo.sh --once: %v after %s\n%s", err, elapsed.Round(time.Second), demoTail(text, 6000))
	}
	t.Logf("scripts/demo.sh --once took %s", elapsed.Round(100*time.Millisecond))

	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*minute\s+rps_old\s+rps_new\s+p99_old\s+p99_new\s+p999_old\s+p999_new`),
		// A vote whose counts vary more than chance is divided by its
		// dispersion, and the reason says so before the evidence.
		regexp.MustCompile(`(?m)^ROLLBACK: canary p99 exceedances \d+ vs [\d.]+ expected \(p90 \d+ vs [\d.]+, p99 bound \d+ vs [\d.]+\) over (the last )?\d+ minutes(, the [a-z0-9. ]+ evidence divided by its dispersion [\d.]+ \([^)]*\))?: evidence [\d.]+ reached the rollback boundary [\d.]+`),
		regexp.MustCompile(`(?m)^demo: decision ROLLBACK \(exit 2\)`),
		// The receiver's one JSON line per alert (labels sorted by name).
		regexp.MustCompile(`(?m)^webhook: \{"time":"[^"]+","event":"firing","status":"firing","alertname":"PairwiseCanaryRollback","key":"[^"]+","labels":\{"action":"rollback","alertname":"PairwiseCanaryRollback","canary":"checkout[^"]*"(,"[a-z_]+":"[^"]*")*,"severity":"critical"\},"summary":"Canary checkout[^"]*",.*\}$`),
		regexp.MustCompile(`(?m)^demo: rollback alert received \d+s after the first table`),
	} {
		if !want.MatchString(text) {
			t.Errorf("the demo output has no line matching %s\n%s", want, demoTail(text, 6000))
		}
	}
	if rows := regexp.MustCompile(`(?m)^\s+\d\d:\d\d\s+\d`).FindAllString(text, -1); len(rows) < 55 {
		t.Errorf("the table has %d minutes with data, want about 60 backfilled minutes", len(rows))
	}

	// Everything it started is stopped: its ports are closed again.
	for _, m := range regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`).FindAllStringSubmatch(text, -1) {
		if c, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
			c.Close()
			if demoListenedOn(text, m[1]) {
				t.Errorf("%s still accepts connections after the demo exited", m[1])
			}
		}
	}
}

// demoListenedOn tells the demo's own servers from other URLs it printed.
func demoListenedOn(text, addr string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, addr) && regexp.MustCompile(`^\s+(Prometheus|Alertmanager|simulator|webhook)\s`).MatchString(line) {
			return true
		}
	}
	return false
}

func demoTail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
