package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// dataEnd is the end of the generated data; queries are for the hour before.
var dataEnd = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// builtBackend is the executable `mage -v` built for this machine, as Grafana
// picks it from the installed plugin folder.
func builtBackend(t *testing.T) (path, pluginID string) {
	t.Helper()
	ds := loadPlugin(t, "src", "datasource", "plugin.json")
	path = repoPath("dist", "datasource", executableName(ds.Executable, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%v: build the backend first (mage -v; scripts/test.sh does)", err)
	}
	return path, ds.ID
}

// generated serves 70 minutes of two fleets at 2,000 req/s, half each; with
// regression the canary turns 1.4x slower at minute 55 (the evidence rule
// rolls it back by 11:55).
func generated(t *testing.T, scenario string) string {
	t.Helper()
	args := []string{"--end", dataEnd.Format(time.RFC3339), "--minutes", "70", "--pods", "4", "--seed", "5",
		"--total-rps", "2000", "--canary-share", "0.5", "--scenario", scenario}
	if scenario == "regression" {
		args = append(args, "--regression-factor", "1.4", "--regression-start-minute", "55")
	}
	dir, _ := testenv.Generate(t, args...)
	return testenv.Prometheus(t, testenv.PromOptions{DataDir: dir}).URL
}

// settings is a data source as Grafana's settings page saves it.
func settings(url string) backend.DataSourceInstanceSettings {
	return backend.DataSourceInstanceSettings{
		ID: 7, UID: "pairwise-canary", Name: "Pairwise", Type: "pairwise-canary-datasource",
		URL: url, JSONData: []byte(`{"timeout":20}`), DecryptedSecureJSONData: map[string]string{},
		Updated: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC),
	}
}

const selectors = `"metric":"http_request_duration_seconds","baselineSelector":"{service=\"checkout\",track=\"baseline\"}","canarySelector":"{service=\"checkout\",track=\"canary\"}"`

func hourQuery(refID, extra string) backend.DataQuery {
	return backend.DataQuery{
		RefID: refID, QueryType: "", MaxDataPoints: 1000, Interval: time.Minute,
		TimeRange: backend.TimeRange{From: dataEnd.Add(-time.Hour), To: dataEnd},
		JSON:      json.RawMessage(`{"refId":"` + refID + `",` + selectors + extra + `}`),
	}
}

