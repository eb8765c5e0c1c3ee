// Package plugin is the Grafana glue of the pairwise-canary-datasource: it
// decodes queries, calls the engine and returns frames. It holds no analysis
// logic; that lives in pkg/engine and the packages it calls.
package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/frames"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// Settings is the part of the data source's jsonData that Pairwise reads
// itself. The connection is Grafana's standard one, read by the SDK: the
// data source URL, basic auth (basicAuth, basicAuthUser and the
// basicAuthPassword secret), TLS (tlsSkipVerify, tlsAuthWithCACert, tlsAuth,
// serverName and their secrets) and custom headers (httpHeaderName1 and the
// httpHeaderValue1 secret). Secrets live only in secureJsonData, are read
// decrypted, and are never stored here nor logged.
type Settings struct {
	// Timeout is Grafana's standard jsonData.timeout, in seconds: how long
	// each request to Prometheus (its retries included) may wait for its
	// answer, as Grafana's own HTTP timeout does. A panel query makes a
	// few requests, mostly side by side; one that reads the fleets again
	// at a corrected scrape interval makes them twice.
	Timeout jsonSeconds `json:"timeout"`
	// ScrapeIntervalSeconds is how often Prometheus scrapes the fleets: the
	// default of every query that does not set its own (0: verdict.Default's).
	ScrapeIntervalSeconds int `json:"scrapeIntervalSeconds"`

	// The keys of Pairwise's first settings page, before the standard
	// ones. They are still read when the standard setting is empty, so an
	// existing or provisioned data source keeps working; the settings page
	// moves them to the standard fields, and the health check says so.
	LegacyPrometheusURL  string      `json:"prometheusUrl"`
	LegacyTimeoutSeconds jsonSeconds `json:"timeoutSeconds"`
	LegacyBasicAuthUser  string      `json:"basicAuthUser"`
}

// jsonSeconds reads a number of seconds written as a JSON number or string.
type jsonSeconds float64

func (s *jsonSeconds) UnmarshalJSON(b []byte) error {
	text := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if text == "" || text == "null" {
		*s = 0
		return nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return fmt.Errorf("%s is not a number of seconds", b)
	}
	*s = jsonSeconds(f)
	return nil
}

// DefaultTimeout bounds each query when the data source sets no timeout;
// MaxTimeout is the longest a data source may set (a longer one, or one so
// long it would overflow, is refused rather than read as no timeout).
const (
	DefaultTimeout = 30 * time.Second
	MaxTimeout     = 10 * time.Minute
)

// Datasource is one configured instance.
type Datasource struct {
	client *prom.Client
	logger log.Logger
	// configErr is what is wrong with the settings (no URL, a bad URL); every
	// query and the health check report it, saying what to change.
	configErr string
	// legacy names the old jsonData keys this instance still reads.
	legacy []string
	// defaults are the verdict settings a query starts from: verdict.Default
	// with the data source's scrape interval.
	defaults verdict.Config
	// clock is the time now (nil: time.Now), which a range's end is settled
	// against.
	clock func() time.Time
	// scrub removes the data source's secrets from a text it returns (nil:
	// none to remove): an error page may echo the request's headers.
	scrub func(string) string
}

// scrubbed is text without the data source's secrets.
func (d *Datasource) scrubbed(text string) string {
	if d.scrub == nil {
		return text
	}
	return d.scrub(text)
}

func (d *Datasource) now() time.Time {
	if d.clock != nil {
		return d.clock()
	}
	return time.Now()
}

