package prom

import (
	"context"
	"slices"
	"sync"
)

// Warnings collects the warnings Prometheus-compatible backends attach to
// successful answers. Thanos, Mimir and Cortex say so when an answer is
// partial (a store or an ingester did not answer); such an answer is not
// the fleet, so the engine flags it and never promotes on it.
type Warnings struct {
	mu   sync.Mutex
	list []string
}

type warningsKey struct{}

// CollectWarnings returns a context whose queries report their warnings to
// the returned collector.
func CollectWarnings(ctx context.Context) (context.Context, *Warnings) {
	w := &Warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// List returns the distinct warnings in the order they came.
func (w *Warnings) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

func reportWarnings(ctx context.Context, warnings []string) {
	w, _ := ctx.Value(warningsKey{}).(*Warnings)
	if w == nil || len(warnings) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range warnings {
		s = sanitize(s, 240)
		if !slices.Contains(w.list, s) {
			w.list = append(w.list, s)
		}
	}
}
