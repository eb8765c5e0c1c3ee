package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
)

func init() { extraCommands["serve"] = serve }

// Bounds of the server.
const (
	// maxServeWindow bounds a window asked over HTTP: a day keeps every
	// analysis within Prometheus's points per query.
	maxServeWindow = 24 * 60
	// cacheFor is how long a finished analysis answers identical requests.
	cacheFor = time.Minute
	// maxCached bounds the analyses kept.
	maxCached = 1024
	// maxAnalyses bounds the analyses querying Prometheus at once.
	maxAnalyses = 4
	// shutdownGrace is how long SIGTERM waits for requests in flight.
	shutdownGrace = 25 * time.Second
)

const serveUsage = `Usage: pairwise serve --prometheus URL [--config rules/pairwise.yaml] [--listen :8080] [flags]

Answers canary decisions over HTTP, for Argo Rollouts (web metric provider)
and Flagger (webhooks); see docs/integrations.md.

  GET  /api/v1/decision?canary=NAME[&since=T&at=T&window=60m&rule=evidence&source=auto]
  GET  /api/v1/decision?metric=M&baseline={...}&canary={...}[&histogram=auto&...]
       200: the judge's JSON report (decision promote, hold or rollback);
       400: a bad parameter; 404: no such canary; 503: cannot judge
       (Prometheus unreachable or failing, no data): decision "inconclusive",
       never promote.
  POST /flagger/rollout            non-2xx only on rollback
  POST /flagger/confirm-promotion  2xx only on promote
  POST /flagger/rollback           2xx only on rollback
  GET  /healthz  /readyz (Prometheus reachable)  /metrics

`

type serveFlags struct {
	promFlags
	listen, config   string
	podLabel         string
	settle, readyFor time.Duration
	readTimeout      time.Duration
}

// serve is the decision server:
//
//	pairwise serve --prometheus URL --config rules/pairwise.yaml --listen :8080
func serve(args []string, stdout, stderr io.Writer) int {
	f := &serveFlags{}
	fs := newServeFlagSet(stderr, f)
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if f.podLabel != "" {
		if err := prom.CheckPodLabel(f.podLabel); err != nil {
			return fail(stderr, fmt.Errorf("--pod-label: %w", err))
		}
	}
	if f.settle < 0 || f.settle > maxSettle {
		return fail(stderr, fmt.Errorf("--settle %s is not between 0s and %s", f.settle, maxSettle))
	}
	if f.readyFor < time.Second || f.readyFor > 5*time.Minute {
		return fail(stderr, fmt.Errorf("--ready-cache %s is not between 1s and 5m", f.readyFor))
	}
	if f.readTimeout < time.Second || f.readTimeout > 5*time.Minute {
		return fail(stderr, fmt.Errorf("--read-timeout %s is not between 1s and 5m", f.readTimeout))
	}
	canaries, err := loadCanaries(f.config)
	if err != nil {
		return fail(stderr, err)
	}
	client, scrub, err := f.connect(stderr)
	if err != nil {
		return fail(stderr, err)
	}
	if !flagSet(fs, "prometheus") {
		// The judge's default suits a shell beside Prometheus; a server in
		// a container would ask the container itself and answer 503 for ever.
		return fail(stderr, errors.New("serve needs --prometheus URL, the Prometheus (or Mimir/Thanos) it judges against"))
	}
	srv := newDecisionServer(serverOptions{Client: client, Canaries: canaries, PodLabel: f.podLabel, Settle: f.settle, ReadyFor: f.readyFor, Scrub: scrub, PromURL: prom.RedactURL(f.prometheus)})
	// SIGTERM is caught before the port opens: once the server answers,
	// a termination is always graceful.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fail(stderr, fmt.Errorf("serve: %w", err))
	}
	fmt.Fprintf(stderr, "pairwise serve: answering on http://%s/ (%d canaries from %s), Prometheus %s\n", ln.Addr(), len(canaries), orNone(f.config), prom.RedactURL(f.prometheus))
	if longest := srv.analysisTimeout(); longest >= gateWait {
		fmt.Fprintf(stderr, "pairwise serve: warning: with --timeout %s an answer can take up to %s, and the shipped Argo and Flagger gates wait %s (a Flagger hook that times out is a failed check): use --timeout %s or less, or raise the gates' timeouts\n",
			f.timeout, longest, gateWait, serveTimeout)
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: f.readTimeout,
		ReadTimeout:       f.readTimeout,
		WriteTimeout:      srv.analysisTimeout() + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fail(stderr, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "pairwise serve: shutting down, finishing the requests in flight")
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return fail(stderr, fmt.Errorf("serve: shutdown: %w", err))
	}
	return 0
}

// serveTimeout is serve's default --timeout: an answer takes at most twice
// it and 5 s (analysisTimeout), 45 s, within the 50 s the shipped Argo and
// Flagger gates wait (gateWait). The judge's 30 s would give 65 s, and a
// Flagger hook that times out is a failed check.
const serveTimeout = 20 * time.Second

// gateWait is how long the shipped gates (deploy/argo, deploy/flagger) wait
// for an answer.
const gateWait = 50 * time.Second

func newServeFlagSet(stderr io.Writer, f *serveFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
		fs.PrintDefaults()
	}
	f.promFlags.register(fs, serveTimeout)
	fs.StringVar(&f.listen, "listen", ":8080", "address to serve on")
	fs.StringVar(&f.podLabel, "pod-label", "pod", "label that tells a canary's pods apart: a rollback names the pods that hold the canary's tail, from one more query (empty: do not ask)")
	fs.StringVar(&f.config, "config", "", "rule pack config (rules/pairwise.yaml) naming the canaries a request may ask for by name")
	fs.DurationVar(&f.settle, "settle", engine.DefaultSettle, "without at=, how long a minute must be over before it is judged (0 to 1h)")
	fs.DurationVar(&f.readyFor, "ready-cache", 10*time.Second, "how long /readyz reuses its last Prometheus check (1s to 5m)")
	fs.DurationVar(&f.readTimeout, "read-timeout", 10*time.Second, "time to read a whole request, headers and body (1s to 5m)")
	return fs
}

func orNone(path string) string {
	if path == "" {
		return "no --config"
	}
	return path
}

// loadCanaries reads the rule pack config as `pairwise rules` does and
// returns each canary, validated, with its effective configuration.
func loadCanaries(path string) (map[string]rulegen.Queries, error) {
	out := map[string]rulegen.Queries{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rule pack config: %w", err)
	}
	file, err := rulegen.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	file.Source = filepath.ToSlash(path)
	qs, err := rulegen.MinuteQueries(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, q := range qs {
		out[q.Name] = q
	}
	return out, nil
}

// flagSet tells whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
