package verdict

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Limit is the range Validate accepts for one number of Config. The query
// editor checks the same ranges: they reach it in src/contract.json
// (Contract), so this table is the only place they are written.
type Limit struct {
	// Min and Max bound the value (nil: unbounded); MinOpen and MaxOpen
	// leave the bound itself out.
	Min     *float64 `json:"min,omitempty"`
	MinOpen bool     `json:"minOpen,omitempty"`
	Max     *float64 `json:"max,omitempty"`
	MaxOpen bool     `json:"maxOpen,omitempty"`
	// Off, when set, is a value accepted outside the range that turns the
	// setting off (significance 0).
	Off *float64 `json:"off,omitempty"`
	// Whole: a whole number.
	Whole bool `json:"whole,omitempty"`
	// Above and Below name the field the value must be above or below.
	Above string `json:"above,omitempty"`
	Below string `json:"below,omitempty"`
	// AtMostWindowUnder names the rule under which the value must also be
	// at most windowMinutes (the counts that decide only under that rule).
	AtMostWindowUnder string `json:"atMostWindowUnder,omitempty"`
	// Divides, when set, is a number the value must divide (a scrape
	// interval divides a minute).
	Divides float64 `json:"divides,omitempty"`
}

func bound(v float64) *float64 { return &v }

// Limits are the ranges of Config's numbers, by JSON name. Quantiles holds
// the range of each listed quantile.
var Limits = map[string]Limit{
	"falseRollback":    {Min: bound(0), MinOpen: true, Max: bound(0.5)},
	"falsePromote":     {Min: bound(0), MinOpen: true, Max: bound(0.5)},
	"quantiles":        {Min: bound(0), MinOpen: true, Max: bound(1), MaxOpen: true},
	"verdictQuantile":  {Min: bound(0), MinOpen: true, Max: bound(1), MaxOpen: true},
	"promoteThreshold": {Min: bound(0), MinOpen: true},
	// rollbackThreshold: above 1, or the rule's alternative is no
	// heavier tail (1: it never decides; below 1 it rolls back the faster
	// canary and promotes the slower).
	"rollbackThreshold":        {Min: bound(1), MinOpen: true, Above: "promoteThreshold"},
	"windowMinutes":            {Min: bound(1), Max: bound(7 * 24 * 60), Whole: true},
	"goodNeeded":               {Min: bound(1), Whole: true, AtMostWindowUnder: RuleReference},
	"badLimit":                 {Min: bound(1), Whole: true, AtMostWindowUnder: RuleReference},
	"warmupMinutes":            {Min: bound(0), Whole: true, Below: "windowMinutes"},
	"minTailObservations":      {Min: bound(0)},
	"confidence":               {Min: bound(0), MinOpen: true, Max: bound(1), MaxOpen: true},
	"significance":             {Min: bound(0.5), Max: bound(1), MaxOpen: true, Off: bound(0)},
	"suspiciousWin":            {Min: bound(0), Below: "promoteThreshold"},
	"maxShareDrift":            {Min: bound(0), MinOpen: true},
	"expectedCanaryShare":      {Min: bound(0), Max: bound(1), MaxOpen: true},
	"maxShareDeviation":        {Min: bound(0), MinOpen: true},
	"maxMeasurementDivergence": {Min: bound(0), MinOpen: true},
	"scrapeIntervalSeconds":    {Min: bound(1), Max: bound(60), Whole: true, Divides: 60},
	// minRollbackMinutes: up to 4, the minutes the dispersion needs
	// (MinChanges + 1), and the most for which k-1 capped minutes stay
	// below a deployment's boundary when every alternative is capped at
	// the defaults ((k-1)/k x (7.6 + ln 9) < 7.6 only for k <= 4;
	// MinuteCap lowers the cap where the budget makes the boundary lower).
	"minRollbackMinutes": {Min: bound(2), Max: bound(MinChanges + 1), Whole: true},
}

// numbers are Config's numbers by JSON name, in the order Validate reads them.
func (c Config) numbers() []struct {
	name string
	v    float64
} {
	return []struct {
		name string
		v    float64
	}{{"falseRollback", c.FalseRollback}, {"falsePromote", c.FalsePromote}, {"verdictQuantile", c.VerdictQuantile},
		{"promoteThreshold", c.PromoteThreshold}, {"rollbackThreshold", c.RollbackThreshold}, {"minTailObservations", c.MinTailObservations},
		{"confidence", c.Confidence}, {"significance", c.Significance}, {"suspiciousWin", c.SuspiciousWin}, {"maxShareDrift", c.MaxShareDrift},
		{"expectedCanaryShare", c.ExpectedCanaryShare}, {"maxShareDeviation", c.MaxShareDeviation}, {"maxMeasurementDivergence", c.MaxMeasurementDivergence},
		{"windowMinutes", float64(c.WindowMinutes)}, {"goodNeeded", float64(c.GoodNeeded)}, {"badLimit", float64(c.BadLimit)}, {"warmupMinutes", float64(c.WarmupMinutes)},
		{"scrapeIntervalSeconds", float64(c.ScrapeIntervalSeconds)}, {"minRollbackMinutes", float64(c.MinRollbackMinutes)}}
}

// Settings are c's numbers by their JSON names: every number the minutes'
// verdicts and the window's decision rest on, set or default, as a frame's
// metadata carries them.
func (c Config) Settings() map[string]float64 {
	out := make(map[string]float64)
	for _, f := range c.numbers() {
		out[f.name] = f.v
	}
	return out
}

func (c Config) number(name string) float64 {
	for _, f := range c.numbers() {
		if f.name == name {
			return f.v
		}
	}
	return math.NaN()
}

