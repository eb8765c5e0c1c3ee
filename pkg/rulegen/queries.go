package rulegen

import (
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// Queries are one canary's per-minute expressions exactly as the pack's rules
// evaluate them: they read the fleets' recorded minutes
// (prom.MinuteHistogramRecord, prom.MinuteHealthRecord) and, for the window,
// the per-minute series the group records from them. The group records the
// wall-clock minute (T-60s, T] at T+d (d in [0, 60s), its offset inside the
// minute), so an instant query judges minute T at any time in [T+d, T+60s):
// at T+59.999s whatever d (at T itself it reads the minute before), once the
// group has run or the series were backfilled; window figures read there
// cover the minutes up to T. The parity test queries them so, to compare the
// pack with the Go engine minute by minute.
type Queries struct {
	Name, Metric     string
	Kind             prom.Kind
	Baseline, Canary selector.Selector
	// Config is the canary's effective verdict configuration.
	Config verdict.Config
	// ErrorsMetric is the canary's request counter (Canary.ErrorsMetric),
	// empty without one, and Failed the matchers of its failed requests.
	ErrorsMetric string
	Failed       selector.Selector
	// Bad and Good have a sample only when the minute is a counted bad
	// (good) minute; Verdict is the verdict code (verdict.Verdict.Code()).
	Bad, Good, Verdict string
	// BaselineTail and CanaryTail are the observations beyond the verdict
	// quantile (the insufficient guard).
	BaselineTail, CanaryTail string

	// Decision is the decision code (verdict.Decision.Code()) of the window
	// ending at T, and Rollback has a sample exactly when the rollback
	// alert's condition holds at T, both from the recorded minutes. The pack
	// derives them from window series its group recorded earlier in the same
	// evaluation; these are the same derivations (the same Go code) reading
	// the expressions that record those series instead.
	Decision, Rollback string
	// Flags has a series (label flag) for each flag raised over the window
	// ending at T.
	Flags string
	// Recorded are the expressions of the recording rules the pack's
	// decision reads, as the committed pack holds them.
	Recorded []string

	// The evidence rule's (empty under the reference rule):
	// MinuteTerms is the evidence of minute T, a series per term (label
	// term): llr_4, llr_8, llr_16 (verdict.Evidence.LLR), canary_beyond
	// (Evidence.Canary), expected_beyond (Evidence.Expected()) and minutes
	// (1); nothing when the minute carries no evidence.
	MinuteTerms string
	// Evidence, RecentEvidence, PromoteEvidence and EvidenceMinutes are
	// verdict.WindowEvidence's Statistic, the statistic of each recent run
	// (label recent_minutes), PromoteStatistic and Minutes.
	Evidence, RecentEvidence, PromoteEvidence, EvidenceMinutes string
	// Dispersion is each vote's verdict.WindowEvidence.Dispersion (label
	// quantile: p99, p90), present when the window carries evidence; empty
	// when the window is too short to have one.
	Dispersion string
}

// MinuteQueries validates f and returns the queries of each canary in order.
func MinuteQueries(f File) ([]Queries, error) {
	canaries, _, err := f.resolve()
	if err != nil {
		return nil, err
	}
	out := make([]Queries, len(canaries))
	for i, c := range canaries {
		m := c.minute()
		flags := c.windowFlags()
		q := Queries{
			Name: c.Name, Metric: c.Metric, Kind: c.kind, Baseline: c.baseline, Canary: c.canary, Config: c.config,
			ErrorsMetric: c.ErrorsMetric, Failed: c.failed,
			Bad: m.bad.flat(), Good: m.good.flat(), Verdict: m.verdict.flat(),
			BaselineTail: m.base.tail.flat(), CanaryTail: m.canary.tail.flat(),
			Flags: flags.flat(),
		}
		if c.config.Rule == verdict.RuleReference {
			n := c.minuteNames()
			good, bad := c.minuteCount(n.good), c.minuteCount(n.bad)
			q.Decision, q.Rollback = c.referenceDecision(good, bad, flags).flat(), c.referenceRollback(bad).flat()
			q.Recorded = []string{flags.flat(), good.flat(), bad.flat()}
		} else {
			e := c.evidenceExprs(m)
			w := e.inline
			q.Evidence, q.RecentEvidence = w.statistic().flat(), w.recentStatistics().flat()
			q.PromoteEvidence, q.EvidenceMinutes = w.promoteStatistic().flat(), w.minutes().flat()
			q.Decision = c.evidenceDecision(w.statistic(), w.recentStatistics(), w.promoteStatistic(), w.lastPromote(), w.minutes(), w.expected(), w.flags).flat()
			q.Rollback = c.evidenceRollback(w.statistic(), w.recentStatistics()).flat()
			q.MinuteTerms = e.terms.flat()
			if e.inlineDispersion != nil {
				q.Dispersion = e.inlineDispersion.flat()
			}
			q.Recorded = []string{flags.flat(), e.sums.flat(), e.recent.flat()}
		}
		out[i] = q
	}
	return out, nil
}
