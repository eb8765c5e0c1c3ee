// Package procs runs the project's real servers and tools outside any test
// framework: the pinned Prometheus 3.13.5 and Alertmanager 0.31.1 built by
// tools/install.sh (or found in $PAIRWISE_TOOLS_BIN), the pairwise-gen TSDB
// generator, and any other process a measurement or test needs, each on a
// free port of 127.0.0.1, waited for until it answers, stopped by PID
// (SIGTERM, then SIGKILL). It also holds the one raw Prometheus query helper
// of the tests and the benchmark.
//
// Every function returns an error; internal/testenv wraps them for tests
// (t.Cleanup, t.Fatalf) and cmd/pairwise-bench calls them directly.
package procs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Module is the main module's path, used to find the project root.
const Module = "github.com/pairwise-canary/pairwise"

// EnvToolsBin overrides the directory of the pinned binaries.
const EnvToolsBin = "PAIRWISE_TOOLS_BIN"

// Root returns the project root: the nearest directory, from the working
// directory up, whose go.mod declares module github.com/pairwise-canary/pairwise.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) == Module {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", Module)
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// ToolsBin returns the directory of the pinned binaries: $PAIRWISE_TOOLS_BIN,
// else <root>/.tools/bin.
func ToolsBin() (string, error) {
	if d := os.Getenv(EnvToolsBin); d != "" {
		return d, nil
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".tools", "bin"), nil
}

// Binary returns the path of a pinned binary (prometheus, promtool,
// alertmanager, amtool), or an error that says how to build it.
func Binary(name string) (string, error) {
	dir, err := ToolsBin()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s not found at %s: run `bash tools/install.sh` at the project root to build the pinned Prometheus/Alertmanager tools (or set %s)", name, p, EnvToolsBin)
	}
	return p, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Process is a started process, its output in LogFile.
type Process struct {
	Name    string
	LogFile string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// Start runs bin with args in dir, its output going to dir/<name>.log, in a
// process group of its own. The caller stops it (Stop).
func Start(name, bin, dir string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogFile: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited tells whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process, then SIGKILL after 15 s, and waits for
// it to end. Stopping an ended process does nothing.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.LogFile)
	return TailLines(string(b), n)
}

// TailLines returns the last n lines of s.
func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ErrAddrInUse means the process exited because its port was taken
// meanwhile; starting again on another port is the cure.
var ErrAddrInUse = errors.New("address already in use")

// WaitReady polls url until it answers 200, and fails when the process
// exits first (ErrAddrInUse when its port was taken) or after timeout.
func (p *Process) WaitReady(url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if p.Exited() {
			log := p.Tail(30)
			if strings.Contains(log, "address already in use") {
				return fmt.Errorf("%s: %w", p.Name, ErrAddrInUse)
			}
			return fmt.Errorf("%s exited before it was ready (%v); last lines of %s:\n%s", p.Name, p.waitErr, p.LogFile, log)
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s after %v (last error %v); last lines of %s:\n%s", p.Name, url, timeout, err, p.LogFile, p.Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Listening is a started server: its address and process.
type Listening struct {
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	*Process
}

// Serve starts a server on a free port of 127.0.0.1 and waits until
// readyPath answers 200. args gets the address ("127.0.0.1:PORT") and gives
// the command line. A port taken between its choice and the server's start
// is retried on another, up to three times. On failure nothing is left
// running.
func Serve(name, bin, dir, readyPath string, timeout time.Duration, args func(addr string) []string) (*Listening, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		p, err := Start(name, bin, dir, args(addr)...)
		if err != nil {
			return nil, err
		}
		url := "http://" + addr
		if lastErr = p.WaitReady(url+readyPath, timeout); lastErr == nil {
			return &Listening{URL: url, Addr: addr, Process: p}, nil
		}
		p.Stop()
		if !errors.Is(lastErr, ErrAddrInUse) {
			break
		}
	}
	return nil, lastErr
}

// PostEmpty posts an empty body to url and wants 200 (/-/reload).
func PostEmpty(url string) error {
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}
