// Package verdict holds Pairwise's one definition of a good, bad, neutral,
// insufficient and no-data minute, and of the window decision. The panel, the
// command-line judge, Grafana alerting and the generated Prometheus rule pack
// all take their thresholds from Config.
package verdict

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is every number that decides a verdict. Default gives the values of
// the paired-fleet canary reference; every field can be overridden.
type Config struct {
	// Quantiles shown for both fleets every minute.
	Quantiles []float64 `json:"quantiles" yaml:"quantiles"`
	// VerdictQuantile is the quantile whose canary/baseline ratio judges a minute.
	VerdictQuantile float64 `json:"verdictQuantile" yaml:"verdictQuantile"`
	// Rule decides a window: RuleEvidence (the default) pools tail
	// observations over its minutes and tests them sequentially;
	// RuleReference counts good and bad minutes as the chapter does.
	Rule string `json:"rule" yaml:"rule"`
	// FalseRollback is the evidence rule's budget of false rollbacks: at most
	// this share of deployments of a canary identical to its baseline is
	// rolled back over every look at the window anchored at its start, and a
	// canary watched every minute is falsely rolled back at most once in
	// 1/FalseRollback days (docs/judgement.md).
	FalseRollback float64 `json:"falseRollback" yaml:"falseRollback"`
	// FalsePromote is the evidence rule's budget of promoting a canary that is
	// RollbackThreshold times slower in the tail, with the same looks.
	FalsePromote float64 `json:"falsePromote" yaml:"falsePromote"`
	// A minute is good when ratio <= PromoteThreshold, bad when ratio >= RollbackThreshold.
	PromoteThreshold  float64 `json:"promoteThreshold" yaml:"promoteThreshold"`
	RollbackThreshold float64 `json:"rollbackThreshold" yaml:"rollbackThreshold"`
	// WindowMinutes is the number of wall-clock minutes judged together.
	WindowMinutes int `json:"windowMinutes" yaml:"windowMinutes"`
	// The window rolls back when bad >= BadLimit, else promotes when good >= GoodNeeded.
	GoodNeeded int `json:"goodNeeded" yaml:"goodNeeded"`
	BadLimit   int `json:"badLimit" yaml:"badLimit"`
	// WarmupMinutes: a minute is warm-up, shown but not counted, when the
	// canary had no traffic WarmupMinutes minutes earlier.
	WarmupMinutes int `json:"warmupMinutes" yaml:"warmupMinutes"`
	// MinTailObservations is how many observations each fleet needs beyond
	// the verdict quantile for the minute to be judged at all.
	MinTailObservations float64 `json:"minTailObservations" yaml:"minTailObservations"`
	// Confidence of the per-minute quantile bounds (0.95 gives 95% bounds).
	Confidence float64 `json:"confidence" yaml:"confidence"`
	// Significance, when above 0, gates good and bad minutes on evidence: the
	// canary/baseline difference must also be beyond sampling noise at this
	// one-sided confidence (0.99: a 1% chance that identical fleets look this
	// different in a minute); otherwise the minute is neutral. 0 turns the
	// gate off, as the reference rule and the rule pack judge.
	Significance float64 `json:"significance" yaml:"significance"`
	// SuspiciousWin: a window whose median ratio is at or below this is
	// flagged for a traffic-mix check instead of being celebrated.
	SuspiciousWin float64 `json:"suspiciousWin" yaml:"suspiciousWin"`
	// MaxShareDrift: the canary's share of requests in a minute may move this
	// far (relative) from its window median before traffic parity is flagged.
	MaxShareDrift float64 `json:"maxShareDrift" yaml:"maxShareDrift"`
	// ExpectedCanaryShare is the share of requests the router is told to send
	// to the canary (0.05 for 5%), 0 when unknown. When set, a median share
	// further than MaxShareDeviation (relative) from it is flagged: the fleets
	// do not see the traffic the comparison assumes.
	ExpectedCanaryShare float64 `json:"expectedCanaryShare" yaml:"expectedCanaryShare"`
	MaxShareDeviation   float64 `json:"maxShareDeviation" yaml:"maxShareDeviation"`
	// MaxMeasurementDivergence: where a load-balancer-side histogram of the
	// same requests exists, its verdict quantile may differ this far
	// (relative) from the application's before the measurement is flagged.
	MaxMeasurementDivergence float64 `json:"maxMeasurementDivergence" yaml:"maxMeasurementDivergence"`
	// ScrapeIntervalSeconds is how often Prometheus scrapes the fleets'
	// histograms, a whole number of seconds that divides a minute. A minute
	// is read from the last sample before it to its own last sample (an
	// increase() over a minute and one scrape interval), so that every
	// observation belongs to exactly one minute (docs/judgement.md, "Every
	// observation in one minute").
	ScrapeIntervalSeconds int `json:"scrapeIntervalSeconds" yaml:"scrapeIntervalSeconds"`
	// MinRollbackMinutes is the fewest minutes the evidence rule rolls back
	// on: each minute counts towards a rollback at most the deployment's
	// boundary divided by it (MinuteCap). 2, the default, rolls back a large
	// regression at its second minute; more holds out pods that pause for
	// about as long as a few times the verdict quantile, which throw clumps
	// of slow requests into single minutes, at the price of every rollback
	// taking that many minutes (docs/judgement.md, "Clustered tails"). At
	// most 4: the minutes the dispersion needs to tell clumps.
	MinRollbackMinutes int `json:"minRollbackMinutes" yaml:"minRollbackMinutes"`
}