// NewDatasource builds an instance from its settings. A wrong setting does
// not fail the instance: it is reported by the health check and by every
// query, in words that say where to fix it.
func NewDatasource(ctx context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	ds := &Datasource{logger: log.DefaultLogger.With("datasource", s.UID), defaults: verdict.Default()}
	ds.scrub = prom.NewScrubber(secretsOf(s.DecryptedSecureJSONData, s.BasicAuthUser))
	var settings Settings
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &settings); err != nil {
			ds.configErr = "The data source settings cannot be read (" + err.Error() + "): open the data source's settings page and save it again."
			return ds, nil
		}
	}
	if settings.LegacyBasicAuthUser != "" {
		ds.scrub = prom.NewScrubber(secretsOf(s.DecryptedSecureJSONData, s.BasicAuthUser, settings.LegacyBasicAuthUser))
	}
	if settings.ScrapeIntervalSeconds != 0 {
		ds.defaults.ScrapeIntervalSeconds = settings.ScrapeIntervalSeconds
		if err := ds.defaults.Validate(); err != nil {
			ds.configErr = "The scrape interval must be a whole number of seconds that divides a minute (10, 15, 20, 30 or 60): set it on the data source's settings page."
			return ds, nil
		}
	}
	url := strings.TrimSpace(s.URL)
	if url == "" && strings.TrimSpace(settings.LegacyPrometheusURL) != "" {
		url = strings.TrimSpace(settings.LegacyPrometheusURL)
		ds.legacy = append(ds.legacy, "prometheusUrl")
	}
	timeout := DefaultTimeout
	switch {
	case settings.Timeout > 0:
		timeout = time.Duration(float64(settings.Timeout) * float64(time.Second))
	case settings.LegacyTimeoutSeconds > 0:
		timeout = time.Duration(float64(settings.LegacyTimeoutSeconds) * float64(time.Second))
		ds.legacy = append(ds.legacy, "timeoutSeconds")
	}
	if timeout > MaxTimeout || timeout <= 0 {
		ds.configErr = fmt.Sprintf("The timeout must be at most %d seconds: set a shorter one on the data source's settings page.", int(MaxTimeout.Seconds()))
		return ds, nil
	}
	opts, err := s.HTTPClientOptions(ctx)
	if err != nil {
		ds.configErr = "The HTTP settings cannot be used (" + err.Error() + "): check TLS and the custom headers on the data source's settings page."
		return ds, nil
	}
	// The whole query, retries included, is bounded by the prom client;
	// the HTTP client must not cut it shorter.
	if opts.Timeouts == nil {
		opts.Timeouts = &httpclient.TimeoutOptions{}
	}
	opts.Timeouts.Timeout = timeout
	if opts.BasicAuth == nil && settings.LegacyBasicAuthUser != "" {
		opts.BasicAuth = &httpclient.BasicAuthOptions{User: settings.LegacyBasicAuthUser, Password: s.DecryptedSecureJSONData["basicAuthPassword"]}
		ds.legacy = append(ds.legacy, "basicAuthUser")
	}
	// A bearer token (the settings page's "Bearer token" method) is sent
	// as Authorization when basic auth is off, through the SDK client's
	// headers like any custom header.
	if token := s.DecryptedSecureJSONData["bearerToken"]; token != "" && opts.BasicAuth == nil {
		if opts.Header == nil {
			opts.Header = http.Header{}
		}
		if opts.Header.Get("Authorization") == "" {
			opts.Header.Set("Authorization", "Bearer "+token)
		}
	}
	if url == "" {
		ds.configErr = "Set the URL under Connection on the data source's settings page: the Prometheus, Mimir or Thanos query endpoint, e.g. http://prometheus:9090."
		return ds, nil
	}
	client, err := prom.New(url, timeout)
	if err != nil {
		ds.configErr = "Fix the URL under Connection on the data source's settings page: " + err.Error() + ", e.g. http://prometheus:9090."
		return ds, nil
	}
	httpClient, err := httpclient.New(opts)
	if err != nil {
		ds.configErr = "The HTTP client cannot be built (" + err.Error() + "): check the TLS certificates on the data source's settings page."
		return ds, nil
	}
	client.HTTP = httpClient
	ds.client = client
	return ds, nil
}

// Dispose is called when the settings change: idle connections to the old
// Prometheus are closed so nothing outlives the instance.
func (d *Datasource) Dispose() {
	if d.client != nil && d.client.HTTP != nil {
		d.client.HTTP.CloseIdleConnections()
	}
}

// QueryData answers every query; one failing query does not fail the others.
// Requests from Grafana's alerting and server-side expressions get the
// numeric shape those accept (see frames.Numeric), whatever the query's
// format says.
//
// The queries run side by side, at most MaxParallelQueries at once, under
// the request's deadline, and queries that ask for the same analysis (the
// dashboard panel's minutes, decision and pods) share one: Prometheus is
// read for it once.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	numeric := FromExpressions(req)
	run := d.newRun()
	answers := make([]backend.DataResponse, len(req.Queries))
	slots := make(chan struct{}, MaxParallelQueries)
	var wg sync.WaitGroup
	for i, q := range req.Queries {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			answers[i] = d.runQuery(ctx, q, numeric, run) // recovers its own panics
		}()
	}
	wg.Wait()
	for i, q := range req.Queries {
		resp.Responses[q.RefID] = d.scrubResponse(answers[i])
	}
	return resp, nil
}

