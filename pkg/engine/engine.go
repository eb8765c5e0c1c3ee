// Package engine runs one analysis: it fetches each fleet's merged histogram
// per minute (one query per fleet), pairs the minutes and judges the window.
// The command-line judge and the Grafana data source both call Analyze, so
// they cannot disagree.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// Request is one analysis: a metric, the two fleets and the window.
type Request struct {
	Metric   string
	Baseline selector.Selector
	Canary   selector.Selector
	Kind     prom.Kind
	Config   verdict.Config
	// Window holds the minutes shown, each with the decision of the
	// Config.WindowMinutes-minute window ending at it; the last minute's is
	// the decision. Earlier minutes are fetched for the first windows.
	Window pairing.Window
	// Since, when not zero, is the deployment's start: minutes that began
	// before it are neither shown nor part of any window, and the evidence
	// since it is one sequential test (up to a day of it).
	Since time.Time
	// LB, when set, is a load-balancer-side histogram of the same requests,
	// compared with the application's to catch coordinated omission.
	LB *LoadBalancer
	// Errors, when set, names a request counter whose failed requests are
	// compared between the fleets: a canary shown to fail more often raises
	// the traffic-parity flag (a canary that fails fast can look faster).
	Errors *Errors
	// Notices say what of the request as written was not used (a
	// load-balancer selector without its metric); Analyze passes them on as
	// the result's first warnings.
	Notices []string
	// Read says whether the rule pack's recorded minute series are read
	// (see Reading); empty means ReadRaw, so callers that do not ask read
	// raw series as before.
	Read Reading
}

// LoadBalancer names the load-balancer-side histogram of both fleets.
type LoadBalancer struct {
	Metric   string
	Baseline selector.Selector
	Canary   selector.Selector
}

// Errors names a request counter of both fleets (or a histogram, whose
// count is read) and the matchers that select its failed requests.
type Errors struct {
	Metric string
	Failed selector.Selector
}

// RequestSource reads request counters (prom.Client does).
type RequestSource interface {
	FleetRequests(ctx context.Context, metric string, sel, failed selector.Selector, r prom.Range) (map[int64]prom.Requests, error)
}

// Result is the judged window and what was queried.
type Result struct {
	verdict.Window
	Request Request
	// Kind is the histogram kind actually used for each fleet.
	BaselineKind, CanaryKind prom.Kind
	// Warnings are facts a user should see beside the result.
	Warnings []string
	// Served tells, per query, whether the recorded minute series or raw
	// series answered it.
	Served []Served
}

// ErrNoData means neither fleet has a single observation in the window.
var ErrNoData = errors.New("no data in the window")

// PartialNoData is the error when neither fleet has an observation in the
// window but Prometheus (or Thanos, Mimir) warned that its answer may be
// partial: the data may be where it could not read (a store or an
// ingester down). It is not ErrNoData, so nobody reads an outage as an
// idle service.
type PartialNoData struct {
	Warnings []string // Prometheus's warnings
	NoData   error    // the no-data error it would otherwise have been
}

func (e *PartialNoData) Error() string {
	return fmt.Sprintf("Prometheus answered with warnings that its answer may be partial (%s), and the answer holds no data for either fleet: the data may be where it could not read; not judged (%v)",
		strings.Join(e.Warnings, "; "), e.NoData)
}

// Source is what Analyze needs from Prometheus; *prom.Client implements it.
type Source interface {
	FleetHistograms(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, prom.Kind, error)
	// FleetHealth tells, per minute, how many of a fleet's series reported
	// and how often (the extrapolation of a one-minute increase()), and how
	// many of its targets were down.
	FleetHealth(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[int64]prom.Health, error)
}

// TooEarly is the decision on a deployment none of whose minutes is whole
// by the window's last minute (it started less than a minute and a settle
// ago, or after the window asked for): hold, with nothing read. The judge,
// the gate and the data source all answer it so; a deployment start after
// now is their callers' error, not this. started names the start
// ("the deployment started at", "revision r1 was first asked about at").
func TooEarly(req Request, started string) *Result {
	w := verdict.Window{Config: req.Config, Decision: verdict.Hold, Worst: -1,
		Reason: fmt.Sprintf("%s %s: none of its minutes is whole by the window's last minute (%s, its first ends %s): nothing to judge yet",
			started, req.Since.UTC().Format(time.RFC3339), req.Window.Last.UTC().Format(time.RFC3339), FirstMinute(req.Since).Format(time.RFC3339))}
	return &Result{Window: w, Request: req}
}

// span is what Analyze fetches and shows: the judged minutes (from the
// first window's first minute, or the deployment's first minute) and how
// many of them are shown.
type span struct {
	judged   pairing.Window
	shown    int
	anchored bool
	// sinceFirst is the deployment's first whole minute, zero without Since.
	sinceFirst time.Time
	// warning says why a Since is not anchored, if it is not.
	warning string
}

// FirstMinute is the end of a deployment's first whole minute: minute T
// holds (T-60s, T], so it ends a minute after since rounded up to the
// minute.
func FirstMinute(since time.Time) time.Time {
	first := since.UTC().Truncate(time.Minute)
	if first.Before(since) {
		first = first.Add(time.Minute)
	}
	return first.Add(time.Minute)
}

