package verdict

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var updateFrontend = flag.Bool("update-frontend", false, "rewrite src/datasource/defaults.json from Default()")

// frontendDefaults is what the query editor starts from: the query fields of
// Default(), so the editor's defaults are this package's, not a copy.
func frontendDefaults() ([]byte, error) {
	d := Default()
	b, err := json.MarshalIndent(map[string]any{
		"quantiles":           d.Quantiles,
		"verdictQuantile":     d.VerdictQuantile,
		"promoteThreshold":    d.PromoteThreshold,
		"rollbackThreshold":   d.RollbackThreshold,
		"windowMinutes":       d.WindowMinutes,
		"goodNeeded":          d.GoodNeeded,
		"badLimit":            d.BadLimit,
		"warmupMinutes":       d.WarmupMinutes,
		"minTailObservations": d.MinTailObservations,
		"significance":        d.Significance,
		"expectedCanaryShare": d.ExpectedCanaryShare,
	}, "", "  ")
	return append(b, '\n'), err
}

// TestFrontendDefaultsAreGenerated keeps src/datasource/defaults.json, which
// the query editor imports, equal to Default().
func TestFrontendDefaultsAreGenerated(t *testing.T) {
	want, err := frontendDefaults()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "src", "datasource", "defaults.json")
	if *updateFrontend {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Compared as JSON values: the front end's formatter may lay it out its own way.
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Fatalf("%s differs from verdict.Default(); regenerate it: go test ./pkg/verdict -run TestFrontendDefaultsAreGenerated -update-frontend", path)
	}
}
