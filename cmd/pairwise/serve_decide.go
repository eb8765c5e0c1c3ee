package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// decisionParams are the parameters a decision request may carry, as URL
// query parameters or as Flagger webhook metadata.
var decisionParams = []string{"canary", "metric", "baseline", "histogram", "errors_metric", "errors", "window", "rule", "since", "at", "source", "revision", "step"}

// errNoCanary: the request names a canary the config does not hold.
var errNoCanary = errors.New("no such canary")

// parseDecision builds the analysis a request asks for. Either canary names
// a canary of the config, or metric, baseline and canary (label matchers)
// describe one; window and rule override its configuration; since and at
// are RFC 3339, Unix seconds or Unix milliseconds, at defaulting to now less settle; source
// is the judge's --source, auto by default.
func parseDecision(get func(string) string, canaries map[string]rulegen.Queries, settle time.Duration, now time.Time) (engine.Request, error) {
	var req engine.Request
	var cfg verdict.Config
	var err error
	if get("metric") == "" {
		name := get("canary")
		if name == "" {
			return req, errors.New("name a canary (canary=NAME) or describe one (metric, baseline and canary selectors)")
		}
		if get("baseline") != "" || get("histogram") != "" {
			return req, errors.New("baseline and histogram describe a canary by its selectors and need metric; a canary named by canary= brings its own")
		}
		c, ok := canaries[name]
		if !ok {
			return req, fmt.Errorf("%w %q: the server's --config lists %s", errNoCanary, name, canaryNames(canaries))
		}
		req.Metric, req.Baseline, req.Canary, req.Kind, cfg = c.Metric, c.Baseline, c.Canary, c.Kind, c.Config
		if get("errors_metric") != "" || get("errors") != "" {
			return req, errors.New("errors_metric and errors describe a canary's request counter and need metric; a canary named by canary= brings its own (errorsMetric in the --config)")
		}
		if c.ErrorsMetric != "" {
			req.Errors = &engine.Errors{Metric: c.ErrorsMetric, Failed: c.Failed}
		}
	} else {
		if get("baseline") == "" || get("canary") == "" {
			return req, errors.New("metric needs baseline and canary label matchers, e.g. canary={service=\"checkout\",track=\"canary\"}")
		}
		if err := prom.ValidHistogramName(get("metric")); err != nil {
			return req, fmt.Errorf("metric: %w", err)
		}
		req.Metric = get("metric")
		if req.Baseline, err = selector.Parse(get("baseline")); err != nil {
			return req, fmt.Errorf("baseline: %w", err)
		}
		if req.Canary, err = selector.Parse(get("canary")); err != nil {
			return req, fmt.Errorf("canary: %w", err)
		}
		// Fleets where one selector holds the other are a bad request, as a
		// bad selector is (a canary of the --config was checked at start).
		if err := selector.Apart(req.Baseline, req.Canary); err != nil {
			return req, err
		}
		kind := get("histogram")
		if kind == "" {
			kind = string(prom.Auto)
		}
		if req.Kind, err = prom.ParseKind(kind); err != nil {
			return req, fmt.Errorf("histogram: %w", err)
		}
		if get("errors") != "" && get("errors_metric") == "" {
			return req, errors.New("errors selects the failed requests of errors_metric: give errors_metric")
		}
		if m := get("errors_metric"); m != "" {
			if err := prom.ValidCounterName(m); err != nil {
				return req, fmt.Errorf("errors_metric: %w", err)
			}
			if req.Errors, err = engine.ParseErrors(m, get("errors")); err != nil {
				return req, fmt.Errorf("errors: %w", err)
			}
		}
		cfg = verdict.Default()
	}
	if w := get("window"); w != "" {
		d, err := engine.ParseDuration(w)
		if err != nil {
			return req, fmt.Errorf("window: %w", err)
		}
		if err := wholeMinutes("window", d, maxServeWindow); err != nil {
			return req, err
		}
		cfg.WindowMinutes = int(d / time.Minute)
	}
	if r := get("rule"); r != "" {
		cfg.Rule = r
	}
	if err := cfg.Validate(); err != nil {
		return req, errors.New(oneLine(err.Error()))
	}
	if cfg.WindowMinutes > maxServeWindow {
		return req, fmt.Errorf("window %dm is longer than the server's %dm", cfg.WindowMinutes, maxServeWindow)
	}
	// at= names the window's end in the past. A minute that has not
	// settled yet is left out as it is for a gate, whatever at says: its
	// analysis would answer, from the cache, a gate asking a little later.
	at := now.Add(-settle)
	if s := get("at"); s != "" {
		t, err := parseTime(s, now)
		if err != nil {
			return req, fmt.Errorf("at: %w", err)
		}
		at = minTime(t, at)
	}
	if req.Window, err = pairing.Ending(at, cfg.WindowMinutes, 0); err != nil {
		return req, err
	}
	if s := get("since"); s != "" {
		if req.Since, err = parseTime(s, now); err != nil {
			return req, fmt.Errorf("since: %w", err)
		}
		if err := engine.CheckStarted(req.Since, now); err != nil {
			return req, fmt.Errorf("since: %w", err)
		}
	}
	source := get("source")
	if source == "" {
		source = string(engine.ReadAuto)
	}
	if req.Read, err = engine.ParseReading(source); err != nil {
		return req, fmt.Errorf("source: %w", err)
	}
	req.Config = cfg
	return req, nil
}

