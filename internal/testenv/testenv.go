// Package testenv starts real servers for tests: the pinned Prometheus 3.13.5
// and Alertmanager 0.31.1 built by tools/install.sh, a webhook receiver that
// records Alertmanager notifications, and the pairwise-gen TSDB generator.
//
// Servers listen on 127.0.0.1 on free ports, and are stopped by PID (SIGTERM,
// then SIGKILL) in t.Cleanup. A missing binary is a test failure, never a skip:
// CI must not pass silently without the real servers.
package testenv

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
	"testing"
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
// alertmanager, amtool), failing the test with instructions when missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	dir, err := ToolsBin()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	p := filepath.Join(dir, name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("testenv: %s not found at %s: run `bash tools/install.sh` at the project root to build the pinned Prometheus/Alertmanager tools (or set %s)", name, p, EnvToolsBin)
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a started server.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// start runs bin with args, its output going to logPath, and registers a
// cleanup that stops it by PID.
func start(t testing.TB, name, bin, logPath string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process, then SIGKILL after 15 s.
func (p *process) stop() {
	if p.exited() {
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

// tail returns the last n lines of the process log.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var errAddrInUse = errors.New("address already in use")

// waitReady polls url until it answers 200, the process exits or timeout.
func (p *process) waitReady(url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			log := p.tail(30)
			if strings.Contains(log, "address already in use") {
				return errAddrInUse
			}
			return fmt.Errorf("%s exited before it was ready (%v); last lines of %s:\n%s", p.name, p.waitErr, p.logPath, log)
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s after %v (last error %v); last lines of %s:\n%s", p.name, url, timeout, err, p.logPath, p.tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PromOptions configure Prometheus.
type PromOptions struct {
	// DataDir is --storage.tsdb.path (for example from Generate). Default: a
	// new empty directory. Prometheus writes into it (WAL, lock, compaction),
	// so do not share one directory between two servers.
	DataDir string
	// Config is the prometheus.yml contents. Default: a global section with
	// 15 s scrape and evaluation intervals and no scrape jobs.
	Config string
	// Files are written next to prometheus.yml before the start (rule files,
	// for example): name -> contents. Relative rule_files paths in Config
	// resolve against that directory.
	Files map[string]string
	// Args are extra command-line flags.
	Args []string
	// ReadyTimeout bounds the wait for /-/ready (default 90 s).
	ReadyTimeout time.Duration
}

// DefaultPromConfig is the configuration used when PromOptions.Config is empty.
const DefaultPromConfig = `global:
  scrape_interval: 15s
  evaluation_interval: 15s
`

// PromServer is a running Prometheus.
type PromServer struct {
	URL       string // http://127.0.0.1:PORT
	Addr      string // 127.0.0.1:PORT
	ConfigDir string // holds prometheus.yml, PromOptions.Files and prometheus.log
	DataDir   string
	LogFile   string
	PID       int
	proc      *process
}

// Prometheus starts the pinned Prometheus with --storage.tsdb.retention.time=100y
// (generated blocks are in the past and must not be deleted) and
// --web.enable-lifecycle, and waits until it is ready.
func Prometheus(t testing.TB, opts PromOptions) *PromServer {
	t.Helper()
	bin := Binary(t, "prometheus")
	dir := t.TempDir()
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(dir, "data")
	}
	if opts.Config == "" {
		opts.Config = DefaultPromConfig
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 90 * time.Second
	}
	for name, content := range opts.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatalf("testenv: %v", err)
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(opts.Config), 0o644); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		args := append([]string{
			"--config.file=" + cfg,
			"--storage.tsdb.path=" + opts.DataDir,
			"--storage.tsdb.retention.time=100y",
			"--web.listen-address=" + addr,
			"--web.enable-lifecycle",
		}, opts.Args...)
		logPath := filepath.Join(dir, "prometheus.log")
		p, err := start(t, "prometheus", bin, logPath, args...)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		url := "http://" + addr
		lastErr = p.waitReady(url+"/-/ready", opts.ReadyTimeout)
		if lastErr == nil {
			return &PromServer{URL: url, Addr: addr, ConfigDir: dir, DataDir: opts.DataDir, LogFile: logPath, PID: p.cmd.Process.Pid, proc: p}
		}
		p.stop()
		if !errors.Is(lastErr, errAddrInUse) {
			break
		}
	}
	t.Fatalf("testenv: prometheus: %v", lastErr)
	return nil
}

// Reload asks Prometheus to reload its configuration and rule files
// (POST /-/reload).
func (s *PromServer) Reload() error { return postEmpty(s.URL + "/-/reload") }

// LogTail returns the last n lines of the server's log.
func (s *PromServer) LogTail(n int) string { return s.proc.tail(n) }

// Stop stops the server now (it is also stopped in t.Cleanup).
func (s *PromServer) Stop() { s.proc.stop() }

func postEmpty(url string) error {
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

// AMServer is a running Alertmanager.
type AMServer struct {
	URL     string // http://127.0.0.1:PORT
	Addr    string
	Dir     string // holds alertmanager.yml, its data and alertmanager.log
	LogFile string
	PID     int
	proc    *process
}

// Alertmanager starts the pinned Alertmanager with the given configuration,
// clustering disabled, and waits until it is ready.
func Alertmanager(t testing.TB, configYAML string) *AMServer {
	t.Helper()
	bin := Binary(t, "alertmanager")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o644); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		logPath := filepath.Join(dir, "alertmanager.log")
		p, err := start(t, "alertmanager", bin, logPath,
			"--config.file="+cfg,
			"--storage.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr,
			"--cluster.listen-address=", // no clustering, no gossip port
		)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		url := "http://" + addr
		lastErr = p.waitReady(url+"/-/ready", 60*time.Second)
		if lastErr == nil {
			return &AMServer{URL: url, Addr: addr, Dir: dir, LogFile: logPath, PID: p.cmd.Process.Pid, proc: p}
		}
		p.stop()
		if !errors.Is(lastErr, errAddrInUse) {
			break
		}
	}
	t.Fatalf("testenv: alertmanager: %v", lastErr)
	return nil
}

// Reload asks Alertmanager to reload its configuration (POST /-/reload).
func (s *AMServer) Reload() error { return postEmpty(s.URL + "/-/reload") }

// LogTail returns the last n lines of the server's log.
func (s *AMServer) LogTail(n int) string { return s.proc.tail(n) }

// Stop stops the server now (it is also stopped in t.Cleanup).
func (s *AMServer) Stop() { s.proc.stop() }