// MaxParallelQueries bounds the queries of one request that run at once;
// each reads Prometheus with a few requests side by side.
const MaxParallelQueries = 4

// requestRun is what the queries of one request share: the time their
// ranges are settled against, so that equal queries ask for equal
// analyses, and those analyses, each run once.
type requestRun struct {
	now      time.Time
	mu       sync.Mutex
	analyses []*sharedAnalysis
}

// sharedAnalysis is one engine.Analyze of a request, done when done is closed.
type sharedAnalysis struct {
	req  engine.Request
	done chan struct{}
	res  *engine.Result
	err  error
}

func (d *Datasource) newRun() *requestRun { return &requestRun{now: d.now()} }

// analyze runs engine.Analyze for req, or waits for the same analysis
// another query of the request started. Each caller gets its own copy of
// the result to add warnings to.
func (r *requestRun) analyze(ctx context.Context, src engine.Source, req engine.Request) (*engine.Result, error) {
	key := analysisKey(req)
	r.mu.Lock()
	var a *sharedAnalysis
	for _, other := range r.analyses {
		if reflect.DeepEqual(other.req, key) {
			a = other
			break
		}
	}
	if a != nil {
		r.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		a = &sharedAnalysis{req: key, done: make(chan struct{})}
		r.analyses = append(r.analyses, a)
		r.mu.Unlock()
		func() {
			// The queries waiting for it are released whatever happens.
			defer close(a.done)
			defer func() {
				if v := recover(); v != nil {
					a.res, a.err = nil, &engine.ErrInternal{What: "judging the window", Value: v, Stack: debug.Stack()}
				}
			}()
			a.res, a.err = engine.Analyze(ctx, src, req)
		}()
	}
	if a.err != nil || a.res == nil {
		return nil, a.err
	}
	res := *a.res
	res.Warnings = slices.Clone(res.Warnings)
	return &res, nil
}

// analysisKey is req as analyses are told apart: its times in UTC, so that
// the same instants compare equal whatever zone they were written in.
func analysisKey(req engine.Request) engine.Request {
	req.Since = req.Since.UTC()
	req.Window.First, req.Window.Last = req.Window.First.UTC(), req.Window.Last.UTC()
	return req
}

// FromExpressions tells a request from Grafana's alerting (the FromAlert
// header) or from server-side expressions in a dashboard (the
// X-Grafana-From-Expr header) from a panel's.
func FromExpressions(req *backend.QueryDataRequest) bool {
	if req == nil {
		return false
	}
	if v, ok := req.Headers[backend.FromAlertHeaderName]; ok && v != "" && v != "false" {
		return true
	}
	return strings.EqualFold(req.GetHTTPHeader(fromExpressionHeader), "true")
}

// fromExpressionHeader marks queries Grafana runs for server-side expressions.
const fromExpressionHeader = "X-Grafana-From-Expr"

// Error sources: a query Pairwise cannot run because of what the user wrote
// (the query, the settings) or because of Prometheus is "downstream" in
// Grafana's terms, not a fault of the plugin; only Pairwise's own failures
// (a frame it cannot build, a panic) are "plugin" errors.
func userError(msg string) backend.DataResponse {
	return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, msg)
}

func pluginError(msg string) backend.DataResponse {
	return backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin, msg)
}