func canaryNames(canaries map[string]rulegen.Queries) string {
	if len(canaries) == 0 {
		return "none"
	}
	names := make([]string, 0, len(canaries))
	for n := range canaries {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// requestKey identifies an analysis: everything Analyze reads, the
// request counter and the load balancer's histogram included (two canaries
// of the same fleets, one with a request counter, are two analyses). The
// window ends at a whole minute, so requests within the same analysed
// minute share a key.
func requestKey(req engine.Request) string {
	var errs, lb []string
	if e := req.Errors; e != nil {
		errs = []string{e.Metric, e.Failed.String()}
	}
	if l := req.LB; l != nil {
		lb = []string{l.Metric, l.Baseline.String(), l.Canary.String()}
	}
	b, _ := json.Marshal(struct {
		Metric, Baseline, Canary string
		Kind                     prom.Kind
		Config                   verdict.Config
		First, Last, Since       time.Time
		Read                     engine.Reading
		Errors, LB, Notices      []string
	}{req.Metric, req.Baseline.String(), req.Canary.String(), req.Kind, req.Config, req.Window.First, req.Window.Last, req.Since, req.Read, errs, lb, req.Notices})
	return string(b)
}

// analyses runs each distinct analysis once: concurrent identical requests
// wait for the one in flight, and its result answers them for cacheFor.
// Failures are not kept: the next request asks Prometheus again.
type analyses struct {
	src engine.Source
	// podLabel, when set and src can read pods, attributes each rollback to
	// the canary's pods (engine.Attribute).
	podLabel string
	// timeout bounds an analysis from when it gets its slot, and a
	// request's wait for its answer from when it asks, the slot's wait
	// included: the gates give up on an answer (Argo's timeoutSeconds,
	// Flagger's timeout), and the server's write timeout closes the
	// connection without one, soon after.
	timeout time.Duration
	now     func() time.Time
	// onRun is told of every analysis run and its error.
	onRun func(err error)
	slots chan struct{}

	mu      sync.Mutex
	entries map[string]*analysisEntry
}

type analysisEntry struct {
	done chan struct{}
	// queued is true while the analysis waits for a slot, and waited once
	// it has had to (a.mu).
	queued, waited bool
	// waiters are the requests waiting for the answer (a.mu); when the
	// last leaves before the analysis has a slot, abandon is closed and
	// the analysis never runs: nobody waits for it, and a Prometheus slow
	// enough to queue analyses is spared it.
	waiters int
	started bool
	abandon chan struct{}
	res     *engine.Result
	byPod   *engine.Attribution
	err     error
	expires time.Time // zero while running
}

func newAnalyses(src engine.Source, podLabel string, timeout time.Duration, onRun func(error)) *analyses {
	return &analyses{src: src, podLabel: podLabel, timeout: timeout, now: time.Now, onRun: onRun, slots: make(chan struct{}, maxAnalyses), entries: map[string]*analysisEntry{}}
}

// errAbandoned is the answer of an analysis every request gave up on
// before it had a slot: it never ran.
var errAbandoned = errors.New("every request for this analysis gave up before it had a slot")

// errQueued means a request's wait ran out while its analysis still waited
// for a slot.
var errQueued = errors.New("the server is running as many analyses as it runs at once")

// get returns the analysis of req and, for a rollback, its attribution to
// the canary's pods (nil when there is none), running it unless one is
// running or recent. ctx and a.timeout bound only the wait, not the
// analysis others share.
func (a *analyses) get(ctx context.Context, req engine.Request) (*engine.Result, *engine.Attribution, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	key := requestKey(req)
	a.mu.Lock()
	now := a.now()
	e, ok := a.entries[key]
	if ok && !e.expires.IsZero() && !now.Before(e.expires) {
		ok = false
	}
	if !ok {
		a.evict(now)
		e = &analysisEntry{done: make(chan struct{}), abandon: make(chan struct{})}
		a.entries[key] = e
		go a.run(key, e, req)
	}
	e.waiters++
	a.mu.Unlock()
	select {
	case <-e.done:
		return e.res, e.byPod, e.err
	case <-ctx.Done():
		a.mu.Lock()
		queued, waited := e.queued, e.waited
		if e.waiters--; e.waiters == 0 && !e.started {
			close(e.abandon)
			if a.entries[key] == e {
				delete(a.entries, key)
			}
		}
		a.mu.Unlock()
		if !waited || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, ctx.Err()
		}
		state := "and has not started"
		if !queued {
			state = "and has not finished"
		}
		return nil, nil, fmt.Errorf("%w (%d): this canary's analysis waited for its turn %s within %s; Prometheus is slow, or more canaries are asked about at once than it answers in time",
			errQueued, cap(a.slots), state, a.timeout)
	}
}

func (a *analyses) run(key string, e *analysisEntry, req engine.Request) {
	select {
	case a.slots <- struct{}{}:
	default:
		a.mu.Lock()
		e.queued, e.waited = true, true
		a.mu.Unlock()
		select {
		case a.slots <- struct{}{}:
		case <-e.abandon:
			// Every request gave up waiting: the entry has left the map.
			a.mu.Lock()
			e.err = errAbandoned
			a.mu.Unlock()
			close(e.done)
			return
		}
	}
	a.mu.Lock()
	if e.waiters == 0 {
		// The last request left as the slot came: none will read it.
		e.err = errAbandoned
		a.mu.Unlock()
		<-a.slots
		close(e.done)
		return
	}
	e.queued, e.started = false, true
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	res, err := engine.Analyze(ctx, a.src, req)
	// A rollback says which pods hold the canary's tail when it can; it is
	// a rollback either way.
	var byPod *engine.Attribution
	if pods, ok := a.src.(engine.PodSource); ok && err == nil {
		byPod, _ = engine.Attribute(ctx, pods, res, a.podLabel)
	}
	cancel()
	<-a.slots
	if a.onRun != nil {
		a.onRun(err)
	}
	a.mu.Lock()
	e.res, e.byPod, e.err = res, byPod, err
	if err != nil {
		e.expires = a.now()
		if a.entries[key] == e {
			delete(a.entries, key)
		}
	} else {
		e.expires = a.now().Add(cacheFor)
	}
	a.mu.Unlock()
	close(e.done)
}

// evict drops expired analyses and, past maxCached, finished ones; a.mu is held.
func (a *analyses) evict(now time.Time) {
	for k, e := range a.entries {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(a.entries, k)
		}
	}
	for k, e := range a.entries {
		if len(a.entries) < maxCached {
			break
		}
		if !e.expires.IsZero() {
			delete(a.entries, k)
		}
	}
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
