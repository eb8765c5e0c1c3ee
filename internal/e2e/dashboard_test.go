package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/exposition"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// dashRoot is the repository root, seen from this package.
const dashRoot = "../.."

func dashPath(parts ...string) string { return filepath.Join(append([]string{dashRoot}, parts...)...) }

func dashRead(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(dashPath(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dashYAML(t *testing.T, into any, parts ...string) {
	t.Helper()
	if err := yaml.Unmarshal(dashRead(t, parts...), into); err != nil {
		t.Fatalf("%s: %v", filepath.Join(parts...), err)
	}
}

// dashPluginIDs are the ids of the app and the plugins it includes, from src/.
type dashPluginIDs struct{ app, datasource, panel string }

func dashPlugins(t *testing.T) dashPluginIDs {
	t.Helper()
	id := func(parts ...string) string {
		var p struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(dashRead(t, parts...), &p); err != nil || p.ID == "" {
			t.Fatalf("%s: no plugin id (%v)", filepath.Join(parts...), err)
		}
		return p.ID
	}
	return dashPluginIDs{app: id("src", "plugin.json"), datasource: id("src", "datasource", "plugin.json"), panel: id("src", "panel", "plugin.json")}
}

// dashRulePack lists the rule pack's recording-rule and alert names.
func dashRulePack(t *testing.T) (records, alerts map[string]bool) {
	t.Helper()
	var pack struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Alert  string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dashYAML(t, &pack, "rules", "pairwise.rules.yml")
	records, alerts = map[string]bool{}, map[string]bool{}
	for _, g := range pack.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = true
			}
			if r.Alert != "" {
				alerts[r.Alert] = true
			}
		}
	}
	if len(records) == 0 || len(alerts) == 0 {
		t.Fatal("rules/pairwise.rules.yml has no recording rules or no alerts")
	}
	return records, alerts
}

// dashSimulatorMetrics are the series names the simulator (and pairwise-gen) expose.
var dashSimulatorMetrics = map[string]bool{
	"http_request_duration_seconds":        true,
	"http_request_duration_seconds_bucket": true,
	"http_request_duration_seconds_count":  true,
	"http_request_duration_seconds_sum":    true,
	exposition.RequestsMetric:              true,
}

type dashDatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *dashDatasourceRef `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Options    map[string]any   `json:"options"`
	Targets    []map[string]any `json:"targets"`
	Panels     []dashPanel      `json:"panels"`
}

type dashboard struct {
	Inputs []struct {
		Name, Type, PluginID string
	} `json:"__inputs"`
	Requires []struct {
		Type, ID string
	} `json:"__requires"`
	UID         string `json:"uid"`
	Title       string `json:"title"`
	Annotations struct {
		List []map[string]any `json:"list"`
	} `json:"annotations"`
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Query      any                `json:"query"`
			Definition string             `json:"definition"`
			Datasource *dashDatasourceRef `json:"datasource"`
			Current    map[string]any     `json:"current"`
		} `json:"list"`
	} `json:"templating"`
}

func dashLoad(t *testing.T) (dashboard, []byte) {
	t.Helper()
	raw := dashRead(t, "dashboards", "canary.json")
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboards/canary.json is not valid dashboard JSON: %v", err)
	}
	return d, raw
}

func dashAllPanels(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, dashAllPanels(p.Panels)...)
	}
	return out
}

var (
	dashRecordRe = regexp.MustCompile(`[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]+`)
	// Identifiers followed by a selector or a range: metric names in PromQL.
	dashMetricRe = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:"])([a-zA-Z_][a-zA-Z0-9_]*)\s*[{\[]`)
)

// dashNames returns the recording-rule and metric names a PromQL expression reads.
func dashNames(expr string) (records, metrics []string) {
	records = dashRecordRe.FindAllString(expr, -1)
	for _, m := range dashMetricRe.FindAllStringSubmatch(expr, -1) {
		switch m[1] {
		case "by", "without", "on", "ignoring", "group_left", "group_right":
			continue
		}
		metrics = append(metrics, m[1])
	}
	return records, metrics
}