// runQuery answers one query of a request; run is what the request's
// queries share (their clock and their analyses).
func (d *Datasource) runQuery(ctx context.Context, q backend.DataQuery, fromExpressions bool, run *requestRun) (dr backend.DataResponse) {
	defer func() {
		if r := recover(); r != nil {
			d.logger.Error("query panicked", "refId", q.RefID, "panic", d.scrubbed(fmt.Sprint(r)), "stack", string(debug.Stack()))
			dr = pluginError("Pairwise hit an internal error on this query; the plugin log has the details")
		}
	}()
	if d.configErr != "" {
		return userError(d.configErr)
	}
	// A minute is judged once its last scrape can have landed, as by the
	// judge: a range that ends less than engine.DefaultSettle ago (an alert
	// rule's evaluation, a dashboard's "now") is read up to then.
	to := q.TimeRange.To
	if settled := run.now.Add(-engine.DefaultSettle); to.After(settled) {
		to = settled
	}
	pq, err := parseQuery(q.JSON, q.QueryType, q.TimeRange.From, to, d.defaults)
	if err != nil {
		return userError(err.Error())
	}
	if !pq.Request.Since.IsZero() {
		if err := engine.CheckStarted(pq.Request.Since, run.now); err != nil {
			return userError("since: " + err.Error())
		}
	}
	numeric := fromExpressions || pq.Format == FormatAlerting
	res, err := run.analyze(ctx, d.client, pq.Request)
	if err != nil {
		if numeric && noData(err) {
			// No data is a state of an alert rule, not an error: an empty
			// frame is Grafana's "no data", with the reason as a notice.
			frame := data.NewFrame(pq.Type).SetMeta(&data.FrameMeta{Notices: []data.Notice{{Severity: data.NoticeSeverityInfo, Text: err.Error()}}})
			frame.RefID = q.RefID
			return backend.DataResponse{Frames: data.Frames{frame}}
		}
		return d.failed(ctx, q, err)
	}
	var table frames.Table
	switch pq.Type {
	case QueryDecision:
		// A rollback shown on a dashboard says which pods hold the
		// canary's tail; alert rules need only the numbers, and ask
		// nothing more of Prometheus.
		var byPod *engine.Attribution
		if !numeric {
			if byPod, err = engine.Attribute(ctx, d.client, res, pq.PodLabel); err != nil {
				res.Warnings = append(res.Warnings, "the rollback is not attributed to pods: "+err.Error())
			}
		}
		table = frames.Decision(res, byPod)
	case QueryPods:
		// Each fleet's pods are read at the kind and the scrape interval
		// its minutes were read at (engine.Analyze may correct both).
		spread, err := engine.PodSpread(ctx, d.client, res, pq.PodLabel)
		if err != nil {
			return d.failed(ctx, q, err)
		}
		table = frames.Pods(res, spread)
	default:
		table = frames.Minutes(res)
	}
	if numeric {
		if table, err = frames.Numeric(table, frames.SeriesLabels(res), pq.Fields); err != nil {
			return userError("fields: " + err.Error())
		}
	}
	frame, err := toFrame(table, q.RefID, numeric)
	if err != nil {
		d.logger.Error("build frame", "refId", q.RefID, "error", err)
		return pluginError("Pairwise could not build the result frame; the plugin log has the details")
	}
	return backend.DataResponse{Frames: []*dataFrame{frame}}
}

// noData tells an analysis that found no data, which alerting reads as its
// "no data" state, from one that found none in an answer Prometheus warned
// may be partial (engine.PartialNoData, whether or not it also is
// engine.ErrNoData): that is an error, since the data may be on the store
// that did not answer.
func noData(err error) bool {
	return errors.Is(err, engine.ErrNoData) && !errors.As(err, new(*engine.PartialNoData))
}

// failed answers a query that failed: a panic the engine caught is the
// plugin's fault, logged with its stack and answered as such; a query
// that ran out of time when the request's own deadline (Grafana's) passed
// says that the deadline was Grafana's; anything else is errorResponse's.
// ctx is the request's context.
func (d *Datasource) failed(ctx context.Context, q backend.DataQuery, err error) backend.DataResponse {
	var ie *engine.ErrInternal
	if errors.As(err, &ie) {
		d.logger.Error("query panicked", "refId", q.RefID, "while", ie.What, "panic", d.scrubbed(fmt.Sprint(ie.Value)), "stack", string(ie.Stack))
		return pluginError("Pairwise hit an internal error on this query; the plugin log has the details")
	}
	if callerDeadline(ctx, err) {
		timeout := ""
		if d.client != nil && d.client.Timeout > 0 {
			timeout = fmt.Sprintf(" of %s", d.client.Timeout)
		}
		return backend.ErrDataResponseWithSource(backend.StatusTimeout, backend.ErrorSourceDownstream,
			"Grafana's deadline for this request passed before Prometheus answered: the limit is Grafana's (for an alert rule, its evaluation timeout), not the data source's timeout"+timeout+"; shorten the range or give the request more time in Grafana ("+err.Error()+")")
	}
	return errorResponse(err)
}

