package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// judgeFlags binds every judge flag; the verdict numbers default to the one
// definition in pkg/verdict.
type judgeFlags struct {
	promFlags
	metric, baseline, canary, histogram, output, at, quantiles string
	source                                                     string
	since                                                      string
	podLabel                                                   string
	rangeDur                                                   time.Duration
	lbMetric, lbBaseline, lbCanary                             string
	errorsMetric, errorsFailed                                 string
	window, settle, scrape                                     time.Duration
	config                                                     verdict.Config
	// quantilesSet: --quantiles was given, so the table shows them
	// instead of the reference output's p99 and p99.9.
	quantilesSet bool
}

// ruleOnlyFlags names the window rule each of these flags applies to: given
// with the other rule, it is ignored, and the judge says so.
var ruleOnlyFlags = map[string]string{
	"false-rollback": verdict.RuleEvidence, "min-rollback-minutes": verdict.RuleEvidence,
	"good-needed": verdict.RuleReference, "bad-limit": verdict.RuleReference,
}

// durationFlag is a duration flag that reads Go's form (90m, 168h) and
// Prometheus's (7d, 1w).
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := engine.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration such as 60m, 24h or 7d")
	}
	*f.d = d
	return nil
}

// Environment variables the judge reads credentials from, as CI systems
// inject secrets; files (flags) win over them.
const (
	envBearerToken       = "PAIRWISE_BEARER_TOKEN"
	envBasicAuthPassword = "PAIRWISE_BASIC_AUTH_PASSWORD"
)

// Bounds of the judge's flags.
const (
	maxWindowMinutes = engine.MaxShownMinutes
	minTimeout       = time.Second
	maxTimeout       = 30 * time.Minute
	maxSettle        = time.Hour
	// futureSlack: --at may lie this far ahead of the clock (the demo judges
	// up to the next whole minute).
	futureSlack = 5 * time.Minute
)

