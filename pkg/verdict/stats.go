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
	// Every quantile the figures need, read in one walk: those shown, the
	// verdict quantile, and the two that span its standard error.
	n, q := len(c.Quantiles), c.VerdictQuantile
	var buf [MaxQuantiles + 3]float64
	qs := append(buf[:0], c.Quantiles...)
	d := math.Sqrt(q * (1 - q) / h.Count)
	qs = append(qs, q, math.Max(q-d, 0), math.Min(q+d, 1))
	vs := make([]float64, len(qs))
	h.Quantiles(qs, vs)
	s.Quantiles = vs[:n:n]
	s.Value = vs[n]
	s.Tail = h.TailBeyond(s.Value)
	s.Lower, s.Upper = h.QuantileBoundsAt(q, s.Value, c.Confidence)
	s.LogSE = logSE(h, vs[n+1], vs[n+2])
	return s
}

// logSE estimates the sampling standard error of ln Quantile(q): the rank of
// the q-quantile among n observations varies by sqrt(n q (1-q)), so the
// quantiles lo and hi at q -/+ sqrt(q(1-q)/n) span about two standard
// errors.
func logSE(h *histogram.Histogram, lo, hi float64) float64 {
	if !(h.Count > 0) || !(lo > 0) || math.IsInf(hi, 0) || math.IsNaN(hi) {
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
