package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// inconclusive is the decision of an answer that could not judge: never
// promote, never roll back.
const inconclusive = "inconclusive"

// maxHookBody bounds a Flagger webhook payload.
const maxHookBody = 64 << 10

type serverOptions struct {
	Client   *prom.Client
	Canaries map[string]rulegen.Queries
	// PodLabel tells a canary's pods apart for a rollback's attribution
	// (engine.Attribute); empty: none.
	PodLabel string
	Settle   time.Duration
	ReadyFor time.Duration
	// Scrub removes every secret from a message; PromURL is redacted.
	Scrub   func(string) string
	PromURL string
	Now     func() time.Time
}

type decisionServer struct {
	opts     serverOptions
	analyses *analyses
	anchors  *anchors
	ready    readiness
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	answers  *prometheus.CounterVec
	runs     prometheus.Counter
	promErrs prometheus.Counter
}

func newDecisionServer(opts serverOptions) *decisionServer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Scrub == nil {
		opts.Scrub = func(s string) string { return s }
	}
	s := &decisionServer{opts: opts, reg: prometheus.NewRegistry(), anchors: newAnchors()}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pairwise_serve_requests_total", Help: "HTTP requests answered, by endpoint and status code."}, []string{"endpoint", "code"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pairwise_serve_request_duration_seconds", Help: "Time to answer an HTTP request, by endpoint.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}}, []string{"endpoint"})
	s.answers = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pairwise_serve_decisions_total", Help: "Decisions answered, by outcome: promote, hold, rollback, or inconclusive when the server could not judge."}, []string{"decision"})
	s.runs = prometheus.NewCounter(prometheus.CounterOpts{Name: "pairwise_serve_analyses_total", Help: "Analyses run against Prometheus (requests answered from the cache or a shared analysis run none)."})
	s.promErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: "pairwise_serve_prometheus_errors_total", Help: "Analyses that failed on a Prometheus error or on missing data."})
	for _, d := range []string{string(verdict.Promote), string(verdict.Hold), string(verdict.Rollback), inconclusive} {
		s.answers.WithLabelValues(d)
	}
	s.reg.MustRegister(s.requests, s.latency, s.answers, s.runs, s.promErrs)
	s.analyses = newAnalyses(opts.Client, opts.PodLabel, s.analysisTimeout(), func(err error) {
		s.runs.Inc()
		if err != nil {
			s.promErrs.Inc()
		}
	})
	s.analyses.now = opts.Now
	s.ready = readiness{client: opts.Client, ttl: opts.ReadyFor, now: opts.Now}
	return s
}

// analysisTimeout bounds one analysis as the judge bounds its own.
func (s *decisionServer) analysisTimeout() time.Duration {
	return 2*s.opts.Client.Timeout + 5*time.Second
}

func (s *decisionServer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/decision", s.instrument("decision", http.HandlerFunc(s.decision)))
	for _, h := range []hookKind{hookRollout, hookConfirmPromotion, hookRollback} {
		mux.Handle("POST /flagger/"+string(h), s.instrument("flagger_"+string(h), s.flagger(h)))
	}
	mux.Handle("GET /healthz", s.instrument("healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})))
	mux.Handle("GET /readyz", s.instrument("readyz", http.HandlerFunc(s.readyz)))
	mux.Handle("GET /metrics", s.instrument("metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))
	return mux
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *decisionServer) instrument(endpoint string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		s.latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
		s.requests.WithLabelValues(endpoint, strconv.Itoa(rec.code)).Inc()
	})
}

// errorAnswer is every answer that carries no judgement.
type errorAnswer struct {
	Decision string `json:"decision"`
	Error    string `json:"error"`
}

// judged is the outcome of one decision request: the result, or the status
// and the one-sentence error of a request that could not be judged.
type judged struct {
	res    *engine.Result
	byPod  *engine.Attribution
	status int
	err    string
}

// judge answers one request; gate names who asks (anchorFor).
func (s *decisionServer) judge(ctx context.Context, gate string, get func(string) string) judged {
	req, err := parseDecision(get, s.opts.Canaries, s.opts.Settle, s.opts.Now())
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errNoCanary) {
			status = http.StatusNotFound
		}
		return judged{status: status, err: s.opts.Scrub(oneLine(err.Error()))}
	}
	// A revision without a since is anchored where the server first saw it.
	// Requests that name the window's end (at=) replay the past: they keep
	// anchors of their own, so that none of them can move a gate's.
	ask := asker{gate: gate, revision: get("revision"), step: get("step")}
	for _, v := range []struct{ name, value string }{{"revision", ask.revision}, {"step", ask.step}} {
		if err := validRevision(v.value); err != nil {
			return judged{status: http.StatusBadRequest, err: v.name + strings.TrimPrefix(err.Error(), "revision")}
		}
	}
	if ask.step != "" && ask.revision == "" {
		return judged{status: http.StatusBadRequest, err: "step needs revision: a step is one of the revision's"}
	}
	var stepSince time.Time
	if ask.revision != "" && req.Since.IsZero() {
		ref, replay := s.opts.Now(), get("at") != ""
		if replay {
			ref = req.Window.Last
		}
		at := s.anchors.anchorFor(req, ask, replay, ref)
		req.Since, stepSince = at.since, at.step
		// None of its minutes is whole yet: hold, saying where the
		// anchor comes from (Analyze holds a since= that late itself).
		if engine.FirstMinute(req.Since).After(req.Window.Last) {
			return judged{res: engine.TooEarly(req, "revision "+ask.revision+" was first asked about at"), status: http.StatusOK}
		}
	}
	res, byPod, err := s.analyses.get(ctx, req)
	if err != nil {
		// Whatever failed (Prometheus, missing data, a timeout), the server
		// cannot judge: 503, never a decision.
		msg := explain(s.opts.PromURL, s.opts.Client.Timeout, s.opts.Client.Credentials, err)
		return judged{status: http.StatusServiceUnavailable, err: s.opts.Scrub(oneLine(msg.Error()))}
	}
	return judged{res: stepHeld(res, ask.step, stepSince), byPod: byPod, status: http.StatusOK}
}

