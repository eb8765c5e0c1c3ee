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
// with the default votes (p90, p99, p99.9) and with verdictQuantile 0.9
// (p90, p99). docs/judgement.md quotes these figures.
func ExampleMixture_clumpedTail() {
	const observations, share = 30000, 0.05
	for _, q := range []float64{0.99, 0.9} {
		c := verdict.Default()
		c.VerdictQuantile = q
		for _, caught := range []float64{5, 10, 25} {
			var llr []float64
			for _, vq := range c.VoteQuantiles() {
				if vq == 0 {
					continue
				}
				tail := (1 - vq) * observations
				k := share*(tail-caught) + caught
				for _, a := range verdict.TailIndices {
					llr = append(llr, verdict.LLR(k, tail-k, share, math.Pow(c.RollbackThreshold, a)))
				}
			}
			fmt.Printf("verdict quantile %v, %2.0f requests caught: evidence %.1f\n", q, caught, verdict.Mixture(llr...))
		}
	}
	// Output:
	// verdict quantile 0.99,  5 requests caught: evidence 2.4
	// verdict quantile 0.99, 10 requests caught: evidence 10.5
	// verdict quantile 0.99, 25 requests caught: evidence 53.6
	// verdict quantile 0.9,  5 requests caught: evidence -1.3
	// verdict quantile 0.9, 10 requests caught: evidence 0.9
	// verdict quantile 0.9, 25 requests caught: evidence 10.8
}