// callerDeadline tells whether err is the end of the time the caller gave
// the request (ctx's deadline, set by Grafana), rather than the data
// source's own timeout, which bounds each request to Prometheus.
func callerDeadline(ctx context.Context, err error) bool {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, prom.ErrTimeout) || errors.Is(err, prom.ErrOverloaded) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// errorResponse gives Prometheus trouble an honest status, a sentence that
// says what to do, and the downstream error source: none of it is a fault
// of the plugin.
func errorResponse(err error) backend.DataResponse {
	down := func(status backend.Status, msg string) backend.DataResponse {
		return backend.ErrDataResponseWithSource(status, backend.ErrorSourceDownstream, msg)
	}
	var fe *fieldError
	var partial *engine.PartialNoData
	switch {
	case errors.As(err, &fe):
		return userError(err.Error())
	case errors.As(err, &partial):
		// Not "no data": Prometheus could not read everything.
		return down(backend.StatusBadGateway, err.Error())
	case errors.Is(err, prom.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return down(backend.StatusTimeout, "Prometheus did not answer in time: shorten the range or raise the timeout on the data source's settings page ("+err.Error()+")")
	case errors.Is(err, prom.ErrAuth):
		return down(backend.StatusBadGateway, "Prometheus refused the credentials: check Authentication on the data source's settings page ("+err.Error()+")")
	case errors.Is(err, prom.ErrMethodRefused):
		return down(backend.StatusBadGateway, "The URL refuses the POST requests Pairwise queries with: allow POST to the query API on the proxy before Prometheus ("+err.Error()+")")
	case errors.Is(err, prom.ErrNotProm):
		return down(backend.StatusBadGateway, "The URL does not serve the Prometheus HTTP API: point Connection > URL at the query endpoint (for Mimir, the /prometheus prefix) ("+err.Error()+")")
	case errors.Is(err, prom.ErrUnavailable):
		return down(backend.StatusBadGateway, "cannot query Prometheus: "+err.Error())
	case errors.Is(err, prom.ErrBadQuery), errors.Is(err, prom.ErrNotFound):
		return userError(err.Error())
	case errors.Is(err, engine.ErrNoData):
		return down(backend.StatusNotFound, err.Error())
	case errors.Is(err, context.Canceled):
		return down(backend.StatusTimeout, "the query was cancelled")
	}
	return userError(err.Error())
}

// CheckHealth reaches Prometheus and reports its version, or says what to
// change on the settings page.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	if d.configErr != "" {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: d.scrubbed(d.configErr)}, nil
	}
	version, err := d.client.BuildInfo(ctx)
	if err == nil {
		// The queries are POSTs, which a proxy that lets buildinfo's GET
		// through may still refuse.
		err = d.client.QueryProbe(ctx)
	}
	if err != nil {
		var msg string
		switch {
		case callerDeadline(ctx, err):
			msg = "Grafana's deadline for the health check passed before Prometheus answered (the limit is Grafana's, not the timeout under Additional settings): check Connection > URL and the network."
		case errors.Is(err, prom.ErrAuth):
			msg = "Prometheus refused the credentials (401/403): check Authentication (basic auth user and password, or the bearer token) and the custom headers on the settings page."
		case errors.Is(err, prom.ErrBadQuery):
			msg = "Prometheus at " + prom.RedactURL(d.client.BaseURL) + " is reachable but refused the smallest query (vector(1)): check that Connection > URL is the query endpoint and the server's limits."
		case errors.Is(err, prom.ErrMethodRefused):
			msg = "The URL answers, but refuses the POST requests Pairwise queries with (HTTP 405): allow POST to /api/v1/query_range and /api/v1/query on the proxy before Prometheus."
		case errors.Is(err, prom.ErrNotProm):
			msg = "The URL answers, but not with the Prometheus HTTP API: set Connection > URL to the query endpoint (for Mimir, the /prometheus prefix; for Thanos, the querier)."
		case errors.Is(err, prom.ErrTimeout):
			msg = "Prometheus did not answer in time: check Connection > URL and the network, or raise the timeout under Additional settings."
		case errors.Is(err, prom.ErrOverloaded):
			msg = "Prometheus at " + prom.RedactURL(d.client.BaseURL) + " is reachable but asked to be retried later (overloaded or rate-limited: HTTP 429, or 503 with Retry-After): try again later, or ask its operators about its limits."
		case errors.Is(err, prom.ErrServer):
			msg = "Prometheus at " + prom.RedactURL(d.client.BaseURL) + " is reachable but answered with a server error (HTTP 5xx): the URL is right; check the server's (or the proxy's before it) logs and health."
		default:
			msg = "Cannot reach Prometheus at " + prom.RedactURL(d.client.BaseURL) + ": check Connection > URL and that the server is up and reachable from the Grafana server."
		}
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: d.scrubbed(msg + " (" + err.Error() + ")")}, nil
	}
	if version == "" {
		version = "unknown version"
	}
	msg := "Prometheus " + version + " is reachable."
	if len(d.legacy) > 0 {
		msg += " These settings still use the old jsonData keys " + strings.Join(d.legacy, ", ") + ": open this settings page and save it to move them to the standard URL, authentication and timeout fields."
	}
	return &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: msg}, nil
}