func (req Request) span() (span, error) {
	shown := req.Window
	sp := span{judged: pairing.Window{First: shown.First.Add(-time.Duration(req.Config.WindowMinutes-1) * time.Minute), Last: shown.Last}}
	if !req.Since.IsZero() {
		first := FirstMinute(req.Since)
		sp.sinceFirst = first
		if first.After(shown.Last) {
			return sp, fmt.Errorf("the deployment starts %s, so its first whole minute ends %s, after %s: Analyze holds it (TooEarly)",
				req.Since.UTC().Format(time.RFC3339), first.Format(time.RFC3339), shown.Last.Format(time.RFC3339))
		}
		// Windows start at the deployment at the earliest, and its evidence
		// pools from its start for a day (verdict.Options Anchored; later
		// minutes are judged as sliding windows there): a deployment older
		// than the first window is fetched from its start when some shown
		// minute is within its first day, so that a minute's decision does
		// not depend on the range it is shown in; else every shown minute
		// is judged as a sliding window, as without Since.
		dayOfFirstShown := !first.Before(shown.First.Add(-(verdict.MinutesPerDay - 1) * time.Minute))
		fromStart := pairing.Window{First: first, Last: shown.Last}.Minutes() + req.Config.WarmupMinutes
		switch {
		case !first.Before(sp.judged.First):
			sp.judged.First, sp.anchored = first, true
		case dayOfFirstShown && fromStart <= MaxFetchedMinutes:
			sp.judged.First, sp.anchored = first, true
		case dayOfFirstShown:
			sp.warning = fmt.Sprintf("the deployment started %s, and judging the minutes of its first day from its start would read %d minutes, more than the %d points Prometheus returns per series: every minute shown is judged as a sliding window, not from the deployment's start; shorten the range to see them as a gate saw them", req.Since.UTC().Format(time.RFC3339), fromStart, MaxFetchedMinutes)
		default:
			sp.warning = fmt.Sprintf("the deployment started %s, more than a day before the first minute shown: its windows are judged as sliding windows, not from its start", req.Since.UTC().Format(time.RFC3339))
		}
		if first.After(shown.First) {
			shown.First = first
		}
	}
	sp.shown = shown.Minutes()
	return sp, nil
}

// Analyze fetches both fleets concurrently and judges the window.
//
// Each minute is read over a minute and the configured scrape interval
// (verdict.Config.ScrapeIntervalSeconds). When both fleets' health plainly
// shows another interval that divides a minute (prom.ScrapedEvery), Analyze
// reads them again at that interval and says so in a warning: a fleet
// scraped more often than configured would otherwise have only partial
// minutes, and one scraped less often minutes that miss part of their
// observations. If that second read fails, so does Analyze: the first
// answer's minutes are no answer to act on (a first read that failed keeps
// its own error). A
// recorded minute is read only at the interval the rule pack read it at
// (prom.RecordedScrapeLabel); at another, it is read raw.
//
// A panic inside it, on any of its goroutines, is returned as an
// *ErrInternal.
func Analyze(ctx context.Context, src Source, req Request) (res *Result, err error) {
	defer recovered(&err, "judging the window")
	if !req.Since.IsZero() && FirstMinute(req.Since).After(req.Window.Last) {
		if err := req.Config.Validate(); err != nil {
			return nil, err
		}
		return TooEarly(req, "the deployment started at"), nil
	}
	res, seen, err := analyze(ctx, src, req)
	if seen == 0 || seen == req.Config.ScrapeIntervalSeconds {
		return res, err
	}
	again := req
	again.Config.ScrapeIntervalSeconds = seen
	if again.Config.Validate() != nil {
		return res, err
	}
	mismatch := fmt.Sprintf("the fleets' series are scraped every %d s, not every %d s as scrapeIntervalSeconds says", seen, req.Config.ScrapeIntervalSeconds)
	reread, _, rerr := analyze(ctx, src, again)
	switch {
	case errors.Is(rerr, ErrNotRecorded):
		// Only recorded reading was asked for, and the record holds the
		// minutes at the wrong interval only: those minutes are partial
		// or miss observations, so they are not an answer.
		return nil, fmt.Errorf("%s, and the rule pack recorded no minutes at %d s (%w): render the pack with scrapeIntervalSeconds %d, or read raw", mismatch, seen, rerr, seen)
	case rerr != nil && res == nil:
		return nil, err // the first reading's error stands
	case rerr != nil:
		// The first answer's minutes were read at the wrong interval:
		// partial, or missing observations. It is no answer to act on.
		return nil, fmt.Errorf("%s, and reading their minutes again at %d s failed: %w", mismatch, seen, rerr)
	}
	reread.Warnings = append([]string{fmt.Sprintf("%s: their minutes were read at %d s; set scrapeIntervalSeconds to %d, and in the rule pack, which reads its minutes at its own setting",
		mismatch, seen, seen)}, reread.Warnings...)
	return reread, nil
}