func newJudgeFlags(stderr io.Writer) (*flag.FlagSet, *judgeFlags) {
	f := &judgeFlags{config: verdict.Default()}
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.promFlags.register(fs, 30*time.Second)
	fs.StringVar(&f.metric, "metric", "", "histogram metric name, without _bucket (required)")
	fs.StringVar(&f.baseline, "baseline", "", `label matchers of the baseline fleet, e.g. {service="checkout",track="baseline"} (required)`)
	fs.StringVar(&f.canary, "canary", "", `label matchers of the canary fleet, e.g. {service="checkout",track="canary"} (required)`)
	fs.StringVar(&f.histogram, "histogram", "auto", "histogram kind: auto (native histograms where a fleet has them, else classic buckets; when only one fleet has native histograms, both are read from classic buckets if it has those too), native or classic")
	fs.StringVar(&f.source, "source", "auto", "where fleets are read: auto (the rule pack's recorded minute series when they exist, else pods' series), raw (pods' series only) or recorded (fails without a record that is the fleet's at the interval its series are scraped at); minutes not recorded are read raw, so the result is the same")
	f.window = time.Duration(f.config.WindowMinutes) * time.Minute
	fs.Var(durationFlag{&f.window}, "window", "window `length`, whole minutes, 1m to 7d (168h)")
	fs.StringVar(&f.at, "at", "", "end of the window, RFC 3339, Unix seconds or Unix milliseconds (default: now, less --settle)")
	fs.StringVar(&f.podLabel, "pod-label", "pod", "label that tells the canary's pods apart: a rollback names the pods that hold the canary's tail, from one more query (empty: do not ask)")
	fs.StringVar(&f.since, "since", "", "start of the deployment, RFC 3339, Unix seconds or Unix milliseconds (not after now; a deployment none of whose minutes is whole yet holds): earlier minutes (an earlier canary under the same labels) are ignored, and the evidence since it is one sequential test, past the window (up to a day)")
	fs.Var(durationFlag{&f.rangeDur}, "range", "show every minute of this `range` with the decision of the window ending at it, whole minutes, up to 7d (default: the window)")
	fs.StringVar(&f.config.Rule, "rule", f.config.Rule, "window rule: evidence (pools tail observations over the window, docs/judgement.md) or reference (the chapter's: bad >= --bad-limit rolls back, good >= --good-needed promotes)")
	fs.Float64Var(&f.config.FalseRollback, "false-rollback", f.config.FalseRollback, "evidence rule: false-rollback budget per deployment (and per day of a canary watched every minute)")
	fs.Float64Var(&f.config.FalsePromote, "false-promote", f.config.FalsePromote, "evidence rule: budget of promoting a canary that is --rollback-threshold times slower")
	fs.DurationVar(&f.scrape, "scrape-interval", f.config.ScrapeInterval(), "how often Prometheus scrapes the fleets' histograms, a whole number of seconds that divides a minute (10s, 15s, 20s, 30s, 60s): each minute is read whole, from the last sample before it")
	fs.DurationVar(&f.settle, "settle", engine.DefaultSettle, "with the default --at, how long a minute must be over before it is judged (the last scrape must land), 0 to 1h")
	fs.StringVar(&f.output, "output", "table", "output format: table or json")
	fs.StringVar(&f.quantiles, "quantiles", joinFloats(f.config.Quantiles), "quantiles computed for both fleets, comma-separated, with --verdict-quantile; given, the table shows them all (by default the JSON output has them all, the table the verdict quantile and the next: p99 and p99.9)")
	fs.Float64Var(&f.config.VerdictQuantile, "verdict-quantile", f.config.VerdictQuantile, "quantile whose canary/baseline ratio judges a minute")
	fs.Float64Var(&f.config.PromoteThreshold, "promote-threshold", f.config.PromoteThreshold, "a minute is good when ratio <= this")
	fs.Float64Var(&f.config.RollbackThreshold, "rollback-threshold", f.config.RollbackThreshold, "a minute is bad when ratio >= this")
	fs.IntVar(&f.config.GoodNeeded, "good-needed", f.config.GoodNeeded, "good minutes needed to promote")
	fs.IntVar(&f.config.BadLimit, "bad-limit", f.config.BadLimit, "bad minutes that roll back")
	fs.IntVar(&f.config.WarmupMinutes, "warmup", f.config.WarmupMinutes, "minutes after the canary starts serving that are shown but not counted")
	fs.IntVar(&f.config.MinRollbackMinutes, "min-rollback-minutes", f.config.MinRollbackMinutes, "evidence rule: the fewest minutes a rollback rests on, 2 to 4; more holds out pods that pause for about a few times the verdict quantile, and every rollback takes that long (docs/judgement.md)")
	fs.Float64Var(&f.config.MinTailObservations, "min-tail", f.config.MinTailObservations, "observations each fleet needs beyond the verdict quantile")
	fs.Float64Var(&f.config.Confidence, "confidence", f.config.Confidence, "confidence of the quantile bounds")
	fs.Float64Var(&f.config.ExpectedCanaryShare, "expected-share", f.config.ExpectedCanaryShare, "share of requests the router sends to the canary, e.g. 0.05; a median share more than 10% off it is flagged (0: unknown)")
	fs.Float64Var(&f.config.MaxShareDrift, "max-share-drift", f.config.MaxShareDrift, "traffic parity: a window is flagged (never promoted) when the canary's share of requests moves more than this, relative, from its median in a minute of the window's last half, e.g. 0.5 for 50%")
	fs.Float64Var(&f.config.Significance, "significance", f.config.Significance, "gate good and bad minutes on evidence: the difference must be beyond sampling noise at this one-sided confidence, e.g. 0.99 (0: off, as the rule pack judges)")
	fs.StringVar(&f.lbMetric, "lb-metric", "", "load-balancer-side histogram of the same requests; flags a divergence from the application's (coordinated omission)")
	fs.StringVar(&f.lbBaseline, "lb-baseline", "", "baseline selector for --lb-metric (default: --baseline)")
	fs.StringVar(&f.lbCanary, "lb-canary", "", "canary selector for --lb-metric (default: --canary)")
	fs.StringVar(&f.errorsMetric, "errors-metric", "", "request counter of both fleets (http_requests_total, or a histogram whose count is read): a canary shown to fail more often than its baseline is flagged traffic-parity and never promoted (a canary that fails fast can look faster)")
	fs.StringVar(&f.errorsFailed, "errors", "", "matchers that select the failed requests of --errors-metric, added to each fleet's selector (default "+prom.DefaultFailed+")")
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
	// Help is no decision: 0 would read as promote.
	if help, err := parseFlags(fs, args, stderr); help {
		return exitError
	} else if err != nil {
		return fail(stderr, err)
	}
	var ignored []string
	fs.Visit(func(fl *flag.Flag) {
		f.quantilesSet = f.quantilesSet || fl.Name == "quantiles"
		if rule, ok := ruleOnlyFlags[fl.Name]; ok && rule != f.config.Rule {
			ignored = append(ignored, fmt.Sprintf("pairwise: warning: --%s applies to the %s rule only; the %s rule ignores it", fl.Name, rule, f.config.Rule))
		}
	})
	// From here on, nothing printed holds a secret: the URL is redacted
	// where it is named, and every message is scrubbed of the secrets read.
	scrub := newScrubber(urlSecrets(f.prometheus)...)
	if fs.NArg() > 0 {
		return failScrubbed(stderr, scrub, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	creds, err := f.credentials()
	scrub = newScrubber(append(creds.Secrets(), urlSecrets(f.prometheus)...)...)
	if err != nil {
		return failScrubbed(stderr, scrub, err)
	}
	now := time.Now()
	req, client, err := f.request(now)
	if err != nil {
		return failScrubbed(stderr, scrub, err)
	}
	client.Credentials = mergeCredentials(client.Credentials, creds)
	for _, w := range ignored {
		fmt.Fprintln(stderr, w)
	}
	f.warnURLCredential(stderr, scrub)
	if over := now.Add(-engine.DefaultSettle).Truncate(time.Minute); f.at != "" && req.Window.Last.After(over) {
		// --at ahead of the clock (the demo judges backfilled minutes up
		// to the next whole minute): live minutes after it are unfinished.
		// Without --at the window ends --settle before now, as asked.
		fmt.Fprintf(stderr, "pairwise: warning: --at %s is ahead of the last minute that is over (%s): minutes after it are unfinished unless their data was backfilled, and are judged as they stand\n",
			req.Window.Last.UTC().Format(time.RFC3339), over.UTC().Format(time.RFC3339))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*f.timeout+5*time.Second)
	defer cancel()
	res, err := engine.Analyze(ctx, client, req)
	if err != nil {
		return failScrubbed(stderr, scrub, explain(prom.RedactURL(f.prometheus), f.timeout, client.Credentials, err))
	}
	// A rollback says which of the canary's pods hold its tail; without the
	// answer it is still a rollback.
	byPod, err := engine.Attribute(ctx, client, res, f.podLabel)
	if err != nil {
		fmt.Fprintln(stderr, scrub("pairwise: warning: the rollback is not attributed to pods: "+oneLine(err.Error())))
	}
	switch f.output {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		rep := report(res)
		rep.Attribution = attributionJSON(byPod)
		if err := enc.Encode(rep); err != nil {
			return failScrubbed(stderr, scrub, err)
		}
	default:
		// Written at once, and checked: a table lost to a full disk or
		// a closed pipe must not leave exit 0 (promote) behind.
		var table bytes.Buffer
		// The reference output's columns: the verdict quantile and the
		// next one computed (p99 and p99.9 by default), or those asked for.
		shown := res.Config.Quantiles
		if !f.quantilesSet {
			vq := res.Config.VerdictQuantile
			shown = []float64{vq}
			if i := slices.IndexFunc(res.Config.Quantiles, func(q float64) bool { return q > vq }); i >= 0 {
				shown = append(shown, res.Config.Quantiles[i])
			}
		}
		printTable(&table, res, byPod, shown)
		if _, err := stdout.Write(table.Bytes()); err != nil {
			return failScrubbed(stderr, scrub, err)
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, scrub("pairwise: warning: "+oneLine(w)))
	}
	if servedNote(req.Read, res.Served) {
		for _, s := range res.Served {
			fmt.Fprintf(stderr, "pairwise: %s read from %s series (%d minutes recorded, %d raw)\n", s.What, s.Path, s.RecordedMinutes, s.RawMinutes)
		}
	}
	return res.Decision.Code()
}

// servedNote says whether the judge tells where each query was read: when
// the record was asked for, or when it answered part of the analysis. An
// automatic reading that found no record says nothing, as --source raw.
func servedNote(read engine.Reading, served []engine.Served) bool {
	if read == engine.ReadRecorded {
		return true
	}
	return read == engine.ReadAuto && slices.ContainsFunc(served, func(s engine.Served) bool { return s.Path == "recorded" })
}

// maxSecretFile bounds a credentials file.
const maxSecretFile = 64 << 10

// readSecretFile reads a token or password file, surrounding white space
// (the trailing newline editors add) removed, as Prometheus does.
func readSecretFile(flagName, path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%s %s: larger than %d KiB, not a credentials file", flagName, path, maxSecretFile>>10)
	}
	secret := strings.TrimSpace(string(b))
	switch {
	case secret == "":
		return "", fmt.Errorf("%s %s is empty", flagName, path)
	case hasControl(secret):
		return "", fmt.Errorf("%s %s holds a control character (more than one line?)", flagName, path)
	}
	return secret, nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// urlPassword is the password of a URL's userinfo, if any, or its user
// name when it has no password (a token passed as user, which RedactURL
// redacts too).
func urlPassword(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			return p
		}
		return u.User.Username()
	}
	// An unparsable URL: the text between the first colon after the
	// scheme and the last @.
	redacted := prom.RedactURL(raw)
	if redacted == raw {
		return ""
	}
	// Everything before the last @, as RedactURL reads it: a password may
	// hold '/', '?' or '#'.
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	userinfo := rest[:at]
	if _, p, ok := strings.Cut(userinfo, ":"); ok {
		return p
	}
	return userinfo
}