// TestDashboardImportable: the dashboard imports as Grafana imports an app's
// dashboards (the app's Dashboards tab, file provisioning), which supply no
// inputs: no shipped dashboard (dashboards/*.json and the build's copies)
// has __inputs or a ${DS_...} placeholder. Its data sources are data source
// variables of the plugin types (empty by default, so Grafana picks the
// default data source of that type), and __requires names Grafana, the panel
// and both data sources.
func TestDashboardImportable(t *testing.T) {
	ids := dashPlugins(t)
	shipped, _ := filepath.Glob(dashPath("dashboards", "*.json"))
	built, _ := filepath.Glob(dashPath("dist", "dashboards", "*.json"))
	if len(shipped) == 0 || len(built) == 0 {
		t.Fatalf("shipped dashboards %v, built %v: want both (build the plugin first)", shipped, built)
	}
	for _, path := range append(shipped, built...) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if _, ok := top["__inputs"]; ok {
			t.Errorf("%s has __inputs: Grafana imports an app's dashboards and provisioned files without inputs", path)
		}
		if m := regexp.MustCompile(`\$\{DS_[A-Za-z0-9_]*\}`).FindString(string(raw)); m != "" {
			t.Errorf("%s uses %s, which nothing replaces when Grafana imports it from the app or a provisioning folder", path, m)
		}
	}
	d, _ := dashLoad(t)
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a stable uid and a title")
	}
	requires := map[string]string{}
	for _, r := range d.Requires {
		requires[r.ID] = r.Type
	}
	for id, typ := range map[string]string{"grafana": "grafana", "prometheus": "datasource", ids.datasource: "datasource", ids.panel: "panel"} {
		if requires[id] != typ {
			t.Errorf("__requires lacks %s %s", typ, id)
		}
	}
	vars := map[string]string{} // data source variable -> plugin type
	for _, v := range d.Templating.List {
		if v.Type != "datasource" {
			continue
		}
		q, _ := v.Query.(string)
		vars[v.Name] = q
		if cur, _ := v.Current["value"].(string); strings.Contains(cur, "$") {
			t.Errorf("data source variable %s defaults to %q, a placeholder", v.Name, cur)
		}
	}
	if !slices.Contains(dashValues(vars), "prometheus") || !slices.Contains(dashValues(vars), ids.datasource) {
		t.Errorf("data source variables %v: want one of type prometheus and one of type %s", vars, ids.datasource)
	}
	for _, p := range dashAllPanels(d.Panels) {
		if p.Type == "row" {
			continue
		}
		refs := []*dashDatasourceRef{p.Datasource}
		for _, tg := range p.Targets {
			if ds, ok := tg["datasource"].(map[string]any); ok {
				typ, _ := ds["type"].(string)
				uid, _ := ds["uid"].(string)
				refs = append(refs, &dashDatasourceRef{Type: typ, UID: uid})
			}
		}
		for _, ref := range refs {
			if ref == nil {
				t.Errorf("panel %q has no data source", p.Title)
				continue
			}
			name := strings.TrimSuffix(strings.TrimPrefix(ref.UID, "${"), "}")
			if typ, ok := vars[name]; !ok || typ != ref.Type {
				t.Errorf("panel %q uses data source %+v: want a data source variable of type %s", p.Title, *ref, ref.Type)
			}
		}
	}
}

func dashValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestDashboardNamesExist: every panel type, recording rule, alert, metric and
// Pairwise query the dashboard uses exists in the plugins, the rule pack or
// the simulator; the layout fits Grafana's 24-column grid.
func TestDashboardNamesExist(t *testing.T) {
	ids := dashPlugins(t)
	records, alerts := dashRulePack(t)
	d, _ := dashLoad(t)
	builtin := map[string]bool{"row": true, "timeseries": true, "stat": true, "heatmap": true, "table": true}
	var exprs []string
	usedRecords := map[string]bool{}
	seenIDs := map[int]bool{}
	types := map[string]int{}
	pairwiseQueries := map[string]bool{}
	for _, p := range dashAllPanels(d.Panels) {
		types[p.Type]++
		if seenIDs[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		seenIDs[p.ID] = true
		if p.Type != ids.panel && !builtin[p.Type] {
			t.Errorf("panel %q has type %q: neither the Pairwise panel nor a core panel", p.Title, p.Type)
		}
		if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q gridPos %+v does not fit the 24-column grid", p.Title, g)
		}
		for _, tg := range p.Targets {
			if expr, ok := tg["expr"].(string); ok {
				exprs = append(exprs, expr)
			}
			if ds, _ := tg["datasource"].(map[string]any); ds["type"] == ids.datasource {
				dashCheckPairwiseQuery(t, p.Title, tg)
				qt, _ := tg["queryType"].(string)
				pairwiseQueries[qt] = true
			}
		}
		if p.Type == ids.panel {
			if uid, _ := p.Options["prometheusDatasourceUid"].(string); uid != "pairwise-prometheus" {
				t.Errorf("the Pairwise panel's Explore links go to data source %q, not the provisioned pairwise-prometheus", uid)
			}
		}
	}
	for _, want := range []string{ids.panel, "heatmap", "timeseries"} {
		if types[want] == 0 {
			t.Errorf("the dashboard has no %s panel", want)
		}
	}
	if types["heatmap"] < 2 {
		t.Errorf("want a native-histogram heatmap per fleet, got %d heatmaps", types["heatmap"])
	}
	for _, qt := range []string{"minutes", "decision", "pods"} {
		if !pairwiseQueries[qt] {
			t.Errorf("no Pairwise %s query on the dashboard", qt)
		}
	}
	for _, a := range d.Annotations.List {
		if expr, ok := a["expr"].(string); ok {
			exprs = append(exprs, expr)
			for _, m := range regexp.MustCompile(`alertname="([^"]+)"`).FindAllStringSubmatch(expr, -1) {
				if !alerts[m[1]] {
					t.Errorf("annotation reads alert %s, which the rule pack does not define", m[1])
				}
			}
		}
	}
	since := false
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			exprs = append(exprs, v.Definition)
		}
		if v.Name == "since" {
			cur, _ := v.Current["value"].(string)
			since = v.Type == "textbox" && cur == ""
		}
	}
	if !since {
		t.Error("the dashboard has no since textbox variable, empty by default, for the Pairwise queries' deployment start")
	}
	for _, expr := range exprs {
		recs, metrics := dashNames(expr)
		for _, r := range recs {
			usedRecords[r] = true
			if !records[r] {
				t.Errorf("%q reads recording rule %s, which rules/pairwise.rules.yml does not define", expr, r)
			}
		}
		for _, m := range metrics {
			if !dashSimulatorMetrics[m] && m != "ALERTS" && !records[m] {
				t.Errorf("%q reads metric %s, which the simulator does not expose", expr, m)
			}
		}
		if strings.Contains(expr, "__name__") {
			for _, m := range regexp.MustCompile(`[a-z_]+`).FindAllString(strings.SplitN(strings.SplitN(expr, `__name__=~"`, 2)[1], `"`, 2)[0], -1) {
				if !dashSimulatorMetrics[m] {
					t.Errorf("%q matches metric %s, which the simulator does not expose", expr, m)
				}
			}
		}
	}
	// The four fleet quantiles and the verdict series are on the dashboard.
	for _, q := range []string{"p50", "p99", "p99_9", "p99_99"} {
		name := "canary_fleet:http_request_duration_seconds:" + q + "_1m"
		if !usedRecords[name] {
			t.Errorf("the dashboard does not chart %s", name)
		}
	}
	for _, name := range []string{"canary:http_request_duration_seconds:decision_60m", "canary_fleet:http_request_duration_seconds_count:rate1m"} {
		if !usedRecords[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
}

// dashCheckPairwiseQuery validates a Pairwise query as the data source would
// (pkg/plugin/query.go): a known query type, a simulator metric, selectors
// that parse once $service is set, a known window mode and histogram kind.
func dashCheckPairwiseQuery(t *testing.T, panel string, q map[string]any) {
	t.Helper()
	str := func(k string) string { s, _ := q[k].(string); return s }
	if qt := str("queryType"); qt != "minutes" && qt != "decision" && qt != "pods" {
		t.Errorf("panel %q: Pairwise queryType %q", panel, qt)
	}
	if !dashSimulatorMetrics[str("metric")] {
		t.Errorf("panel %q: Pairwise metric %q is not a simulator histogram", panel, str("metric"))
	}
	for _, k := range []string{"baselineSelector", "canarySelector"} {
		s := strings.ReplaceAll(str(k), "$service", "checkout")
		if _, err := selector.Parse(s); err != nil {
			t.Errorf("panel %q: %s %q: %v", panel, k, str(k), err)
		}
	}
	if m := str("windowMode"); m != "range" && m != "last" {
		t.Errorf("panel %q: windowMode %q", panel, m)
	}
	if k := str("histogramKind"); k != "auto" && k != "native" && k != "classic" {
		t.Errorf("panel %q: histogramKind %q", panel, k)
	}
	// The window rule is explicit: the evidence rule, the default.
	if r := str("rule"); r != "evidence" {
		t.Errorf("panel %q: Pairwise rule %q, want evidence", panel, r)
	}
	// The deployment start comes from the dashboard's since variable (empty: none).
	if s := str("since"); s != "$since" {
		t.Errorf("panel %q: since %q, want $since", panel, s)
	}
}

// TestDashboardShippedInApp: the app's plugin.json includes the dashboard at
// the path the build copies dashboards/canary.json to; a built dist/ that
// has it carries the same file.
func TestDashboardShippedInApp(t *testing.T) {
	var app struct {
		Includes []struct{ Type, Path string } `json:"includes"`
	}
	if err := json.Unmarshal(dashRead(t, "src", "plugin.json"), &app); err != nil {
		t.Fatal(err)
	}
	var path string
	for _, inc := range app.Includes {
		if inc.Type == "dashboard" {
			path = inc.Path
		}
	}
	if path != "dashboards/canary.json" {
		t.Fatalf("src/plugin.json includes dashboard %q, want dashboards/canary.json (the build's copy of the repository's dashboards/canary.json)", path)
	}
	built, err := os.ReadFile(dashPath("dist", path))
	switch {
	case err == nil:
		if !bytes.Equal(built, dashRead(t, "dashboards", "canary.json")) {
			t.Errorf("dist/%s differs from dashboards/canary.json: rebuild the frontend (npm run build)", path)
		}
	case os.IsNotExist(err):
		t.Fatalf("dist/%s is missing: build the plugin first (npm run build; scripts/test.sh does)", path)
	default:
		t.Fatal(err)
	}
}

// TestDashboardProvisioning: the provisioned data sources, dashboard provider
// and app enablement match the plugin ids, the dashboard and the compose file.
func TestDashboardProvisioning(t *testing.T) {
	ids := dashPlugins(t)
	var ds struct {
		Datasources []struct {
			Name, UID, Type, URL string
			JSONData             map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	dashYAML(t, &ds, "provisioning", "datasources", "pairwise.yaml")
	byUID := map[string]int{}
	for i, d := range ds.Datasources {
		byUID[d.UID] = i
	}
	if i, ok := byUID["pairwise-prometheus"]; !ok || ds.Datasources[i].Type != "prometheus" || ds.Datasources[i].URL == "" {
		t.Errorf("no Prometheus data source with uid pairwise-prometheus and a URL: %+v", ds.Datasources)
	}
	if i, ok := byUID["pairwise-canary"]; !ok || ds.Datasources[i].Type != ids.datasource {
		t.Errorf("no %s data source with uid pairwise-canary: %+v", ids.datasource, ds.Datasources)
	} else if u := ds.Datasources[i].URL; u == "" || u != ds.Datasources[byUID["pairwise-prometheus"]].URL {
		t.Errorf("Pairwise url = %q, want the provisioned Prometheus's URL", u)
	} else if _, legacy := ds.Datasources[i].JSONData["prometheusUrl"]; legacy {
		t.Error("the provisioned Pairwise data source still uses jsonData.prometheusUrl; use the standard url")
	}

	var apps struct {
		Apps []struct {
			Type     string `yaml:"type"`
			Disabled bool   `yaml:"disabled"`
		} `yaml:"apps"`
	}
	dashYAML(t, &apps, "provisioning", "plugins", "apps.yaml")
	if len(apps.Apps) != 1 || apps.Apps[0].Type != ids.app || apps.Apps[0].Disabled {
		t.Errorf("provisioning/plugins/apps.yaml = %+v, want %s enabled", apps.Apps, ids.app)
	}

	var providers struct {
		Providers []struct {
			Type    string            `yaml:"type"`
			Options map[string]string `yaml:"options"`
		} `yaml:"providers"`
	}
	dashYAML(t, &providers, "provisioning", "dashboards", "pairwise.yaml")
	if len(providers.Providers) != 1 || providers.Providers[0].Type != "file" {
		t.Fatalf("want one file dashboard provider, got %+v", providers.Providers)
	}
	mounts := dashComposeMounts(t, "grafana")
	if src := mounts[providers.Providers[0].Options["path"]]; src != "./dashboards" {
		t.Errorf("the dashboard provider reads %s, which docker-compose.yaml mounts from %q, not ./dashboards", providers.Providers[0].Options["path"], src)
	}
	for _, dir := range []string{"datasources", "dashboards", "plugins", "alerting"} {
		if src := mounts["/etc/grafana/provisioning/"+dir]; src != "./provisioning/"+dir {
			t.Errorf("grafana mounts %q as its %s provisioning, want ./provisioning/%s", src, dir, dir)
		}
	}
	if src := mounts["/var/lib/grafana/plugins/"+ids.app]; src != "./dist" {
		t.Errorf("grafana mounts %q as the %s plugin, want ./dist", src, ids.app)
	}
}

type dashCompose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     any               `yaml:"command"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		NetworkMode string            `yaml:"network_mode"`
	} `yaml:"services"`
}

// dashComposeMounts maps a service's container paths to their host sources.
func dashComposeMounts(t *testing.T, service string) map[string]string {
	t.Helper()
	var c dashCompose
	dashYAML(t, &c, "docker-compose.yaml")
	out := map[string]string{}
	for _, v := range c.Services[service].Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			out[parts[1]] = parts[0]
		}
	}
	return out
}

// TestDashboardCompose: the compose file parses, pins its images, lets Grafana
// load the three unsigned plugins, and mounts files that exist.
func TestDashboardCompose(t *testing.T) {
	ids := dashPlugins(t)
	var c dashCompose
	dashYAML(t, &c, "docker-compose.yaml")
	pins := map[string]*regexp.Regexp{
		"grafana":      regexp.MustCompile(`^grafana/grafana:12\.\d+\.\d+$`),
		"prometheus":   regexp.MustCompile(`^prom/prometheus:v3\.\d+\.\d+$`),
		"alertmanager": regexp.MustCompile(`^prom/alertmanager:v0\.31\.1$`),
	}
	for name, re := range pins {
		if img := c.Services[name].Image; !re.MatchString(img) {
			t.Errorf("service %s image %q does not match %s", name, img, re)
		}
	}
	for _, name := range []string{"simulator", "webhook"} {
		if c.Services[name].Build == nil {
			t.Errorf("service %s is not built from the repository", name)
		}
	}
	allowed := strings.Split(c.Services["grafana"].Environment["GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS"], ",")
	for _, id := range []string{ids.app, ids.datasource, ids.panel} {
		if !slices.Contains(allowed, id) {
			t.Errorf("GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS %v lacks %s", allowed, id)
		}
	}
	for name, svc := range c.Services {
		for _, v := range svc.Volumes {
			src := strings.Split(v, ":")[0]
			if !strings.HasPrefix(src, "./") || src == "./dist" { // named volumes; dist/ is built
				continue
			}
			if _, err := os.Stat(dashPath(src)); err != nil {
				t.Errorf("service %s mounts %s, which does not exist", name, src)
			}
		}
	}
	if _, err := os.Stat(dashPath("provisioning", "simulator", "Dockerfile")); err != nil {
		t.Error(err)
	}
	// The webhook shares Alertmanager's network and listens where the example
	// config sends the rollback.
	am := string(dashRead(t, "rules", "alertmanager", "alertmanager.yml"))
	hook := c.Services["webhook"]
	if hook.NetworkMode != "service:alertmanager" || len(hook.Entrypoint) == 0 {
		t.Fatalf("webhook service: network_mode %q, entrypoint %v", hook.NetworkMode, hook.Entrypoint)
	}
	listen := hook.Entrypoint[len(hook.Entrypoint)-1]
	if !strings.Contains(am, "http://"+listen+"/") {
		t.Errorf("the webhook listens on %s, but rules/alertmanager/alertmanager.yml sends elsewhere", listen)
	}
	// The compose Prometheus config scrapes the simulator as the demo does.
	var promCfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			HonorLabels   bool                         `yaml:"honor_labels"`
			Native        bool                         `yaml:"scrape_native_histograms"`
			AlwaysClassic bool                         `yaml:"always_scrape_classic_histograms"`
			StaticConfigs []struct{ Targets []string } `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	dashYAML(t, &promCfg, "provisioning", "prometheus", "prometheus.yml")
	if len(promCfg.ScrapeConfigs) != 1 || !promCfg.ScrapeConfigs[0].HonorLabels || !promCfg.ScrapeConfigs[0].Native || !promCfg.ScrapeConfigs[0].AlwaysClassic {
		t.Errorf("provisioning/prometheus/prometheus.yml must scrape the simulator with honor_labels, native and classic histograms: %+v", promCfg.ScrapeConfigs)
	}
	promMounts := dashComposeMounts(t, "prometheus")
	for _, rf := range promCfg.RuleFiles {
		dir, file := filepath.Split(rf)
		if src := promMounts[strings.TrimSuffix(dir, "/")]; src == "" {
			t.Errorf("rule file %s is not mounted into the prometheus service", rf)
		} else if _, err := os.Stat(dashPath(src, file)); err != nil {
			t.Errorf("rule file %s: %v", rf, err)
		}
	}
	out, err := exec.Command(dashPinned(t, "promtool"), "check", "config", "--syntax-only", dashPath("provisioning", "prometheus", "prometheus.yml")).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check config --syntax-only: %v\n%s", err, out)
	}
}

func dashPinned(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(dashPath(".tools", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `bash tools/install.sh` (%v)", name, err)
	}
	return p
}

// dashBuild builds the pairwise command into a temporary directory.
func dashBuild(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pairwise")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/pairwise")
	cmd.Dir = dashRoot
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build pairwise: %v\n%s", err, b)
	}
	return out
}

