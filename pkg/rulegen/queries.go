package rulegen

import (
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// Queries are one canary's per-minute expressions exactly as the pack uses
// them inside its subqueries: evaluated by an instant query at a whole minute
// T, they judge the wall-clock minute (T-60s, T]. The parity test queries them
// to compare the pack with the Go engine minute by minute.
type Queries struct {
	Name, Metric     string
	Kind             prom.Kind
	Baseline, Canary selector.Selector
	// Config is the canary's effective verdict configuration.
	Config verdict.Config
	// Bad and Good have a sample only when the minute is a counted bad
	// (good) minute; Verdict is the verdict code (verdict.Verdict.Code()).
	Bad, Good, Verdict string
	// BaselineTail and CanaryTail are the observations beyond the verdict
	// quantile (the insufficient guard).
	BaselineTail, CanaryTail string
}

// MinuteQueries validates f and returns the queries of each canary in order.
func MinuteQueries(f File) ([]Queries, error) {
	canaries, err := f.resolve()
	if err != nil {
		return nil, err
	}
	out := make([]Queries, len(canaries))
	for i, c := range canaries {
		m := c.minute()
		out[i] = Queries{
			Name: c.Name, Metric: c.Metric, Kind: c.kind, Baseline: c.baseline, Canary: c.canary, Config: c.config,
			Bad: m.bad.flat(), Good: m.good.flat(), Verdict: m.verdict.flat(),
			BaselineTail: m.base.tail.flat(), CanaryTail: m.canary.tail.flat(),
		}
	}
	return out, nil
}
