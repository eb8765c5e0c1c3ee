package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// judgeFlags binds every judge flag; the verdict numbers default to the one
// definition in pkg/verdict.
type judgeFlags struct {
	prometheus, metric, baseline, canary, histogram, output, at, quantiles string
	since                                                                  string
	rangeDur                                                               time.Duration
	lbMetric, lbBaseline, lbCanary                                         string
	window, timeout, settle                                                time.Duration
	config                                                                 verdict.Config
}

func newJudgeFlags(stderr io.Writer) (*flag.FlagSet, *judgeFlags) {
	f := &judgeFlags{config: verdict.Default()}
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.prometheus, "prometheus", "http://127.0.0.1:9090", "Prometheus (or Mimir/Thanos) base URL")
	fs.StringVar(&f.metric, "metric", "", "histogram metric name, without _bucket (required)")
	fs.StringVar(&f.baseline, "baseline", "", `label matchers of the baseline fleet, e.g. {service="checkout",track="baseline"} (required)`)
	fs.StringVar(&f.canary, "canary", "", `label matchers of the canary fleet, e.g. {service="checkout",track="canary"} (required)`)
	fs.StringVar(&f.histogram, "histogram", "auto", "histogram kind: auto, native or classic")
	fs.DurationVar(&f.window, "window", time.Duration(f.config.WindowMinutes)*time.Minute, "window length, whole minutes")
	fs.StringVar(&f.at, "at", "", "end of the window, RFC 3339 or Unix seconds (default: now, less --settle)")
	fs.StringVar(&f.since, "since", "", "start of the deployment, RFC 3339 or Unix seconds: earlier minutes (an earlier canary under the same labels) are ignored, and the window that starts with it is one sequential test")
	fs.DurationVar(&f.rangeDur, "range", 0, "show every minute of this range with the decision of the window ending at it (default: the window)")
	fs.StringVar(&f.config.Rule, "rule", f.config.Rule, "window rule: evidence (pools tail observations over the window, docs/judgement.md) or reference (the chapter's: bad >= --bad-limit rolls back, good >= --good-needed promotes)")
	fs.Float64Var(&f.config.FalseRollback, "false-rollback", f.config.FalseRollback, "evidence rule: false-rollback budget per deployment (and per day of a canary watched every minute)")
	fs.Float64Var(&f.config.FalsePromote, "false-promote", f.config.FalsePromote, "evidence rule: budget of promoting a canary that is --rollback-threshold times slower")
	fs.DurationVar(&f.settle, "settle", 30*time.Second, "with the default --at, how long a minute must be over before it is judged (the last scrape must land)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of each Prometheus query")
	fs.StringVar(&f.output, "output", "table", "output format: table or json")
	fs.StringVar(&f.quantiles, "quantiles", joinFloats(f.config.Quantiles), "quantiles shown for both fleets, comma-separated")
	fs.Float64Var(&f.config.VerdictQuantile, "verdict-quantile", f.config.VerdictQuantile, "quantile whose canary/baseline ratio judges a minute")
	fs.Float64Var(&f.config.PromoteThreshold, "promote-threshold", f.config.PromoteThreshold, "a minute is good when ratio <= this")
	fs.Float64Var(&f.config.RollbackThreshold, "rollback-threshold", f.config.RollbackThreshold, "a minute is bad when ratio >= this")
	fs.IntVar(&f.config.GoodNeeded, "good-needed", f.config.GoodNeeded, "good minutes needed to promote")
	fs.IntVar(&f.config.BadLimit, "bad-limit", f.config.BadLimit, "bad minutes that roll back")
	fs.IntVar(&f.config.WarmupMinutes, "warmup", f.config.WarmupMinutes, "minutes after the canary starts serving that are shown but not counted")
	fs.Float64Var(&f.config.MinTailObservations, "min-tail", f.config.MinTailObservations, "observations each fleet needs beyond the verdict quantile")
	fs.Float64Var(&f.config.Confidence, "confidence", f.config.Confidence, "confidence of the quantile bounds")
	fs.Float64Var(&f.config.ExpectedCanaryShare, "expected-share", f.config.ExpectedCanaryShare, "share of requests the router sends to the canary, e.g. 0.05; a median share more than 10% off it is flagged (0: unknown)")
	fs.Float64Var(&f.config.Significance, "significance", f.config.Significance, "gate good and bad minutes on evidence: the difference must be beyond sampling noise at this one-sided confidence, e.g. 0.99 (0: off, as the rule pack judges)")
	fs.StringVar(&f.lbMetric, "lb-metric", "", "load-balancer-side histogram of the same requests; flags a divergence from the application's (coordinated omission)")
	fs.StringVar(&f.lbBaseline, "lb-baseline", "", "baseline selector for --lb-metric (default: --baseline)")
	fs.StringVar(&f.lbCanary, "lb-canary", "", "canary selector for --lb-metric (default: --canary)")
	fs.Float64Var(&f.config.MaxMeasurementDivergence, "max-divergence", f.config.MaxMeasurementDivergence, "relative divergence between application and load-balancer quantiles that flags the measurement")
	return fs, f
}

func joinFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = verdict.QuantileKey(x)
	}
	return strings.Join(parts, ",")
}

func judge(args []string, stdout, stderr io.Writer) int {
	fs, f := newJudgeFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitError
	}
	if fs.NArg() > 0 {
		return fail(stderr, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	req, client, err := f.request(time.Now())
	if err != nil {
		return fail(stderr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*f.timeout+5*time.Second)
	defer cancel()
	res, err := engine.Analyze(ctx, client, req)
	if err != nil {
		return fail(stderr, explain(f.prometheus, f.timeout, err))
	}
	switch f.output {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report(res)); err != nil {
			return fail(stderr, err)
		}
	default:
		printTable(stdout, res)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "pairwise: warning:", w)
	}
	return res.Decision.Code()
}

// request validates every flag and builds the analysis request.
func (f *judgeFlags) request(now time.Time) (engine.Request, *prom.Client, error) {
	var req engine.Request
	if f.metric == "" || f.baseline == "" || f.canary == "" {
		return req, nil, errors.New("--metric, --baseline and --canary are required")
	}
	if f.output != "table" && f.output != "json" {
		return req, nil, fmt.Errorf("--output %q is not table or json", f.output)
	}
	if err := selector.ValidMetricName(f.metric); err != nil {
		return req, nil, err
	}
	var err error
	if req.Baseline, err = selector.Parse(f.baseline); err != nil {
		return req, nil, fmt.Errorf("--baseline: %w", err)
	}
	if req.Canary, err = selector.Parse(f.canary); err != nil {
		return req, nil, fmt.Errorf("--canary: %w", err)
	}
	if req.Kind, err = prom.ParseKind(f.histogram); err != nil {
		return req, nil, fmt.Errorf("--histogram: %w", err)
	}
	if f.window < time.Minute || f.window%time.Minute != 0 {
		return req, nil, fmt.Errorf("--window %s is not a whole number of minutes", f.window)
	}
	cfg := f.config
	cfg.WindowMinutes = int(f.window / time.Minute)
	if cfg.Quantiles, err = parseFloats(f.quantiles); err != nil {
		return req, nil, fmt.Errorf("--quantiles: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return req, nil, err
	}
	at, settle := now, f.settle
	if f.at != "" {
		if at, err = parseTime(f.at); err != nil {
			return req, nil, fmt.Errorf("--at: %w", err)
		}
		settle = 0
	}
	shown := cfg.WindowMinutes
	if f.rangeDur != 0 {
		if f.rangeDur < time.Minute || f.rangeDur%time.Minute != 0 {
			return req, nil, fmt.Errorf("--range %s is not a whole number of minutes", f.rangeDur)
		}
		shown = int(f.rangeDur / time.Minute)
	}
	if req.Window, err = pairing.Ending(at, shown, settle); err != nil {
		return req, nil, err
	}
	if f.since != "" {
		if req.Since, err = parseTime(f.since); err != nil {
			return req, nil, fmt.Errorf("--since: %w", err)
		}
	}
	if f.lbMetric != "" {
		lb := &engine.LoadBalancer{Metric: f.lbMetric, Baseline: req.Baseline, Canary: req.Canary}
		if err := selector.ValidMetricName(f.lbMetric); err != nil {
			return req, nil, fmt.Errorf("--lb-metric: %w", err)
		}
		if f.lbBaseline != "" {
			if lb.Baseline, err = selector.Parse(f.lbBaseline); err != nil {
				return req, nil, fmt.Errorf("--lb-baseline: %w", err)
			}
		}
		if f.lbCanary != "" {
			if lb.Canary, err = selector.Parse(f.lbCanary); err != nil {
				return req, nil, fmt.Errorf("--lb-canary: %w", err)
			}
		}
		req.LB = lb
	}
	req.Metric, req.Config = f.metric, cfg
	client, err := prom.New(f.prometheus, f.timeout)
	return req, client, err
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", part)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(secs) && !math.IsInf(secs, 0) {
		return time.Unix(0, int64(secs*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-11-21T14:00:00Z) nor Unix seconds", s)
}

// explain turns engine errors into one sentence a user can act on.
func explain(url string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, prom.ErrUnavailable):
		return fmt.Errorf("cannot reach Prometheus at %s: is it running and is the URL right? (%v)", url, err)
	case errors.Is(err, prom.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("Prometheus at %s did not answer within %s; raise --timeout or shorten --window (%v)", url, timeout, err)
	case errors.Is(err, prom.ErrAuth):
		return fmt.Errorf("Prometheus at %s refused the request: it needs credentials this command does not send (%v)", url, err)
	case errors.Is(err, prom.ErrNotProm):
		return fmt.Errorf("%s does not answer like the Prometheus HTTP API; check the URL (%v)", url, err)
	}
	return err
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "pairwise: %v\n", err)
	return exitError
}

