package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

func init() { extraCommands["webhook"] = webhook }

// amMessage is the part of Alertmanager's webhook payload (version 4) we print.
type amMessage struct {
	Receiver string    `json:"receiver"`
	Status   string    `json:"status"`
	Alerts   []amAlert `json:"alerts"`
}

type amAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
}

// webhook is a receiver for Alertmanager's webhook_configs that prints one
// line per alert: the stand-in for whatever performs the rollback.
//
//	pairwise webhook --listen 127.0.0.1:9095
func webhook(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9095", "address to receive Alertmanager webhook notifications on (any path)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitError
	}
	if fs.NArg() > 0 {
		return fail(stderr, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(stderr, fmt.Errorf("webhook: %w", err))
	}
	fmt.Fprintf(stdout, "pairwise webhook: receiving Alertmanager notifications on http://%s/\n", ln.Addr())
	srv := &http.Server{Handler: webhookHandler(stdout), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fail(stderr, fmt.Errorf("webhook: %w", err))
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return 0
}

// webhookHandler prints every alert of every notification, one line each:
//
//	ALERT firing PairwiseCanaryRollback {action="rollback", canary="checkout", severity="critical"}: summary
func webhookHandler(out io.Writer) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
		case http.MethodGet, http.MethodHead:
			fmt.Fprintln(w, "pairwise webhook: POST Alertmanager webhook notifications here")
			return
		default:
			http.Error(w, "POST Alertmanager webhook notifications here", http.StatusMethodNotAllowed)
			return
		}
		var msg amMessage
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&msg); err != nil {
			http.Error(w, "not an Alertmanager webhook payload: "+err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, a := range msg.Alerts {
			fmt.Fprintf(out, "%s ALERT %s %s %s: %s\n", time.Now().UTC().Format(time.RFC3339),
				a.Status, a.Labels["alertname"], formatLabels(a.Labels), a.Annotations["summary"])
		}
		w.WriteHeader(http.StatusOK)
	})
}

func formatLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		if k != "alertname" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, l[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
