package verdict

import (
	"fmt"
	"math"
)

// RequestCounts are one fleet's requests and failed requests in a minute,
// read off a request counter (the judge's --errors-metric).
type RequestCounts struct{ Requests, Errors float64 }

// ErrorCounts are both fleets' RequestCounts in one minute (Minute.Errors).
type ErrorCounts struct{ Baseline, Canary RequestCounts }

// ErrorRatioAlternative is the error ratio, relative to the baseline's, that
// the traffic-parity check weighs each failed request against: a canary
// that fails twice as often as its baseline.
const ErrorRatioAlternative = 2.0

// errorSums are a run of minutes' failed requests, as the traffic-parity
// check reads them: both fleets' counts, the canary's failed requests
// expected at its share of the requests, and the log likelihood ratio of a
// canary failing ErrorRatioAlternative times as often against one failing
// as often.
type errorSums struct {
	llr, expected    float64
	canary, baseline RequestCounts
	minutes          int
	// phi is the dispersion the run's evidence is divided by (strongest
	// sets it; 0 reads as 1).
	phi float64
}

// plus is s with minute m's failed requests added (sign 1) or taken out
// (sign -1).
func (s errorSums) plus(m Minute, sign float64) errorSums {
	llr, expected, ok := errorEvidence(m)
	if !ok {
		return s
	}
	s.llr += sign * llr
	s.expected += sign * expected
	s.canary.Requests += sign * m.Errors.Canary.Requests
	s.canary.Errors += sign * m.Errors.Canary.Errors
	s.baseline.Requests += sign * m.Errors.Baseline.Requests
	s.baseline.Errors += sign * m.Errors.Baseline.Errors
	s.minutes += int(sign)
	return s
}

// minus is the run of minutes in s and not in o (o a run that s extends).
func (s errorSums) minus(o errorSums) errorSums {
	return errorSums{llr: s.llr - o.llr, expected: s.expected - o.expected,
		canary:   RequestCounts{s.canary.Requests - o.canary.Requests, s.canary.Errors - o.canary.Errors},
		baseline: RequestCounts{s.baseline.Requests - o.baseline.Requests, s.baseline.Errors - o.baseline.Errors},
		minutes:  s.minutes - o.minutes}
}

// errorRuns are the running sums of every minute's failed requests:
// prefix[i] holds minutes before i; squares and changes the squared
// changes of the minutes' standardized residuals from the minute before
// (errorResidual) and how many there are.
type errorRuns struct {
	prefix  []errorSums
	squares []float64
	changes []int
}

func newErrorRuns(minutes []Minute) errorRuns {
	n := len(minutes)
	r := errorRuns{prefix: make([]errorSums, n+1), squares: make([]float64, n+1), changes: make([]int, n+1)}
	for i, m := range minutes {
		r.prefix[i+1] = r.prefix[i].plus(m, 1)
		r.squares[i+1], r.changes[i+1] = r.squares[i], r.changes[i]
		if i == 0 {
			continue
		}
		if now, ok := errorResidual(m); ok {
			if before, ok := errorResidual(minutes[i-1]); ok {
				r.squares[i+1] += (now - before) * (now - before)
				r.changes[i+1]++
			}
		}
	}
	return r
}

// dispersion is how much more than chance the minutes from..to (included)
// spread their failed requests between the fleets: half the mean squared
// change of their standardized residuals from the minute before (a change
// at from reads the minute before it), at least 1, and 1 below MinChanges
// changes. Failed requests that come in clumps (a
// retry storm on one pod, a client retrying a poison request, one failure
// counted twice) spread more than one at a time would, and would pass the
// boundary far more often than it allows. Unlike a vote's tail
// (VoteSums.Dispersion), the spread is neither first divided by the
// variance a canary failing more often would give nor capped per minute:
// measured, either lets clumps through (a third, and 6%, of days flagged at
// bursts of 3), and a flag that only holds promotion can wait the longer (a
// 5% canary of 500 req/s failing 0.3% where its baseline fails 0.1%: 18
// minutes, median, instead of 9).
func (r errorRuns) dispersion(from, to int) float64 {
	n := r.changes[to+1] - r.changes[from]
	if n < MinChanges {
		return 1
	}
	return math.Max(1, (r.squares[to+1]-r.squares[from])/(2*float64(n)))
}