// analyze is Analyze at req's scrape interval. seen is the interval both
// fleets' health plainly shows when their histograms were read raw
// (scrapedEvery), else 0; it is returned with no-data errors too.
func analyze(ctx context.Context, src Source, req Request) (res *Result, seen int, err error) {
	if err := req.Config.Validate(); err != nil {
		return nil, 0, err
	}
	if err := prom.ValidHistogramName(req.Metric); err != nil {
		return nil, 0, err
	}
	if err := selector.Apart(req.Baseline, req.Canary); err != nil {
		return nil, 0, err
	}
	sp, err := req.span()
	if err != nil {
		return nil, 0, err
	}
	ctx, warnings := prom.CollectWarnings(ctx)
	// Warm-up looks back WarmupMinutes before the first judged minute.
	fetch := prom.Range{Start: sp.judged.First.Add(-time.Duration(req.Config.WarmupMinutes) * time.Minute), End: sp.judged.Last, Scrape: req.Config.ScrapeInterval()}

	// Completeness looks StableMinutes back, so health is read that much
	// earlier (not before the deployment): a minute's verdict must not
	// depend on where the range asked for starts.
	lead := verdict.StableMinutes
	if !sp.sinceFirst.IsZero() {
		lead = min(lead, int(sp.judged.First.Sub(sp.sinceFirst)/time.Minute))
	}
	healthRange := fetch
	if early := sp.judged.First.Add(-time.Duration(lead) * time.Minute); early.Before(healthRange.Start) {
		healthRange.Start = early
	}
	// Each fleet's minutes are read off its histograms as soon as they are
	// in, while the other fleet's answer may still be arriving.
	var fleetStats [2][]verdict.FleetStats
	statsOf := func(f int) func(prom.Series) {
		return func(series prom.Series) {
			hs := pairing.Fleet(sp.judged, series)
			fleetStats[f] = make([]verdict.FleetStats, len(hs))
			inParallel(len(hs), func(i int) { fleetStats[f][i] = verdict.Stats(req.Config, hs[i]) })
		}
	}
	queries := []fetchSpec{
		{what: "baseline histogram", fleet: "baseline", metric: req.Metric, sel: req.Baseline, health: &healthRange, stats: statsOf(0)},
		{what: "canary histogram", fleet: "canary", metric: req.Metric, sel: req.Canary, health: &healthRange, stats: statsOf(1)},
	}
	if req.LB != nil {
		if err := selector.ValidMetricName(req.LB.Metric); err != nil {
			return nil, 0, fmt.Errorf("load-balancer metric: %w", err)
		}
		queries = append(queries,
			fetchSpec{what: "baseline load-balancer histogram", metric: req.LB.Metric, sel: req.LB.Baseline},
			fetchSpec{what: "canary load-balancer histogram", metric: req.LB.Metric, sel: req.LB.Canary})
	}
	if req.Errors != nil {
		if err := prom.ValidCounterName(req.Errors.Metric); err != nil {
			return nil, 0, fmt.Errorf("errors metric: %w", err)
		}
		if len(req.Errors.Failed) == 0 {
			return nil, 0, fmt.Errorf("errors metric %s: give the matchers that select its failed requests, such as {code=~\"5..\"}", req.Errors.Metric)
		}
		if err := prom.CheckFailed(req.Errors.Failed, req.Baseline, req.Canary); err != nil {
			return nil, 0, fmt.Errorf("errors metric %s: %w", req.Errors.Metric, err)
		}
	}
	read, err := ParseReading(string(req.Read))
	if err != nil {
		return nil, 0, err
	}
	// The fleets' health reads outlive fetchAll: on return they are
	// cancelled (if still running) and waited for.
	var pending sync.WaitGroup
	defer pending.Wait()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	shared := sharedSeries(ctx, &pending, src, req, sp.judged)
	requests := fleetRequests(ctx, &pending, src, req, fetch)
	results, err := fetchAll(ctx, cancel, &pending, src, read, queries, req.Kind, fetch)
	if err != nil {
		return nil, 0, err
	}
	sh := <-shared
	if sh.err != nil {
		return nil, 0, sh.err
	}
	kindNote, err := readAlike(ctx, src, read, req, queries, results, fetch)
	if err != nil {
		return nil, 0, err
	}
	base, canary := results[0], results[1]
	slow, sparse := slowlyScraped(ctx, src, req, []fetched{base, canary}, fetch)
	if len(base.series) == 0 && len(canary.series) == 0 {
		seen := scrapedEvery(results[:2], make([]map[int64]prom.Health, 2), sparse)
		var noData error
		if hint := cmp.Or(slow[0], slow[1]); hint != "" {
			noData = fmt.Errorf("%w: metric %s has samples for %s and %s between %s and %s, but %s",
				ErrNoData, req.Metric, req.Baseline, req.Canary, sp.judged.First.Format(time.RFC3339), sp.judged.Last.Format(time.RFC3339), hint)
		} else {
			noData = fmt.Errorf("%w: metric %s has no histogram samples for %s or %s between %s and %s; check the metric name, the selectors and the time range",
				ErrNoData, req.Metric, req.Baseline, req.Canary, sp.judged.First.Format(time.RFC3339), sp.judged.Last.Format(time.RFC3339))
		}
		if w := warnings.List(); len(w) > 0 {
			return nil, seen, &PartialNoData{Warnings: w, NoData: noData}
		}
		return nil, seen, noData
	}
	// The request counters are read only for fleets with data: a window
	// without any is no data, counters or not.
	rq := <-requests
	if rq.err != nil {
		return nil, 0, rq.err
	}
	// The fleets' health was asked for with their histograms and is still
	// on its way while the minutes' tail counts are read off the
	// histograms: only the completeness flags and the evidence's scales
	// need it.
	pairs := pairing.Pairs(sp.judged, base.series, canary.series)
	minutes := make([]verdict.Minute, len(pairs))
	counts := make([]verdict.MinuteCounts, len(pairs))
	inParallel(len(pairs), func(i int) {
		p := pairs[i]
		minutes[i] = verdict.Minute{Time: p.Time, Baseline: fleetStats[0][i], Canary: fleetStats[1][i]}
		counts[i] = verdict.CountMinute(req.Config, p.Baseline, p.Canary)
	})
	healths, healthServed, err := awaitHealth(results[:2])
	if err != nil {
		return nil, 0, err
	}
	seen = scrapedEvery(results[:2], healths, sparse)

	res = &Result{Request: req, BaselineKind: base.kind, CanaryKind: canary.kind, Warnings: slices.Clone(req.Notices)}
	if sp.warning != "" {
		res.Warnings = append(res.Warnings, sp.warning)
	}
	// One fleet without a sample in all the minutes read holds every
	// window (fleet-missing), as a canary not started yet should; a
	// selector with a typo looks the same, so say which one.
	for i, f := range results[:2] {
		if len(f.series) == 0 {
			name, sel := "baseline", req.Baseline
			if i == 1 {
				name, sel = "canary", req.Canary
			}
			res.Warnings = append(res.Warnings, fmt.Sprintf("the %s selector %s selects no histogram samples of %s between %s and %s: unless that fleet is still to start, check its labels",
				name, sel, req.Metric, sp.judged.First.Format(time.RFC3339), sp.judged.Last.Format(time.RFC3339)))
		}
	}
	for _, f := range results {
		res.Served = append(res.Served, f.served)
		if f.warning != "" {
			res.Warnings = append(res.Warnings, f.warning)
		}
	}
	res.Served = append(res.Served, healthServed...)
	for f, name := range []string{"baseline", "canary"} {
		if hint := cmp.Or(slow[f], slowScrapeHint(req.Config, healths[f])); hint != "" {
			res.Warnings = append(res.Warnings, "the "+name+" fleet: "+hint)
		}
		if n := nanSums(results[f].series); n > 0 {
			res.Warnings = append(res.Warnings, nanSumWarning(name, n))
		}
		if n, uneven := prom.UnevenScrapes(healths[f]); uneven {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the %s fleet's series have %.2f samples a minute on average, a scrape interval of about %.0f s, which does not divide a minute: %s", name, n, 60/n, unevenScrapeHint))
		}
	}
	if kindNote != "" {
		res.Warnings = append(res.Warnings, kindNote)
	}
	if sh.note != "" {
		res.Warnings = append(res.Warnings, sh.note)
	}
	if base.kind != canary.kind && len(base.series) > 0 && len(canary.series) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the baseline is read from %s histograms and the canary from %s histograms: no minute carries evidence, so the window cannot promote or roll back; record both fleets' classic buckets too (Prometheus's always_scrape_classic_histograms: true) or judge both as one kind", base.kind, canary.kind))
	}
	res.Warnings = append(res.Warnings, layoutWarnings(pairs)...)
	health := [2][]verdict.FleetHealth{make([]verdict.FleetHealth, lead+len(pairs)), make([]verdict.FleetHealth, lead+len(pairs))}
	for i := range health[0] {
		t := sp.judged.First.Add(time.Duration(i-lead) * time.Minute).Unix()
		for f := range health {
			h := healths[f][t]
			health[f][i] = verdict.FleetHealth{Reporting: h.Reporting, Down: h.Down, SamplesPerSeries: h.SamplesPerSeries()}
		}
	}
	incomplete := [2][]string{}
	for f, name := range []string{"baseline", "canary"} {
		var accepted []string
		incomplete[f], accepted = verdict.Completeness(req.Config, health[f])
		incomplete[f] = incomplete[f][lead:]
		for _, a := range accepted {
			res.Warnings = append(res.Warnings, "the "+name+" fleet: "+a)
		}
	}
	for i, p := range pairs {
		ts := p.Time.Unix()
		minutes[i].Baseline.Incomplete, minutes[i].Canary.Incomplete = incomplete[0][i], incomplete[1][i]
		minutes[i].Evidence = counts[i].Evidence(req.Config,
			req.Config.ScrapeScale(healths[0][ts].SamplesPerSeries()), req.Config.ScrapeScale(healths[1][ts].SamplesPerSeries()))
		minutes[i].Shared = sh.minutes[ts]
		if req.LB != nil {
			minutes[i].LB = &verdict.LoadBalancerQuantiles{Baseline: verdictValue(req, results[2].series, p.Time), Canary: verdictValue(req, results[3].series, p.Time)}
		}
		if req.Errors != nil {
			b, c := rq.fleets[0][ts], rq.fleets[1][ts]
			minutes[i].Errors = &verdict.ErrorCounts{Baseline: verdict.RequestCounts(b), Canary: verdict.RequestCounts(c)}
		}
	}
	if req.Errors != nil && noFailures(rq.fleets) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("no request of %s matched the failed requests' matchers %s in either fleet over the range, so the error ratios compared nothing: if the service did fail, select its failures by the label it writes (code, status, http.response.status_code)", req.Errors.Metric, req.Errors.Failed))
	}
	if req.LB != nil {
		note, err := lbCoverage(req, minutes)
		if err != nil {
			return nil, 0, err
		}
		if note != "" {
			res.Warnings = append(res.Warnings, note)
		}
	}
	canaryHadTraffic := func(t time.Time) bool {
		if !sp.sinceFirst.IsZero() && t.Before(sp.sinceFirst) {
			return false // an earlier canary under the same labels is not this one
		}
		h := canary.series[t.Unix()]
		return h != nil && h.Count > 0
	}
	opts := verdict.Options{Shown: sp.shown, Anchored: sp.anchored, CanaryHadTrafficAt: canaryHadTraffic}
	if w := warnings.List(); len(w) > 0 {
		opts.Flags = []string{verdict.FlagPartialResponse}
		opts.Notes = []string{"Prometheus answered with warnings, so its answer may be partial (a store or an ingester missing): " + strings.Join(w, "; ")}
	}
	res.Window = verdict.Decide(req.Config, minutes, opts)
	return res, seen, nil
}

