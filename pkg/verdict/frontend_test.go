package verdict

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var updateContract = flag.Bool("update-contract", false, "rewrite src/contract.json from Contract()")

// contractPath is the front end's copy of Contract(), which the query
// editor and the panel import.
var contractPath = filepath.Join("..", "..", "src", "contract.json")

func contractJSON(t *testing.T) []byte {
	t.Helper()
	doc, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestContractIsGenerated keeps src/contract.json equal to Contract(): the
// front end's defaults, limits, names and texts are this package's.
func TestContractIsGenerated(t *testing.T) {
	want := contractJSON(t)
	if *updateContract {
		if err := os.WriteFile(contractPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(contractPath)
	if err != nil {
		t.Fatal(err)
	}
	// Compared as JSON values: the front end's formatter may lay it out its own way.
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("%s: %v", contractPath, err)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Fatalf("%s differs from verdict.Contract(); regenerate it: go test ./pkg/verdict -run TestContractIsGenerated -update-contract", contractPath)
	}
}

// TestValidateKeepsTheLimits: every limit of the contract is what Validate
// accepts, at and beside its bounds.
func TestValidateKeepsTheLimits(t *testing.T) {
	set := func(c *Config, field string, v float64) {
		switch field {
		case "windowMinutes":
			c.WindowMinutes = int(v)
		case "goodNeeded":
			c.GoodNeeded = int(v)
		case "badLimit":
			c.BadLimit = int(v)
		case "warmupMinutes":
			c.WarmupMinutes = int(v)
		case "scrapeIntervalSeconds":
			c.ScrapeIntervalSeconds = int(v)
		case "minRollbackMinutes":
			c.MinRollbackMinutes = int(v)
		case "quantiles":
			c.Quantiles = []float64{v}
		default:
			b, _ := json.Marshal(map[string]float64{field: v})
			if err := json.Unmarshal(b, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	for field, l := range Limits {
		for _, tt := range []struct {
			bound *float64
			open  bool
			step  float64
		}{{l.Min, l.MinOpen, -1}, {l.Max, l.MaxOpen, 1}} {
			if tt.bound == nil {
				continue
			}
			c := Default()
			set(&c, field, *tt.bound)
			if err := c.Validate(); (err == nil) == tt.open && (l.Off == nil || *l.Off != *tt.bound) {
				t.Errorf("%s = %v (open %v): Validate() = %v", field, *tt.bound, tt.open, err)
			}
			c = Default()
			set(&c, field, *tt.bound+tt.step*0.25)
			if l.Whole { // a quarter step is set as a whole number: a whole step out
				set(&c, field, *tt.bound+tt.step)
			}
			if err := c.Validate(); err == nil && (l.Off == nil || *l.Off != *tt.bound+tt.step*0.25) {
				t.Errorf("%s beyond %v: Validate() accepts it", field, *tt.bound)
			}
		}
	}
}

// TestScrapeIntervalDividesAMinute: an interval that does not divide a
// minute gives minutes of different lengths, which Validate refuses.
func TestScrapeIntervalDividesAMinute(t *testing.T) {
	for _, tt := range []struct {
		seconds int
		ok      bool
	}{{1, true}, {10, true}, {15, true}, {20, true}, {30, true}, {60, true}, {25, false}, {45, false}, {0, false}, {120, false}} {
		c := Default()
		c.ScrapeIntervalSeconds = tt.seconds
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("scrapeIntervalSeconds %d: Validate() = %v", tt.seconds, err)
		}
	}
}

func TestFlagText(t *testing.T) {
	c := Default()
	c.MaxMeasurementDivergence = 0.3
	if got := FlagText(FlagMeasurementDivergence, c); got != "Measurement divergence: application and load-balancer histograms disagree by more than 30%." {
		t.Fatal(got)
	}
	for _, f := range Flags {
		if FlagText(f, c) == f {
			t.Errorf("flag %s has no text", f)
		}
	}
	if FlagText("something-new", c) != "something-new" {
		t.Fatal("an unknown flag is its own text")
	}
}

// TestSettingsCarryEveryNumber: Settings holds every number of Config by
// its JSON name, with the value the JSON encoding of the configuration has,
// so a frame's metadata names every setting its decision rests on.
func TestSettingsCarryEveryNumber(t *testing.T) {
	c := Default()
	c.MinRollbackMinutes, c.ScrapeIntervalSeconds, c.Significance = 3, 30, 0.99
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var encoded map[string]any
	if err := json.Unmarshal(b, &encoded); err != nil {
		t.Fatal(err)
	}
	got := c.Settings()
	for name, v := range encoded {
		f, ok := v.(float64)
		if !ok {
			continue // not a number: the rule, the quantile list
		}
		if s, ok := got[name]; !ok || s != f {
			t.Errorf("Settings()[%q] = %v (present %v), the configuration has %v", name, s, ok, f)
		}
	}
	if len(got) == 0 {
		t.Fatal("no settings")
	}
}