// newScrubber is prom.NewScrubber of secrets, or the text as is when there
// is none.
func newScrubber(secrets ...string) func(string) string {
	if scrub := prom.NewScrubber(secrets); scrub != nil {
		return scrub
	}
	return func(s string) string { return s }
}

// urlSecrets are the secrets a --prometheus URL holds: its password (or its
// user alone) and the Authorization header its user and password send.
func urlSecrets(raw string) []string {
	p := urlPassword(raw)
	if p == "" {
		return nil
	}
	out := []string{p}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		out = append(out, prom.BasicAuthSecret(u.User.Username(), pw))
	}
	return out
}

// oneLine keeps a message on one line: joined errors become "; ".
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "; ")
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
	if err := prom.ValidHistogramName(f.metric); err != nil {
		return req, nil, fmt.Errorf("--metric: %w", err)
	}
	if f.podLabel != "" {
		if err := prom.CheckPodLabel(f.podLabel); err != nil {
			return req, nil, fmt.Errorf("--pod-label: %w", err)
		}
	}
	var err error
	if req.Baseline, err = selector.Parse(f.baseline); err != nil {
		return req, nil, fmt.Errorf("--baseline: %w", err)
	}
	if req.Canary, err = selector.Parse(f.canary); err != nil {
		return req, nil, fmt.Errorf("--canary: %w", err)
	}
	if req.Read, err = engine.ParseReading(f.source); err != nil {
		return req, nil, fmt.Errorf("--source: %w", err)
	}
	if req.Kind, err = prom.ParseKind(f.histogram); err != nil {
		return req, nil, fmt.Errorf("--histogram: %w", err)
	}
	if err := wholeMinutes("--window", f.window, maxWindowMinutes); err != nil {
		return req, nil, err
	}
	if err := f.checkTimeout(); err != nil {
		return req, nil, err
	}
	if f.settle < 0 || f.settle > maxSettle {
		return req, nil, fmt.Errorf("--settle %s is not between 0s and %s", f.settle, maxSettle)
	}
	if f.scrape%time.Second != 0 {
		return req, nil, fmt.Errorf("--scrape-interval %s is not a whole number of seconds", f.scrape)
	}
	cfg := f.config
	cfg.WindowMinutes = int(f.window / time.Minute)
	cfg.ScrapeIntervalSeconds = int(f.scrape / time.Second)
	if cfg.Quantiles, err = parseFloats(f.quantiles); err != nil {
		return req, nil, fmt.Errorf("--quantiles: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return req, nil, namedConfigError(err)
	}
	cfg = cfg.ShowingVerdictQuantile()
	at, settle := now, f.settle
	if f.at != "" {
		if at, err = parseTime(f.at, now); err != nil {
			return req, nil, fmt.Errorf("--at: %w", err)
		}
		settle = 0
	}
	shown := cfg.WindowMinutes
	if f.rangeDur != 0 {
		if err := wholeMinutes("--range", f.rangeDur, maxWindowMinutes); err != nil {
			return req, nil, err
		}
		shown = int(f.rangeDur / time.Minute)
	}
	plan, err := engine.PlanLast(at, shown, settle, cfg)
	if tooMuch := (*engine.FetchLimitError)(nil); errors.As(err, &tooMuch) {
		shownFlag := "--range " + f.rangeDur.String()
		if f.rangeDur == 0 {
			shownFlag = "--range (default: the window)"
		}
		return req, nil, fmt.Errorf("%s with --window %s and --warmup %d needs %d minutes of data (every minute shown is decided on the window ending at it, and the fleets' health is read from %d minutes before that), more than the %d points Prometheus returns in one query: shorten --range or --window",
			shownFlag, f.window, cfg.WarmupMinutes, tooMuch.Queried(), verdict.StableMinutes, engine.MaxFetchedMinutes)
	} else if err != nil {
		return req, nil, err
	}
	req.Window = plan.Shown
	if f.since != "" {
		if req.Since, err = parseTime(f.since, now); err != nil {
			return req, nil, fmt.Errorf("--since: %w", err)
		}
		if err := engine.CheckStarted(req.Since, now); err != nil {
			return req, nil, fmt.Errorf("--since: %w", err)
		}
		// After the window a person asked for with --at, a start is a
		// mistake; the gate holds instead, as for a revision first seen
		// after the window (docs/integrations.md).
		if f.at != "" && req.Since.After(req.Window.Last) {
			return req, nil, fmt.Errorf("--since: %s is after the end of the window asked for with --at (%s): a deployment is judged only over minutes after its start", req.Since.Format(time.RFC3339), req.Window.Last.UTC().Format(time.RFC3339))
		}
	}
	var lbErr *engine.LoadBalancerError
	req.LB, err = engine.ParseLoadBalancer(f.lbMetric, f.lbBaseline, f.lbCanary, req.Baseline, req.Canary)
	switch {
	case errors.Is(err, engine.ErrLoadBalancerSelectorsWithoutMetric):
		return req, nil, errors.New("--lb-baseline and --lb-canary need --lb-metric")
	case errors.As(err, &lbErr):
		return req, nil, fmt.Errorf("--lb-%s: %w", lbErr.Part, lbErr.Err)
	case err != nil:
		return req, nil, err
	}
	if f.errorsFailed != "" && f.errorsMetric == "" {
		return req, nil, errors.New("--errors needs --errors-metric")
	}
	if f.errorsMetric != "" {
		if err := prom.ValidCounterName(f.errorsMetric); err != nil {
			return req, nil, fmt.Errorf("--errors-metric: %w", err)
		}
	}
	if req.Errors, err = engine.ParseErrors(f.errorsMetric, f.errorsFailed); err != nil {
		return req, nil, fmt.Errorf("--errors: %w", err)
	}
	req.Metric, req.Config = f.metric, cfg
	client, err := f.newClient()
	if err != nil {
		return req, nil, err
	}
	return req, client, nil
}