// The window rules, by name.
const (
	RuleEvidence  = "evidence"
	RuleReference = "reference"
)

// Default returns the default configuration: the chapter's minute
// thresholds, judged by the evidence rule.
func Default() Config {
	return Config{
		Rule:                RuleEvidence,
		FalseRollback:       0.001,
		FalsePromote:        0.01,
		Quantiles:           []float64{0.5, 0.99, 0.999, 0.9999},
		VerdictQuantile:     0.99,
		PromoteThreshold:    0.95,
		RollbackThreshold:   1.10,
		WindowMinutes:       60,
		GoodNeeded:          45,
		BadLimit:            5,
		WarmupMinutes:       0,
		MinTailObservations: 10,
		Confidence:          0.95,
		SuspiciousWin:       0.70,
		MaxShareDrift:       0.50,
		MaxShareDeviation:   0.10,

		MaxMeasurementDivergence: 0.20,
		ScrapeIntervalSeconds:    15,
		MinRollbackMinutes:       2,
	}
}

// ScrapesPerMinute is the number of samples each series has in a minute
// when it is scraped every ScrapeIntervalSeconds.
func (c Config) ScrapesPerMinute() float64 { return 60 / float64(c.ScrapeIntervalSeconds) }

// ScrapeInterval is ScrapeIntervalSeconds as a duration.
func (c Config) ScrapeInterval() time.Duration {
	return time.Duration(c.ScrapeIntervalSeconds) * time.Second
}

// TailNeeded is the smallest tail beyond the verdict quantile that counts as
// MinTailObservations. A fleet's tail is interpolated inside the bucket that
// holds its quantile, so a minute of 1,000 observations has exactly 10
// beyond its p99; the engine's and Prometheus's float arithmetic put that
// a few ulps either side of 10, and the verdict must not depend on which.
// Within a billionth of the minimum counts as reaching it, in the engine
// (Judge) and in the rule pack alike.
func (c Config) TailNeeded() float64 { return c.MinTailObservations * (1 - 1e-9) }

