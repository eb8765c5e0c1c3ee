package sim

import (
	"errors"
	"fmt"
	"math"
)

// CheckClassicBuckets reports whether bounds can be the upper bounds of a
// classic histogram's buckets, as tools/cmd/pairwise-gen writes them and
// pkg/exposition serves them: at least one, finite and strictly increasing
// (a repeated bound would be two series of one le, which client_golang
// refuses with a panic). +Inf is left out: every classic histogram gets it.
func CheckClassicBuckets(bounds []float64) error {
	if len(bounds) == 0 {
		return errors.New("no bucket bounds")
	}
	for i, v := range bounds {
		switch {
		case math.IsInf(v, 1):
			return errors.New("+Inf is every classic histogram's last bucket already: leave it out")
		case math.IsNaN(v) || math.IsInf(v, -1):
			return fmt.Errorf("bound %v is not a number of seconds", v)
		case i > 0 && v <= bounds[i-1]:
			return fmt.Errorf("bound %v follows %v: the bounds must be strictly increasing", v, bounds[i-1])
		}
	}
	return nil
}