func wholeMinutes(name string, d time.Duration, max int) error {
	if d < time.Minute || d%time.Minute != 0 || d > time.Duration(max)*time.Minute {
		return fmt.Errorf("%s %s is not a whole number of minutes between 1m and %s", name, d, time.Duration(max)*time.Minute)
	}
	return nil
}

// configFlags names the judge flag of each verdict.Config field it sets.
var configFlags = map[string]string{
	"rule": "--rule", "falseRollback": "--false-rollback", "falsePromote": "--false-promote", "quantiles": "--quantiles",
	"verdictQuantile": "--verdict-quantile", "promoteThreshold": "--promote-threshold", "rollbackThreshold": "--rollback-threshold",
	"windowMinutes": "--window", "goodNeeded": "--good-needed", "badLimit": "--bad-limit", "warmupMinutes": "--warmup",
	"minTailObservations": "--min-tail", "confidence": "--confidence", "significance": "--significance",
	"expectedCanaryShare": "--expected-share", "maxMeasurementDivergence": "--max-divergence", "maxShareDrift": "--max-share-drift",
	"scrapeIntervalSeconds": "--scrape-interval", "minRollbackMinutes": "--min-rollback-minutes",
}

// namedConfigError says which flag each of verdict.Config.Validate's errors
// is about: "rollbackThreshold (--rollback-threshold): ...".
func namedConfigError(err error) error {
	var parts []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if field, rest, ok := strings.Cut(line, ": "); ok && configFlags[field] != "" {
			line = field + " (" + configFlags[field] + "): " + rest
		}
		parts = append(parts, line)
	}
	return errors.New(strings.Join(parts, "; "))
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a finite number", part)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseTime reads a time as engine.ParseTime does, up to futureSlack from
// now (the demo judges up to the next whole minute).
func parseTime(s string, now time.Time) (time.Time, error) {
	return engine.ParseTime(s, now.Add(futureSlack))
}