// Validate reports the first field that makes no sense, by its name.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	// Every number must be finite: an infinite threshold would never be
	// reached (and JSON has no way to write it), NaN compares false.
	for _, f := range c.numbers() {
		if !finite(f.v) {
			return fmt.Errorf("%s: %v is not a finite number", f.name, f.v)
		}
	}
	for _, q := range c.Quantiles {
		if !finite(q) {
			return fmt.Errorf("quantiles: %v is not a finite number", q)
		}
	}
	// The ranges are those of Limits, which the query editor reads too.
	ok := func(field string, v float64) bool { return accepts(field, v, c) }
	max := func(field string) float64 { return *Limits[field].Max }
	check(c.Rule == RuleEvidence || c.Rule == RuleReference, "rule: %q is neither %q nor %q", c.Rule, RuleEvidence, RuleReference)
	check(ok("falseRollback", c.FalseRollback), "falseRollback: %v is not a probability in (0, %v]", c.FalseRollback, max("falseRollback"))
	check(ok("falsePromote", c.FalsePromote), "falsePromote: %v is not a probability in (0, %v]", c.FalsePromote, max("falsePromote"))
	check(len(c.Quantiles) > 0, "quantiles: at least one quantile is needed")
	check(len(c.Quantiles) <= MaxQuantiles, "quantiles: %d listed, at most %d are shown", len(c.Quantiles), MaxQuantiles)
	seen := map[string]bool{}
	for _, q := range c.Quantiles {
		check(ok("quantiles", q), "quantiles: %v is not between 0 and 1", q)
		label := QuantileLabel(q)
		check(!seen[label], "quantiles: %s is listed twice", label)
		seen[label] = true
	}
	check(ok("verdictQuantile", c.VerdictQuantile), "verdictQuantile: %v is not between 0 and 1", c.VerdictQuantile)
	check(ok("promoteThreshold", c.PromoteThreshold), "promoteThreshold: %v must be positive", c.PromoteThreshold)
	check(ok("rollbackThreshold", c.RollbackThreshold), "rollbackThreshold: %v must be above 1 (a heavier tail) and above promoteThreshold %v", c.RollbackThreshold, c.PromoteThreshold)
	windowOK := ok("windowMinutes", float64(c.WindowMinutes))
	check(windowOK, "windowMinutes: %d is not between %v and %v", c.WindowMinutes, *Limits["windowMinutes"].Min, max("windowMinutes"))
	// The counting rule's numbers must fit the window only where they decide,
	// and only a window that is itself valid can be measured against: a
	// window of 0 is one error, not three.
	if windowOK {
		check(ok("goodNeeded", float64(c.GoodNeeded)), "goodNeeded: %d is not between 1 and the window (%d)", c.GoodNeeded, c.WindowMinutes)
		check(ok("badLimit", float64(c.BadLimit)), "badLimit: %d is not between 1 and the window (%d)", c.BadLimit, c.WindowMinutes)
		check(ok("warmupMinutes", float64(c.WarmupMinutes)), "warmupMinutes: %d is not between 0 and the window (%d)", c.WarmupMinutes, c.WindowMinutes)
	}
	check(ok("minTailObservations", c.MinTailObservations), "minTailObservations: %v must not be negative", c.MinTailObservations)
	check(ok("confidence", c.Confidence), "confidence: %v is not between 0 and 1", c.Confidence)
	check(ok("significance", c.Significance), "significance: %v is neither 0 (off) nor between 0.5 and 1", c.Significance)
	check(ok("suspiciousWin", c.SuspiciousWin), "suspiciousWin: %v must be below promoteThreshold (%v): a window whose median ratio is at or below suspiciousWin is flagged as a win too good to trust, so promoteThreshold must be above it", c.SuspiciousWin, c.PromoteThreshold)
	check(ok("maxShareDrift", c.MaxShareDrift), "maxShareDrift: %v must be positive", c.MaxShareDrift)
	check(ok("expectedCanaryShare", c.ExpectedCanaryShare), "expectedCanaryShare: %v is not 0 (unknown) or a share below 1", c.ExpectedCanaryShare)
	check(ok("maxShareDeviation", c.MaxShareDeviation), "maxShareDeviation: %v must be positive", c.MaxShareDeviation)
	check(ok("maxMeasurementDivergence", c.MaxMeasurementDivergence), "maxMeasurementDivergence: %v must be positive", c.MaxMeasurementDivergence)
	check(ok("scrapeIntervalSeconds", float64(c.ScrapeIntervalSeconds)),
		"scrapeIntervalSeconds: %d is not a whole number of seconds that divides a minute (10, 15, 20, 30 or 60, say)", c.ScrapeIntervalSeconds)
	check(ok("minRollbackMinutes", float64(c.MinRollbackMinutes)), "minRollbackMinutes: %d is not a whole number of minutes from %v to %v", c.MinRollbackMinutes, *Limits["minRollbackMinutes"].Min, max("minRollbackMinutes"))
	return errors.Join(errs...)
}

// MaxQuantiles is how many quantiles a Config may show: each is a column
// of every minute for each fleet, and a minute's quantiles are found in
// one pass over its buckets in order.
const MaxQuantiles = 16

// QuantileLabel names a quantile as dashboards do: 0.99 -> "p99", 0.999 -> "p99.9".
func QuantileLabel(q float64) string {
	s := strconv.FormatFloat(q, 'f', -1, 64)
	if digits, ok := strings.CutPrefix(s, "0."); ok {
		for len(digits) < 2 {
			digits += "0"
		}
		if len(digits) == 2 {
			return "p" + strings.TrimLeft(digits, "0")
		}
		return "p" + strings.TrimLeft(digits[:2], "0") + "." + digits[2:]
	}
	return "p" + strconv.FormatFloat(q*100, 'f', -1, 64)
}