// CallResource serves GET metrics: the histogram metrics Prometheus knows,
// for the query editor's autocomplete.
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	reply := func(status int, body any) error {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		// The body is scrubbed as it goes out: an error text may hold what
		// Prometheus echoed of the request.
		return sender.Send(&backend.CallResourceResponse{Status: status, Headers: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(d.scrubbed(string(b)))})
	}
	if req.Path != "metrics" || req.Method != http.MethodGet {
		return reply(http.StatusNotFound, map[string]string{"error": "unknown resource " + req.Path})
	}
	if d.configErr != "" {
		return reply(http.StatusBadRequest, map[string]string{"error": d.scrubbed(d.configErr)})
	}
	native, classic, err := d.client.HistogramMetrics(ctx)
	if err != nil {
		return reply(http.StatusBadGateway, map[string]string{"error": d.scrubbed(err.Error())})
	}
	type metric struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
	}
	var out []metric
	for _, n := range native {
		out = append(out, metric{n, string(prom.Native)})
	}
	for _, n := range classic {
		out = append(out, metric{n, string(prom.Classic)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Kind < out[j].Kind
	})
	if out == nil {
		out = []metric{}
	}
	return reply(http.StatusOK, out)
}

// scrubResponse removes the data source's secrets from an answer's error
// and notices, which may quote what Prometheus (or a proxy) answered.
func (d *Datasource) scrubResponse(dr backend.DataResponse) backend.DataResponse {
	if d.scrub == nil {
		return dr
	}
	if dr.Error != nil {
		if text := dr.Error.Error(); d.scrub(text) != text {
			dr.Error = errors.New(d.scrub(text))
		}
	}
	for _, f := range dr.Frames {
		if f != nil && f.Meta != nil {
			for i := range f.Meta.Notices {
				f.Meta.Notices[i].Text = d.scrub(f.Meta.Notices[i].Text)
			}
		}
	}
	return dr
}

// secretsOf lists the secret values of a data source: every decrypted
// secureJsonData value (the basic-auth password, the bearer token, custom
// header values, TLS material) and the basic-auth header value each user
// name would send with the password.
func secretsOf(secure map[string]string, users ...string) []string {
	var out []string
	keys := make([]string, 0, len(secure))
	for k := range secure {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := secure[k]
		if strings.TrimSpace(v) == "" {
			continue
		}
		out = append(out, v)
		if k == "basicAuthPassword" {
			for _, u := range users {
				out = append(out, prom.BasicAuthSecret(u, v))
			}
		}
		// Certificates and keys: each line, as a message would quote it
		// (a line of a PEM block is secret enough on its own).
		if lines := strings.Split(strings.TrimSpace(v), "\n"); len(lines) > 1 {
			for _, l := range lines {
				if l = strings.TrimSpace(l); len(l) >= 16 {
					out = append(out, l)
				}
			}
		}
	}
	return out
}
