package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/pkg/exposition"
)

// The dashboard's files and model, shared by the static checks
// (dashboard_static_test.go) and the live ones (dashboard_live_test.go).

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
	// FieldConfig holds the thresholds a panel draws.
	FieldConfig struct {
		Defaults struct {
			Thresholds struct {
				Steps []struct {
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
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