// nanSums counts the minutes whose native histogram has a NaN sum.
func nanSums(series prom.Series) int {
	n := 0
	for _, h := range series {
		if h != nil && math.IsNaN(h.Sum) {
			n++
		}
	}
	return n
}

// nanSumWarning says what a fleet's NaN sums mean: a pod observed NaN or
// +Inf (its sum stays NaN until it restarts), which Pairwise's quantiles
// ignore, as they should, but Prometheus 3.13's histogram_quantile does
// not: it interpolates in the highest populated bucket instead of the one
// holding the rank, so the rule pack's figures for the fleet are wrong.
func nanSumWarning(fleet string, minutes int) string {
	return fmt.Sprintf("the %s fleet's histograms have a NaN sum in %d minutes: some pod observed NaN or +Inf (its sum stays NaN until it restarts). This judgement is unaffected, but Prometheus's histogram_quantile answers such histograms wrongly, so the rule pack's quantiles, tail counts and decisions for this canary are not these; find the pod that observes NaN or +Inf", fleet, minutes)
}

// sharedSeries asks, beside the fleets' histograms, how many series both
// fleets select at each judged minute, when src can tell and the selectors
// do not already tell them apart (track="baseline" and track="canary" need
// no question: the usual fleets cost nothing more). Its answer, once in, is
// ErrSharedSeries when some are shared at the last minute; the minutes
// that shared some before it (Minute.Shared), whose windows then hold, as
// the rule pack's do; a warning when the backend rejects the question
// (prom.ErrBadQuery), and the fleets are judged unchecked; the error when
// the backend failed to answer it or garbled its answer.
func sharedSeries(ctx context.Context, pending *sync.WaitGroup, src Source, req Request, judged pairing.Window) <-chan sharedAnswer {
	out := make(chan sharedAnswer, 1)
	ss, ok := src.(SharedSource)
	if !ok || selector.Disjoint(req.Baseline, req.Canary) {
		out <- sharedAnswer{}
		return out
	}
	pending.Add(1)
	go func() {
		defer pending.Done()
		var ans sharedAnswer
		defer func() { out <- ans }()
		defer recovered(&ans.err, "counting the series both fleets select")
		shared, err := ss.SharedSeries(ctx, req.Metric, req.Baseline, req.Canary, prom.Range{Start: judged.First, End: judged.Last})
		at := judged.Last
		switch n := shared[at.Unix()]; {
		case errors.Is(err, prom.ErrBadQuery):
			// The backend does not serve the question (its histograms,
			// asked of the same API, were answered): a warning. Any
			// other failure, a garbled answer among them, fails.
			ans.note = "whether a series is in both fleets could not be checked: " + err.Error()
		case err != nil:
			ans.err = fmt.Errorf("count the series both fleets select: %w", err)
		case n > 0:
			ans.err = fmt.Errorf("%w: %d series of %s at %s are selected by both the baseline selector %s and the canary selector %s, so those pods' requests would count on both sides; make the selectors exclusive, e.g. with track=\"baseline\" and track=\"canary\"",
				ErrSharedSeries, n, req.Metric, at.UTC().Format(time.RFC3339), req.Baseline, req.Canary)
		default:
			ans.minutes = shared
		}
	}()
	return out
}

