package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
)

// Thanos 0.42.4 (built by tools/install.sh as .tools/bin/thanos): a sidecar
// beside a testenv Prometheus, Thanos Query over store endpoints, and Thanos
// Ruler evaluating rule files through Thanos Query.

// ThanosPromExternalLabel is the external label ThanosPrometheus gives its
// Prometheus (the sidecar requires one): cluster="pairwise-<n>".
const ThanosPromExternalLabel = "cluster"

// ThanosPrometheus starts Prometheus ready for a Thanos sidecar: opts as for
// Prometheus, with the external label cluster=<cluster> added to the global
// section of opts.Config (which must start with "global:" when set) and
// local compaction disabled (--storage.tsdb.min-block-duration and
// --storage.tsdb.max-block-duration at 2h), as Thanos asks of a Prometheus
// it reads.
func ThanosPrometheus(t testing.TB, opts PromOptions, cluster string) *PromServer {
	t.Helper()
	if opts.Config == "" {
		opts.Config = DefaultPromConfig
	}
	const global = "global:\n"
	if !strings.HasPrefix(opts.Config, global) {
		t.Fatalf("testenv: ThanosPrometheus adds external labels to the global section: the configuration must start with %q", global)
	}
	opts.Config = global + fmt.Sprintf("  external_labels:\n    %s: %q\n", ThanosPromExternalLabel, cluster) + strings.TrimPrefix(opts.Config, global)
	opts.Args = append(slices.Clone(opts.Args), "--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h")
	return Prometheus(t, opts)
}

// ThanosServer is a running Thanos component.
type ThanosServer struct {
	URL      string // http://127.0.0.1:PORT (HTTP API, /-/ready)
	Addr     string // 127.0.0.1:PORT of the HTTP API
	GRPCAddr string // 127.0.0.1:PORT of its gRPC (StoreAPI) server
	Dir      string // holds its files and its log
	LogFile  string
	PID      int
	proc     *procs.Process
}

// LogTail returns the last n lines of the component's log.
func (s *ThanosServer) LogTail(n int) string { return s.proc.Tail(n) }

// Stop stops the component now (it is also stopped in t.Cleanup).
func (s *ThanosServer) Stop() { s.proc.Stop() }

// startThanos runs `thanos <component> args(http, grpc)...` on free ports
// (HTTP on httpAddr, gRPC on grpcAddr when set) and waits for /-/ready,
// retrying on a port taken meanwhile.
func startThanos(t testing.TB, component, dir, httpAddr, grpcAddr string, args func() []string) *ThanosServer {
	t.Helper()
	bin := Binary(t, "thanos")
	fixed := httpAddr != "" || grpcAddr != ""
	fixedHTTP, fixedGRPC := httpAddr != "", grpcAddr != ""
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if !fixedHTTP {
			httpAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		}
		if !fixedGRPC {
			grpcAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		}
		all := append([]string{component,
			"--http-address=" + httpAddr,
			"--grpc-address=" + grpcAddr,
			"--log.level=info",
		}, args()...)
		p := Start(t, component, bin, dir, all...)
		url := "http://" + httpAddr
		lastErr = p.WaitReady(url+"/-/ready", 90*time.Second)
		if lastErr == nil {
			return &ThanosServer{URL: url, Addr: httpAddr, GRPCAddr: grpcAddr, Dir: dir, LogFile: p.LogFile, PID: p.PID(), proc: p}
		}
		p.Stop()
		if fixed || !errors.Is(lastErr, procs.ErrAddrInUse) {
			break
		}
	}
	t.Fatalf("testenv: thanos %s: %v", component, lastErr)
	return nil
}

// ThanosSidecar starts a sidecar serving prom's data over the StoreAPI
// (without object storage: nothing is uploaded). prom must have been started
// by ThanosPrometheus. It is ready once it has read Prometheus's external
// labels.
func ThanosSidecar(t testing.TB, prom *PromServer) *ThanosServer {
	t.Helper()
	dir := t.TempDir()
	return startThanos(t, "sidecar", dir, "", "", func() []string {
		return []string{"--prometheus.url=" + prom.URL, "--tsdb.path=" + prom.DataDir}
	})
}

// ThanosQueryOptions configure Thanos Query.
type ThanosQueryOptions struct {
	// Endpoints are the gRPC addresses of StoreAPI servers (--endpoint).
	Endpoints []string
	// Addr, when set, is the HTTP address to listen on (default: a free
	// port): a Thanos Ruler started before this Query can then be pointed
	// at it, and this Query at the ruler's StoreAPI.
	Addr string
	// GRPCAddr, when set, is the gRPC address (StoreAPI and query API) to
	// listen on (default: a free port), for a ruler started before it.
	GRPCAddr string
	// Args are extra command-line flags.
	Args []string
}

