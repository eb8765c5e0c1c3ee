package grafana

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// alertRule is a rule of Grafana's alert rule provisioning file.
type alertRule struct {
	UID       string `yaml:"uid"`
	Title     string `yaml:"title"`
	Condition string `yaml:"condition"`
	Data      []struct {
		RefID             string `yaml:"refId"`
		DatasourceUID     string `yaml:"datasourceUid"`
		RelativeTimeRange struct {
			From int64 `yaml:"from"`
			To   int64 `yaml:"to"`
		} `yaml:"relativeTimeRange"`
		Model map[string]any `yaml:"model"`
	} `yaml:"data"`
	NoDataState   string            `yaml:"noDataState"`
	ExecErrState  string            `yaml:"execErrState"`
	For           string            `yaml:"for"`
	KeepFiringFor string            `yaml:"keepFiringFor"`
	Annotations   map[string]string `yaml:"annotations"`
	Labels        map[string]string `yaml:"labels"`
}

type ruleGroup struct {
	OrgID    int         `yaml:"orgId"`
	Name     string      `yaml:"name"`
	Folder   string      `yaml:"folder"`
	Interval string      `yaml:"interval"`
	Rules    []alertRule `yaml:"rules"`
}

func provisionedRule(t *testing.T) (ruleGroup, alertRule) {
	t.Helper()
	var f struct {
		APIVersion int         `yaml:"apiVersion"`
		Groups     []ruleGroup `yaml:"groups"`
	}
	if err := yaml.Unmarshal(readRepo(t, "provisioning", "alerting", "pairwise-rules.yaml"), &f); err != nil {
		t.Fatal(err)
	}
	if f.APIVersion != 1 || len(f.Groups) != 1 || len(f.Groups[0].Rules) != 1 {
		t.Fatalf("provisioning/alerting/pairwise-rules.yaml: want apiVersion 1 and one group with one rule, got %+v", f)
	}
	return f.Groups[0], f.Groups[0].Rules[0]
}

// evaluate runs a rule as Grafana's alerting evaluates it at now: its data
// source queries through the plugin (marked FromAlert, over the query's
// relative time range), then its expressions in order, then the condition
// read as alert instances.
func evaluate(t *testing.T, p *Plugin, pc backend.PluginContext, rule alertRule, now time.Time) ([]Instance, map[string][]Number) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	series := map[string]Result{}
	numbers := map[string][]Number{}
	for _, d := range rule.Data {
		if d.DatasourceUID == "__expr__" {
			switch typ, _ := d.Model["type"].(string); typ {
			case "reduce":
				in := d.Model["expression"].(string)
				reducer, _ := d.Model["reducer"].(string)
				mode := ""
				if s, ok := d.Model["settings"].(map[string]any); ok {
					mode, _ = s["mode"].(string)
				}
				res, ok := series[in]
				if !ok {
					t.Fatalf("%s reduces %s, which is not a query before it", d.RefID, in)
				}
				n, err := Reduce(d.RefID, res.Series, reducer, mode, 0)
				if err != nil {
					t.Fatal(err)
				}
				numbers[d.RefID] = n
			case "threshold":
				in := d.Model["expression"].(string)
				conds, _ := d.Model["conditions"].([]any)
				if len(conds) != 1 {
					t.Fatalf("%s: %d threshold conditions", d.RefID, len(conds))
				}
				ev := conds[0].(map[string]any)["evaluator"].(map[string]any)
				var params []float64
				for _, v := range ev["params"].([]any) {
					params = append(params, toFloat(t, v))
				}
				n, err := Threshold(numbers[in], ev["type"].(string), params)
				if err != nil {
					t.Fatal(err)
				}
				numbers[d.RefID] = n
			default:
				t.Fatalf("%s: expression type %q is not replicated", d.RefID, typ)
			}
			continue
		}
		model, err := json.Marshal(d.Model)
		if err != nil {
			t.Fatal(err)
		}
		q := backend.DataQuery{
			RefID: d.RefID, MaxDataPoints: 43200, Interval: time.Minute, JSON: model,
			TimeRange: backend.TimeRange{From: now.Add(-time.Duration(d.RelativeTimeRange.From) * time.Second), To: now.Add(-time.Duration(d.RelativeTimeRange.To) * time.Second)},
		}
		resp, err := p.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: []backend.DataQuery{q},
			Headers: map[string]string{backend.FromAlertHeaderName: "true", "X-Rule-Uid": rule.UID}})
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.Responses[d.RefID]
		if dr.Error != nil {
			// Grafana puts the rule in its execErrState (Error here).
			t.Logf("query %s: %s", d.RefID, Describe(dr))
			return []Instance{{State: "Error"}}, numbers
		}
		res, err := Convert(dr.Frames)
		if err != nil {
			t.Fatalf("query %s: Grafana cannot read the answer: %v", d.RefID, err)
		}
		series[d.RefID] = res
	}
	inst, err := Instances(numbers[rule.Condition])
	if err != nil {
		t.Fatal(err)
	}
	return inst, numbers
}