// fleetRequests asks, beside the fleets' histograms, for both fleets'
// requests and failed requests in every minute fetched, when req names a
// request counter (Request.Errors). Its answer is an error when src cannot
// read counters or either fleet's read fails: a comparison asked for is
// never silently left out.
func fleetRequests(ctx context.Context, pending *sync.WaitGroup, src Source, req Request, r prom.Range) <-chan requestsAnswer {
	out := make(chan requestsAnswer, 1)
	if req.Errors == nil {
		out <- requestsAnswer{}
		return out
	}
	rs, ok := src.(RequestSource)
	if !ok {
		out <- requestsAnswer{err: fmt.Errorf("this source cannot read the request counter %s", req.Errors.Metric)}
		return out
	}
	pending.Add(1)
	go func() {
		defer pending.Done()
		var ans requestsAnswer
		defer func() { out <- ans }()
		defer recovered(&ans.err, "reading the request counters")
		for f, sel := range []selector.Selector{req.Baseline, req.Canary} {
			counts, err := rs.FleetRequests(ctx, req.Errors.Metric, sel, req.Errors.Failed, r)
			if err != nil {
				ans.err = fmt.Errorf("read the %s fleet's requests and failed requests (%s): %w", []string{"baseline", "canary"}[f], req.Errors.Metric, err)
				return
			}
			if len(counts) == 0 {
				// A configuration to fix, not a window without data: the
				// latency may well be there.
				ans.err = fmt.Errorf("the request counter %s has no samples for the %s fleet %s between %s and %s: check the errors metric's name (a counter such as http_requests_total, or a histogram)",
					req.Errors.Metric, []string{"baseline", "canary"}[f], sel, r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339))
				return
			}
			ans.fleets[f] = counts
		}
	}()
	return out
}

