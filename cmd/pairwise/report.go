package main

import (
	"math"
	"strconv"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// number marshals NaN and ±Inf as JSON null: JSON has no non-finite numbers.
type number float64

func (n number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return []byte(formatJSONFloat(f)), nil
}

// jsonReport is the judge's --output json document.
type jsonReport struct {
	Decision     string         `json:"decision"`
	DecisionCode int            `json:"decision_code"`
	Reason       string         `json:"reason"`
	Good         int            `json:"good"`
	Neutral      int            `json:"neutral"`
	Bad          int            `json:"bad"`
	Insufficient int            `json:"insufficient"`
	NoData       int            `json:"no_data"`
	Warmup       int            `json:"warmup"`
	Rule         string         `json:"rule"`
	Evidence     jsonEvidence   `json:"evidence"`
	Since        string         `json:"since,omitempty"`
	WorstMinute  *jsonWorst     `json:"worst_minute"`
	Flags        []string       `json:"flags"`
	Notes        []string       `json:"notes"`
	Warnings     []string       `json:"warnings"`
	Metric       string         `json:"metric"`
	Baseline     string         `json:"baseline_selector"`
	Canary       string         `json:"canary_selector"`
	Histogram    string         `json:"histogram"`
	Start        string         `json:"start"`
	End          string         `json:"end"`
	Config       verdict.Config `json:"config"`
	Minutes      []jsonMinute   `json:"minutes"`
	// Attribution, for a rollback, splits the canary's tail among its pods
	// (engine.Attribution); absent otherwise.
	Attribution *jsonAttribution `json:"attribution,omitempty"`
}

// jsonAttribution is engine.Attribution.
type jsonAttribution struct {
	Quantile     number    `json:"quantile"`
	Minutes      int       `json:"minutes"`
	CanaryTail   number    `json:"canary_tail"`
	ExpectedTail number    `json:"expected_canary_tail"`
	Pods         []jsonPod `json:"pods"`
	Summary      string    `json:"summary"`
}

// jsonPod is one canary pod's part of the tail.
type jsonPod struct {
	Pod          string `json:"pod"`
	CanaryTail   number `json:"canary_tail"`
	ExpectedTail number `json:"expected_canary_tail"`
}

func attributionJSON(a *engine.Attribution) *jsonAttribution {
	if a == nil {
		return nil
	}
	out := &jsonAttribution{Quantile: number(a.Quantile), Minutes: a.Minutes, CanaryTail: number(a.Beyond), ExpectedTail: number(a.Expected), Pods: []jsonPod{}, Summary: a.String()}
	for _, p := range a.Pods {
		out.Pods = append(out.Pods, jsonPod{Pod: p.Pod, CanaryTail: number(p.Beyond), ExpectedTail: number(p.Expected)})
	}
	return out
}

type jsonWorst struct {
	Time  string `json:"time"`
	Ratio number `json:"ratio"`
}

type jsonMinute struct {
	Time     string    `json:"time"`
	Verdict  string    `json:"verdict"`
	Ratio    number    `json:"ratio"`
	Warmup   bool      `json:"warmup"`
	Reason   string    `json:"reason"`
	Baseline jsonFleet `json:"baseline"`
	Canary   jsonFleet `json:"canary"`
	// Tail is the minute's own evidence; Decision and Evidence those of
	// the window ending at the minute.
	Tail           jsonMinuteTail `json:"tail"`
	Decision       string         `json:"decision"`
	DecisionCode   int            `json:"decision_code"`
	DecisionReason string         `json:"decision_reason"`
	Evidence       jsonEvidence   `json:"evidence"`
	// SharedSeries is how many series both fleets' selectors selected at
	// the minute (absent when none): its windows hold, flag shared-series.
	SharedSeries int `json:"shared_series,omitempty"`
	// Errors are both fleets' requests and failed requests in the minute
	// (--errors-metric; absent without it).
	Errors *jsonErrors `json:"errors,omitempty"`
}

// jsonErrors are a minute's requests and failed requests, by fleet.
type jsonErrors struct {
	Baseline jsonRequests `json:"baseline"`
	Canary   jsonRequests `json:"canary"`
}

type jsonRequests struct {
	Requests number `json:"requests"`
	Errors   number `json:"errors"`
}

// jsonEvidence is the evidence rule's reading of a window.
type jsonEvidence struct {
	Minutes          int    `json:"minutes"`
	CanaryTail       number `json:"canary_tail"`
	BaselineTail     number `json:"baseline_tail"`
	ExpectedTail     number `json:"expected_canary_tail"`
	Statistic        number `json:"statistic"`
	PromoteStatistic number `json:"promote_statistic"`
	RollbackBoundary number `json:"rollback_boundary"`
	PromoteBoundary  number `json:"promote_boundary"`
	Anchored         bool   `json:"anchored"`
	// The recent run of minutes that stands highest above its boundary
	// (recent_minutes 0: none shorter than the window).
	RecentMinutes      int    `json:"recent_minutes"`
	RecentStatistic    number `json:"recent_statistic"`
	RecentBoundary     number `json:"recent_boundary"`
	RecentCanaryTail   number `json:"recent_canary_tail"`
	RecentExpectedTail number `json:"recent_expected_canary_tail"`
	// Votes are every voting quantile's pooled tails over the window
	// (verdict.Config.VoteQuantiles; the first is the verdict quantile's,
	// the fields above).
	Votes []jsonVoteSums `json:"votes"`
}

// jsonVoteSums is one vote's pooled tails over a window.
type jsonVoteSums struct {
	// Vote names the vote (verdict.VoteLabel): "p99", "p90", or "p99 bound"
	// for the whole buckets beyond the bound of the bucket holding the p99.
	Vote         string `json:"vote"`
	Quantile     number `json:"quantile"`
	CanaryTail   number `json:"canary_tail"`
	BaselineTail number `json:"baseline_tail"`
	ExpectedTail number `json:"expected_canary_tail"`
}

// jsonVote is one vote's part of a minute's evidence.
type jsonVote struct {
	Vote     string `json:"vote"`
	Quantile number `json:"quantile"`
	// Threshold is the quantile of both fleets merged, or for the bound
	// vote the bound of the bucket that holds it.
	Threshold number `json:"threshold"`
	Canary    number `json:"canary"`
	Baseline  number `json:"baseline"`
	// CanaryDeep and BaselineDeep are those beyond verdict.DeepFactor times
	// the threshold, the deep tail, whose evidence alone counts at most
	// Config.DeepMinuteCap a minute.
	CanaryDeep   number   `json:"canary_deep"`
	BaselineDeep number   `json:"baseline_deep"`
	LLR          []number `json:"llr"`
}

// jsonMinuteTail is what one minute adds to the evidence rule.
type jsonMinuteTail struct {
	Valid     bool   `json:"valid"`
	Threshold number `json:"threshold"`
	Canary    number `json:"canary"`
	Baseline  number `json:"baseline"`
	Share     number `json:"share"`
	// LLR is the minute's log likelihood ratio for each tail index of
	// verdict.TailIndices.
	LLR []number `json:"llr"`
	// Votes are every voting quantile's part, the verdict quantile's (the
	// fields above) first.
	Votes []jsonVote `json:"votes"`
}

func numbers(xs []float64) []number {
	out := make([]number, len(xs))
	for i, x := range xs {
		out[i] = number(x)
	}
	return out
}

func evidenceJSON(w verdict.WindowEvidence) jsonEvidence {
	votes := []jsonVoteSums{}
	for i, v := range w.Votes {
		if v.Quantile > 0 {
			votes = append(votes, jsonVoteSums{Vote: verdict.VoteLabel(i, v.Quantile), Quantile: number(v.Quantile), CanaryTail: number(v.Canary), BaselineTail: number(v.Baseline), ExpectedTail: number(v.Expected)})
		}
	}
	return jsonEvidence{Votes: votes, Minutes: w.Minutes, CanaryTail: number(w.Canary), BaselineTail: number(w.Baseline), ExpectedTail: number(w.Expected),
		Statistic: number(w.Statistic), PromoteStatistic: number(w.PromoteStatistic), RollbackBoundary: number(w.Rollback), PromoteBoundary: number(-w.Promote), Anchored: w.Anchored,
		RecentMinutes: w.RecentMinutes, RecentStatistic: number(w.RecentStatistic), RecentBoundary: number(w.RecentBoundary),
		RecentCanaryTail: number(w.RecentVotes[0].Canary), RecentExpectedTail: number(w.RecentVotes[0].Expected)}
}

func minuteTailJSON(e verdict.Evidence) jsonMinuteTail {
	v := e.Votes[0]
	t := jsonMinuteTail{Valid: e.Valid, Threshold: number(v.Threshold), Canary: number(v.Canary), Baseline: number(v.Baseline),
		Share: number(e.Share), LLR: numbers(v.LLR[:]), Votes: []jsonVote{}}
	for i, v := range e.Votes {
		if v.Quantile > 0 {
			t.Votes = append(t.Votes, jsonVote{Vote: verdict.VoteLabel(i, v.Quantile), Quantile: number(v.Quantile), Threshold: number(v.Threshold), Canary: number(v.Canary), Baseline: number(v.Baseline),
				CanaryDeep: number(v.DeepCanary), BaselineDeep: number(v.DeepBaseline), LLR: numbers(v.LLR[:])})
		}
	}
	return t
}

type jsonFleet struct {
	Count     number            `json:"count"`
	RPS       number            `json:"rps"`
	Quantiles map[string]number `json:"quantiles"`
	Tail      number            `json:"tail"`
	Lower     number            `json:"lower"`
	Upper     number            `json:"upper"`
}

func report(res *engine.Result) jsonReport {
	r := jsonReport{
		Decision: string(res.Decision), DecisionCode: res.Decision.Code(), Reason: res.Reason,
		Good: res.Counts.Good, Neutral: res.Counts.Neutral, Bad: res.Counts.Bad,
		Insufficient: res.Counts.Insufficient, NoData: res.Counts.NoData, Warmup: res.Counts.Warmup,
		Flags: nonNil(res.Flags), Notes: nonNil(res.Notes), Warnings: nonNil(res.Warnings),
		Metric: res.Request.Metric, Baseline: res.Request.Baseline.String(), Canary: res.Request.Canary.String(),
		Histogram: string(res.BaselineKind), Config: res.Config, Rule: res.Config.Rule, Evidence: evidenceJSON(res.Evidence),
		End: res.Request.Window.Last.Format(time.RFC3339), Minutes: make([]jsonMinute, 0, len(res.Minutes)),
	}
	if len(res.Minutes) > 0 {
		r.Start = res.Minutes[0].Time.Add(-time.Minute).Format(time.RFC3339)
	}
	if !res.Request.Since.IsZero() {
		r.Since = res.Request.Since.UTC().Format(time.RFC3339)
	}
	if res.Worst >= 0 {
		m := res.Minutes[res.Worst]
		r.WorstMinute = &jsonWorst{Time: m.Time.Format(time.RFC3339), Ratio: number(m.Ratio)}
	}
	for _, m := range res.Minutes {
		r.Minutes = append(r.Minutes, jsonMinute{
			Time: m.Time.Format(time.RFC3339), Verdict: string(m.Verdict), Ratio: number(m.Ratio), Warmup: m.Warmup, Reason: m.Reason,
			Baseline: fleetJSON(res.Config, m.Baseline), Canary: fleetJSON(res.Config, m.Canary),
			Tail:     minuteTailJSON(m.Evidence),
			Decision: string(m.Decision), DecisionCode: m.Decision.Code(), DecisionReason: m.DecisionReason, Evidence: evidenceJSON(m.Window), SharedSeries: m.Shared, Errors: errorsJSON(m.Errors),
		})
	}
	return r
}

func fleetJSON(c verdict.Config, s verdict.FleetStats) jsonFleet {
	f := jsonFleet{Count: number(s.Count), RPS: number(s.RPS), Tail: number(s.Tail), Lower: number(s.Lower), Upper: number(s.Upper), Quantiles: map[string]number{}}
	for i, q := range c.Quantiles {
		v := math.NaN()
		if i < len(s.Quantiles) {
			v = s.Quantiles[i]
		}
		f.Quantiles[verdict.QuantileKey(q)] = number(v)
	}
	return f
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func formatJSONFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func errorsJSON(e *verdict.ErrorCounts) *jsonErrors {
	if e == nil {
		return nil
	}
	return &jsonErrors{Baseline: jsonRequests{number(e.Baseline.Requests), number(e.Baseline.Errors)}, Canary: jsonRequests{number(e.Canary.Requests), number(e.Canary.Errors)}}
}
