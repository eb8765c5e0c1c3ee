package sim

import "math"

// Quantile returns the rank quantile of sorted (ascending) observations: the
// smallest observation x such that at least q*n observations are <= x. It
// returns NaN for an empty slice. q is clamped to [0, 1]; q*n is rounded up
// with a tolerance of 1e-9 so that, e.g., q=0.99 and n=100 gives rank 99, not
// 100 because of floating-point error.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	q = math.Max(0, math.Min(1, q))
	k := int(math.Ceil(q*float64(n) - 1e-9))
	if k < 1 {
		k = 1
	}
	if k > n {
		k = n
	}
	return sorted[k-1]
}
