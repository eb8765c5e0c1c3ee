package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashIsNeverRollback: the built judge, stopped by SIGQUIT while it
// waits for a Prometheus that never answers, aborts (SIGABRT). Before, Go
// ended it with exit status 2, the judge's rollback, and the Argo Job
// template fails the Job (aborting the rollout) on 2. As PID 1 (a
// container without an init, run here in a new PID namespace) a process
// cannot abort: a crash inside the container exited 2 there too (SIGQUIT
// sent from outside the namespace, as here, was not even acted on, and the
// judge ran to its timeout, exit 3). pairwise then runs as its own child
// (asPID1) and exits 134 when that child aborts.
func TestCrashIsNeverRollback(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pairwise")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	judge := []string{"judge", "--metric", "http_request_duration_seconds",
		"--baseline", `{track="baseline"}`, "--canary", `{track="canary"}`, "--timeout", "1m"}
	t.Run("a process", func(t *testing.T) {
		ws := crashJudge(t, exec.Command(bin), judge, func(cmd *exec.Cmd) int { return cmd.Process.Pid })
		if code := ws.ExitStatus(); code >= 0 && code <= 2 || !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
			t.Fatalf("after SIGQUIT: exit status %d, signal %v; want an abort (SIGABRT), never 0, 1 or 2", ws.ExitStatus(), ws.Signal())
		}
	})
	t.Run("PID 1", func(t *testing.T) {
		if err := exec.Command("unshare", "--pid", "--fork", "true").Run(); err != nil {
			t.Skipf("no new PID namespace here (unshare --pid needs root or user namespaces): %v", err)
		}
		// unshare forks pairwise as PID 1 of the new namespace, which
		// starts the judge as its child: the crash is the judge's own, in
		// the deepest pairwise process (PID 1 itself without asPID1).
		ws := crashJudge(t, exec.Command("unshare", "--pid", "--fork", bin), judge, func(cmd *exec.Cmd) int {
			pid := cmd.Process.Pid
			for next := children(t, pid); len(next) > 0; next = children(t, pid) {
				if len(next) != 1 {
					t.Fatalf("process %d has children %d; want one", pid, next)
				}
				pid = next[0]
			}
			return pid
		})
		if ws.Signaled() || ws.ExitStatus() != 128+int(syscall.SIGABRT) {
			t.Fatalf("after SIGQUIT: exit status %d, signal %v; want 134, an abort as a shell reports it", ws.ExitStatus(), ws.Signal())
		}
	})
}

// crashJudge starts cmd with judge's arguments and a Prometheus that never
// answers, sends SIGQUIT to the process crashed(cmd) names once the judge
// asked, and returns how cmd ended.
func crashJudge(t *testing.T, cmd *exec.Cmd, judge []string, crashed func(*exec.Cmd) int) syscall.WaitStatus {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	cmd.Args = append(append(cmd.Args, judge...), "--prometheus", "http://"+ln.Addr().String())
	cmd.Env = append(os.Environ(), "GOTRACEBACK=") // what a shell without the image's setting gives
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the judge never asked Prometheus")
	}
	if err := syscall.Kill(crashed(cmd), syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("wait: %v", err)
	}
	return exit.Sys().(syscall.WaitStatus)
}

// children are the process ids of pid's children, as /proc lists them by
// the thread that forked each (Go forks from any of its threads).
func children(t *testing.T, pid int) []int {
	t.Helper()
	lists, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Fields(string(b)) {
			c, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
	}
	return out
}