// noFailures tells whether no failed request was read in either fleet.
func noFailures(fleets [2]map[int64]prom.Requests) bool {
	for _, f := range fleets {
		for _, r := range f {
			if r.Errors > 0 {
				return false
			}
		}
	}
	return true
}

// requestsAnswer is fleetRequests's answer: each fleet's requests by
// minute (Unix seconds), or the error that ends the analysis.
type requestsAnswer struct {
	fleets [2]map[int64]prom.Requests
	err    error
}

// sharedAnswer is sharedSeries's answer: the series shared at each minute
// that shared some (Unix seconds), a warning for the result, or the error
// that ends the analysis.
type sharedAnswer struct {
	minutes map[int64]int
	note    string
	err     error
}

// readAlike reads a fleet that auto read from native histograms again from
// its classic buckets when the other fleet has only classic ones (a release
// that moves to native histograms is canaried against a baseline that has
// none): a native histogram and classic buckets have no layout in common, so
// no minute could carry evidence. It returns a note when it did; when the
// native fleet has no classic buckets either, it leaves both as they are.
func readAlike(ctx context.Context, src Source, read Reading, req Request, specs []fetchSpec, results []fetched, r prom.Range) (string, error) {
	if req.Kind != prom.Auto && req.Kind != "" {
		return "", nil
	}
	b, c := &results[0], &results[1]
	if b.kind == c.kind || len(b.series) == 0 || len(c.series) == 0 {
		return "", nil
	}
	i, other := 0, "canary"
	if c.kind == prom.Native {
		i, other = 1, "baseline"
	}
	f := &results[i]
	series, kind, served, warning, err := readFleet(ctx, src, read, specs[i], prom.Classic, r, nil)
	if err != nil {
		return "", fmt.Errorf("query %s (classic buckets): %w", specs[i].what, err)
	}
	if kind != prom.Classic || len(series) == 0 {
		return "", nil
	}
	f.series, f.kind, f.served, f.warning = series, kind, served, warning
	if specs[i].stats != nil {
		specs[i].stats(series)
	}
	return fmt.Sprintf("the %s has native histograms and the %s only classic buckets: both are read from their classic buckets", specs[i].fleet, other), nil
}

// layoutWarnings tell the minutes whose fleets' histograms differ in layout:
// counted in the layout both have (histogram.Common), or, without one, left
// without evidence. Each names the first such minute's layouts.
func layoutWarnings(pairs []pairing.Pair) []string {
	var coarser, apart int
	var coarserNote, apartNote string
	for _, p := range pairs {
		if p.Baseline == nil || p.Canary == nil || !(p.Baseline.Count > 0) || !(p.Canary.Count > 0) || p.Baseline.Kind != p.Canary.Kind {
			continue // kinds that differ have their own warning
		}
		n, err := histogram.LayoutNote(p.Baseline, p.Canary)
		if err != nil {
			if apart++; apart == 1 {
				apartNote = err.Error()
			}
		} else if n != "" {
			if coarser++; coarser == 1 {
				coarserNote = n
			}
		}
	}
	var out []string
	if coarser > 0 {
		out = append(out, fmt.Sprintf("the fleets' histograms differ in layout in %d of %d minutes (baseline and canary: %s): both fleets' tails are counted in the layout both have, no finer than the coarser (the evidence); each fleet's quantiles are still read at its own resolution, so a minute's ratio compares interpolations of different precision and the reference rule's bad and good minutes can lean either way", coarser, len(pairs), coarserNote))
	}
	if apart > 0 {
		out = append(out, fmt.Sprintf("the fleets' histograms have no layout in common in %d of %d minutes (%s): those minutes carry no evidence; record both fleets with the same buckets", apart, len(pairs), apartNote))
	}
	return out
}

// inParallel calls f(i) for every i in [0, n), spread over the CPUs in
// contiguous runs; each f(i) must touch only what belongs to i.
func inParallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/minPerWorker)
	if workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var p firstPanic
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.catch("reading the minutes")
			for i := w * n / workers; i < (w+1)*n/workers; i++ {
				f(i)
			}
		}()
	}
	wg.Wait()
	p.repanic()
}

// minPerWorker keeps short windows on one goroutine: a minute's quantiles
// and counts take tens of microseconds.
const minPerWorker = 16

// awaitHealth waits for the fleets' health (read beside their histograms by
// fetchAll); a fleet without data needs none and has none.
func awaitHealth(fleets []fetched) ([]map[int64]prom.Health, []Served, error) {
	out := make([]map[int64]prom.Health, len(fleets))
	var used []Served
	var errs []error
	for i, f := range fleets {
		h := f.health
		<-h.done
		if len(f.series) == 0 {
			continue
		}
		out[i] = h.health
		used = append(used, h.served)
		if h.err != nil {
			errs = append(errs, fmt.Errorf("query %s: %w", h.served.What, h.err))
		}
	}
	return out, used, errors.Join(errs...)
}

// unevenScrapeHint explains a fleet whose scrape interval does not divide a
// minute (prom.UnevenScrapes).
const unevenScrapeHint = "each minute's increase() then reads a different part of the minute, and the counted observations are too high in some minutes and too low in others, which the false-rollback budget does not allow for; scrape these targets every 10, 15, 20, 30 or 60 s"

