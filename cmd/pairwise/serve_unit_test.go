package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// TestHookStatus is the Flagger table of docs/integrations.md: 200-202
// passes a hook.
func TestHookStatus(t *testing.T) {
	tests := []struct {
		hook                                 hookKind
		promote, hold, rollback, cannotJudge int
	}{
		{hookRollout, 200, 200, 412, 200},
		{hookConfirmPromotion, 200, 412, 412, 424},
		{hookRollback, 412, 412, 200, 424},
	}
	for _, tt := range tests {
		got := []int{hookStatus(tt.hook, "promote"), hookStatus(tt.hook, "hold"), hookStatus(tt.hook, "rollback"), hookStatus(tt.hook, inconclusive)}
		want := []int{tt.promote, tt.hold, tt.rollback, tt.cannotJudge}
		if !slices.Equal(got, want) {
			t.Errorf("%s: promote, hold, rollback, cannot judge answer %v, want %v", tt.hook, got, want)
		}
	}
	// The safety properties, whatever the table says: only promote passes
	// confirm-promotion, only rollback passes the rollback hook, and not
	// judging never fails the rollout check.
	for _, d := range []string{"promote", "hold", "rollback", inconclusive} {
		if passed(hookStatus(hookConfirmPromotion, d)) != (d == "promote") || passed(hookStatus(hookRollback, d)) != (d == "rollback") || passed(hookStatus(hookRollout, d)) == (d == "rollback") {
			t.Errorf("decision %s breaks a hook's promise", d)
		}
	}
}