// ThanosQuery starts Thanos Query over opts.Endpoints and waits until it is
// ready and every endpoint is among its healthy stores.
func ThanosQuery(t testing.TB, opts ThanosQueryOptions) *ThanosServer {
	t.Helper()
	dir := t.TempDir()
	s := startThanos(t, "query", dir, opts.Addr, opts.GRPCAddr, func() []string {
		var args []string
		for _, e := range opts.Endpoints {
			args = append(args, "--endpoint="+e)
		}
		return append(args, opts.Args...)
	})
	if err := s.WaitStores(len(opts.Endpoints), 60*time.Second); err != nil {
		t.Fatalf("testenv: thanos query: %v; last lines of %s:\n%s", err, s.LogFile, s.LogTail(30))
	}
	return s
}

// ThanosStore is one store endpoint as Thanos Query's /api/v1/stores lists it.
type ThanosStore struct {
	Name      string `json:"name"`
	LastError string `json:"lastError"`
}

// Stores lists the store endpoints Thanos Query knows, by type.
func (s *ThanosServer) Stores() (map[string][]ThanosStore, error) {
	resp, err := http.Get(s.URL + "/api/v1/stores")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string                   `json:"status"`
		Data   map[string][]ThanosStore `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET %s/api/v1/stores: %v", s.URL, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("GET %s/api/v1/stores: status %q", s.URL, body.Status)
	}
	return body.Data, nil
}

// WaitStores waits until Thanos Query lists n store endpoints without error.
func (s *ThanosServer) WaitStores(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		stores, err := s.Stores()
		healthy := 0
		for _, list := range stores {
			for _, st := range list {
				if st.LastError == "" {
					healthy++
				}
			}
		}
		if err == nil && healthy >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d store endpoints healthy after %v (stores %v, error %v)", healthy, n, timeout, stores, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ThanosRulerOptions configure Thanos Ruler.
type ThanosRulerOptions struct {
	// QueryAddr is the host:port of the HTTP API of the Thanos Query the
	// rules are evaluated by (--query); it may start after the ruler.
	// Thanos Ruler 0.42.4 reads that API's answers as floats only: a native
	// histogram result is recorded as a float 0.
	QueryAddr string
	// GRPCQueryAddr, instead of QueryAddr, is the host:port of the gRPC
	// query API of that Thanos Query (--grpc-query-endpoint), whose answers
	// keep native histograms.
	GRPCQueryAddr string
	// Files are rule files, name -> contents, all loaded (--rule-file).
	Files map[string]string
	// EvalInterval is --eval-interval (default 15 s).
	EvalInterval time.Duration
	// AlertmanagerURL, when set, is --alertmanagers.url.
	AlertmanagerURL string
	// Labels are its external labels (--label), name -> value; Thanos
	// requires at least one. Default: ruler="pairwise".
	Labels map[string]string
	// Args are extra command-line flags.
	Args []string
}

// ThanosRuler starts Thanos Ruler with its own TSDB in a new directory and
// waits until it is ready. Its StoreAPI (GRPCAddr) serves what it recorded.
func ThanosRuler(t testing.TB, opts ThanosRulerOptions) *ThanosServer {
	t.Helper()
	if (opts.QueryAddr == "") == (opts.GRPCQueryAddr == "") {
		t.Fatal("testenv: ThanosRuler needs the address of a Thanos Query, HTTP or gRPC, one of them")
	}
	if opts.EvalInterval == 0 {
		opts.EvalInterval = 15 * time.Second
	}
	if len(opts.Labels) == 0 {
		opts.Labels = map[string]string{"ruler": "pairwise"}
	}
	dir := t.TempDir()
	var files []string
	for name, content := range opts.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		files = append(files, p)
	}
	slices.Sort(files)
	return startThanos(t, "rule", dir, "", "", func() []string {
		args := []string{
			"--data-dir=" + filepath.Join(dir, "data"),
			"--eval-interval=" + opts.EvalInterval.String(),
		}
		if opts.QueryAddr != "" {
			args = append(args, "--query="+opts.QueryAddr)
		} else {
			args = append(args, "--grpc-query-endpoint="+opts.GRPCQueryAddr)
		}
		for _, f := range files {
			args = append(args, "--rule-file="+f)
		}
		if opts.AlertmanagerURL != "" {
			args = append(args, "--alertmanagers.url="+opts.AlertmanagerURL)
		}
		names := make([]string, 0, len(opts.Labels))
		for n := range opts.Labels {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			args = append(args, fmt.Sprintf("--label=%s=%q", n, opts.Labels[n]))
		}
		return append(args, opts.Args...)
	})
}

// RuleState is one rule as /api/v1/rules lists it (Prometheus and Thanos
// Ruler answer alike).
type RuleState struct {
	Group          string
	Name           string    `json:"name"`
	Type           string    `json:"type"`
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// Rules lists the rules of the server at baseURL, group by group.
func Rules(baseURL string) ([]RuleState, error) {
	resp, err := http.Get(baseURL + "/api/v1/rules")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				Name  string      `json:"name"`
				Rules []RuleState `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET %s/api/v1/rules: %v", baseURL, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("GET %s/api/v1/rules: status %q", baseURL, body.Status)
	}
	var out []RuleState
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			r.Group = g.Name
			out = append(out, r)
		}
	}
	return out, nil
}