// slowScrapeHint tells, from a fleet's health, when its series are scraped
// less often than c says (half a sample a minute fewer than its interval
// gives, in the median minute): each minute is read over a minute and c's
// interval, which then holds too few samples to read the whole minute, or
// none at all. "" when they are not, or without samples.
func slowScrapeHint(c verdict.Config, health map[int64]prom.Health) string {
	n, minutes := prom.MedianSamplesPerSeries(health)
	if minutes == 0 || n > c.ScrapesPerMinute()-0.5 {
		return ""
	}
	return fmt.Sprintf("its series have %.1f samples a minute, a scrape interval of about %.0f s, but scrapeIntervalSeconds is %d: each minute is read over a minute and %d s, which then holds too few samples to read the whole minute; set scrapeIntervalSeconds to the fleets' scrape interval",
		n, 60/n, c.ScrapeIntervalSeconds, c.ScrapeIntervalSeconds)
}

// slowlyScraped is slowScrapeHint for each fleet without minute
// histograms, read from its health, and that health; "" and nil for a fleet
// with histograms or whose health cannot be read.
func slowlyScraped(ctx context.Context, src Source, req Request, fleets []fetched, r prom.Range) (hints []string, healths []map[int64]prom.Health) {
	hints, healths = make([]string, len(fleets)), make([]map[int64]prom.Health, len(fleets))
	sels := []selector.Selector{req.Baseline, req.Canary}
	kinds := []prom.Kind{req.Kind}
	if req.Kind == prom.Auto || req.Kind == "" {
		kinds = []prom.Kind{prom.Native, prom.Classic}
	}
	for i, f := range fleets {
		if len(f.series) > 0 {
			continue
		}
		for _, k := range kinds {
			h, err := src.FleetHealth(ctx, req.Metric, sels[i], k, r)
			if err != nil {
				break
			}
			if len(h) > 0 {
				hints[i], healths[i] = slowScrapeHint(req.Config, h), h
				break
			}
		}
	}
	return hints, healths
}

// scrapedEvery is the scrape interval every fleet with samples plainly
// shows (prom.ScrapedEvery), read from the health of its histograms (raw
// or recorded: a record counts the raw samples too), or from sparse
// (slowlyScraped) when it has none; 0 when a fleet shows none, when they
// differ, or when none has samples. Read again at that interval, a fleet
// reads only records made at it (prom.RecordedScrapeLabel).
func scrapedEvery(fleets []fetched, healths, sparse []map[int64]prom.Health) int {
	seen := 0
	for f, fl := range fleets {
		h := healths[f]
		if len(fl.series) == 0 {
			if h = sparse[f]; len(h) == 0 {
				continue // no samples: this fleet does not vote
			}
		}
		s := prom.ScrapedEvery(h)
		if s == 0 || seen != 0 && s != seen {
			return 0
		}
		seen = s
	}
	return seen
}

// lbCoverage checks that the load-balancer histograms cross-check the
// minutes both fleets served: a minute without them is not checked
// (verdict's divergence skips it). None at all is an error naming the
// load-balancer fleet that has none, as a selector that matches nothing or
// a load balancer scraped less often than the fleets leaves them; some
// missing is a warning.
func lbCoverage(req Request, minutes []verdict.Minute) (string, error) {
	served, checked := 0, 0
	var seen [2]int
	for _, m := range minutes {
		if m.LB == nil || !(m.Baseline.Count > 0 && m.Canary.Count > 0) {
			continue
		}
		served++
		for f, q := range []float64{m.LB.Baseline, m.LB.Canary} {
			if !math.IsNaN(q) {
				seen[f]++
			}
		}
		if !math.IsNaN(m.LB.Baseline) && !math.IsNaN(m.LB.Canary) {
			checked++
		}
	}
	for f, part := range []string{"baseline", "canary"} {
		if served > 0 && seen[f] == 0 {
			sel := []selector.Selector{req.LB.Baseline, req.LB.Canary}[f]
			return "", &LoadBalancerError{Part: part, Err: fmt.Errorf("%s%s has no observations in any of the %d minutes both fleets served, so nothing is cross-checked: check the metric and the selector, and that the load balancer is scraped as often as the fleets (each minute is read over %s, which needs two of its samples)",
				req.LB.Metric, sel, served, prom.MinuteRange(req.Config.ScrapeInterval()))}
		}
	}
	if checked < served {
		return fmt.Sprintf("the load-balancer histograms (%s) cross-check %d of the %d minutes both fleets served; the others have no load-balancer observations and are not checked", req.LB.Metric, checked, served), nil
	}
	return "", nil
}

func verdictValue(req Request, series prom.Series, t time.Time) float64 {
	if h := series[t.Unix()]; h != nil && h.Count > 0 {
		return h.Quantile(req.Config.VerdictQuantile)
	}
	return math.NaN()
}

type fetchSpec struct {
	what   string
	fleet  string // baseline or canary, for the health
	metric string
	sel    selector.Selector
	// health, when not nil, is the range of the fleet's health, read
	// beside its histograms.
	health *prom.Range
	// stats, when not nil, is called with the fleet's histograms as soon
	// as they are read, on the goroutine that read them.
	stats func(prom.Series)
}

type fetched struct {
	series  prom.Series
	kind    prom.Kind
	served  Served
	warning string
	err     error

	health *fleetHealth // when asked for
}

// fleetHealth is a fleet's health, read beside its histograms; done is
// closed when it is in.
type fleetHealth struct {
	done   chan struct{}
	health map[int64]prom.Health
	served Served
	err    error
}