func testCanaries(t *testing.T) map[string]rulegen.Queries {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pairwise.yaml")
	if err := os.WriteFile(path, []byte(serveConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadCanaries(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAnchors: a canary's revision is anchored at the moment it was first
// asked about, kept while it is asked about (beyond a day too), forgotten
// after a day without a question; another revision starts anew, and so does
// a revision asked about again after another (a revert); each canary has
// its own, and replays theirs.
func TestAnchors(t *testing.T) {
	canaries := testCanaries(t)
	a := newAnchors()
	t0 := time.Date(2026, 6, 1, 11, 0, 40, 0, time.UTC)
	checkout, other := engine.Request{Metric: "m", Canary: canaries["checkout"].Canary}, engine.Request{Metric: "other"}
	steps := []struct {
		req    engine.Request
		rev    string
		replay bool
		at     time.Time
		want   time.Time
	}{
		{checkout, "r1", false, t0, t0},
		{checkout, "r1", false, t0.Add(30 * time.Minute), t0},
		{checkout, "r1", false, t0.Add(-time.Hour), t0}, // earlier: too early, the anchor stays
		// A replay of an earlier window anchors apart and moves nothing.
		{checkout, "r1", true, t0.Add(-time.Hour), t0.Add(-time.Hour)},
		{checkout, "r1", false, t0.Add(31 * time.Minute), t0},
		{other, "r1", false, t0.Add(5 * time.Minute), t0.Add(5 * time.Minute)},
		// Asked about every hour: a day on, the same deployment.
		{checkout, "r1", false, t0.Add(12 * time.Hour), t0},
		{other, "r1", false, t0.Add(20 * time.Hour), t0.Add(5 * time.Minute)},
		{checkout, "r1", false, t0.Add(24 * time.Hour), t0},
		{checkout, "r1", false, t0.Add(30 * time.Hour), t0},
		// The next canary, r2, starts anew.
		{checkout, "r2", false, t0.Add(31 * time.Hour), t0.Add(31 * time.Hour)},
		{checkout, "r2", false, t0.Add(32 * time.Hour), t0.Add(31 * time.Hour)},
		// Reverted to r1: r2's minutes must not count against it.
		{checkout, "r1", false, t0.Add(33 * time.Hour), t0.Add(33 * time.Hour)},
		// Replays keep each revision's own: r2's stands after r3's.
		{checkout, "r2", true, t0.Add(33 * time.Hour), t0.Add(33 * time.Hour)},
		{checkout, "r3", true, t0.Add(33*time.Hour + 30*time.Minute), t0.Add(33*time.Hour + 30*time.Minute)},
		{checkout, "r2", true, t0.Add(34 * time.Hour), t0.Add(33 * time.Hour)},
		// The other canary, last asked about at +20h, is forgotten a day later: anew.
		{other, "r1", false, t0.Add(44*time.Hour + 30*time.Minute), t0.Add(44*time.Hour + 30*time.Minute)},
	}
	for i, s := range steps {
		if got := a.anchorFor(s.req, asker{revision: s.rev}, s.replay, s.at).since; !got.Equal(s.want) {
			t.Fatalf("step %d (%s at %s): anchored at %s, want %s", i, s.rev, s.at.Format(time.RFC3339), got.Format(time.RFC3339), s.want.Format(time.RFC3339))
		}
	}
	// The anchor is the moment itself: its first judged minute is the first
	// whole minute after it, as for --since, never the minute it fell in.
	at := t0.Add(50 * time.Hour)
	if first := engine.FirstMinute(a.anchorFor(checkout, asker{revision: "r3"}, false, at).since); !first.Equal(time.Date(2026, 6, 3, 13, 2, 0, 0, time.UTC)) {
		t.Fatalf("a revision first seen at %s is judged from the minute ending %s, want 13:02 as --since %s is", at.Format(time.TimeOnly), first.Format(time.TimeOnly), at.Format(time.TimeOnly))
	}
	// Bounded: the canaries longest unasked go first, the one asked about
	// first among them, however recently the others were added.
	later := t0.Add(60 * time.Hour)
	a.anchorFor(checkout, asker{revision: "r3"}, false, later)
	for i := range maxAnchors + 10 {
		a.anchorFor(engine.Request{Metric: fmt.Sprintf("flood_%d", i)}, asker{revision: "r1"}, false, later.Add(time.Duration(i+1)*time.Second))
		if i == maxAnchors/2 {
			// Asked about again midway: kept.
			a.anchorFor(checkout, asker{revision: "r3"}, false, later.Add(time.Duration(i+1)*time.Second))
		}
	}
	if len(a.since) != maxAnchors {
		t.Fatalf("%d anchors kept, want %d", len(a.since), maxAnchors)
	}
	if got := a.anchorFor(checkout, asker{revision: "r3"}, false, later.Add(time.Hour)).since; !got.Equal(at) {
		t.Fatalf("a canary asked about midway lost its anchor: %s, want %s", got, at)
	}
	if got := a.anchorFor(engine.Request{Metric: "flood_0"}, asker{revision: "r1"}, false, later.Add(time.Hour)).since; got.Equal(later.Add(time.Second)) {
		t.Fatalf("the canary longest unasked kept its anchor")
	}
}

func TestParseDecision(t *testing.T) {
	canaries := testCanaries(t)
	now := time.Date(2026, 6, 1, 12, 0, 40, 0, time.UTC)
	params := func(q string) func(string) string {
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		return v.Get
	}
	t.Run("a configured canary, now less settle", func(t *testing.T) {
		req, err := parseDecision(params("canary=checkout-reference"), canaries, 30*time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		if req.Config.Rule != verdict.RuleReference || req.Window.Last != time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) || req.Window.Minutes() != req.Config.WindowMinutes || req.Kind != "native" {
			t.Fatalf("%+v", req)
		}
	})
	t.Run("60 seconds of settle judge the minute before", func(t *testing.T) {
		req, err := parseDecision(params("canary=checkout"), canaries, time.Minute, now)
		if err != nil || req.Window.Last != time.Date(2026, 6, 1, 11, 59, 0, 0, time.UTC) {
			t.Fatalf("%v %+v", err, req.Window)
		}
	})
	t.Run("window, rule, since and at", func(t *testing.T) {
		req, err := parseDecision(params("canary=checkout&window=50m&rule=reference&since=2026-06-01T11:00:00Z&at=1780315200"), canaries, 30*time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		if req.Config.WindowMinutes != 50 || req.Config.Rule != verdict.RuleReference || !req.Since.Equal(time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC)) || req.Window.Last != time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) {
			t.Fatalf("%+v", req)
		}
	})
	// A replay's window never ends on a minute a gate would not judge yet:
	// its analysis, cached, would answer that gate a little later.
	t.Run("at now or ahead of the clock ends where a gate's window ends", func(t *testing.T) {
		for _, at := range []string{"2026-06-01T12:00:40Z", "2026-06-01T12:01:00Z", "2026-06-01T12:04:00Z"} {
			req, err := parseDecision(params("canary=checkout&at="+at), canaries, time.Minute, now)
			if err != nil || req.Window.Last != time.Date(2026, 6, 1, 11, 59, 0, 0, time.UTC) {
				t.Fatalf("at %s: %v %+v", at, err, req.Window)
			}
		}
	})
	t.Run("selectors", func(t *testing.T) {
		req, err := parseDecision(params(`metric=m&baseline={a="b"}&canary={a="c"}`), canaries, 0, now)
		if err != nil || req.Kind != "auto" || req.Baseline.String() != `{a="b"}` || req.Config.Rule != verdict.Default().Rule {
			t.Fatalf("%v %+v", err, req)
		}
	})
	t.Run("source: auto unless asked", func(t *testing.T) {
		for q, want := range map[string]engine.Reading{"canary=checkout": engine.ReadAuto, "canary=checkout&source=raw": engine.ReadRaw, "canary=checkout&source=recorded": engine.ReadRecorded} {
			req, err := parseDecision(params(q), canaries, 0, now)
			if err != nil || req.Read != want {
				t.Fatalf("%s: %v, read %q, want %q", q, err, req.Read, want)
			}
		}
	})
	t.Run("a request counter, from the config or described", func(t *testing.T) {
		for q, want := range map[string]string{
			"canary=checkout-errors": `http_requests_total {code="500"}`,
			"canary=checkout":        "",
			`metric=m&baseline={a="b"}&canary={a="c"}&errors_metric=http_requests_total`:                      `http_requests_total {code=~"5.."}`,
			`metric=m&baseline={a="b"}&canary={a="c"}&errors_metric=http_requests_total&errors={code!~"2.."}`: `http_requests_total {code!~"2.."}`,
		} {
			req, err := parseDecision(params(q), canaries, 0, now)
			got := ""
			if req.Errors != nil {
				got = req.Errors.Metric + " " + req.Errors.Failed.String()
			}
			if err != nil || got != want {
				t.Fatalf("%s: %v, errors %q, want %q", q, err, got, want)
			}
		}
	})
	bad := []struct{ q, want string }{
		{"canary=checkout&errors_metric=http_requests_total", "errors_metric and errors describe a canary's request counter and need metric"},
		{`metric=m&baseline={a="b"}&canary={a="c"}&errors={code="500"}`, "give errors_metric"},
		{`metric=m&baseline={a="b"}&canary={a="c"}&errors_metric=sum(x)`, "errors_metric: invalid metric name"},
		{`metric=m&baseline={a="b"}&canary={a="c"}&errors_metric=x&errors={a="b"} or up`, "errors: invalid selector"},
		{"", "name a canary"},
		{"canary=checkout&source=cache", "source: "},
		{"canary=nope", "no such canary"},
		{`canary=checkout&baseline={a="b"}`, "need metric"},
		{"metric=m&canary=x", "needs baseline and canary"},
		{`metric=m&baseline={a="b"}&canary={a="c"}&histogram=sparse`, "histogram"},
		{`metric=m&baseline={a="b",t="base"}&canary={a="b"}`, "the canary selector {a=\"b\"} also selects every series of the baseline"},
		{"canary=checkout&window=1441m", "not a whole number of minutes between 1m and 24h0m0s"},
		{"canary=checkout&window=soon", "not a duration"},
		{"canary=checkout&since=1e20", "since: "},
		{"canary=checkout&at=2026-07-01T00:00:00Z", "at: "},
		{"canary=checkout&since=2026-06-01T12:03:00Z", "since: 2026-06-01T12:03:00Z is after the clock"},
		{`metric=m_bucket&baseline={a="b"}&canary={a="c"}`, "metric: give the histogram name without _bucket (m)"},
	}
	for _, tt := range bad {
		t.Run(tt.q, func(t *testing.T) {
			_, err := parseDecision(params(tt.q), canaries, 0, now)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, tt.want)
			}
			if (tt.q == "canary=nope") != errors.Is(err, errNoCanary) {
				t.Fatalf("errNoCanary: %v", err)
			}
		})
	}
}

// TestServeFlags: bad flags are one line and exit 3 before anything listens.
func TestServeFlags(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badConfig, []byte("canaries:\n  - name: x\n    metric: m\n    baseline: '{a=\"b\"}'\n    canary: '{a=\"b\"}'\n    histogram: native\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--settle", "2h"}, "--settle"},
		{[]string{"--pod-label", "pod name"}, "--pod-label"},
		{[]string{"--ready-cache", "0s"}, "--ready-cache"},
		{[]string{"--timeout", "31m"}, "--timeout"},
		{[]string{"--prometheus", "ftp://x"}, "--prometheus"},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, "read rule pack config"},
		{[]string{"--config", badConfig}, "the baseline and canary selectors are the same"},
		{[]string{"--basic-auth-password-file", "/nonexistent"}, "needs --basic-auth-user"},
		{[]string{"extra"}, "unexpected argument"},
		{nil, "serve needs --prometheus URL"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(append([]string{"serve", "--listen", "127.0.0.1:0"}, tt.args...), io.Discard, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want exit 3 and one line with %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestDeployExamples parses every YAML under deploy/ (Docker and a cluster
// are not at hand): each document has an apiVersion and a kind, and the
// examples agree with each other and with the server.
func TestDeployExamples(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(root, "deploy", "*", "*.yaml"))
	if len(paths) < 4 {
		t.Fatalf("deploy/ holds %d YAML files", len(paths))
	}
	docs := map[string]map[string]any{} // kind/name -> document
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for i := 0; ; i++ {
			var doc map[string]any
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s document %d: %v", p, i+1, err)
			}
			meta, _ := doc["metadata"].(map[string]any)
			if doc["apiVersion"] == nil || doc["kind"] == nil || meta["name"] == nil {
				t.Fatalf("%s document %d lacks apiVersion, kind or metadata.name", p, i+1)
			}
			docs[doc["kind"].(string)+"/"+meta["name"].(string)] = doc
		}
	}
	for _, want := range []string{"AnalysisTemplate/pairwise", "AnalysisTemplate/pairwise-judge", "Canary/checkout", "ConfigMap/pairwise-config", "Secret/pairwise-prometheus", "Deployment/pairwise-serve", "Service/pairwise-serve"} {
		if docs[want] == nil {
			t.Errorf("no %s in deploy/", want)
		}
	}
	if t.Failed() {
		return
	}
	// The ConfigMap's pairwise.yaml is a valid config; Flagger's and Argo's
	// canaries are in it.
	cfg := docs["ConfigMap/pairwise-config"]["data"].(map[string]any)["pairwise.yaml"].(string)
	file, err := rulegen.Load([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rulegen.MinuteQueries(file); err != nil {
		t.Fatalf("ConfigMap pairwise.yaml: %v", err)
	}
	_, _, hooks := flaggerHooks(t)
	for _, h := range hooks {
		if !slices.ContainsFunc(file.Canaries, func(c rulegen.Canary) bool { return c.Name == h.Metadata["canary"] }) {
			t.Errorf("Flagger hook %s names canary %q, not in the ConfigMap", h.Name, h.Metadata["canary"])
		}
		u, _ := url.Parse(h.URL)
		if u.Path != "/flagger/"+h.Type || u.Port() != "8080" || !strings.HasPrefix(u.Host, "pairwise-serve.pairwise.") {
			t.Errorf("Flagger hook %s URL %s does not reach the server's /flagger/%s", h.Name, h.URL, h.Type)
		}
	}
	// The Deployment runs serve with the mounted config and credentials,
	// probes /healthz for both liveness and readiness (a replica out of the
	// Service during an outage is a connection error to the gates, which
	// Flagger counts as a failed check), and the flags parse.
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args          []string
						LivenessProbe struct {
							HTTPGet struct{ Path string } `yaml:"httpGet"`
						} `yaml:"livenessProbe"`
						ReadinessProbe struct {
							HTTPGet struct{ Path string } `yaml:"httpGet"`
						} `yaml:"readinessProbe"`
						VolumeMounts []struct {
							Name      string
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					}
				}
			}
		}
	}
	b, _ := yaml.Marshal(docs["Deployment/pairwise-serve"])
	if err := yaml.Unmarshal(b, &dep); err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/healthz" || len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("container: %+v", c)
	}
	fs := newServeFlagSet(io.Discard, &serveFlags{})
	if err := fs.Parse(c.Args[1:]); err != nil {
		t.Fatalf("Deployment args: %v", err)
	}
	mounted := func(path string) bool {
		return slices.ContainsFunc(c.VolumeMounts, func(m struct {
			Name      string
			MountPath string `yaml:"mountPath"`
		}) bool {
			return strings.HasPrefix(path, m.MountPath+"/")
		})
	}
	for _, flagName := range []string{"config", "bearer-token-file"} {
		if v := fs.Lookup(flagName).Value.String(); !mounted(v) {
			t.Errorf("--%s %s is not on a mounted volume", flagName, v)
		}
	}
	// Replicas anchor and judge on their own: each controller must keep
	// asking one of them.
	if svc, _ := docs["Service/pairwise-serve"]["spec"].(map[string]any); svc["sessionAffinity"] != "ClientIP" {
		t.Errorf("Service pairwise-serve: sessionAffinity %v, want ClientIP", svc["sessionAffinity"])
	}
	// Argo's web provider asks the decision endpoint of the same Service.
	var tmpl struct {
		Spec struct{ Metrics []argoMetric }
	}
	b, _ = yaml.Marshal(docs["AnalysisTemplate/pairwise"])
	yaml.Unmarshal(b, &tmpl)
	u, err := url.Parse(strings.NewReplacer("{{args.canary}}", "checkout", "{{args.revision}}", "6d4b9c7f5").Replace(tmpl.Spec.Metrics[0].Provider.Web.URL))
	if err != nil || u.Path != "/api/v1/decision" || u.Query().Get("canary") != "checkout" || u.Query().Get("revision") != "6d4b9c7f5" || !strings.HasPrefix(u.Host, "pairwise-serve.pairwise.") {
		t.Errorf("Argo URL %v: %v", u, err)
	}
	// Its limits do what its comment says. Argo measures again 10 s after
	// an Error (analysis.DefaultErrorRetryInterval), not after the interval:
	// the error limit must ride out a 15-minute outage at that pace. A
	// count of holds must exceed inconclusiveLimit, so that they end
	// Inconclusive also where consecutiveSuccessLimit is unknown (Argo
	// Rollouts before 1.8). And Argo must wait for the server's longest
	// answer, which the Deployment's --timeout sets.
	m := tmpl.Spec.Metrics[0]
	const argoErrorRetry = 10 * time.Second
	if outage := time.Duration(m.ConsecutiveErrorLimit) * argoErrorRetry; outage < 15*time.Minute {
		t.Errorf("consecutiveErrorLimit %d rides out %s of outage, not 15m", m.ConsecutiveErrorLimit, outage)
	}
	if m.Count == 0 || m.InconclusiveLimit >= m.Count {
		t.Errorf("inconclusiveLimit %d, count %d: %d holds do not end the analysis Inconclusive", m.InconclusiveLimit, m.Count, m.Count)
	}
	promTimeout, err := time.ParseDuration(fs.Lookup("timeout").Value.String())
	if err != nil {
		t.Fatal(err)
	}
	if wait := (&decisionServer{opts: serverOptions{Client: &prom.Client{Timeout: promTimeout}}}).analysisTimeout(); time.Duration(m.Provider.Web.TimeoutSeconds)*time.Second <= wait {
		t.Errorf("Argo's timeoutSeconds %d is not above the server's longest answer, %s", m.Provider.Web.TimeoutSeconds, wait)
	}
	// Started as README and docs/integrations.md start it, without
	// --timeout, the server answers within gateWait, which is what the
	// shipped gates wait: Argo, and every Flagger hook (one that times out
	// is a failed check).
	plain := newServeFlagSet(io.Discard, &serveFlags{})
	if err := plain.Parse(nil); err != nil {
		t.Fatal(err)
	}
	defaultTimeout, _ := time.ParseDuration(plain.Lookup("timeout").Value.String())
	if wait := (&decisionServer{opts: serverOptions{Client: &prom.Client{Timeout: defaultTimeout}}}).analysisTimeout(); wait >= gateWait {
		t.Errorf("with the default --timeout %s the server's longest answer is %s, not within the gates' %s", defaultTimeout, wait, gateWait)
	}
	if got := time.Duration(m.Provider.Web.TimeoutSeconds) * time.Second; got != gateWait {
		t.Errorf("Argo's timeoutSeconds is %s, gateWait %s", got, gateWait)
	}
	for _, h := range hooks {
		if got, err := time.ParseDuration(h.Timeout); err != nil || got != gateWait {
			t.Errorf("Flagger hook %s timeout %q, gateWait %s", h.Name, h.Timeout, gateWait)
		}
	}
	// The Dockerfile builds cmd/pairwise statically and runs it non-root.
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/pairwise", "distroless/static", "USER 65532", "ENTRYPOINT"} {
		if !bytes.Contains(df, []byte(want)) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
}

