package exposition

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/sim"
)

// TestNewRefusesBadBuckets: bounds client_golang would panic on (a repeated
// one) or misrepresent (NaN, +Inf listed) are an error, not a panic.
func TestNewRefusesBadBuckets(t *testing.T) {
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	c := sim.DefaultConfig(start)
	c.PodsPerFleet = 1
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]float64{{0.1, 0.1, 1}, {0.1, math.Inf(1)}, {math.NaN()}, {}} {
		if _, err := New(Options{Sim: s, Buckets: b}, start); err == nil || !strings.Contains(err.Error(), "classic buckets") {
			t.Errorf("buckets %v: error %v", b, err)
		}
	}
	if _, err := New(Options{Sim: s, Buckets: []float64{0.1, 1}}, start); err != nil {
		t.Error(err)
	}
}
