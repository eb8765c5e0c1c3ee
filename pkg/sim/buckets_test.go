package sim

import (
	"math"
	"strings"
	"testing"
)

func TestCheckClassicBuckets(t *testing.T) {
	for _, tc := range []struct {
		bounds []float64
		want   string // "" for none
	}{
		{[]float64{0.005, 0.01, 0.1, 1, 10}, ""},
		{[]float64{-1, 0, 1}, ""},
		{nil, "no bucket bounds"},
		{[]float64{0.1, 0.1, 1}, "strictly increasing"},
		{[]float64{0.1, 0.05}, "strictly increasing"},
		{[]float64{0.1, math.Inf(1)}, "+Inf"},
		{[]float64{math.NaN()}, "not a number"},
		{[]float64{0.1, math.NaN(), 1}, "not a number"},
		{[]float64{math.Inf(-1), 1}, "not a number"},
	} {
		err := CheckClassicBuckets(tc.bounds)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: error %v, want %q", tc.bounds, err, tc.want)
		}
	}
}
