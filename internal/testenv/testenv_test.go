package testenv

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// end is a fixed whole minute: the generated data is reproducible.
var end = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// instant runs an instant query and returns the single sample's value.
func instant(t *testing.T, base, query string, at time.Time) float64 {
	t.Helper()
	res := Query(t, base, query, at)
	if len(res) != 1 {
		t.Fatalf("%s at %v: %d series, want 1", query, at, len(res))
	}
	v, err := res[0].Float()
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

func TestPrometheusServesGeneratedFleets(t *testing.T) {
	dir, truthFile := Generate(t, "--end", end.Format(time.RFC3339), "--minutes", "120", "--pods", "10",
		"--scenario", "regression", "--seed", "5")
	tr := LoadTruth(t, truthFile)
	if len(tr.Minutes) != 240 || tr.Scenario != "regression" {
		t.Fatalf("truth: %d minute rows, scenario %q", len(tr.Minutes), tr.Scenario)
	}
	srv := Prometheus(t, PromOptions{DataDir: dir})
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s", srv.URL)
	}
	at := end.Add(-30 * time.Minute)
	growth := math.Exp2(1.0 / 8) // schema 3 bucket width
	for _, fleet := range []string{"baseline", "canary"} {
		row, ok := tr.Minute(fleet, at.Format(time.RFC3339))
		if !ok {
			t.Fatalf("no truth for %s at %v", fleet, at)
		}
		truth := row.Quantile(0.99)
		native := instant(t, srv.URL, fmt.Sprintf(`histogram_quantile(0.99, sum(increase(http_request_duration_seconds{track=%q}[75s])))`, fleet), at)
		classic := instant(t, srv.URL, fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (increase(http_request_duration_seconds_bucket{track=%q}[75s])))`, fleet), at)
		t.Logf("%s p99 at %v: truth %.5f native %.5f classic %.5f (%d requests)", fleet, at, truth, native, classic, row.Count)
		for name, v := range map[string]float64{"native": native, "classic": classic} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Errorf("%s %s p99 = %v, want a finite positive number", fleet, name, v)
			}
		}
		if r := native / truth; r <= 1/growth || r >= growth {
			t.Errorf("%s native p99 %v and exact p99 %v are not in the same bucket", fleet, native, truth)
		}
		// The request count matches: the increase over a minute and one
		// scrape interval, per minute, is the whole minute's count
		// (prom.NativeQuery).
		n := instant(t, srv.URL, fmt.Sprintf(`sum(increase(http_request_duration_seconds_count{track=%q}[75s])) * 0.8`, fleet), at)
		if want := float64(row.Count); math.Abs(n-want) > 1e-6*want {
			t.Errorf("%s count %v, want %v", fleet, n, want)
		}
	}
	if err := srv.Reload(); err != nil {
		t.Errorf("reload: %v", err)
	}
}

func TestPrometheusRuleFiles(t *testing.T) {
	srv := Prometheus(t, PromOptions{
		Config: "global:\n  evaluation_interval: 1s\nrule_files: [rules/up.yml]\n",
		Files:  map[string]string{"rules/up.yml": "groups:\n- name: g\n  rules:\n  - record: one\n    expr: vector(1)\n"},
	})
	resp, err := http.Get(srv.URL + "/api/v1/rules")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if !strings.Contains(b.String(), `"name":"one"`) {
		t.Fatalf("rule not loaded: %s", b.String())
	}
}

func TestAlertmanagerDeliversToWebhook(t *testing.T) {
	hook := WebhookReceiver(t)
	am := Alertmanager(t, fmt.Sprintf(`route:
  receiver: hook
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
receivers:
- name: hook
  webhook_configs:
  - url: %s/rollback
`, hook.URL))
	resp, err := http.Get(am.URL + "/-/ready")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ready: %v %v", resp, err)
	}
	resp.Body.Close()
	alert := `[{"labels":{"alertname":"PairwiseCanaryRollback","service":"checkout"},"annotations":{"summary":"test"}}]`
	resp, err = http.Post(am.URL+"/api/v2/alerts", "application/json", strings.NewReader(alert))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("post alert: %v %v", resp, err)
	}
	resp.Body.Close()
	p, err := hook.WaitFor(func(p WebhookPayload) bool {
		return p.Status == "firing" && p.CommonLabels["alertname"] == "PairwiseCanaryRollback"
	}, 30*time.Second)
	if err != nil {
		t.Fatalf("%v; alertmanager log:\n%s", err, am.LogTail(20))
	}
	if p.Path != "/rollback" || p.Receiver != "hook" || len(p.Alerts) != 1 || p.Alerts[0].Labels["service"] != "checkout" {
		t.Errorf("payload %+v", p)
	}
}

func TestRootAndBinary(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.TrimRight(root, "/"), "main") && root == "" {
		t.Fatalf("root %q", root)
	}
	t.Setenv(EnvToolsBin, "/nonexistent")
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { recover() }()
		Binary(ft, "prometheus")
	}()
	if !strings.Contains(ft.msg, "bash tools/install.sh") {
		t.Errorf("missing-binary message %q does not say how to build it", ft.msg)
	}
}

// fatalRecorder records Fatalf instead of failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