// stepHeld holds a promotion of a rollout step that began after the
// revision's first (stepSince; zero: none) until the window's last
// ShareMinutes minutes all come after it. A step moves the canary's weight,
// and an analysis that starts with it would otherwise promote at its first
// question on minutes all at the previous weight, the traffic-parity flag
// seeing no move. res, shared with other requests, is not changed.
func stepHeld(res *engine.Result, step string, stepSince time.Time) *engine.Result {
	if res.Decision != verdict.Promote || stepSince.IsZero() {
		return res
	}
	from := engine.FirstMinute(stepSince).Add(time.Duration(res.Config.ShareMinutes()-1) * time.Minute)
	if !res.Request.Window.Last.Before(from) {
		return res
	}
	held := *res
	held.Decision = verdict.Hold
	held.Reason = fmt.Sprintf("step %s was first asked about at %s: its weight is judged on the minutes after it, and promotion waits until the window's last %d minutes are all its (the window ending %s); %s",
		step, stepSince.UTC().Format(time.RFC3339), res.Config.ShareMinutes(), from.Format(time.RFC3339), res.Reason)
	return &held
}

func (s *decisionServer) decision(w http.ResponseWriter, r *http.Request) {
	// url.Values drops the pairs it cannot read (a bad %-escape, a ';'):
	// a since= lost so would judge the previous deployment's minutes.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.answer(w, http.StatusBadRequest, "", errorAnswer{Decision: inconclusive, Error: "the query string cannot be read: " + err.Error()})
		return
	}
	for k := range q {
		if !isDecisionParam(k) {
			s.answer(w, http.StatusBadRequest, "", errorAnswer{Decision: inconclusive, Error: fmt.Sprintf("unknown parameter %q: use %v", k, decisionParams)})
			return
		}
		if len(q[k]) > 1 {
			s.answer(w, http.StatusBadRequest, "", errorAnswer{Decision: inconclusive, Error: fmt.Sprintf("parameter %q is given more than once", k)})
			return
		}
	}
	j := s.judge(r.Context(), "", q.Get)
	if j.res == nil {
		counted := "" // a bad request is not a decision
		if j.status == http.StatusServiceUnavailable {
			counted = inconclusive
		}
		s.answer(w, j.status, counted, errorAnswer{Decision: inconclusive, Error: j.err})
		return
	}
	rep := report(j.res)
	rep.Attribution = attributionJSON(j.byPod)
	s.answer(w, http.StatusOK, string(j.res.Decision), rep)
}

func isDecisionParam(k string) bool {
	for _, p := range decisionParams {
		if k == p {
			return true
		}
	}
	return false
}

// answer writes a JSON body and counts the decision it carries, if any.
func (s *decisionServer) answer(w http.ResponseWriter, status int, decision string, body any) {
	if decision != "" {
		s.answers.WithLabelValues(decision).Inc()
	}
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"decision":"inconclusive","error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// hookKind is a Flagger webhook type the server answers.
type hookKind string

const (
	hookRollout          hookKind = "rollout"
	hookConfirmPromotion hookKind = "confirm-promotion"
	hookRollback         hookKind = "rollback"
)

// flaggerPayload is what Flagger POSTs to every webhook
// (flaggerv1.CanaryWebhookPayload).
type flaggerPayload struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Phase     string            `json:"phase"`
	Checksum  string            `json:"checksum"`
	Metadata  map[string]string `json:"metadata"`
}