func toFloat(t *testing.T, v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	t.Fatalf("threshold parameter %v (%T)", v, v)
	return 0
}

// TestProvisionedAlertRule: the example Grafana-managed rule, as provisioned,
// against the built backend started as Grafana starts it. On an hour whose
// canary turns 1.4x slower at 11:45 it fires at 12:00 (and not at 11:40,
// before the regression); on identical fleets it stays normal. The firing
// instance, sent the way Grafana's Alertmanager contact point sends it,
// reaches the rollback webhook through the example Alertmanager routing.
// TestProvisionedRuleIsThePacksRollback: the Grafana-managed rule raises
// the rule pack's rollback alert, so Alertmanager routes and inhibits both
// alike. Before, it was named "Pairwise canary rollback", which
// rules/alertmanager/alertmanager.yml's people route (PairwiseCanary.*) and
// its inhibitions did not match, and it had no runbook_url or keep-firing
// time.
func TestProvisionedRuleIsThePacksRollback(t *testing.T) {
	_, rule := provisionedRule(t)
	var pack struct {
		Groups []struct {
			Rules []struct {
				Alert         string            `yaml:"alert"`
				KeepFiringFor string            `yaml:"keep_firing_for"`
				Labels        map[string]string `yaml:"labels"`
				Annotations   map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(readRepo(t, "rules", "pairwise.rules.yml"), &pack); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range pack.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["action"] != "rollback" {
				continue
			}
			found = true
			if rule.Title != r.Alert {
				t.Errorf("the Grafana rule's alertname is %q, the pack's rollback %q", rule.Title, r.Alert)
			}
			if rule.KeepFiringFor != r.KeepFiringFor {
				t.Errorf("keepFiringFor %q, the pack's keep_firing_for %q", rule.KeepFiringFor, r.KeepFiringFor)
			}
			for _, k := range []string{"action", "severity"} {
				if rule.Labels[k] != r.Labels[k] {
					t.Errorf("label %s is %q, the pack's %q", k, rule.Labels[k], r.Labels[k])
				}
			}
			if rule.Annotations["runbook_url"] == "" || rule.Annotations["runbook_url"] != r.Annotations["runbook_url"] {
				t.Errorf("runbook_url %q, the pack's %q", rule.Annotations["runbook_url"], r.Annotations["runbook_url"])
			}
		}
	}
	if !found {
		t.Fatal("rules/pairwise.rules.yml has no alert labelled action=rollback")
	}
}

func TestProvisionedAlertRule(t *testing.T) {
	group, rule := provisionedRule(t)
	exe, id := builtBackend(t)

	// The rule queries the provisioned Pairwise data source.
	var dsFile struct {
		Datasources []struct {
			UID, Type, URL string
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(readRepo(t, "provisioning", "datasources", "pairwise.yaml"), &dsFile); err != nil {
		t.Fatal(err)
	}
	var queries int
	for _, d := range rule.Data {
		if d.DatasourceUID == "__expr__" {
			continue
		}
		queries++
		found := false
		for _, ds := range dsFile.Datasources {
			found = found || ds.UID == d.DatasourceUID && ds.Type == id && ds.URL != ""
		}
		if !found {
			t.Errorf("query %s uses data source %q, not the provisioned %s with a URL", d.RefID, d.DatasourceUID, id)
		}
	}
	if queries != 1 || rule.Condition == "" || rule.NoDataState == "" || rule.ExecErrState == "" {
		t.Fatalf("rule %+v", rule)
	}
	// Its dashboard link points at the shipped dashboard's Pairwise panel.
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID   int    `json:"id"`
			Type string `json:"type"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(readRepo(t, "dashboards", "canary.json"), &dash); err != nil {
		t.Fatal(err)
	}
	panelOK := false
	for _, p := range dash.Panels {
		panelOK = panelOK || fmt.Sprint(p.ID) == rule.Annotations["__panelId__"] && p.Type == "pairwise-canary-panel"
	}
	if dash.UID != rule.Annotations["__dashboardUid__"] || !panelOK {
		t.Errorf("annotations link dashboard %q panel %q; the dashboard is %q", rule.Annotations["__dashboardUid__"], rule.Annotations["__panelId__"], dash.UID)
	}

	p := Start(t, exe)
	regression := PluginContext(id, settings(generated(t, "regression")))
	cleanSettings := settings(generated(t, "clean"))
	cleanSettings.UID = "pairwise-clean"
	clean := PluginContext(id, cleanSettings)
	downSettings := settings(fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
	downSettings.UID = "pairwise-down"
	down := PluginContext(id, downSettings)

	var firing Instance
	for _, tt := range []struct {
		name  string
		pc    backend.PluginContext
		now   time.Time
		state string
	}{
		{"regression, at the end", regression, dataEnd.Add(30 * time.Second), "Alerting"},
		{"regression, before it starts", regression, dataEnd.Add(-20 * time.Minute), "Normal"},
		{"identical fleets", clean, dataEnd.Add(30 * time.Second), "Normal"},
		{"Prometheus down", down, dataEnd.Add(30 * time.Second), "Error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inst, numbers := evaluate(t, p, tt.pc, rule, tt.now)
			if len(inst) != 1 || inst[0].State != tt.state {
				t.Fatalf("instances %+v (reduced %v), want one %s", inst, numbers, tt.state)
			}
			if tt.state == "Error" {
				if rule.ExecErrState != "Error" {
					t.Errorf("execErrState %q: the next subtest's DatasourceError alert assumes Error", rule.ExecErrState)
				}
				return
			}
			if inst[0].Labels["service"] != "checkout" {
				t.Errorf("instance labels %v lack service=checkout", inst[0].Labels)
			}
			if tt.state == "Alerting" {
				firing = inst[0]
			}
		})
	}
	if firing.Labels == nil {
		t.Fatal("the rule never fired")
	}

	t.Run("through Alertmanager to the rollback webhook", func(t *testing.T) {
		cp := contactPoint(t)
		am := rollbackAlertmanager(t)
		// Grafana's alert labels: the rule's, the series', alertname and the folder.
		labels := map[string]string{"alertname": rule.Title, "grafana_folder": group.Folder}
		for k, v := range firing.Labels {
			labels[k] = v
		}
		for k, v := range rule.Labels {
			labels[k] = v
		}
		route := policyRoute(t)
		if !route.matches(t, labels) || route.Receiver != cp.Name {
			t.Fatalf("the provisioned policy does not route %v to %s", labels, cp.Name)
		}
		// A rule in Error (Prometheus down, above) raises DatasourceError
		// with the rule's labels, action=rollback among them, and the data
		// source and query (Grafana's ngalert errorAlert); DatasourceNoData
		// likewise. Neither is a rollback decision.
		var errAlerts []map[string]string
		for _, name := range []string{"DatasourceError", "DatasourceNoData"} {
			l := map[string]string{"alertname": name, "grafana_folder": group.Folder, "datasource_uid": "pairwise-canary", "ref_id": "A"}
			for k, v := range rule.Labels {
				l[k] = v
			}
			if route.matches(t, l) {
				t.Errorf("the provisioned policy sends %s to the rollback (%s): a Prometheus outage would roll the canary back", name, route.Receiver)
			}
			errAlerts = append(errAlerts, l)
		}
		// Sent first, so that a route that took them would deliver them
		// with the rollback or before it.
		for _, l := range append(errAlerts, labels) {
			annotations := map[string]string{"summary": "Roll back the checkout canary"}
			body, _ := json.Marshal([]map[string]any{{"labels": l, "annotations": annotations, "startsAt": time.Now().UTC(), "generatorURL": "http://grafana/alerting/grafana/" + rule.UID + "/view"}})
			resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("Alertmanager answered %s", resp.Status)
			}
		}
		got, err := am.hook.WaitFor(func(p testenv.WebhookPayload) bool {
			return p.Receiver == "rollback-webhook" && slices.ContainsFunc(p.Alerts, func(a testenv.WebhookAlert) bool { return a.Labels["alertname"] == rule.Title })
		}, 30*time.Second)
		if err != nil {
			t.Fatalf("%v; payloads %+v", err, am.hook.Payloads())
		}
		for _, a := range got.Alerts {
			if a.Labels["alertname"] != rule.Title {
				continue // reported below
			}
			if a.Labels["action"] != "rollback" || a.Labels["canary"] != "checkout" || a.Labels["service"] != "checkout" || a.Status != "firing" {
				t.Errorf("webhook got %+v", a)
			}
		}
		for _, p := range am.hook.Payloads() {
			for _, a := range p.Alerts {
				if p.Receiver == "rollback-webhook" && a.Labels["alertname"] != rule.Title {
					t.Errorf("the rollback webhook got %s: %+v", a.Labels["alertname"], a)
				}
			}
		}
	})
}

type contactPointDef struct {
	Name      string `yaml:"name"`
	Receivers []struct {
		UID      string         `yaml:"uid"`
		Type     string         `yaml:"type"`
		Settings map[string]any `yaml:"settings"`
	} `yaml:"receivers"`
}

// contactPoint is the provisioned contact point: Grafana's Alertmanager
// integration pointed at the compose stack's Alertmanager.
func contactPoint(t *testing.T) contactPointDef {
	t.Helper()
	var f struct {
		ContactPoints []contactPointDef `yaml:"contactPoints"`
	}
	if err := yaml.Unmarshal(readRepo(t, "provisioning", "alerting", "pairwise-notifications.yaml"), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.ContactPoints) != 1 || len(f.ContactPoints[0].Receivers) != 1 {
		t.Fatalf("want one contact point with one receiver: %+v", f.ContactPoints)
	}
	r := f.ContactPoints[0].Receivers[0]
	u, _ := r.Settings["url"].(string)
	parsed, err := url.Parse(u)
	if r.Type != "prometheus-alertmanager" || err != nil || parsed.Hostname() != "alertmanager" || parsed.Port() != "9093" {
		t.Fatalf("contact point %s: type %s url %q, want prometheus-alertmanager at the compose alertmanager service", f.ContactPoints[0].Name, r.Type, u)
	}
	var compose struct {
		Services map[string]struct {
			Ports []string `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(readRepo(t, "docker-compose.yaml"), &compose); err != nil {
		t.Fatal(err)
	}
	if ports := strings.Join(compose.Services["alertmanager"].Ports, " "); !strings.Contains(ports, ":9093") {
		t.Errorf("docker-compose.yaml's alertmanager does not listen on 9093: %q", ports)
	}
	return f.ContactPoints[0]
}

type policyDef struct {
	Receiver       string     `yaml:"receiver"`
	ObjectMatchers [][]string `yaml:"object_matchers"`
}

// matches applies the route's equality matchers as Grafana does (a label
// that is absent has the value ""); a matcher of another kind fails the
// test, since this check would not read it right.
func (p policyDef) matches(t *testing.T, labels map[string]string) bool {
	t.Helper()
	for _, m := range p.ObjectMatchers {
		if len(m) != 3 || m[1] != "=" && m[1] != "!=" {
			t.Fatalf("object matcher %q: this test reads only = and !=", m)
		}
		if (labels[m[0]] == m[2]) != (m[1] == "=") {
			return false
		}
	}
	return len(p.ObjectMatchers) > 0
}

func policyRoute(t *testing.T) policyDef {
	t.Helper()
	var f struct {
		Policies []struct {
			Receiver string      `yaml:"receiver"`
			Routes   []policyDef `yaml:"routes"`
		} `yaml:"policies"`
	}
	if err := yaml.Unmarshal(readRepo(t, "provisioning", "alerting", "pairwise-policies.yaml"), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Policies) != 1 || len(f.Policies[0].Routes) != 1 || f.Policies[0].Receiver == "" {
		t.Fatalf("want one policy tree with one route: %+v", f.Policies)
	}
	return f.Policies[0].Routes[0]
}

type routedAlertmanager struct {
	*testenv.AMServer
	hook *testenv.Webhook
}

// rollbackAlertmanager runs the pinned Alertmanager with the example routing
// (rules/alertmanager/alertmanager.yml), its rollback webhook pointed at a
// recording receiver.
func rollbackAlertmanager(t *testing.T) routedAlertmanager {
	t.Helper()
	hook := testenv.WebhookReceiver(t)
	cfg := string(readRepo(t, "rules", "alertmanager", "alertmanager.yml"))
	const example = "http://127.0.0.1:9099/rollback"
	if !strings.Contains(cfg, example) {
		t.Fatalf("rules/alertmanager/alertmanager.yml no longer sends the rollback to %s", example)
	}
	cfg = strings.ReplaceAll(cfg, example, hook.URL+"/rollback")
	return routedAlertmanager{AMServer: testenv.Alertmanager(t, cfg), hook: hook}
}