// blockingSource answers no query until its request's context ends, as a
// Prometheus that has stopped answering.
type blockingSource struct{}

func (blockingSource) FleetHistograms(ctx context.Context, _ string, _ selector.Selector, kind prom.Kind, _ prom.Range) (prom.Series, prom.Kind, error) {
	<-ctx.Done()
	return nil, kind, ctx.Err()
}

func (blockingSource) FleetHealth(ctx context.Context, _ string, _ selector.Selector, _ prom.Kind, _ prom.Range) (map[int64]prom.Health, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestAnalysesWaitIsBounded: with every slot taken by an analysis that
// Prometheus does not answer, a request for another canary gets an error
// naming the queue within the analysis timeout, where it waited for a slot
// unbounded and the server's write timeout dropped the connection without
// an answer (the gates then saw a connection error).
func TestAnalysesWaitIsBounded(t *testing.T) {
	// Long enough that a busy machine's scheduling stays within the half
	// timeout of slack; unbounded, the queued request took two timeouts.
	const timeout = 2 * time.Second
	a := newAnalyses(blockingSource{}, "", timeout, nil)
	request := func(i int) engine.Request {
		base, err := selector.Parse(fmt.Sprintf(`{service="s%d",track="baseline"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		can, err := selector.Parse(fmt.Sprintf(`{service="s%d",track="canary"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		last := time.Unix(3600*1000, 0)
		return engine.Request{Metric: "m", Baseline: base, Canary: can, Kind: prom.Native, Config: verdict.Default(),
			Window: pairing.Window{First: last.Add(-59 * time.Minute), Last: last}}
	}
	type answer struct {
		err  error
		took time.Duration
	}
	answers := make(chan answer, maxAnalyses+1)
	for i := range maxAnalyses + 1 {
		go func() {
			asked := time.Now()
			_, _, err := a.get(context.Background(), request(i))
			answers <- answer{err, time.Since(asked)}
		}()
		if i < maxAnalyses {
			time.Sleep(20 * time.Millisecond) // the first maxAnalyses take the slots
		}
	}
	var queued int
	for range maxAnalyses + 1 {
		ans := <-answers
		if ans.err == nil {
			t.Fatal("an analysis of a Prometheus that never answers succeeded")
		}
		// The request beyond the slots waited for one until the first
		// analysis timed out, then for its own analysis: it must be
		// answered at its own timeout.
		if ans.took > timeout+timeout/2 {
			t.Errorf("answered after %s, timeout %s: %v", ans.took, timeout, ans.err)
		}
		if errors.Is(ans.err, errQueued) {
			queued++
			if !strings.Contains(ans.err.Error(), "waited for its turn and has not finished within 2s") {
				t.Errorf("queued: %v", ans.err)
			}
		}
	}
	if queued != 1 {
		t.Errorf("%d requests were told they waited for a slot; want the one beyond the %d slots", queued, maxAnalyses)
	}
}

// TestAbandonedAnalysesNeverRun: many canaries asked about at once while
// Prometheus answers nothing. The requests beyond the slots give up at
// their timeout; the analyses they waited for must not run afterwards,
// when nobody waits for them, nor stay in the server, nor keep a fresh
// request from a slot.
func TestAbandonedAnalysesNeverRun(t *testing.T) {
	const timeout = 300 * time.Millisecond
	var mu sync.Mutex
	runs := 0
	a := newAnalyses(blockingSource{}, "", timeout, func(error) { mu.Lock(); runs++; mu.Unlock() })
	request := func(i int) engine.Request {
		base, _ := selector.Parse(fmt.Sprintf(`{service="s%d",track="baseline"}`, i))
		can, _ := selector.Parse(fmt.Sprintf(`{service="s%d",track="canary"}`, i))
		last := time.Unix(3600*1000, 0)
		return engine.Request{Metric: "m", Baseline: base, Canary: can, Kind: prom.Native, Config: verdict.Default(),
			Window: pairing.Window{First: last.Add(-59 * time.Minute), Last: last}}
	}
	const asked = 10 * maxAnalyses
	var wg sync.WaitGroup
	for i := range asked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := a.get(context.Background(), request(i)); err == nil {
				t.Error("an analysis of a Prometheus that never answers succeeded")
			}
		}()
	}
	wg.Wait()
	// The analyses that had a slot end at their timeout; nothing else may run.
	time.Sleep(3 * timeout)
	mu.Lock()
	ran := runs
	mu.Unlock()
	if ran > 2*maxAnalyses {
		t.Errorf("%d of %d analyses ran; want only those that had a slot while a request waited (at most %d)", ran, asked, 2*maxAnalyses)
	}
	a.mu.Lock()
	left := 0
	for _, e := range a.entries {
		if e.expires.IsZero() {
			left++
		}
	}
	a.mu.Unlock()
	if left > 0 {
		t.Errorf("%d analyses still queued or running with nobody waiting", left)
	}
	// A fresh request gets a slot at once: it fails at its own timeout
	// as an analysis of a silent Prometheus, not as one still in the queue.
	if _, _, err := a.get(context.Background(), request(asked)); errors.Is(err, errQueued) {
		t.Errorf("a fresh request found the slots taken: %v", err)
	}
}

// TestAnchorSteps: the first step named is the deployment's; a step named
// after another starts where it was first asked about, until the revision
// changes; requests without a step neither move it nor wait for it; each
// gate keeps its own anchor.
func TestAnchorSteps(t *testing.T) {
	a := newAnchors()
	checkout := engine.Request{Metric: "http_request_duration_seconds"}
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for i, s := range []struct {
		ask             asker
		at              time.Time
		since, stepFrom time.Time
	}{
		{asker{revision: "r1"}, t0, t0, time.Time{}},
		{asker{revision: "r1", step: "5"}, t0.Add(time.Minute), t0, time.Time{}},
		{asker{revision: "r1", step: "50"}, t0.Add(40 * time.Minute), t0, t0.Add(40 * time.Minute)},
		{asker{revision: "r1"}, t0.Add(41 * time.Minute), t0, time.Time{}},
		{asker{revision: "r1", step: "50"}, t0.Add(42 * time.Minute), t0, t0.Add(40 * time.Minute)},
		{asker{revision: "r1", step: "100"}, t0.Add(80 * time.Minute), t0, t0.Add(80 * time.Minute)},
		// Another gate on the same canary (a Flagger canary of another
		// namespace) has its own anchor.
		{asker{gate: "prod/checkout", revision: "r9", step: "1"}, t0.Add(81 * time.Minute), t0.Add(81 * time.Minute), time.Time{}},
		{asker{revision: "r1", step: "100"}, t0.Add(82 * time.Minute), t0, t0.Add(80 * time.Minute)},
		// A new revision starts anew, its first step with it.
		{asker{revision: "r2", step: "5"}, t0.Add(90 * time.Minute), t0.Add(90 * time.Minute), time.Time{}},
	} {
		got := a.anchorFor(checkout, s.ask, false, s.at)
		if !got.since.Equal(s.since) || !got.step.Equal(s.stepFrom) {
			t.Fatalf("question %d (%+v at %s): since %s, step from %s; want %s and %s", i, s.ask, s.at.Format(time.TimeOnly),
				got.since.Format(time.TimeOnly), got.step.Format(time.TimeOnly), s.since.Format(time.TimeOnly), s.stepFrom.Format(time.TimeOnly))
		}
	}
}

// TestStepHeld: a promote of a step that began after the revision's first
// holds until the window's last ShareMinutes minutes all come after the
// step's first question, and the shared result is left as it was.
func TestStepHeld(t *testing.T) {
	cfg := verdict.Default()
	stepAt := time.Date(2026, 6, 1, 12, 40, 5, 0, time.UTC) // its first whole minute ends 12:42
	res := func(last time.Time) *engine.Result {
		return &engine.Result{Window: verdict.Window{Config: cfg, Decision: verdict.Promote, Reason: "evidence"},
			Request: engine.Request{Window: pairing.Window{First: last.Add(-59 * time.Minute), Last: last}}}
	}
	for _, c := range []struct {
		last     time.Time
		stepFrom time.Time
		want     verdict.Decision
	}{
		{time.Date(2026, 6, 1, 12, 40, 0, 0, time.UTC), stepAt, verdict.Hold},
		{time.Date(2026, 6, 1, 13, 10, 0, 0, time.UTC), stepAt, verdict.Hold},
		{time.Date(2026, 6, 1, 13, 11, 0, 0, time.UTC), stepAt, verdict.Promote},
		{time.Date(2026, 6, 1, 12, 40, 0, 0, time.UTC), time.Time{}, verdict.Promote},
	} {
		in := res(c.last)
		got := stepHeld(in, "50", c.stepFrom)
		if got.Decision != c.want || in.Decision != verdict.Promote {
			t.Errorf("window ending %s, step from %s: %s (%s), shared result %s; want %s and promote left alone",
				c.last.Format(time.TimeOnly), c.stepFrom.Format(time.TimeOnly), got.Decision, got.Reason, in.Decision, c.want)
		}
	}
}

// gateOverDownProm serves the gate of testCanaries against a Prometheus
// that answers every query with a server error, at the clock now; closed in
// t.Cleanup.
func gateOverDownProm(t *testing.T, now func() time.Time) *httptest.Server {
	t.Helper()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"status":"error","errorType":"internal","error":"down"}`, http.StatusInternalServerError)
	}))
	t.Cleanup(down.Close)
	client, err := prom.New(down.URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := newDecisionServer(serverOptions{Client: client, Canaries: testCanaries(t), PodLabel: "pod", Settle: 30 * time.Second, ReadyFor: time.Second,
		PromURL: down.URL, Now: now})
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	return h
}

// TestFlaggerNamespacesKeepTheirAnchors: two Flagger canaries named
// checkout in two namespaces, each at its own checksum, asked about in turn
// every minute, keep their own deployment starts: neither is "first asked
// about" a minute ago for ever.
func TestFlaggerNamespacesKeepTheirAnchors(t *testing.T) {
	clock := time.Date(2026, 6, 1, 10, 0, 40, 0, time.UTC)
	h := gateOverDownProm(t, func() time.Time { return clock })
	post := func(ns, sum string) hookAnswer {
		resp, err := http.Post(h.URL+"/flagger/rollout", "application/json", strings.NewReader(fmt.Sprintf(`{"name":"checkout","namespace":%q,"phase":"Progressing","checksum":%q}`, ns, sum)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a hookAnswer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Counted after the first minute: an anchor reported then was kept.
	kept := map[string]int{}
	for i := range 5 {
		clock = clock.Add(time.Minute)
		for _, ns := range []string{"staging", "prod"} {
			a := post(ns, ns+"-sum")
			if !strings.Contains(a.Reason, "first asked about") {
				continue
			}
			if !strings.Contains(a.Reason, "first asked about at 2026-06-01T10:01:40Z") {
				t.Fatalf("%s at %s: %s; want its anchor of 10:01:40 kept", ns, clock.Format(time.TimeOnly), a.Reason)
			}
			if i > 0 {
				kept[ns]++
			}
		}
	}
	for _, ns := range []string{"staging", "prod"} {
		if kept[ns] == 0 {
			t.Errorf("%s: no answer after its first minute named its anchor: the test checked nothing", ns)
		}
	}
}

// TestDecisionKeyHoldsTheRequestCounter: two canaries of the same fleets,
// one with a request counter, are two analyses: before, the key left the
// counter out, and a canary failing four times as often was answered with
// the promote of the same fleets without one. And a canary described by
// matchers may bring its request counter, as docs/integrations.md says.
func TestDecisionKeyHoldsTheRequestCounter(t *testing.T) {
	base, can := testenv.GeneratedFleets(t)
	last := time.Unix(3600*1000, 0)
	plain := engine.Request{Metric: "m", Baseline: base, Canary: can, Kind: prom.Native, Config: verdict.Default(),
		Window: pairing.Window{First: last.Add(-59 * time.Minute), Last: last}}
	withErrors := plain
	var err error
	if withErrors.Errors, err = engine.ParseErrors("http_requests_total", ""); err != nil {
		t.Fatal(err)
	}
	other := plain
	if other.Errors, err = engine.ParseErrors("http_requests_total", `{code="503"}`); err != nil {
		t.Fatal(err)
	}
	withLB := plain
	withLB.LB = &engine.LoadBalancer{Metric: "lb", Baseline: base, Canary: can}
	keys := map[string]string{}
	for name, req := range map[string]engine.Request{"plain": plain, "with a request counter": withErrors, "other failed requests": other, "with a load balancer": withLB} {
		k := requestKey(req)
		if was, ok := keys[k]; ok {
			t.Errorf("%s and %s share an analysis", name, was)
		}
		keys[k] = name
	}
	// The same request built apart (selectors and matchers parsed again)
	// shares the analysis.
	base2, can2 := testenv.GeneratedFleets(t)
	again := plain
	again.Baseline, again.Canary = base2, can2
	if again.Errors, err = engine.ParseErrors("http_requests_total", ""); err != nil {
		t.Fatal(err)
	}
	if requestKey(again) != requestKey(withErrors) {
		t.Error("the same request, built apart, has another key")
	}

	h := gateOverDownProm(t, func() time.Time { return time.Date(2026, 6, 1, 10, 0, 40, 0, time.UTC) })
	q := url.Values{"metric": {"m"}, "baseline": {`{track="baseline"}`}, "canary": {`{track="canary"}`}, "errors_metric": {"http_requests_total"}, "errors": {`{code=~"5.."}`}}
	resp, err := http.Get(h.URL + "/api/v1/decision?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	// Prometheus is down: the analysis fails (503), but the request is read.
	if resp.StatusCode == http.StatusBadRequest || strings.Contains(string(body), "unknown parameter") {
		t.Errorf("errors_metric and errors refused: %d %s", resp.StatusCode, body)
	}
}