// errorResidual is minute m's standardized residual: the canary's failed
// requests less those expected at its share f, over their standard
// deviation if each is the canary's with probability f.
func errorResidual(m Minute) (float64, bool) {
	if _, _, ok := errorEvidence(m); !ok {
		return 0, false
	}
	e := m.Errors
	n := e.Baseline.Errors + e.Canary.Errors
	f := e.Canary.Requests / (e.Baseline.Requests + e.Canary.Requests)
	if !(n > 0) {
		return 0, false
	}
	return (e.Canary.Errors - f*n) / math.Sqrt(n*f*(1-f)), true
}

// strongest is the run of minutes ending at minute to (included) and
// starting at from or later whose failed requests weigh most against the
// canary, among the runs the evidence rule reads (RecentLengths: the last
// 1, 2, 4, ... minutes) and the whole span from from: a late rise in
// failures is not outweighed by the minutes before it. The rule pack reads
// the same runs.
func (r errorRuns) strongest(from, to int) errorSums {
	if r.prefix[len(r.prefix)-1].minutes == 0 {
		return errorSums{} // no minute has request counts
	}
	end := r.prefix[to+1]
	best := end.minus(r.prefix[from])
	for l := 1; l < to-from+1; l *= 2 {
		if run := end.minus(r.prefix[to+1-l]); run.minutes > 0 && (best.minutes == 0 || run.llr > best.llr) {
			best = run
		}
	}
	if best.minutes == 0 || !(best.llr > 0) {
		return errorSums{}
	}
	best.phi = r.dispersion(from, to)
	return best
}

// ErrorBoundary is the log likelihood ratio at which failed requests raise
// the traffic-parity flag: a canary failing as often as its baseline
// reaches it over any run of minutes at most FalsePromote times a day of
// looks every minute (the Shiryaev-Roberts bound of the recent runs, "The
// boundaries, derived" in docs/judgement.md), anchored or sliding: the flag
// only holds promotion.
func (c Config) ErrorBoundary() float64 { return math.Log(MinutesPerDay / c.FalsePromote) }

// errorEvidence is what minute m tells of the fleets' error ratios. If the
// fleets are identical, each of the minute's failed requests is the
// canary's with probability f, its share of the minute's requests, as each
// tail observation is for the evidence rule (step 4 of docs/judgement.md):
// the log likelihood ratio of a canary failing ErrorRatioAlternative times
// as often then has mean at most 0 and its exponential mean 1, whatever the
// error ratio itself. ok is false for a warm-up minute, a minute whose
// counts cannot be trusted (a partial fleet), and one where a fleet served
// no request or a count is not a number.
func errorEvidence(m Minute) (llr, expected float64, ok bool) {
	e := m.Errors
	if e == nil || m.Warmup || m.Verdict == Partial {
		return 0, 0, false
	}
	for _, v := range []float64{e.Baseline.Requests, e.Canary.Requests, e.Baseline.Errors, e.Canary.Errors} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, 0, false
		}
	}
	if !(e.Baseline.Requests > 0 && e.Canary.Requests > 0) {
		return 0, 0, false
	}
	f := e.Canary.Requests / (e.Baseline.Requests + e.Canary.Requests)
	theta := f * ErrorRatioAlternative / (f*ErrorRatioAlternative + 1 - f)
	k, b := e.Canary.Errors, e.Baseline.Errors
	return k*math.Log(theta/f) + b*math.Log((1-theta)/(1-f)), f * (k + b), true
}

// errorNote says why failed requests raise the traffic-parity flag, "" when
// they do not: over the run s, the canary is shown to fail more often than
// its baseline (its log likelihood ratio reaches ErrorBoundary), so a window
// it is in never promotes. A canary that fails fast can look faster than a
// baseline that serves the same requests in full.
func (s errorSums) errorNote(c Config) string {
	b := c.ErrorBoundary()
	phi := math.Max(1, s.phi)
	if s.minutes == 0 || !(s.llr/phi >= b) {
		return ""
	}
	divided := ""
	if phi > 1 {
		divided = fmt.Sprintf(", divided by its dispersion %.1f (failed requests that come in clumps)", phi)
	}
	ratios := fmt.Sprintf("%.2f%% of the canary's requests against %.2f%% of the baseline's", 100*s.canary.Errors/s.canary.Requests, 100*s.baseline.Errors/s.baseline.Requests)
	return fmt.Sprintf("the canary's requests failed %.0f times where %.1f were expected at its share of requests over %d minutes (%s; evidence %.1f that it fails %gx as often%s reached %.1f): the canary fails more often than its baseline, most likely the release's doing, and a canary that fails fast can look faster",
		s.canary.Errors, s.expected, s.minutes, ratios, s.llr/phi, ErrorRatioAlternative, divided, b)
}