// accepts says whether field's limit accepts v in c.
func accepts(field string, v float64, c Config) bool {
	l, ok := Limits[field]
	if !ok {
		return true
	}
	if l.Off != nil && v == *l.Off {
		return true
	}
	ok = !(l.Whole && v != math.Trunc(v))
	if l.Min != nil {
		ok = ok && (v > *l.Min || !l.MinOpen && v == *l.Min)
	}
	if l.Max != nil {
		ok = ok && (v < *l.Max || !l.MaxOpen && v == *l.Max)
	}
	if l.Above != "" {
		ok = ok && v > c.number(l.Above)
	}
	if l.Below != "" {
		ok = ok && v < c.number(l.Below)
	}
	if l.AtMostWindowUnder != "" && c.Rule == l.AtMostWindowUnder {
		ok = ok && v <= float64(c.WindowMinutes)
	}
	if l.Divides != 0 {
		ok = ok && v != 0 && math.Mod(l.Divides, v) == 0
	}
	return ok
}

// FlagText is the plain sentence that says what a window flag means, with
// the limits of c where the flag has one; an unknown flag is its own text.
// The panel shows it beside a flagged decision.
func FlagText(flag string, c Config) string {
	switch flag {
	case FlagTrafficParity:
		return "Traffic parity: the fleets do not see the same share of requests or the same error ratio, so the comparison may not be fair."
	case FlagSuspiciousWin:
		return "Suspicious win: the canary is far faster than the baseline; check for a change in traffic mix before promoting."
	case FlagMeasurementDivergence:
		return fmt.Sprintf("Measurement divergence: application and load-balancer histograms disagree by more than %.0f%%.", c.MaxMeasurementDivergence*100)
	case FlagFleetMissing:
		return "Fleet missing: in some minutes one fleet served traffic and the other had none."
	case FlagPartialFleet:
		return "Partial fleet: in some minutes a serving fleet member did not report, so those minutes are neither good nor bad."
	case FlagPartialResponse:
		return "Partial response: Prometheus (or Thanos, Mimir) warned that its answer may be incomplete; the window holds."
	case FlagSharedSeries:
		return "Shared series: some series were selected by both the baseline and the canary selector, so those pods' requests count on both sides; make the selectors exclusive."
	}
	return flag
}

// Flags lists every window flag.
var Flags = []string{FlagTrafficParity, FlagSuspiciousWin, FlagMeasurementDivergence, FlagFleetMissing, FlagPartialFleet, FlagPartialResponse, FlagSharedSeries}

// FlagTexts are the texts of flags under c, by flag.
func FlagTexts(flags []string, c Config) map[string]string {
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		out[f] = FlagText(f, c)
	}
	return out
}

// Text is how the panel names a verdict: "insufficient data" for insufficient.
func (v Verdict) Text() string {
	switch v {
	case Insufficient:
		return "insufficient data"
	case NoData:
		return "no data"
	case Partial:
		return "partial fleet"
	}
	return string(v)
}

// Decisions lists every decision in code order.
var Decisions = []Decision{Promote, Hold, Rollback}

// QueryFields are the JSON names of the Config fields a data source query
// may set: those of Overrides and expectedCanaryShare.
func QueryFields() []string {
	var names []string
	t := reflect.TypeOf(Overrides{})
	for i := 0; i < t.NumField(); i++ {
		names = append(names, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return append(names, "expectedCanaryShare")
}

// Named is a name with its numeric code and the text the panel shows.
type Named struct {
	Name string `json:"name"`
	Code int    `json:"code"`
	Text string `json:"text"`
}

// ContractDoc is the front end's contract with this package: the query
// fields with their defaults and limits, the rules, and the names, codes
// and texts of verdicts, decisions and flags. src/contract.json is it,
// generated by a test that fails when the two differ.
type ContractDoc struct {
	Fields    []string         `json:"fields"`
	Defaults  map[string]any   `json:"defaults"`
	Limits    map[string]Limit `json:"limits"`
	Rules     []string         `json:"rules"`
	Verdicts  []Named          `json:"verdicts"`
	Decisions []Named          `json:"decisions"`
	Flags     []Named          `json:"flags"`
	// MaxQuantiles is how many quantiles a query may list.
	MaxQuantiles int `json:"maxQuantiles"`
}

// Contract builds the front end's contract from Default and Limits.
func Contract() (ContractDoc, error) {
	d := Default()
	var all map[string]any
	b, err := json.Marshal(d)
	if err != nil {
		return ContractDoc{}, err
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return ContractDoc{}, err
	}
	doc := ContractDoc{Fields: QueryFields(), Defaults: map[string]any{}, Limits: map[string]Limit{}, Rules: []string{RuleEvidence, RuleReference}, MaxQuantiles: MaxQuantiles}
	for _, f := range doc.Fields {
		v, ok := all[f]
		if !ok {
			return ContractDoc{}, fmt.Errorf("query field %s is not a field of Config", f)
		}
		doc.Defaults[f] = v
		if l, ok := Limits[f]; ok {
			doc.Limits[f] = l
		}
	}
	for i, v := range Verdicts {
		doc.Verdicts = append(doc.Verdicts, Named{Name: string(v), Code: i, Text: v.Text()})
	}
	for i, dec := range Decisions {
		doc.Decisions = append(doc.Decisions, Named{Name: string(dec), Code: i, Text: string(dec)})
	}
	for i, f := range Flags {
		doc.Flags = append(doc.Flags, Named{Name: f, Code: i, Text: FlagText(f, d)})
	}
	return doc, nil
}
