package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCrashIsNeverRollback: the built judge, stopped by SIGQUIT while it
// waits for a Prometheus that never answers, aborts (SIGABRT). Before, Go
// ended it with exit status 2, the judge's rollback, and the Argo Job
// template fails the Job (aborting the rollout) on 2.
func TestCrashIsNeverRollback(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pairwise")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
	cmd := exec.Command(bin, "judge", "--prometheus", "http://"+ln.Addr().String(), "--metric", "http_request_duration_seconds",
		"--baseline", `{track="baseline"}`, "--canary", `{track="canary"}`, "--timeout", "1m")
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
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("wait: %v", err)
	}
	ws := exit.Sys().(syscall.WaitStatus)
	if code := ws.ExitStatus(); code >= 0 && code <= 2 || !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
		t.Fatalf("after SIGQUIT: exit status %d, signal %v; want an abort (SIGABRT), never 0, 1 or 2", ws.ExitStatus(), ws.Signal())
	}
}