func printTable(w io.Writer, res *engine.Result) {
	cfg := res.Config
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	idx99, idx999 := quantileIndex(cfg, 0.99), quantileIndex(cfg, 0.999)
	vq := verdict.QuantileLabel(cfg.VerdictQuantile)
	fmt.Fprintf(tw, "minute\trps_old\trps_new\tp99_old\tp99_new\tp999_old\tp999_new\tratio(%s)\tverdict\tevidence\tdecision\t\n", vq)
	for _, m := range res.Minutes {
		v := string(m.Verdict)
		if m.Verdict == verdict.Bad {
			v = "BAD"
		}
		if m.Warmup {
			v += " (warm-up)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Time.Format("15:04"),
			rps(m.Baseline), rps(m.Canary),
			ms(m.Baseline, idx99), ms(m.Canary, idx99), ms(m.Baseline, idx999), ms(m.Canary, idx999),
			ratio(m.Ratio), v, strconv.FormatFloat(m.Window.Statistic, 'f', 1, 64), m.Decision)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, res.Summary())
	if res.Worst >= 0 {
		m := res.Minutes[res.Worst]
		fmt.Fprintf(w, "worst minute: %s, ratio %s: %s\n", m.Time.Format(time.RFC3339), ratio(m.Ratio), m.Reason)
	}
	for i, flag := range res.Flags {
		fmt.Fprintf(w, "flag %s: %s\n", flag, res.Notes[i])
	}
}

func quantileIndex(c verdict.Config, q float64) int {
	for i, x := range c.Quantiles {
		if x == q {
			return i
		}
	}
	return -1
}

func rps(s verdict.FleetStats) string {
	if !s.Present {
		return "-"
	}
	return strconv.FormatFloat(s.RPS, 'f', 1, 64)
}

func ms(s verdict.FleetStats, i int) string {
	if !s.Present || i < 0 || math.IsNaN(s.Quantiles[i]) {
		return "-"
	}
	return strconv.FormatFloat(s.Quantiles[i]*1000, 'f', 2, 64) + "ms"
}

func ratio(r float64) string {
	if math.IsNaN(r) {
		return "-"
	}
	return strconv.FormatFloat(r, 'f', 3, 64)
}
