package verdict

import (
	"math"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// Stats reads one fleet-minute's figures off its merged histogram; a nil
// histogram is a fleet with no data in the minute.
func Stats(c Config, h *histogram.Histogram) FleetStats {
	if h == nil {
		return FleetStats{Quantiles: nanSlice(len(c.Quantiles)), Value: math.NaN(), Lower: math.NaN(), Upper: math.NaN(), LogSE: math.NaN()}
	}
	s := FleetStats{Present: true, Count: h.Count, RPS: h.Count / 60}
	s.Quantiles = make([]float64, len(c.Quantiles))
	for i, q := range c.Quantiles {
		s.Quantiles[i] = h.Quantile(q)
	}
	s.Value = h.Quantile(c.VerdictQuantile)
	s.Tail = h.TailCount(c.VerdictQuantile)
	s.Lower, s.Upper = h.QuantileBounds(c.VerdictQuantile, c.Confidence)
	s.LogSE = logSE(h, c.VerdictQuantile)
	return s
}

// logSE estimates the sampling standard error of ln Quantile(q): the rank of
// the q-quantile among n observations varies by sqrt(n q (1-q)), so the
// quantiles at q -/+ sqrt(q(1-q)/n) span about two standard errors.
func logSE(h *histogram.Histogram, q float64) float64 {
	if !(h.Count > 0) {
		return math.NaN()
	}
	d := math.Sqrt(q * (1 - q) / h.Count)
	lo, hi := h.Quantile(math.Max(q-d, 0)), h.Quantile(math.Min(q+d, 1))
	if !(lo > 0) || math.IsInf(hi, 0) || math.IsNaN(hi) {
		return math.NaN()
	}
	return (math.Log(hi) - math.Log(lo)) / 2
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}
