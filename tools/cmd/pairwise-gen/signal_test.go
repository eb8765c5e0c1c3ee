package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// TestSignalStopsTheRun runs this test binary as the command: its main
	// is pairwise-gen's, and no second build is needed.
	if os.Getenv("PAIRWISE_GEN_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lockedBuilder is a strings.Builder the command writes while the test reads.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSignalStopsTheRun: SIGTERM during a run ends it with status 143 and a
// message saying --out is incomplete, and the block writer's temporary head
// is removed from $TMPDIR (without a handler the process ended first and
// left it there).
func TestSignalStopsTheRun(t *testing.T) {
	work := t.TempDir()
	out, tmp := filepath.Join(work, "data"), filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	// Two weeks: far longer than the test waits.
	cmd := exec.Command(os.Args[0], "--out", out, "--minutes", "20160", "--pods", "5", "--total-rps", "2000",
		"--start", "2026-01-01T00:00:00Z")
	cmd.Env = append(os.Environ(), "PAIRWISE_GEN_TEST_MAIN=1", "TMPDIR="+tmp)
	var stderr lockedBuilder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Signal once the first block is generated (its writer's head exists).
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(stderr.String(), "block 1/"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("no block within two minutes; stderr: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running two minutes after SIGTERM; stderr: %s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 143 || !strings.Contains(stderr.String(), "stopped by SIGTERM") ||
		!strings.Contains(stderr.String(), "no truth file; remove it") {
		t.Errorf("after SIGTERM: %s, stderr %q; want exit status 143 and a message saying it stopped and what it left", cmd.ProcessState, stderr.String())
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("left in $TMPDIR: %v (%v)", left, err)
	}
}
