package verdict_test

import (
	"fmt"
	"math"

	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// A stall of one canary pod puts every request it catches into the tail at
// once. One minute of a 5% canary of a service at 500 req/s (30,000
// observations), the stall's requests all beyond the p99.9 and displacing
// others from each vote's tail in proportion: the evidence of that minute
// with the default votes (p99, p90 and the p99's bucket bound, here at the
// p99 itself, as fine buckets put it), before the per-minute cap.
// docs/judgement.md quotes these figures.
func ExampleMixture_clumpedTail() {
	const observations, share = 30000, 0.05
	c := verdict.Default()
	for _, caught := range []float64{5, 10, 25, 50} {
		var llr []float64
		for _, vq := range c.VoteQuantiles() {
			tail := (1 - vq) * observations
			k := share*(tail-caught) + caught
			for _, a := range verdict.TailIndices {
				llr = append(llr, verdict.LLR(k, tail-k, share, math.Pow(c.RollbackThreshold, a)))
			}
		}
		fmt.Printf("%2.0f requests caught: evidence %.1f\n", caught, verdict.Mixture(llr...))
	}
	// Output:
	//  5 requests caught: evidence -0.8
	// 10 requests caught: evidence 1.4
	// 25 requests caught: evidence 11.4
	// 50 requests caught: evidence 44.2
}
