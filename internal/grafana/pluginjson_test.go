package grafana

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// root is the repository root, seen from this package.
const root = "../.."

func repoPath(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }

func readRepo(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pluginJSONs are the app's plugin.json files, relative to src/ (and dist/).
var pluginJSONs = []string{"plugin.json", "datasource/plugin.json", "panel/plugin.json"}

// TestPluginJSONSchema validates every plugin.json, as written in src/ and
// as the build ships it in dist/, against Grafana's plugin.json schema
// (testdata/plugin.schema.json, copied from Grafana's repository).
func TestPluginJSONSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(readRepo(t, "internal", "grafana", "testdata", "plugin.schema.json")))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://grafana.com/plugin-metadata"
	if err := c.AddResource(url, schemaDoc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"src", "dist"} {
		for _, p := range pluginJSONs {
			t.Run(dir+"/"+p, func(t *testing.T) {
				b, err := os.ReadFile(repoPath(dir, p))
				if dir == "dist" && os.IsNotExist(err) {
					t.Fatalf("%s/%s is missing: build the plugin first (npm run build; scripts/test.sh does)", dir, p)
				}
				if err != nil {
					t.Fatal(err)
				}
				doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				if err := schema.Validate(doc); err != nil {
					t.Fatalf("%s/%s does not follow Grafana's plugin.json schema:\n%v", dir, p, err)
				}
			})
		}
	}
	// The schema is not a formality: it refuses what Grafana refuses.
	for name, bad := range map[string]string{
		"unknown key":       `{"type":"app","name":"x","id":"pairwise-canary-app","info":{"keywords":["x"],"logos":{"small":"a","large":"a"},"version":"1.0.0","updated":"2026-01-01"},"dependencies":{"grafanaDependency":">=12.4.0"},"prometheusUrl":"x"}`,
		"id of no type":     `{"type":"app","name":"x","id":"pairwise","info":{"keywords":["x"],"logos":{"small":"a","large":"a"},"version":"1.0.0","updated":"2026-01-01"},"dependencies":{"grafanaDependency":">=12.4.0"}}`,
		"no keywords":       `{"type":"app","name":"x","id":"pairwise-canary-app","info":{"keywords":[],"logos":{"small":"a","large":"a"},"version":"1.0.0","updated":"2026-01-01"},"dependencies":{"grafanaDependency":">=12.4.0"}}`,
		"no grafana dep":    `{"type":"app","name":"x","id":"pairwise-canary-app","info":{"keywords":["x"],"logos":{"small":"a","large":"a"},"version":"1.0.0","updated":"2026-01-01"},"dependencies":{}}`,
		"screenshot no url": `{"type":"app","name":"x","id":"pairwise-canary-app","info":{"keywords":["x"],"logos":{"small":"a","large":"a"},"screenshots":[{"url":"x"}],"version":"1.0.0","updated":"2026-01-01"},"dependencies":{"grafanaDependency":">=12.4.0"}}`,
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if schema.Validate(doc) == nil {
			t.Errorf("the schema accepts a plugin.json with %s", name)
		}
	}
}

type pluginJSON struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	AutoEnabled bool   `json:"autoEnabled"`
	Backend     bool   `json:"backend"`
	Alerting    bool   `json:"alerting"`
	Executable  string `json:"executable"`
	Info        struct {
		Version     string `json:"version"`
		Screenshots []struct {
			Name string `json:"name"`
			Path string `json:"path"`
		} `json:"screenshots"`
	} `json:"info"`
	Includes []struct {
		Type string `json:"type"`
		Path string `json:"path"`
	} `json:"includes"`
	Dependencies struct {
		GrafanaDependency string `json:"grafanaDependency"`
	} `json:"dependencies"`
}

func loadPlugin(t *testing.T, parts ...string) pluginJSON {
	t.Helper()
	var p pluginJSON
	if err := json.Unmarshal(readRepo(t, parts...), &p); err != nil {
		t.Fatalf("%s: %v", filepath.Join(parts...), err)
	}
	return p
}

