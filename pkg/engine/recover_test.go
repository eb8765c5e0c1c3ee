package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// panicking is a fleetSource that panics in one of its reads.
type panicking struct {
	*fleetSource
	in string // "histograms", "health" or "shared"
}

func (p *panicking) FleetHistograms(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, prom.Kind, error) {
	if p.in == "histograms" && sel.String() == `{track="canary"}` {
		panic("a histogram read panicked")
	}
	return p.fleetSource.FleetHistograms(ctx, metric, sel, kind, r)
}

func (p *panicking) FleetHealth(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[int64]prom.Health, error) {
	if p.in == "health" {
		panic("a health read panicked")
	}
	return p.fleetSource.FleetHealth(ctx, metric, sel, kind, r)
}

func (p *panicking) SharedSeries(context.Context, string, selector.Selector, selector.Selector, prom.Range) (map[int64]int, error) {
	if p.in == "shared" {
		panic("the shared-series count panicked")
	}
	return nil, nil
}

// TestPanicsAreErrors: a panic on any of Analyze's goroutines (its reads,
// which run beside one another, and the minutes' work spread over the
// CPUs) is Analyze's error, never the end of the process: the Grafana
// plugin would go down with it, and the judge would exit with Go's status
// 2, which its callers read as rollback.
func TestPanicsAreErrors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // the minutes' work on goroutines of its own
	for _, in := range []string{"histograms", "health", "shared"} {
		t.Run(in, func(t *testing.T) {
			req := request(t, 0)
			if in == "shared" {
				req.Canary, _ = selector.Parse(`{pod=~"canary-.+"}`)
			}
			src := &panicking{fleetSource: &fleetSource{series: map[string]prom.Series{`{track="baseline"}`: minutes(t, 10, 10), req.Canary.String(): minutes(t, 10, 10)}}, in: in}
			_, err := Analyze(context.Background(), src, req)
			var ie *ErrInternal
			if !errors.As(err, &ie) || ie.Value == nil || len(ie.Stack) == 0 {
				t.Fatalf("error %v, want an internal error with its panic and stack", err)
			}
		})
	}
	t.Run("the minutes' work", func(t *testing.T) {
		var got any
		func() {
			defer func() { got = recover() }()
			inParallel(4*minPerWorker, func(i int) {
				if i == 3*minPerWorker {
					panic("a minute panicked")
				}
			})
		}()
		ie, ok := got.(*ErrInternal)
		if !ok || ie.Value != "a minute panicked" {
			t.Fatalf("recovered %v on the caller's goroutine, want the worker's panic", got)
		}
	})
}