// QuantileKey writes a quantile as it is written in JSON output and PromQL: "0.99".
func QuantileKey(q float64) string { return strconv.FormatFloat(q, 'f', -1, 64) }

// Overrides are the verdict numbers a query or a rule pack entry may set; a
// nil field keeps the value it overrides. Keys are those of Config. The data
// source's query model and the rule pack configuration both embed it.
type Overrides struct {
	Rule                *string   `json:"rule,omitempty" yaml:"rule"`
	FalseRollback       *float64  `json:"falseRollback,omitempty" yaml:"falseRollback"`
	FalsePromote        *float64  `json:"falsePromote,omitempty" yaml:"falsePromote"`
	Quantiles           []float64 `json:"quantiles,omitempty" yaml:"quantiles"`
	VerdictQuantile     *float64  `json:"verdictQuantile,omitempty" yaml:"verdictQuantile"`
	PromoteThreshold    *float64  `json:"promoteThreshold,omitempty" yaml:"promoteThreshold"`
	RollbackThreshold   *float64  `json:"rollbackThreshold,omitempty" yaml:"rollbackThreshold"`
	WindowMinutes       *int      `json:"windowMinutes,omitempty" yaml:"windowMinutes"`
	GoodNeeded          *int      `json:"goodNeeded,omitempty" yaml:"goodNeeded"`
	BadLimit            *int      `json:"badLimit,omitempty" yaml:"badLimit"`
	WarmupMinutes       *int      `json:"warmupMinutes,omitempty" yaml:"warmupMinutes"`
	MinTailObservations *float64  `json:"minTailObservations,omitempty" yaml:"minTailObservations"`
	Significance        *float64  `json:"significance,omitempty" yaml:"significance"`
	MaxShareDrift       *float64  `json:"maxShareDrift,omitempty" yaml:"maxShareDrift"`
	// ScrapeIntervalSeconds is Config's: set it to the fleets' scrape
	// interval when it is not 15 s.
	ScrapeIntervalSeconds *int `json:"scrapeIntervalSeconds,omitempty" yaml:"scrapeIntervalSeconds"`
	MinRollbackMinutes    *int `json:"minRollbackMinutes,omitempty" yaml:"minRollbackMinutes"`
}

// Apply returns c with the set fields of o.
func (o Overrides) Apply(c Config) Config {
	if o.Rule != nil {
		c.Rule = *o.Rule
	}
	if len(o.Quantiles) > 0 {
		c.Quantiles = append([]float64(nil), o.Quantiles...)
	}
	for _, f := range []struct {
		dst *float64
		src *float64
	}{{&c.VerdictQuantile, o.VerdictQuantile}, {&c.PromoteThreshold, o.PromoteThreshold}, {&c.RollbackThreshold, o.RollbackThreshold}, {&c.MinTailObservations, o.MinTailObservations}, {&c.Significance, o.Significance}, {&c.FalseRollback, o.FalseRollback}, {&c.FalsePromote, o.FalsePromote}, {&c.MaxShareDrift, o.MaxShareDrift}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	for _, f := range []struct {
		dst *int
		src *int
	}{{&c.WindowMinutes, o.WindowMinutes}, {&c.GoodNeeded, o.GoodNeeded}, {&c.BadLimit, o.BadLimit}, {&c.WarmupMinutes, o.WarmupMinutes}, {&c.ScrapeIntervalSeconds, o.ScrapeIntervalSeconds}, {&c.MinRollbackMinutes, o.MinRollbackMinutes}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return c.ShowingVerdictQuantile()
}

// ShowingVerdictQuantile returns c with its verdict quantile among the
// quantiles shown, inserted in order when it is not: every minute's
// figures, the panel's chart of the ratio and the judge's table read the
// verdict quantile's column.
func (c Config) ShowingVerdictQuantile() Config {
	label := QuantileLabel(c.VerdictQuantile)
	for _, q := range c.Quantiles {
		if QuantileLabel(q) == label {
			return c
		}
	}
	i, _ := slices.BinarySearch(c.Quantiles, c.VerdictQuantile)
	c.Quantiles = slices.Insert(slices.Clone(c.Quantiles), i, c.VerdictQuantile)
	return c
}