// TestInstallable: what a user installing the plugin into a Grafana of their
// own needs. The app enables itself (autoEnabled), so its nested data source
// and panel are usable at once; every plugin asks for the Grafana the
// @grafana packages it is built and tested with belong to, and so does the
// compose file; the screenshots ship.
func TestInstallable(t *testing.T) {
	app := loadPlugin(t, "src", "plugin.json")
	if !app.AutoEnabled {
		t.Error("src/plugin.json: the app is not autoEnabled, so its nested data source and panel stay disabled after a manual install until someone enables the app")
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(readRepo(t, "package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	tested := ""
	for _, name := range []string{"@grafana/data", "@grafana/ui", "@grafana/runtime", "@grafana/schema"} {
		v := pkg.Dependencies[name]
		if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
			t.Fatalf("package.json pins %s to %q, not an exact version", name, v)
		}
		if tested == "" {
			tested = v
		} else if v != tested {
			t.Errorf("package.json: %s %s differs from the other @grafana packages (%s)", name, v, tested)
		}
	}
	want := ">=" + majorMinor(tested) + ".0"
	for _, p := range pluginJSONs {
		if got := loadPlugin(t, append([]string{"src"}, strings.Split(p, "/")...)...).Dependencies.GrafanaDependency; got != want {
			t.Errorf("src/%s: grafanaDependency %q, want %q (the @grafana packages are %s)", p, got, want, tested)
		}
	}
	var compose struct {
		Services map[string]struct {
			Image string `yaml:"image"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(readRepo(t, "docker-compose.yaml"), &compose); err != nil {
		t.Fatal(err)
	}
	image := compose.Services["grafana"].Image
	if v := strings.TrimPrefix(image, "grafana/grafana:"); majorMinor(v) != majorMinor(tested) {
		t.Errorf("docker-compose.yaml runs %s, not the Grafana %s.x the plugin is built against", image, majorMinor(tested))
	}
	if len(app.Info.Screenshots) == 0 {
		t.Error("src/plugin.json has no screenshots")
	}
	for _, s := range app.Info.Screenshots {
		for _, dir := range []string{"src", "dist"} {
			b, err := os.ReadFile(repoPath(dir, s.Path))
			if err != nil {
				t.Errorf("screenshot %q: %v", s.Name, err)
				continue
			}
			if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("%s/%s is not a PNG", dir, s.Path)
			}
		}
	}
	// The app provisioning file is there for Grafanas that turned
	// autoEnabled apps off, and says the same thing.
	var apps struct {
		Apps []struct {
			Type     string `yaml:"type"`
			Disabled bool   `yaml:"disabled"`
		} `yaml:"apps"`
	}
	if err := yaml.Unmarshal(readRepo(t, "provisioning", "plugins", "apps.yaml"), &apps); err != nil {
		t.Fatal(err)
	}
	if len(apps.Apps) != 1 || apps.Apps[0].Type != app.ID || apps.Apps[0].Disabled {
		t.Errorf("provisioning/plugins/apps.yaml does not enable %s: %+v", app.ID, apps.Apps)
	}
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// Platforms Grafana runs on, and the executable names Grafana looks for
// there (<executable>_<os>_<arch>[.exe]).
var platforms = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "arm"},
	{"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"},
}

func executableName(exe, goos, goarch string) string {
	name := exe + "_" + goos + "_" + goarch
	if goos == "windows" {
		name += ".exe"
	}
	return name
}

// TestBackendForEveryPlatform: `mage -v` built the backend for every
// platform Grafana runs on, each an executable for that platform, and the
// one this machine runs reports the data source's id and the package version
// as its build info (`-buildinfo`, printed by the SDK).
func TestBackendForEveryPlatform(t *testing.T) {
	ds := loadPlugin(t, "src", "datasource", "plugin.json")
	if !ds.Backend || !ds.Alerting || ds.Executable == "" {
		t.Fatalf("src/datasource/plugin.json: backend %v, alerting %v, executable %q", ds.Backend, ds.Alerting, ds.Executable)
	}
	magic := map[string][]byte{"linux": []byte("\x7fELF"), "darwin": {0xcf, 0xfa, 0xed, 0xfe}, "windows": []byte("MZ")}
	for _, p := range platforms {
		path := repoPath("dist", "datasource", executableName(ds.Executable, p.goos, p.goarch))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("no backend for %s/%s: %v (run `mage -v`, which builds every platform)", p.goos, p.goarch, err)
			continue
		}
		if !bytes.HasPrefix(b, magic[p.goos]) {
			t.Errorf("%s is not a %s executable", path, p.goos)
		}
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(readRepo(t, "package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	exe := repoPath("dist", "datasource", executableName(ds.Executable, runtime.GOOS, runtime.GOARCH))
	out, err := exec.Command(exe, "-buildinfo").Output()
	if err != nil {
		t.Fatalf("%s -buildinfo: %v", exe, err)
	}
	var info struct {
		Time     int64  `json:"time"`
		PluginID string `json:"pluginID"`
		Version  string `json:"version"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("build info %q: %v", out, err)
	}
	if info.PluginID != ds.ID || info.Version != pkg.Version || info.Time == 0 {
		t.Errorf("build info %s: want pluginID %s, version %s and a build time", out, ds.ID, pkg.Version)
	}
	if v, err := exec.Command(exe, "-version").Output(); err != nil || strings.TrimSpace(string(v)) != pkg.Version {
		t.Errorf("%s -version: %q, %v; want %s", exe, v, err, pkg.Version)
	}
}