// hookAnswer is the body of a Flagger hook's answer; Flagger puts it in its
// events when the status fails the check.
type hookAnswer struct {
	Hook     string `json:"hook"`
	Canary   string `json:"canary"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// ByPod, for a rollback, says which of the canary's pods hold its tail.
	ByPod string `json:"by_pod,omitempty"`
	Error string `json:"error,omitempty"`
	End   string `json:"end,omitempty"`
	// Warning says what the answer rests on that the hook may not expect.
	Warning string `json:"warning,omitempty"`
}

// noRevision warns of a payload without a checksum (Flagger before 1.34)
// and no revision or since in the metadata.
const noRevision = "the payload has no checksum (Flagger sends one from 1.34 on) and the metadata no revision or since: each check judges the sliding window, in which the previous revision's minutes count"

// hookStatus is what each hook answers. Flagger counts 200-202 as passed:
// a rollout hook fails its check only on rollback, and passes when the
// server cannot judge (no spurious rollback: promotion is gated by
// confirm-promotion); confirm-promotion passes only on promote; the
// rollback hook, which rolls back on a pass, passes only on rollback.
// Cannot judge fails the other two with 424, not 503: Flagger's client
// retries a 5xx and then drops its body, so Flagger's events would say
// "giving up after 1 attempt(s)" instead of why.
func hookStatus(h hookKind, decision string) int {
	const no = http.StatusPreconditionFailed
	switch {
	case decision == inconclusive && h == hookRollout:
		return http.StatusOK
	case decision == inconclusive:
		return http.StatusFailedDependency
	case h == hookRollout && decision == string(verdict.Rollback),
		h == hookConfirmPromotion && decision != string(verdict.Promote),
		h == hookRollback && decision != string(verdict.Rollback):
		return no
	}
	return http.StatusOK
}

func (s *decisionServer) flagger(h hookKind) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p flaggerPayload
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHookBody))
		if err == nil {
			err = json.Unmarshal(body, &p)
		}
		if err != nil {
			s.answer(w, http.StatusBadRequest, "", hookAnswer{Hook: string(h), Decision: inconclusive, Error: "not a Flagger webhook payload: a JSON object with name, namespace and metadata"})
			return
		}
		// A misspelt key would fall back to its default unseen, where the
		// decision endpoint refuses it.
		for k := range p.Metadata {
			if !isDecisionParam(k) {
				s.answer(w, http.StatusBadRequest, "", hookAnswer{Hook: string(h), Decision: inconclusive, Error: fmt.Sprintf("unknown metadata key %q: use %v", k, decisionParams)})
				return
			}
		}
		get := func(k string) string {
			switch {
			case k == "canary" && p.Metadata["canary"] == "" && p.Metadata["metric"] == "":
				// The Flagger canary's own name, when the config names it so.
				return p.Name
			case k == "revision" && p.Metadata["revision"] == "":
				// The canary's revision: its analysis is anchored where the
				// server first saw the checksum.
				return p.Checksum
			}
			return p.Metadata[k]
		}
		ans := hookAnswer{Hook: string(h), Canary: get("canary")}
		if get("revision") == "" && get("since") == "" {
			ans.Warning = noRevision
		}
		// Each Flagger canary keeps its own anchor, though two (one name in
		// two namespaces) may name one canary of the config.
		j := s.judge(r.Context(), p.Namespace+"/"+p.Name, get)
		switch {
		case j.res != nil:
			ans.Decision, ans.Reason, ans.ByPod, ans.End = string(j.res.Decision), j.res.Reason, j.byPod.String(), j.res.Request.Window.Last.Format(time.RFC3339)
			s.answer(w, hookStatus(h, ans.Decision), ans.Decision, ans)
		case j.status == http.StatusServiceUnavailable:
			ans.Decision, ans.Error = inconclusive, j.err
			s.answer(w, hookStatus(h, inconclusive), inconclusive, ans)
		default:
			// A request the server cannot read is a misconfigured hook:
			// it fails every hook, loudly, and signals no rollback.
			ans.Decision, ans.Error = inconclusive, j.err
			s.answer(w, j.status, "", ans)
		}
	})
}

// readiness checks Prometheus (its buildinfo) at most once per ttl.
type readiness struct {
	client *prom.Client
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	checked time.Time
	err     error
}

func (r *readiness) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); r.checked.IsZero() || now.Sub(r.checked) >= r.ttl {
		// Not the probe's context: a probe that gives up must not leave
		// its cancellation as the cached answer.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, r.err = r.client.BuildInfo(ctx)
		cancel()
		r.checked = r.now()
	}
	return r.err
}

func (s *decisionServer) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.ready.check(); err != nil {
		msg := explain(s.opts.PromURL, s.opts.Client.Timeout, s.opts.Client.Credentials, err)
		http.Error(w, s.opts.Scrub(oneLine(msg.Error())), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}
