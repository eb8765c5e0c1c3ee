package verdict

import (
	"math"
	"testing"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// lognormalMinute is a fleet-minute as the engine reads it: a schema 3
// native histogram of n observations from a lognormal of median 50 ms and
// log-sd 0.6, scaled by 4/3 as a one-minute increase() over a 15 s scrape
// reads them (so the counts are not whole).
func lognormalMinute(n float64) *histogram.Histogram {
	var bs []histogram.APIBucket
	var total float64
	for idx := -120; idx < 20; idx++ {
		lo, hi := math.Exp2(float64(idx-1)/8), math.Exp2(float64(idx)/8)
		cdf := func(x float64) float64 { return 0.5 * math.Erfc(-(math.Log(x)-math.Log(0.05))/(0.6*math.Sqrt2)) }
		c := math.Round(n*(cdf(hi)-cdf(lo))) * 4 / 3
		if c > 0 {
			bs = append(bs, histogram.APIBucket{Boundaries: 0, Lower: lo, Upper: hi, Count: c})
			total += c
		}
	}
	h, err := histogram.FromNative(bs, total, total*0.06)
	if err != nil {
		panic(err)
	}
	return h
}

// BenchmarkStats: one fleet-minute's figures, 10 pods at 50 req/s.
func BenchmarkStats(b *testing.B) {
	c := Default()
	h := lognormalMinute(30000)
	for b.Loop() {
		Stats(c, h)
	}
}

// BenchmarkCountMinute: one minute's evidence counts, a 5% canary of 10
// pods at 50 req/s.
func BenchmarkCountMinute(b *testing.B) {
	c := Default()
	base, canary := lognormalMinute(28500), lognormalMinute(1500)
	for b.Loop() {
		CountMinute(c, base, canary)
	}
}
