package e2e

// Static checks of the dashboard, its provisioning and the compose stack:
// files only (and promtool's syntax check), no server started.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

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
			// Explore opens the data source the dashboard's Prometheus
			// variable holds, whatever its uid where the dashboard is
			// imported.
			uid, _ := p.Options["prometheusDatasourceUid"].(string)
			name, isVar := strings.CutPrefix(strings.TrimSuffix(uid, "}"), "${")
			ok := false
			for _, v := range d.Templating.List {
				q, _ := v.Query.(string)
				ok = ok || isVar && v.Name == name && v.Type == "datasource" && q == "prometheus"
			}
			if !ok {
				t.Errorf("the Pairwise panel's Explore links go to data source %q, not the dashboard's Prometheus data source variable", uid)
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
	for _, name := range []string{"canary:http_request_duration_seconds:decision_60m", "canary_fleet:http_request_duration_seconds_count:rate1m",
		"canary:http_request_duration_seconds:evidence_60m", "canary:http_request_duration_seconds:recent_evidence",
		"canary:http_request_duration_seconds:promote_evidence_60m", "canary:http_request_duration_seconds:evidence_inputs_1m"} {
		if !usedRecords[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	// The evidence panel's dashed lines are the default pack's boundaries
	// (watched every minute), as its header prints them.
	c := verdict.Default()
	want := []string{fmt.Sprintf("%.2f", -c.PromoteBoundary(false)), fmt.Sprintf("%.2f", c.RollbackBoundary(false))}
	found := false
	for _, p := range dashAllPanels(d.Panels) {
		if !strings.HasPrefix(p.Title, "Evidence (rule pack)") {
			continue
		}
		found = true
		var got []string
		for _, s := range p.FieldConfig.Defaults.Thresholds.Steps {
			if s.Value != nil {
				got = append(got, fmt.Sprintf("%.2f", *s.Value))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("the evidence panel draws boundaries %v, want the default pack's %v", got, want)
		}
	}
	if !found {
		t.Error("the dashboard has no evidence panel")
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
	out, err := exec.Command(testenv.Binary(t, "promtool"), "check", "config", "--syntax-only", dashPath("provisioning", "prometheus", "prometheus.yml")).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check config --syntax-only: %v\n%s", err, out)
	}
}
