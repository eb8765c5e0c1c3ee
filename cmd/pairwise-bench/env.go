package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// env holds what every measurement needs: the project root, the pinned
// Prometheus, the generator binary and a directory for generated data.
type env struct {
	root     string
	promBin  string
	genBin   string
	dataRoot string // generated data sets, one directory per argument set
	tmp      string // scratch (Prometheus configs and logs), removed at the end
	logf     func(format string, args ...any)
}

func newEnv(cacheDir string, logf func(string, ...any)) (*env, error) {
	root, err := testenv.Root()
	if err != nil {
		return nil, err
	}
	bin, err := testenv.ToolsBin()
	if err != nil {
		return nil, err
	}
	e := &env{root: root, promBin: filepath.Join(bin, "prometheus"), logf: logf}
	if fi, err := os.Stat(e.promBin); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("prometheus not found at %s: run `bash tools/install.sh` (or set %s)", e.promBin, testenv.EnvToolsBin)
	}
	e.tmp, err = os.MkdirTemp("", "pairwise-bench-")
	if err != nil {
		return nil, err
	}
	if cacheDir == "" {
		cacheDir = filepath.Join(e.tmp, "data")
	}
	e.dataRoot = cacheDir
	if err := os.MkdirAll(e.dataRoot, 0o755); err != nil {
		return nil, err
	}
	// Build pairwise-gen from tools/ (its own module) with the go command.
	e.genBin = filepath.Join(e.tmp, "pairwise-gen")
	cmd := exec.Command("go", "build", "-o", e.genBin, "./cmd/pairwise-gen")
	cmd.Dir = filepath.Join(root, "tools")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/pairwise-gen in %s: %v\n%s", cmd.Dir, err, out)
	}
	return e, nil
}

func (e *env) close() { os.RemoveAll(e.tmp) }

// dataset is one generated TSDB with its ground truth.
type dataset struct {
	Args       []string `json:"args"`
	Dir        string   `json:"-"`
	Truth      string   `json:"-"`
	GenSeconds float64  `json:"gen_seconds"`
	Summary    string   `json:"summary"`
	Cached     bool     `json:"-"`
}

// generate runs pairwise-gen with args (--out, --truth and --quiet are added),
// reusing an earlier result with the same arguments from the cache directory.
// Prometheus only ever opens a copy-free *clone* of the blocks (see serve), so
// a cached directory is never modified.
func (e *env) generate(args ...string) (*dataset, error) {
	h := sha256.Sum256([]byte(strings.Join(args, "\x00")))
	dir := filepath.Join(e.dataRoot, hex.EncodeToString(h[:8]))
	ds := &dataset{Args: args, Dir: filepath.Join(dir, "data"), Truth: filepath.Join(dir, "truth.json")}
	meta := filepath.Join(dir, "meta.json")
	if b, err := os.ReadFile(meta); err == nil && json.Unmarshal(b, ds) == nil {
		ds.Cached = true
		e.logf("data: reusing %s (generated in %.1fs): %s", dir, ds.GenSeconds, strings.Join(args, " "))
		return ds, nil
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e.logf("data: generating %s", strings.Join(args, " "))
	cmd := exec.Command(e.genBin, append([]string{"--out", ds.Dir, "--truth", ds.Truth, "--quiet"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pairwise-gen %q: %v\n%s", args, err, out.String())
	}
	ds.GenSeconds = time.Since(t0).Seconds()
	ds.Summary = strings.TrimSpace(out.String())
	e.logf("data: %.1fs: %s", ds.GenSeconds, ds.Summary)
	b, _ := json.Marshal(ds)
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		return nil, err
	}
	return ds, nil
}

// promServer is a running pinned Prometheus.
type promServer struct {
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// serve starts Prometheus on a private copy of the data set's blocks (hard
// links, so it is cheap) with compaction disabled: min and max block
// durations of 2h keep the generated 2h blocks as they are, so no
// compaction runs while timings are taken.
func (e *env) serve(ds *dataset) (*promServer, error) {
	dir, err := os.MkdirTemp(e.tmp, "prom-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := linkTree(ds.Dir, data); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(testenv.DefaultPromConfig), 0o644); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		logPath := filepath.Join(dir, "prometheus.log")
		logf, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(e.promBin,
			"--config.file="+cfg,
			"--storage.tsdb.path="+data,
			"--storage.tsdb.retention.time=100y",
			"--storage.tsdb.min-block-duration=2h",
			"--storage.tsdb.max-block-duration=2h",
			"--query.max-samples=500000000",
			"--web.listen-address="+addr,
		)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, err
		}
		s := &promServer{URL: "http://" + addr, cmd: cmd, done: make(chan struct{}), log: logPath}
		go func() { cmd.Wait(); logf.Close(); close(s.done) }()
		lastErr = s.waitReady(120 * time.Second)
		if lastErr == nil {
			return s, nil
		}
		s.stop()
		if !strings.Contains(lastErr.Error(), "address already in use") {
			break
		}
	}
	return nil, fmt.Errorf("prometheus: %w", lastErr)
}

func (s *promServer) waitReady(timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("exited before it was ready: %s", tailLines(string(b), 20))
		default:
		}
		resp, err := client.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v (%v)", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM to the process we started, then SIGKILL after 15 s.
func (s *promServer) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// linkTree recreates src under dst with hard links for files (copies when
// linking fails), so Prometheus can write its WAL and lock without touching
// the cached data set.
func linkTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		// Prometheus rewrites these; never share them.
		if base := filepath.Base(p); base == "lock" || strings.HasPrefix(rel, "wal") || strings.HasPrefix(rel, "chunks_head") || base == "queries.active" {
			return nil
		}
		if err := os.Link(p, target); err == nil {
			return nil
		} else if !errors.Is(err, os.ErrExist) {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, fi.Mode())
		}
		return nil
	})
}