// fetchAll runs every query at once; the first failure cancels the others
// (cancel cancels ctx) and is the error returned. It returns when the
// histograms are read; a fleet's health, asked for beside them, arrives
// later (fleetHealth.done). Every read still running is in pending: the
// caller cancels ctx and waits for pending when done.
func fetchAll(ctx context.Context, cancel context.CancelCauseFunc, pending *sync.WaitGroup, src Source, read Reading, specs []fetchSpec, kind prom.Kind, r prom.Range) ([]fetched, error) {
	out := make([]fetched, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		f := &out[i]
		var hp *healthAhead
		if spec.health != nil {
			hp = &healthAhead{ctx: ctx, pending: pending, src: src, metric: spec.metric, sel: spec.sel, r: *spec.health}
			f.health = &fleetHealth{done: make(chan struct{})}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			func() {
				defer recovered(&f.err, "reading the "+spec.what)
				f.series, f.kind, f.served, f.warning, f.err = readFleet(ctx, src, read, spec, kind, r, hp)
				if f.err == nil && spec.stats != nil {
					spec.stats(f.series)
				}
			}()
			if f.err != nil {
				f.err = fmt.Errorf("query %s: %w", spec.what, f.err)
				cancel(f.err) // the other queries are of no use now
			}
			if hp == nil {
				return
			}
			if f.err != nil || len(f.series) == 0 {
				hp.drop()
				close(f.health.done)
				return
			}
			h, served, kind := f.health, f.served, f.kind
			pending.Add(1)
			go func() {
				defer pending.Done()
				defer close(h.done)
				defer hp.drop()
				defer recovered(&h.err, "reading the "+spec.fleet+" health")
				h.health, h.served, h.err = readHealth(ctx, src, served, spec.metric, spec.sel, kind, *spec.health, hp)
				h.served.What = spec.fleet + " health"
			}()
		}()
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return nil, cause
	}
	for _, f := range out {
		if f.err != nil {
			return nil, f.err
		}
	}
	return out, nil
}

// PodSource is what PodSpread needs; *prom.Client implements it.
type PodSource interface {
	PodHistograms(ctx context.Context, metric, podLabel string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[string]prom.Series, error)
}

// Spread is the verdict quantile of single pods in one fleet-minute: the
// spread a fleet-merged quantile hides, with the worst pod named.
type Spread struct {
	Time             time.Time
	Fleet            string
	Min, Median, Max float64
	WorstPod         string
	Pods             int
}

// PodSpread fetches the per-pod histograms of the minutes res shows (one
// query per fleet, both at once) and summarises each minute's per-pod
// verdict quantiles. Each fleet's pods are read at the histogram kind and
// scrape interval its minutes were read at (res.BaselineKind,
// res.CanaryKind, res.Request.Config), as Attribute reads the canary's; the
// minutes are res.Request.Window's, from the deployment's first whole
// minute (FirstMinute of res.Request.Since) when that is later, as Analyze
// shows them. A deployment with no whole minute yet has no spread.
func PodSpread(ctx context.Context, src PodSource, res *Result, podLabel string) (spread []Spread, err error) {
	defer recovered(&err, "reading the pods' spread")
	req := res.Request
	shown := req.Window
	if !req.Since.IsZero() {
		if first := FirstMinute(req.Since); first.After(shown.First) {
			shown.First = first
		}
	}
	if shown.First.After(shown.Last) {
		return nil, nil
	}
	fetch := prom.Range{Start: shown.First, End: shown.Last, Scrape: req.Config.ScrapeInterval()}
	fleets := []struct {
		name string
		sel  selector.Selector
		kind prom.Kind
	}{{"baseline", req.Baseline, res.BaselineKind}, {"canary", req.Canary, res.CanaryKind}}
	byFleet := make([]map[string]prom.Series, len(fleets))
	errs := make([]error, len(fleets))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var p firstPanic
	for i, fleet := range fleets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.catch("reading the " + fleet.name + " pods")
			if byFleet[i], errs[i] = src.PodHistograms(ctx, req.Metric, podLabel, fleet.sel, fleet.kind, fetch); errs[i] != nil {
				cancel() // the other fleet's pods are of no use now
			}
		}()
	}
	wg.Wait()
	p.repanic()
	// The error that ended the read, not the other fleet's cancellation.
	failed := -1
	for i := range fleets {
		if errs[i] != nil && (failed < 0 || errors.Is(errs[failed], context.Canceled) && !errors.Is(errs[i], context.Canceled)) {
			failed = i
		}
	}
	if failed >= 0 {
		return nil, fmt.Errorf("query %s pods: %w", fleets[failed].name, errs[failed])
	}
	var out []Spread
	for i, fleet := range fleets {
		pods := byFleet[i]
		for _, t := range shown.Times() {
			s := Spread{Time: t, Fleet: fleet.name, Min: math.NaN(), Median: math.NaN(), Max: math.NaN()}
			var values []float64
			for pod, series := range pods {
				h := series[t.Unix()]
				if h == nil || !(h.Count > 0) {
					continue
				}
				v := h.Quantile(req.Config.VerdictQuantile)
				if math.IsNaN(v) {
					continue
				}
				values = append(values, v)
				if len(values) == 1 || v > s.Max || v == s.Max && pod < s.WorstPod {
					s.Max, s.WorstPod = v, pod
				}
			}
			if len(values) > 0 {
				slices.Sort(values)
				s.Min = values[0]
				s.Median = values[len(values)/2]
				if len(values)%2 == 0 {
					s.Median = (values[len(values)/2-1] + values[len(values)/2]) / 2
				}
				s.Pods = len(values)
			}
			out = append(out, s)
		}
	}
	return out, nil
}