// explain turns engine errors into one sentence a user can act on; url is
// already redacted.
func explain(url string, timeout time.Duration, creds prom.Credentials, err error) error {
	switch {
	case errors.Is(err, prom.ErrOverloaded):
		advice := "try again later"
		if errors.Is(err, prom.ErrRetryPastDeadline) {
			advice += ", or raise --timeout so its Retry-After fits"
		}
		return fmt.Errorf("Prometheus at %s is overloaded or rate-limiting and asked to retry later: %s (%v)", url, advice, err)
	case errors.Is(err, prom.ErrServer):
		return fmt.Errorf("Prometheus at %s answered with a server error: it is reachable, but failed the query; see its log (%v)", url, err)
	case errors.Is(err, prom.ErrUnavailable):
		return fmt.Errorf("cannot reach Prometheus at %s: is it running and is the URL right? (%v)", url, err)
	case errors.Is(err, prom.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("Prometheus at %s did not answer within %s; raise --timeout or shorten --window (%v)", url, timeout, err)
	case errors.Is(err, prom.ErrAuth) && strings.Contains(strings.ToLower(err.Error()), "org id"):
		return fmt.Errorf("%s is multi-tenant and needs a tenant: pass --tenant (sent as %s) (%v)", url, prom.TenantHeader, err)
	case errors.Is(err, prom.ErrAuth) && creds.IsZero():
		return fmt.Errorf("Prometheus at %s refused the request: it needs credentials; pass --bearer-token-file (or $%s), or --basic-auth-user with $%s or --basic-auth-password-file (%v)", url, envBearerToken, envBasicAuthPassword, err)
	case errors.Is(err, prom.ErrAuth):
		return fmt.Errorf("Prometheus at %s refused the credentials sent (%s): check them (%v)", url, creds, err)
	case errors.Is(err, prom.ErrMethodRefused):
		return fmt.Errorf("%s refuses the POST requests the judge queries with (%v)", url, err)
	case errors.Is(err, prom.ErrNotProm):
		return fmt.Errorf("%s does not answer like the Prometheus HTTP API; check the URL (%v)", url, err)
	}
	return err
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "pairwise: %v\n", err)
	return exitError
}

