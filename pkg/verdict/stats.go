package verdict

import (
	"math"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// Stats reads one fleet-minute's figures off its merged histogram; a nil
// histogram is a fleet with no data in the minute.
func Stats(c Config, h *histogram.Histogram) FleetStats {
	if h == nil {
		return FleetStats{Quantiles: nanSlice(len(c.Quantiles)), Value: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}
	}
	s := FleetStats{Present: true, Count: h.Count, RPS: h.Count / 60}
	s.Quantiles = make([]float64, len(c.Quantiles))
	for i, q := range c.Quantiles {
		s.Quantiles[i] = h.Quantile(q)
	}
	s.Value = h.Quantile(c.VerdictQuantile)
	s.Tail = h.TailCount(c.VerdictQuantile)
	s.Lower, s.Upper = h.QuantileBounds(c.VerdictQuantile, c.Confidence)
	return s
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}
