// Package testenv starts real servers for tests: the pinned Prometheus 3.13.5
// and Alertmanager 0.31.1 built by tools/install.sh, a webhook receiver that
// records Alertmanager notifications, a scriptable fake Prometheus for
// faults, and the pairwise-gen TSDB generator.
//
// The servers themselves are started, waited for and stopped by
// internal/procs; this package ties them to a test: they run in
// t.TempDir(), stop in t.Cleanup, and a failure (a missing binary
// included) fails the test, never skips it: CI must not pass silently
// without the real servers.
package testenv

import (
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
)

// Module is the main module's path, used to find the project root.
const Module = procs.Module

// EnvToolsBin overrides the directory of the pinned binaries.
const EnvToolsBin = procs.EnvToolsBin

// Root returns the project root (procs.Root).
func Root() (string, error) { return procs.Root() }

// ToolsBin returns the directory of the pinned binaries (procs.ToolsBin).
func ToolsBin() (string, error) { return procs.ToolsBin() }

// Binary returns the path of a pinned binary (prometheus, promtool,
// alertmanager, amtool), failing the test with instructions when missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	p, err := procs.Binary(name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := procs.FreePort()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return port
}

// Start runs bin with args in dir (output in dir/<name>.log) until the test
// ends.
func Start(t testing.TB, name, bin, dir string, args ...string) *procs.Process {
	t.Helper()
	p, err := procs.Start(name, bin, dir, args...)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// WaitReady waits until url answers 200 while p runs, failing the test
// with the end of p's log otherwise.
func WaitReady(t testing.TB, p *procs.Process, url string, timeout time.Duration) {
	t.Helper()
	if err := p.WaitReady(url, timeout); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// PromOptions configure Prometheus (procs.PromOptions).
type PromOptions = procs.PromOptions

// DefaultPromConfig is the configuration used when PromOptions.Config is empty.
const DefaultPromConfig = procs.DefaultPromConfig

// PromServer is a running Prometheus.
type PromServer = procs.Prometheus

// Prometheus starts the pinned Prometheus in a t.TempDir() (see
// procs.StartPrometheus), waits until it is ready and stops it in
// t.Cleanup.
func Prometheus(t testing.TB, opts PromOptions) *PromServer {
	t.Helper()
	s, err := procs.StartPrometheus(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// AMServer is a running Alertmanager.
type AMServer = procs.Alertmanager

// Alertmanager starts the pinned Alertmanager with the given configuration,
// clustering disabled, waits until it is ready and stops it in t.Cleanup.
func Alertmanager(t testing.TB, configYAML string) *AMServer {
	t.Helper()
	s, err := procs.StartAlertmanager(t.TempDir(), configYAML)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Query runs an instant query at at (zero: now) and returns its series,
// failing the test on an error.
func Query(t testing.TB, base, query string, at time.Time) []procs.Series {
	t.Helper()
	s, err := procs.Query(base, query, at)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return s
}
