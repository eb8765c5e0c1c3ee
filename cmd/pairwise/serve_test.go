package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/prom"
)

// serveConfig names the test's canaries: the evidence rule (the default)
// and the reference rule, which holds the window the evidence rule promotes.
const serveConfig = `canaries:
  - name: checkout
    metric: http_request_duration_seconds
    baseline: '{service="checkout",track="baseline"}'
    canary: '{service="checkout",track="canary"}'
    histogram: native
  - name: checkout-reference
    metric: http_request_duration_seconds
    baseline: '{service="checkout",track="baseline"}'
    canary: '{service="checkout",track="canary"}'
    histogram: native
    rule: reference
  # the canary deploy/flagger/canary.yaml's hooks name, on the simulated
  # fleets (deploy/kubernetes selects Flagger's app labels)
  - name: checkout-flagger
    metric: http_request_duration_seconds
    baseline: '{service="checkout",track="baseline"}'
    canary: '{service="checkout",track="canary"}'
    histogram: native
  # the same, its error ratio compared too
  - name: checkout-errors
    metric: http_request_duration_seconds
    baseline: '{service="checkout",track="baseline"}'
    canary: '{service="checkout",track="canary"}'
    histogram: native
    errorsMetric: http_requests_total
    errors: '{code="500"}'
`

// countingProxy stands between the server and the real Prometheus and
// counts the queries it forwards, each by its text (path, form and URL
// query); down makes it answer 500, as a failing Prometheus (or a proxy
// before it) does.
type countingProxy struct {
	mu   sync.Mutex
	seen map[string]int
	down atomic.Bool
	url  string
}

// reset forgets the queries forwarded so far.
func (p *countingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = map[string]int{}
}

// count is how many different queries were forwarded since reset and how
// many times the most asked one was.
func (p *countingProxy) count() (distinct, most int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.seen {
		most = max(most, n)
	}
	return len(p.seen), most
}