// TestBackendThroughPluginProtocol starts the built gpx_pairwise as Grafana
// starts a backend plugin and exercises what Grafana calls: the handshake,
// CheckHealth ("Save & test"), QueryData for every query type (a panel's
// request and an alert rule's), errors with their source, and CallResource.
func TestBackendThroughPluginProtocol(t *testing.T) {
	exe, id := builtBackend(t)
	promURL := generated(t, "regression")
	p := Start(t, exe)
	if v := p.NegotiatedVersion(); v != 2 {
		t.Fatalf("negotiated protocol version %d, want 2", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pc := PluginContext(id, settings(promURL))

	t.Run("CheckHealth", func(t *testing.T) {
		legacy := settings("")
		legacy.JSONData = []byte(fmt.Sprintf(`{"prometheusUrl":%q,"timeoutSeconds":20}`, promURL))
		for _, tt := range []struct {
			name   string
			s      backend.DataSourceInstanceSettings
			status backend.HealthStatus
			want   string
		}{
			{"configured", settings(promURL), backend.HealthStatusOk, "Prometheus 3.13.5 is reachable."},
			{"no URL", settings(""), backend.HealthStatusError, "Set the URL under Connection"},
			{"not a URL", settings("prometheus:9090"), backend.HealthStatusError, "Fix the URL under Connection"},
			{"nothing there", settings("http://127.0.0.1:1"), backend.HealthStatusError, "Cannot reach Prometheus at http://127.0.0.1:1: check Connection > URL"},
			{"legacy settings", legacy, backend.HealthStatusOk, "still use the old jsonData keys prometheusUrl, timeoutSeconds"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tt.s.UID = "health-" + strings.ReplaceAll(tt.name, " ", "-") // one instance each
				res, err := p.CheckHealth(ctx, PluginContext(id, tt.s))
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != tt.status || !strings.Contains(res.Message, tt.want) {
					t.Fatalf("health %v %q, want %v containing %q", res.Status, res.Message, tt.status, tt.want)
				}
			})
		}
	})

	t.Run("QueryData for panels", func(t *testing.T) {
		req := &backend.QueryDataRequest{PluginContext: pc, Queries: []backend.DataQuery{
			hourQuery("M", `,"queryType":"minutes"`), hourQuery("D", `,"queryType":"decision"`), hourQuery("P", `,"queryType":"pods"`),
		}}
		resp, err := p.QueryData(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for refID, want := range map[string]struct {
			name   string
			rows   int
			fields []string
		}{
			"M": {"minutes", 60, []string{"time", "verdict", "decision", "decision_code", "canary_p99", "reason"}},
			"D": {"decision", 1, []string{"decision", "decision_code", "reason", "evidence_statistic", "rollback_boundary"}},
			"P": {"pods", 120, []string{"time", "fleet", "max", "worst_pod"}},
		} {
			dr := resp.Responses[refID]
			if dr.Error != nil || len(dr.Frames) != 1 {
				t.Fatalf("%s: %s", refID, Describe(dr))
			}
			f := dr.Frames[0]
			if f.Name != want.name || f.Rows() != want.rows || f.RefID != refID {
				t.Errorf("%s: frame %q ref %q with %d rows, want %q with %d", refID, f.Name, f.RefID, f.Rows(), want.name, want.rows)
			}
			for _, name := range want.fields {
				if field, _ := f.FieldByName(name); field == nil {
					t.Errorf("%s: no field %s", refID, name)
				}
			}
		}
		d, _ := resp.Responses["D"].Frames[0].FieldByName("decision")
		if got := d.At(0).(string); got != "rollback" {
			t.Errorf("the regression hour decides %s, want rollback", got)
		}
	})

	t.Run("QueryData for an alert rule", func(t *testing.T) {
		for _, qt := range []string{"minutes", "decision", "pods"} {
			req := &backend.QueryDataRequest{PluginContext: pc, Headers: map[string]string{backend.FromAlertHeaderName: "true"},
				Queries: []backend.DataQuery{hourQuery("A", `,"queryType":"`+qt+`"`)}}
			resp, err := p.QueryData(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error != nil {
				t.Fatalf("%s: %s", qt, Describe(dr))
			}
			for _, f := range dr.Frames {
				if s := f.TimeSeriesSchema(); s.Type != data.TimeSeriesTypeWide {
					t.Errorf("%s: schema %s, want wide", qt, s.Type)
				}
			}
			res, err := Convert(dr.Frames)
			if err != nil {
				t.Fatalf("%s: Grafana would reject it: %v", qt, err)
			}
			last, _ := Reduce("B", res.Series, "last", "", 0)
			inst, err := Instances(last)
			if err != nil || len(inst) == 0 {
				t.Fatalf("%s: %v %v", qt, inst, err)
			}
			t.Logf("%s: %s", qt, res.Describe())
		}
	})

	t.Run("errors carry their source", func(t *testing.T) {
		unconfigured := settings("")
		unconfigured.UID = "unconfigured"
		for _, tt := range []struct {
			name   string
			pc     backend.PluginContext
			q      backend.DataQuery
			status backend.Status
			source backend.ErrorSource
			want   string
		}{
			{"bad selector", pc, hourQuery("A", `,"queryType":"minutes","canarySelector":"{track=canary}"`), backend.StatusBadRequest, backend.ErrorSourceDownstream, "canarySelector"},
			{"unknown query type", pc, hourQuery("A", `,"queryType":"everything"`), backend.StatusBadRequest, backend.ErrorSourceDownstream, "queryType"},
			{"unknown format", pc, hourQuery("A", `,"format":"csv"`), backend.StatusBadRequest, backend.ErrorSourceDownstream, "format"},
			{"no URL", PluginContext(id, unconfigured), hourQuery("A", ""), backend.StatusBadRequest, backend.ErrorSourceDownstream, "Set the URL under Connection"},
			{"Prometheus down", PluginContext(id, func() backend.DataSourceInstanceSettings {
				s := settings("http://127.0.0.1:1")
				s.UID = "down"
				return s
			}()), hourQuery("A", ""), backend.StatusBadGateway, backend.ErrorSourceDownstream, "cannot query Prometheus"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp, err := p.QueryData(ctx, &backend.QueryDataRequest{PluginContext: tt.pc, Queries: []backend.DataQuery{tt.q}})
				if err != nil {
					t.Fatal(err)
				}
				dr := resp.Responses["A"]
				if dr.Error == nil || dr.Status != tt.status || dr.ErrorSource != tt.source || !strings.Contains(dr.Error.Error(), tt.want) {
					t.Fatalf("%s; want status %d, source %s, containing %q", Describe(dr), tt.status, tt.source, tt.want)
				}
			})
		}
	})

	t.Run("CallResource", func(t *testing.T) {
		resp, err := p.CallResource(ctx, &backend.CallResourceRequest{PluginContext: pc, Path: "metrics", Method: http.MethodGet, URL: "metrics"})
		if err != nil || len(resp) != 1 || resp[0].Status != http.StatusOK {
			t.Fatalf("%v %+v", err, resp)
		}
		var metrics []struct{ Name, Kind string }
		if err := json.Unmarshal(resp[0].Body, &metrics); err != nil {
			t.Fatalf("%v: %s", err, resp[0].Body)
		}
		resp, err = p.CallResource(ctx, &backend.CallResourceRequest{PluginContext: pc, Path: "nothing", Method: http.MethodGet, URL: "nothing"})
		if err != nil || len(resp) != 1 || resp[0].Status != http.StatusNotFound {
			t.Fatalf("unknown resource: %v %+v", err, resp)
		}
	})

	if p.Exited() {
		t.Fatalf("the plugin exited; its log:\n%s", p.Log())
	}
}
