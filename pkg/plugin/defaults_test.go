package plugin

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

var updateRuleDefaults = flag.Bool("update-frontend", false, "rewrite src/datasource/ruleDefaults.json from verdict.Default()")

// TestRuleDefaultsAreGenerated keeps src/datasource/ruleDefaults.json, the
// query editor's defaults of the window rule and the evidence rule's budgets,
// equal to verdict.Default(). (The other verdict numbers are in
// defaults.json, which pkg/verdict generates.)
func TestRuleDefaultsAreGenerated(t *testing.T) {
	d := verdict.Default()
	want, err := json.MarshalIndent(map[string]any{
		"rule":          d.Rule,
		"falseRollback": d.FalseRollback,
		"falsePromote":  d.FalsePromote,
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	path := filepath.Join("..", "..", "src", "datasource", "ruleDefaults.json")
	if *updateRuleDefaults {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from verdict.Default(); regenerate it: go test ./pkg/plugin -run TestRuleDefaultsAreGenerated -update-frontend", path)
	}
}