// failScrubbed prints err on one line, with every secret scrubbed.
func failScrubbed(stderr io.Writer, scrub func(string) string, err error) int {
	fmt.Fprintln(stderr, scrub("pairwise: "+oneLine(err.Error())))
	return exitError
}

// printTable writes the reference output, a row a minute, with the
// quantiles shown of both fleets (the reference's: p99 and p99.9), then
// the decision. Minutes of more than one day (UTC) are named with their day.
func printTable(w io.Writer, res *engine.Result, byPod *engine.Attribution, shown []float64) {
	cfg := res.Config
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var header strings.Builder
	header.WriteString("minute\trps_old\trps_new\t")
	idx := make([]int, len(shown))
	for i, q := range shown {
		idx[i] = quantileIndex(cfg, q)
		label := strings.ReplaceAll(verdict.QuantileLabel(q), ".", "")
		fmt.Fprintf(&header, "%s_old\t%s_new\t", label, label)
	}
	fmt.Fprintf(&header, "ratio(%s)\tverdict\tevidence\trecent\tdecision\t\n", verdict.QuantileLabel(cfg.VerdictQuantile))
	io.WriteString(tw, header.String())
	minute := "15:04"
	if n := len(res.Minutes); n > 0 && !res.Minutes[0].Time.UTC().Truncate(24*time.Hour).Equal(res.Minutes[n-1].Time.UTC().Truncate(24*time.Hour)) {
		minute = "01-02 15:04"
	}
	for _, m := range res.Minutes {
		v := string(m.Verdict)
		if m.Verdict == verdict.Bad {
			v = "BAD"
		}
		if m.Warmup {
			v += " (warm-up)"
		}
		// recent: the strongest recent run's statistic, which rolls a
		// sliding window back at its own boundary.
		recent := "-"
		if m.Window.RecentMinutes > 0 && !math.IsInf(m.Window.RecentStatistic, 0) {
			recent = strconv.FormatFloat(m.Window.RecentStatistic, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t", m.Time.UTC().Format(minute), rps(m.Baseline), rps(m.Canary))
		for _, i := range idx {
			fmt.Fprintf(tw, "%s\t%s\t", ms(m.Baseline, i), ms(m.Canary, i))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", ratio(m.Ratio), v, strconv.FormatFloat(m.Window.Statistic, 'f', 1, 64), recent, m.Decision)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, res.Summary())
	if byPod != nil {
		fmt.Fprintf(w, "by pod: %s\n", byPod)
	}
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
