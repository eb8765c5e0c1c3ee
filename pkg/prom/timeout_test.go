package prom

import (
	"context"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// TestFractionalTimeout: a client timeout that is not a whole number of
// seconds (--timeout 2.5s, a data source timeout of 2.5) is sent as
// Prometheus's query timeout in a form it reads. "2.5s", sent before, made
// a real Prometheus refuse every query (invalid parameter "timeout").
func TestFractionalTimeout(t *testing.T) {
	p := testenv.Prometheus(t, testenv.PromOptions{})
	sel, err := selector.Parse(`{track="canary"}`)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Truncate(time.Minute)
	for _, timeout := range []time.Duration{30 * time.Second, 2500 * time.Millisecond, 1500*time.Millisecond + 250*time.Microsecond} {
		c, err := New(p.URL, timeout)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.FleetHistograms(context.Background(), "http_request_duration_seconds", sel, Auto, Range{Start: end.Add(-time.Minute), End: end}); err != nil {
			t.Errorf("timeout %s: %v", timeout, err)
		}
	}
}