// dashStart runs a server until the test ends and stops it by its PID.
func dashStart(t *testing.T, dir, name, bin string, args ...string) string {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	return logPath
}

func dashWaitHTTP(t *testing.T, u, logPath string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("%s not ready after 60s; log:\n%s", u, b)
}

// TestSimulatorScrapedAsNativeHistograms: `pairwise simulate` on a free port,
// scraped every second by the pinned Prometheus 3 with native histograms on,
// yields native histogram samples for both fleets, classic buckets beside
// them, and the series labels of pairwise-gen's backfill.
func TestSimulatorScrapedAsNativeHistograms(t *testing.T) {
	bin := dashBuild(t)
	dir := t.TempDir()

	simPort := dashFreePort(t)
	simLog := dashStart(t, dir, "simulator", bin, "simulate", "--listen", "127.0.0.1:"+simPort, "--scenario", "regression", "--pods", "3")
	dashWaitHTTP(t, "http://127.0.0.1:"+simPort+"/metrics", simLog)

	// The text exposition (no protobuf Accept header) carries the classic buckets.
	resp, err := http.Get("http://127.0.0.1:" + simPort + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`http_request_duration_seconds_bucket{instance="checkout-canary-0:8080",job="checkout",pod="checkout-canary-0",service="checkout",track="canary",le="0.001"}`,
		`http_request_duration_seconds_bucket{instance="checkout-baseline-2:8080",job="checkout",pod="checkout-baseline-2",service="checkout",track="baseline",le="+Inf"}`,
		`http_requests_total{code="500",instance="checkout-canary-1:8080"`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the text exposition lacks %s", want)
		}
	}

	prom := testenv.Prometheus(t, testenv.PromOptions{Config: fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: pairwise-simulator
    honor_labels: true
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: ['127.0.0.1:%s']
`, simPort)})
	promURL := prom.URL

	type sample struct {
		Metric     map[string]string `json:"metric"`
		Histograms [][2]json.RawMessage
		Values     [][2]any
	}
	query := func(q string) []sample {
		resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Data   struct {
				Result []sample `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
			t.Fatalf("query %s: %v %s", q, err, body.Error)
		}
		return body.Data.Result
	}
	// Wait for at least three scrapes of each pod (native histogram samples).
	deadline := time.Now().Add(30 * time.Second)
	var native []sample
	for time.Now().Before(deadline) {
		native = query(`http_request_duration_seconds[10s]`)
		enough := len(native) == 6
		for _, s := range native {
			enough = enough && len(s.Histograms) >= 3
		}
		if enough {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	fleets := map[string]int{}
	for _, s := range native {
		if len(s.Histograms) < 3 {
			t.Errorf("%v: %d native histogram samples, want >= 3 (a scrape per second)", s.Metric, len(s.Histograms))
		}
		pod := s.Metric["pod"]
		if s.Metric["job"] != "checkout" || s.Metric["instance"] != pod+":8080" || s.Metric["service"] != "checkout" {
			t.Errorf("stored labels %v are not pairwise-gen's", s.Metric)
		}
		fleets[s.Metric["track"]]++
	}
	if fleets["baseline"] != 3 || fleets["canary"] != 3 {
		t.Fatalf("native histogram series per fleet = %v, want 3 baseline and 3 canary; Prometheus log:\n%s", fleets, prom.LogTail(40))
	}
	// The fleet-merged native histogram gives a p99 for each fleet, and the
	// classic buckets are stored beside it.
	for _, q := range []string{
		`histogram_quantile(0.99, sum by (track) (rate(http_request_duration_seconds[5s])))`,
		`histogram_quantile(0.99, sum by (track, le) (rate(http_request_duration_seconds_bucket[5s])))`,
	} {
		got := query(q)
		var tracks []string
		for _, s := range got {
			tracks = append(tracks, s.Metric["track"])
		}
		sort.Strings(tracks)
		if !slices.Equal(tracks, []string{"baseline", "canary"}) {
			t.Errorf("%s: fleets %v, want baseline and canary", q, tracks)
		}
	}
}

func dashFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