func newCountingProxy(t *testing.T, promURL string) *countingProxy {
	target, err := url.Parse(promURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{seen: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // refused connections are the point of the outage test
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/query") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			p.mu.Lock()
			p.seen[r.URL.Path+"?"+r.URL.RawQuery+"&"+string(body)]++
			p.mu.Unlock()
		}
		if p.down.Load() {
			http.Error(w, `{"status":"error","errorType":"internal","error":"injected failure"}`, http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

type serveEnv struct {
	prom    *testenv.PromServer
	proxy   *countingProxy
	srv     *decisionServer
	http    *httptest.Server
	baseURL string
	config  string
}

func newServeEnv(t *testing.T) *serveEnv {
	t.Helper()
	dir, _ := testenv.Generate(t, "--end", judgeEnd.Format(time.RFC3339), "--minutes", "80", "--pods", "4",
		"--total-rps", "2000", "--canary-share", "0.5", "--seed", "11",
		"--scenario", "regression", "--regression-factor", "1.5", "--regression-start-minute", "60")
	e := &serveEnv{prom: testenv.Prometheus(t, testenv.PromOptions{DataDir: dir})}
	e.proxy = newCountingProxy(t, e.prom.URL)
	e.config = filepath.Join(t.TempDir(), "pairwise.yaml")
	if err := os.WriteFile(e.config, []byte(serveConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	canaries, err := loadCanaries(e.config)
	if err != nil {
		t.Fatal(err)
	}
	client, err := prom.New(e.proxy.url, 30*time.Second) // the judge's default: the machine is shared
	if err != nil {
		t.Fatal(err)
	}
	e.srv = newDecisionServer(serverOptions{Client: client, Canaries: canaries, PodLabel: "pod", Settle: 30 * time.Second, ReadyFor: time.Second, PromURL: e.proxy.url})
	e.http = httptest.NewServer(e.srv.Handler())
	t.Cleanup(e.http.Close)
	e.baseURL = e.http.URL
	return e
}

// TestServeLive replays the requests Argo Rollouts and Flagger send against
// the server on a real Prometheus 3.13.5 serving generated fleets: a canary
// 1.5x slower from minute 60 of 80 (11:40), so the window ending at 12:00
// rolls back, and the window ending at 11:40 promotes under the evidence rule
// and holds under the reference rule.
func TestServeLive(t *testing.T) {
	e := newServeEnv(t)
	t.Run("argo rollouts web provider", func(t *testing.T) { serveArgo(t, e) })
	t.Run("flagger webhooks", func(t *testing.T) { serveFlagger(t, e) })
	t.Run("a gate's revisions on the clock", func(t *testing.T) { serveGateClock(t, e) })
	t.Run("an analysis after a setWeight step", func(t *testing.T) { serveStepAfterPromote(t, e) })
	t.Run("same decision as the judge", func(t *testing.T) { serveMatchesJudge(t, e) })
	t.Run("50 parallel checks share one analysis", func(t *testing.T) { serveConcurrency(t, e) })
	t.Run("bad requests", func(t *testing.T) { serveBadRequests(t, e) })
	t.Run("metrics", func(t *testing.T) { serveMetrics(t, e) })
	// Last: these stop Prometheus.
	t.Run("prometheus failing or down: never promote", func(t *testing.T) { serveOutage(t, e) })
}

var (
	promoteAt  = judgeEnd.Add(-20 * time.Minute)
	rollbackAt = judgeEnd
)

// readYAML decodes the first document of a deploy file.
func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// argoMetric is the part of deploy/argo/analysistemplate.yaml replayed.
type argoMetric struct {
	SuccessCondition      string `yaml:"successCondition"`
	FailureCondition      string `yaml:"failureCondition"`
	Count                 int    `yaml:"count"`
	InconclusiveLimit     int    `yaml:"inconclusiveLimit"`
	ConsecutiveErrorLimit int    `yaml:"consecutiveErrorLimit"`
	Provider              struct {
		Web struct {
			URL            string `yaml:"url"`
			JSONPath       string `yaml:"jsonPath"`
			TimeoutSeconds int    `yaml:"timeoutSeconds"`
		} `yaml:"web"`
	} `yaml:"provider"`
}

// serveArgo sends what Argo Rollouts' web provider sends
// (metricproviders/webmetric: a GET of the template's URL with only the
// template's headers, none here) and judges the answer as Argo does: a
// non-2xx is a measurement Error; else result is the jsonPath's value, and
// evaluate.EvaluateResult makes it Failed when failureCondition holds,
// Successful when successCondition holds, Inconclusive otherwise.
func serveArgo(t *testing.T, e *serveEnv) {
	var tmpl struct {
		Spec struct {
			Metrics []argoMetric `yaml:"metrics"`
		} `yaml:"spec"`
	}
	readYAML(t, "deploy/argo/analysistemplate.yaml", &tmpl)
	m := tmpl.Spec.Metrics[0]
	// The conditions this test evaluates are the template's, to the letter.
	if m.SuccessCondition != `result == "promote"` || m.FailureCondition != `result == "rollback"` || m.Provider.Web.JSONPath != "{$.decision}" {
		t.Fatalf("the template's conditions changed: %+v", m)
	}
	phase := func(status int, body []byte) string {
		if status < 200 || status >= 300 {
			return "Error"
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("not JSON: %s", body)
		}
		switch doc["decision"] {
		case "rollback":
			return "Failed"
		case "promote":
			return "Successful"
		}
		return "Inconclusive"
	}
	// The Rollout passes the canary's pod template hash: the first
	// measurement, at the data's first minute, anchors the revision there
	// and holds (none of its minutes is whole yet); later ones judge the
	// deployment from it. Another revision at the last minute holds too: the
	// minutes before it was first asked about are not its own.
	tests := []struct {
		canary, revision string
		at               time.Time
		want             string
	}{
		{"checkout", "6d4b9c7f5", judgeEnd.Add(-79 * time.Minute), "Inconclusive"},
		{"checkout", "6d4b9c7f5", rollbackAt, "Failed"},
		{"checkout", "6d4b9c7f5", promoteAt, "Successful"},
		{"checkout-reference", "6d4b9c7f5", promoteAt, "Inconclusive"},
		{"checkout", "7f8e9a1b2", rollbackAt, "Inconclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.canary+" "+tt.revision+" at "+tt.at.Format("15:04"), func(t *testing.T) {
			u, err := url.Parse(strings.NewReplacer("{{args.canary}}", tt.canary, "{{args.revision}}", tt.revision, "{{args.step}}", "5").Replace(m.Provider.Web.URL))
			if err != nil {
				t.Fatal(err)
			}
			// The cluster address becomes the test server's; at= pins the
			// generated (historical) data, which Argo would not send.
			target := e.baseURL + u.Path + "?" + u.RawQuery + "&at=" + tt.at.Format(time.RFC3339)
			req, err := http.NewRequest(http.MethodGet, target, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = make(http.Header)
			resp, err := (&http.Client{Timeout: 50 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := phase(resp.StatusCode, body); got != tt.want {
				t.Fatalf("measurement %s, want %s: %d %s", got, tt.want, resp.StatusCode, body)
			}
		})
	}
}

// flaggerHook is a webhook of deploy/flagger/canary.yaml.
type flaggerHook struct {
	Name     string            `yaml:"name"`
	Type     string            `yaml:"type"`
	URL      string            `yaml:"url"`
	Timeout  string            `yaml:"timeout"`
	Metadata map[string]string `yaml:"metadata"`
}

func flaggerHooks(t *testing.T) (name, namespace string, hooks map[string]flaggerHook) {
	var c struct {
		Metadata struct{ Name, Namespace string } `yaml:"metadata"`
		Spec     struct {
			Analysis struct {
				Webhooks []flaggerHook `yaml:"webhooks"`
			} `yaml:"analysis"`
		} `yaml:"spec"`
	}
	readYAML(t, "deploy/flagger/canary.yaml", &c)
	hooks = map[string]flaggerHook{}
	for _, h := range c.Spec.Analysis.Webhooks {
		hooks[h.Type] = h
	}
	return c.Metadata.Name, c.Metadata.Namespace, hooks
}

// postFlagger sends what Flagger's callWebhook sends: a POST of the
// CanaryWebhookPayload JSON with Content-Type application/json. Flagger
// counts 200-202 as passed.
func postFlagger(t *testing.T, base string, h flaggerHook, name, namespace string, extra map[string]string) (int, hookAnswer) {
	t.Helper()
	u, err := url.Parse(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{}
	for k, v := range h.Metadata {
		meta[k] = v
	}
	for k, v := range extra {
		meta[k] = v
	}
	// extra's "checksum", not a metadata key, is the payload's checksum.
	checksum := "85d557f47b"
	if c, ok := meta["checksum"]; ok {
		checksum = c
		delete(meta, "checksum")
	}
	payload, _ := json.Marshal(map[string]any{"name": name, "namespace": namespace, "phase": "Progressing", "checksum": checksum, "metadata": meta})
	req, err := http.NewRequest(http.MethodPost, base+u.Path, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 50 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans hookAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatalf("%s answered %d, not JSON: %v", h.Type, resp.StatusCode, err)
	}
	return resp.StatusCode, ans
}

func passed(code int) bool { return code >= 200 && code <= 202 }

func serveFlagger(t *testing.T, e *serveEnv) {
	name, namespace, hooks := flaggerHooks(t)
	if len(hooks) != 3 || hooks["rollout"].URL == "" || hooks["confirm-promotion"].URL == "" || hooks["rollback"].URL == "" {
		t.Fatalf("deploy/flagger/canary.yaml hooks: %+v", hooks)
	}
	// Flagger's checksum is the revision: the first hook call, at the
	// data's first minute, anchors it there and holds; a revision named in
	// the metadata overrides it and, first seen at the last minute, holds.
	tests := []struct {
		name     string
		at       time.Time
		canary   string
		revision string
		decision string
		// whether each hook passes: rollout, confirm-promotion, rollback
		rollout, promotion, rollback bool
	}{
		{"deployment start", judgeEnd.Add(-79 * time.Minute), "", "", "hold", true, false, false},
		{"promote", promoteAt, "", "", "promote", true, true, false},
		{"hold", promoteAt, "checkout-reference", "", "hold", true, false, false},
		{"rollback", rollbackAt, "", "", "rollback", false, false, true},
		{"a new revision", rollbackAt, "", "new-revision", "hold", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := map[string]string{"at": tt.at.Format(time.RFC3339)}
			if tt.canary != "" {
				extra["canary"] = tt.canary
			}
			if tt.revision != "" {
				extra["revision"] = tt.revision
			}
			for hook, want := range map[string]bool{"rollout": tt.rollout, "confirm-promotion": tt.promotion, "rollback": tt.rollback} {
				code, ans := postFlagger(t, e.baseURL, hooks[hook], name, namespace, extra)
				if passed(code) != want || ans.Decision != tt.decision || ans.Hook != hook {
					t.Errorf("%s hook: %d %+v; want passed=%v, decision %s", hook, code, ans, want, tt.decision)
				}
				// A rollback says which pods hold the canary's tail.
				if strings.HasPrefix(ans.ByPod, "of the canary's") != (tt.decision == "rollback") {
					t.Errorf("%s hook, %s: by pod %q", hook, tt.decision, ans.ByPod)
				}
				if ans.Warning != "" {
					t.Errorf("%s hook with a checksum warns: %s", hook, ans.Warning)
				}
			}
		})
	}
	// A misspelt key would fall back to its default unseen: every hook
	// fails loudly instead, as the decision endpoint refuses it.
	t.Run("a misspelt metadata key", func(t *testing.T) {
		for hook := range hooks {
			code, ans := postFlagger(t, e.baseURL, hooks[hook], name, namespace, map[string]string{"windw": "5m"})
			if code != http.StatusBadRequest || ans.Decision != inconclusive || !strings.Contains(ans.Error, `unknown metadata key "windw"`) {
				t.Errorf("%s hook: %d %+v", hook, code, ans)
			}
		}
	})
	// Flagger before 1.34 sends no checksum: the answer says the window
	// slides, and a revision in the metadata anchors it again.
	t.Run("no checksum", func(t *testing.T) {
		at := rollbackAt.Format(time.RFC3339)
		code, ans := postFlagger(t, e.baseURL, hooks["rollout"], name, namespace, map[string]string{"checksum": "", "at": at})
		if passed(code) || ans.Decision != "rollback" || !strings.Contains(ans.Warning, "no checksum (Flagger sends one from 1.34 on)") {
			t.Errorf("%d %+v; want the rollback with a warning", code, ans)
		}
		if _, ans := postFlagger(t, e.baseURL, hooks["rollout"], name, namespace, map[string]string{"checksum": "", "at": at, "revision": "85d557f47b"}); ans.Warning != "" {
			t.Errorf("a revision in the metadata still warns: %s", ans.Warning)
		}
	})
	t.Run("canary named by the Flagger canary's own name", func(t *testing.T) {
		h := hooks["rollout"]
		h.Metadata = nil
		code, ans := postFlagger(t, e.baseURL, h, "checkout", "shop", map[string]string{"at": rollbackAt.Format(time.RFC3339)})
		if passed(code) || ans.Canary != "checkout" || ans.Decision != "rollback" {
			t.Fatalf("%d %+v", code, ans)
		}
	})
}

// serveMatchesJudge: the server's document is the judge's --output json
// document on the same window, field for field.
func serveMatchesJudge(t *testing.T, e *serveEnv) {
	sel := url.Values{"metric": {"http_request_duration_seconds"}, "baseline": {`{service="checkout",track="baseline"}`}, "canary": {`{service="checkout",track="canary"}`}}
	for _, at := range []time.Time{promoteAt, rollbackAt, judgeEnd.Add(-5 * time.Minute)} {
		t.Run(at.Format("15:04"), func(t *testing.T) {
			q := url.Values{}
			for k, v := range sel {
				q[k] = v
			}
			q.Set("at", at.Format(time.RFC3339))
			q.Set("since", "2026-06-01T11:30:00Z")
			code, body := get(t, e.baseURL+"/api/v1/decision?"+q.Encode())
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			jcode, out, errOut := runJudge(append(fleetArgs(e.prom.URL), "--at", at.Format(time.RFC3339), "--since", "2026-06-01T11:30:00Z", "--output", "json")...)
			if jcode > 2 {
				t.Fatalf("judge: exit %d: %s", jcode, errOut)
			}
			var fromServer, fromJudge map[string]any
			if err := json.Unmarshal(body, &fromServer); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(out), &fromJudge); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fromServer, fromJudge) {
				t.Fatalf("server and judge differ:\nserver %s\njudge  %s", body, out)
			}
			if fromServer["decision_code"].(float64) != float64(jcode) {
				t.Fatalf("decision %v, judge exit %d", fromServer["decision"], jcode)
			}
			t.Logf("at %s: %s (judge exit %d)", at.Format("15:04"), fromServer["decision"], jcode)
		})
	}
}

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func serveConcurrency(t *testing.T, e *serveEnv) {
	// One analysis on a window no earlier request asked for: its queries.
	// Each is counted once by its text: the client asks a query again once
	// when its connection broke mid-answer (pkg/prom), which a loaded
	// machine can cause, so a query may come twice, never more.
	e.proxy.reset()
	code, body := get(t, e.baseURL+"/api/v1/decision?canary=checkout&at="+judgeEnd.Add(-11*time.Minute).Format(time.RFC3339))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	// 8: each fleet's histograms and health (4 range queries), and, since
	// the server reads the record when it exists (source=auto) and this
	// Prometheus holds none, two look-ups per fleet of equality matchers
	// (the per-canary record, then the label-driven one); a rollback adds
	// the canary's pods, which it is attributed to.
	want := 8
	var doc struct{ Decision string }
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Decision == "rollback" {
		want++
	}
	one, most := e.proxy.count()
	if one != want || most > 2 {
		t.Fatalf("one analysis (%s) made %d different queries, one of them %d times; want %d, none more than twice", doc.Decision, one, most, want)
	}
	// 50 parallel checks of another window: the same queries, once.
	e.proxy.reset()
	u := e.baseURL + "/api/v1/decision?canary=checkout&at=" + judgeEnd.Add(-10*time.Minute).Format(time.RFC3339)
	var wg sync.WaitGroup
	bodies := make([][]byte, 50)
	codes := make([]int, 50)
	start := make(chan struct{})
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := http.Get(u)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			codes[i] = resp.StatusCode
			bodies[i], _ = io.ReadAll(resp.Body)
		}()
	}
	close(start)
	wg.Wait()
	for i := range 50 {
		if codes[i] != http.StatusOK || !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("check %d: %d, body differs from the first: %s", i, codes[i], bodies[i])
		}
	}
	if got, most := e.proxy.count(); got != one || most > 2 {
		t.Fatalf("50 parallel checks made %d different Prometheus queries, one of them %d times; one analysis makes %d, each once (twice if its connection broke)", got, most, one)
	}
	// And 50 more within the minute come from the cache.
	for range 50 {
		if code, _ := get(t, u); code != http.StatusOK {
			t.Fatal(code)
		}
	}
	got, most := e.proxy.count()
	if got != one || most > 2 {
		t.Fatalf("100 checks made %d different Prometheus queries, one of them %d times; one analysis makes %d, each once (twice if its connection broke)", got, most, one)
	}
	t.Logf("one analysis: %d queries; 100 checks of one window: %d different, the most asked %d times", one, got, most)
}

func serveBadRequests(t *testing.T, e *serveEnv) {
	tests := []struct {
		query string
		code  int
		want  string
	}{
		{"", 400, "name a canary"},
		{"canary=nope", 404, `no such canary "nope"`},
		{"canary=checkout&bogus=1", 400, `unknown parameter "bogus"`},
		{"canary=checkout&window=90s", 400, "not a whole number of minutes"},
		{"canary=checkout&rule=vibes", 400, "rule"},
		{"canary=checkout&at=yesterday", 400, "at: "},
		{"canary=checkout&revision=" + strings.Repeat("a", 129), 400, "revision: 129 characters, at most 128"},
		{"canary=checkout&revision=" + url.QueryEscape("a b"), 400, `revision "a b": letters`},
		{"metric=m&baseline=" + url.QueryEscape(`{a="b"} or vector(1)`) + "&canary=" + url.QueryEscape(`{a="c"}`), 400, "baseline: invalid selector"},
		{"metric=" + url.QueryEscape("sum(up)") + "&baseline=" + url.QueryEscape(`{a="b"}`) + "&canary=" + url.QueryEscape(`{a="c"}`), 400, "invalid metric name"},
		// Nothing to judge is not a decision either.
		{"canary=checkout&at=2025-01-01T00:00:00Z", 503, "no data in the window"},
		// Pairs the query string cannot hold are not dropped: a lost
		// since= would judge the previous deployment's minutes.
		{"canary=checkout&since=%ZZ", 400, "the query string cannot be read"},
		{"canary=checkout&rule=reference;window=5m", 400, "the query string cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, body := get(t, e.baseURL+"/api/v1/decision?"+tt.query)
			var ans errorAnswer
			if err := json.Unmarshal(body, &ans); err != nil || code != tt.code || ans.Decision != inconclusive || !strings.Contains(ans.Error, tt.want) {
				t.Fatalf("%d %s; want %d inconclusive with %q", code, body, tt.code, tt.want)
			}
		})
	}
	// A deployment that started after the window's last minute holds, as
	// a revision first seen then does; it is not Prometheus failing.
	code, body := get(t, e.baseURL+"/api/v1/decision?canary=checkout&at=2026-06-01T12:00:00Z&since=2026-06-01T12:00:30Z")
	if code != 200 || !strings.Contains(string(body), `"decision":"hold"`) || !strings.Contains(string(body), "the deployment started at 2026-06-01T12:00:30Z: none of its minutes is whole by the window") {
		t.Fatalf("since after the window: %d %s", code, body)
	}
	if code, _ := get(t, e.baseURL+"/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	if code, body := get(t, e.baseURL+"/readyz"); code != 200 {
		t.Fatalf("/readyz %d %s", code, body)
	}
	resp, err := http.Post(e.baseURL+"/api/v1/decision?canary=checkout", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /api/v1/decision: %d", resp.StatusCode)
	}
}

func serveMetrics(t *testing.T, e *serveEnv) {
	code, body := get(t, e.baseURL+"/metrics")
	if code != 200 {
		t.Fatal(code)
	}
	text := string(body)
	for _, want := range []string{
		`pairwise_serve_requests_total{code="200",endpoint="decision"}`,
		`pairwise_serve_requests_total{code="412",endpoint="flagger_rollback"}`,
		`pairwise_serve_request_duration_seconds_bucket{endpoint="decision",le="+Inf"}`,
		`pairwise_serve_decisions_total{decision="rollback"}`,
		`pairwise_serve_decisions_total{decision="inconclusive"} 1`,
		`pairwise_serve_prometheus_errors_total 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func serveOutage(t *testing.T, e *serveEnv) {
	_, _, hooks := flaggerHooks(t)
	check := func(t *testing.T, at time.Time, want string) {
		t.Helper()
		code, body := get(t, e.baseURL+"/api/v1/decision?canary=checkout&at="+at.Format(time.RFC3339))
		var ans errorAnswer
		if err := json.Unmarshal(body, &ans); err != nil || code != http.StatusServiceUnavailable || ans.Decision != inconclusive || !strings.Contains(ans.Error, want) {
			t.Fatalf("%d %s; want 503 inconclusive with %q", code, body, want)
		}
		for hook, wantPass := range map[string]bool{"rollout": true, "confirm-promotion": false, "rollback": false} {
			code, ans := postFlagger(t, e.baseURL, hooks[hook], "checkout", "shop", map[string]string{"at": at.Format(time.RFC3339)})
			if passed(code) != wantPass || ans.Decision != inconclusive {
				t.Errorf("%s hook: %d %+v; want passed=%v, inconclusive", hook, code, ans, wantPass)
			}
		}
	}
	// A window that promotes while Prometheus answers.
	t.Run("prometheus failing", func(t *testing.T) {
		e.proxy.down.Store(true)
		defer e.proxy.down.Store(false)
		check(t, promoteAt.Add(-time.Minute), "answered with a server error")
	})
	t.Run("prometheus down", func(t *testing.T) {
		e.prom.Stop()
		time.Sleep(1100 * time.Millisecond) // past the readiness cache
		check(t, promoteAt.Add(-2*time.Minute), "cannot reach Prometheus")
		if code, body := get(t, e.baseURL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "cannot reach Prometheus") {
			t.Fatalf("/readyz %d %s", code, body)
		}
		if code, _ := get(t, e.baseURL+"/healthz"); code != 200 {
			t.Fatalf("/healthz %d: the process is alive", code)
		}
	})
}

// TestServeCommand runs `pairwise serve` itself: it answers, and SIGTERM
// stops it with exit 0 after the requests in flight.
func TestServeCommand(t *testing.T) {
	port := testenv.FreePort(t)
	var stderr testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--prometheus", "http://127.0.0.1:9", "--timeout", "2s", "--config", "../../rules/pairwise.yaml"}, io.Discard, &stderr)
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Nothing listens on port 9: not ready, and no decision.
	if code, _ := get(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d with Prometheus unreachable", code)
	}
	if code, body := get(t, base+"/api/v1/decision?canary=checkout-classic&at="+judgeEnd.Format(time.RFC3339)); code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"decision":"inconclusive"`) {
		t.Fatalf("%d %s", code, body)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// The Job template runs the judge with arguments the judge takes: every
// {{args.x}} it names is declared, and its container's args parse as judge
// flags with since empty (a sliding window) and set (from the deployment's
// start).
func TestArgoJobTemplateRunsTheJudge(t *testing.T) {
	var tmpl struct {
		Spec struct {
			Args []struct {
				Name  string  `yaml:"name"`
				Value *string `yaml:"value"`
			} `yaml:"args"`
			Metrics []struct {
				Provider struct {
					Job struct {
						Spec struct {
							Template struct {
								Spec struct {
									Containers []struct {
										Name string   `yaml:"name"`
										Args []string `yaml:"args"`
									} `yaml:"containers"`
								} `yaml:"spec"`
							} `yaml:"template"`
						} `yaml:"spec"`
					} `yaml:"job"`
				} `yaml:"provider"`
			} `yaml:"metrics"`
		} `yaml:"spec"`
	}
	readYAML(t, "deploy/argo/job-analysistemplate.yaml", &tmpl)
	declared := map[string]bool{}
	for _, a := range tmpl.Spec.Args {
		declared[a.Name] = true
	}
	args := tmpl.Spec.Metrics[0].Provider.Job.Spec.Template.Spec.Containers[0].Args
	if len(args) == 0 || args[0] != "judge" {
		t.Fatalf("the container does not run the judge: %v", args)
	}
	ref := regexp.MustCompile(`\{\{args\.([a-z]+)\}\}`)
	sawSince := false
	for _, since := range []string{"", "2026-06-01T11:00:00Z"} {
		values := map[string]string{"metric": "http_request_duration_seconds", "baseline": `{service="checkout",track="baseline"}`, "canary": `{service="checkout",track="canary"}`, "since": since}
		var expanded []string
		for _, a := range args[1:] {
			for _, m := range ref.FindAllStringSubmatch(a, -1) {
				if !declared[m[1]] {
					t.Fatalf("%q names {{args.%s}}, which the template does not declare", a, m[1])
				}
				sawSince = sawSince || m[1] == "since"
			}
			expanded = append(expanded, ref.ReplaceAllStringFunc(a, func(s string) string { return values[ref.FindStringSubmatch(s)[1]] }))
		}
		fs, f := newJudgeFlags(io.Discard)
		if help, err := parseFlags(fs, expanded, io.Discard); help || err != nil || fs.NArg() != 0 {
			t.Fatalf("the judge refuses the template's args %q: %v", expanded, err)
		}
		if f.since != since {
			t.Fatalf("since %q reached the judge as %q", since, f.since)
		}
	}
	if !sawSince {
		t.Fatal("the Job template passes no deployment start: every run judges a sliding window")
	}
}

// serveGateClock asks as a gate asks, without at=, on a server whose clock
// walks through the generated data: a revision is anchored where it was
// first asked about and judged from there; another revision starts anew,
// and a revert to the first (after the other was asked about) starts anew
// too, so the other's minutes never count against it.
func serveGateClock(t *testing.T, e *serveEnv) {
	gate := clockedGate(t, e)
	ask := func(revision string, minute time.Time) string {
		t.Helper()
		// The minute is over, and settled.
		decision, reason := gate("revision="+revision, minute.Add(40*time.Second))
		return decision + ": " + reason
	}
	for _, step := range []struct {
		revision string
		minute   time.Time
		want     string
	}{
		{"a1", judgeEnd.Add(-79 * time.Minute), "hold: revision a1 was first asked about"},
		{"a1", rollbackAt, "rollback: "},
		{"b2", rollbackAt, "hold: revision b2 was first asked about"},
		// Reverted to a1: b2 ran in between, so a1 starts anew.
		{"a1", rollbackAt, "hold: revision a1 was first asked about"},
	} {
		if got := ask(step.revision, step.minute); !strings.HasPrefix(got, step.want) {
			t.Fatalf("%s at %s: %s; want %q...", step.revision, step.minute.Format("15:04"), got, step.want)
		}
	}
}

// serveStepAfterPromote: a Rollout's analysis at step 5 promotes; the
// Rollout sets the next weight and its analysis at step 50 asks seconds
// later. With the step named, that answer holds (no minute at the new
// weight yet); without it, the answer is the promote on the same window.
func serveStepAfterPromote(t *testing.T, e *serveEnv) {
	gate := clockedGate(t, e)
	ask := func(query string, at time.Time) (string, string) {
		t.Helper()
		return gate("revision=6d4b9c7f5"+query, at)
	}
	ask("&step=5", judgeEnd.Add(-79*time.Minute+40*time.Second))
	var promoted time.Time
	for m := judgeEnd.Add(-78 * time.Minute); !m.After(promoteAt); m = m.Add(time.Minute) {
		if d, _ := ask("&step=5", m.Add(40*time.Second)); d == "promote" {
			promoted = m.Add(40 * time.Second)
			break
		}
	}
	if promoted.IsZero() {
		t.Fatal("step 5 never promoted")
	}
	if d, reason := ask("&step=50", promoted.Add(5*time.Second)); d != "hold" || !strings.Contains(reason, "step 50 was first asked about") {
		t.Errorf("step 50's first question, 5 s after step 5 promoted: %s (%s); want hold until its weight has 30 minutes", d, reason)
	}
	if d, _ := ask("", promoted.Add(6*time.Second)); d != "promote" {
		t.Errorf("the same window asked without a step: %s; want promote (a background analysis is not held)", d)
	}
}

// clockedGate is a decision server on the test's data whose clock each
// question sets: it asks about canary checkout with the query given, at the
// moment given, and returns the decision and its reason.
func clockedGate(t *testing.T, e *serveEnv) func(query string, at time.Time) (string, string) {
	var clock time.Time
	srv := newDecisionServer(serverOptions{Client: e.srv.opts.Client, Canaries: e.srv.opts.Canaries, Settle: 30 * time.Second, ReadyFor: time.Second,
		PromURL: e.proxy.url, Now: func() time.Time { return clock }})
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	return func(query string, at time.Time) (string, string) {
		t.Helper()
		clock = at
		resp, err := http.Get(h.URL + "/api/v1/decision?canary=checkout&" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct{ Decision, Reason string }
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		return doc.Decision, doc.Reason
	}
}

// TestDeployedPodsAreRestricted: every pod the manifests in deploy/ run (the
// server's Deployment, the judge's Job) is admitted in a namespace that
// enforces the Pod Security Standard "restricted" (runs as non-root, seccomp
// RuntimeDefault or Localhost, no privilege escalation, every capability
// dropped), so a hardened Rollout namespace does not turn the Job into a
// pod that never starts and an abort an hour later.
func TestDeployedPodsAreRestricted(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "deploy", "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under deploy/: %v", err)
	}
	pods := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		for {
			var doc any
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, pod := range podSpecs(doc) {
				pods++
				checkRestricted(t, filepath.Base(file), pod)
			}
		}
	}
	if pods < 2 {
		t.Fatalf("found %d pod specs under deploy/, want the server's and the Job's", pods)
	}
}

// podSpecs finds every map holding "containers" (a pod spec) in a document.
func podSpecs(v any) []map[string]any {
	var out []map[string]any
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["containers"].([]any); ok {
			return append(out, v)
		}
		for _, c := range v {
			out = append(out, podSpecs(c)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, podSpecs(c)...)
		}
	}
	return out
}

func checkRestricted(t *testing.T, file string, pod map[string]any) {
	t.Helper()
	get := func(m any, path ...string) any {
		for _, k := range path {
			mm, ok := m.(map[string]any)
			if !ok {
				return nil
			}
			m = mm[k]
		}
		return m
	}
	seccompOK := func(v any) bool { return v == "RuntimeDefault" || v == "Localhost" }
	podNonRoot := get(pod, "securityContext", "runAsNonRoot") == true
	podSeccomp := seccompOK(get(pod, "securityContext", "seccompProfile", "type"))
	for _, c := range pod["containers"].([]any) {
		name := get(c, "name")
		if !podNonRoot && get(c, "securityContext", "runAsNonRoot") != true {
			t.Errorf("%s: container %v may run as root (runAsNonRoot)", file, name)
		}
		if !podSeccomp && !seccompOK(get(c, "securityContext", "seccompProfile", "type")) {
			t.Errorf("%s: container %v has no seccompProfile RuntimeDefault or Localhost", file, name)
		}
		if get(c, "securityContext", "allowPrivilegeEscalation") != false {
			t.Errorf("%s: container %v allows privilege escalation", file, name)
		}
		drop, _ := get(c, "securityContext", "capabilities", "drop").([]any)
		if !slices.Contains(drop, any("ALL")) {
			t.Errorf("%s: container %v does not drop every capability", file, name)
		}
	}
}
