package procs

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PromOptions configure Prometheus.
type PromOptions struct {
	// DataDir is --storage.tsdb.path (for example from Generate). Default: a
	// new empty directory. Prometheus writes into it (WAL, lock, compaction),
	// so do not share one directory between two servers.
	DataDir string
	// Config is the prometheus.yml contents. Default: DefaultPromConfig.
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

// Prometheus is a running Prometheus.
type Prometheus struct {
	URL       string // http://127.0.0.1:PORT
	Addr      string // 127.0.0.1:PORT
	ConfigDir string // holds prometheus.yml, PromOptions.Files and prometheus.log
	DataDir   string
	LogFile   string
	PID       int
	proc      *Process
}

// StartPrometheus starts the pinned Prometheus with its configuration, files
// and log in dir, --storage.tsdb.retention.time=100y (generated blocks are
// in the past and must not be deleted) and --web.enable-lifecycle, and waits
// until it is ready. The caller stops it (Stop).
func StartPrometheus(dir string, opts PromOptions) (*Prometheus, error) {
	bin, err := Binary("prometheus")
	if err != nil {
		return nil, err
	}
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
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(opts.Config), 0o644); err != nil {
		return nil, err
	}
	s, err := Serve("prometheus", bin, dir, "/-/ready", opts.ReadyTimeout, func(addr string) []string {
		return append([]string{
			"--config.file=" + cfg,
			"--storage.tsdb.path=" + opts.DataDir,
			"--storage.tsdb.retention.time=100y",
			"--web.listen-address=" + addr,
			"--web.enable-lifecycle",
		}, opts.Args...)
	})
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	return &Prometheus{URL: s.URL, Addr: s.Addr, ConfigDir: dir, DataDir: opts.DataDir, LogFile: s.LogFile, PID: s.PID(), proc: s.Process}, nil
}

// Reload asks Prometheus to reload its configuration and rule files
// (POST /-/reload).
func (s *Prometheus) Reload() error { return PostEmpty(s.URL + "/-/reload") }

// LogTail returns the last n lines of the server's log.
func (s *Prometheus) LogTail(n int) string { return s.proc.Tail(n) }

// Stop stops the server.
func (s *Prometheus) Stop() { s.proc.Stop() }

// Alertmanager is a running Alertmanager.
type Alertmanager struct {
	URL     string // http://127.0.0.1:PORT
	Addr    string
	Dir     string // holds alertmanager.yml, its data and alertmanager.log
	LogFile string
	PID     int
	proc    *Process
}

// StartAlertmanager starts the pinned Alertmanager with the given
// configuration in dir, clustering disabled, and waits until it is ready.
// The caller stops it (Stop).
func StartAlertmanager(dir, configYAML string) (*Alertmanager, error) {
	bin, err := Binary("alertmanager")
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o644); err != nil {
		return nil, err
	}
	s, err := Serve("alertmanager", bin, dir, "/-/ready", 60*time.Second, func(addr string) []string {
		return []string{
			"--config.file=" + cfg,
			"--storage.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			"--cluster.listen-address=", // no clustering, no gossip port
		}
	})
	if err != nil {
		return nil, fmt.Errorf("alertmanager: %w", err)
	}
	return &Alertmanager{URL: s.URL, Addr: s.Addr, Dir: dir, LogFile: s.LogFile, PID: s.PID(), proc: s.Process}, nil
}

// Reload asks Alertmanager to reload its configuration (POST /-/reload).
func (s *Alertmanager) Reload() error { return PostEmpty(s.URL + "/-/reload") }

// LogTail returns the last n lines of the server's log.
func (s *Alertmanager) LogTail(n int) string { return s.proc.Tail(n) }

// Stop stops the server.
func (s *Alertmanager) Stop() { s.proc.Stop() }
