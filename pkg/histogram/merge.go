package histogram

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// ErrLayoutMismatch is returned by Merge for histograms of different layouts.
var ErrLayoutMismatch = errors.New("histogram: layouts differ")

// Merge adds two histograms of the same layout, like sum() over their series
// does in Prometheus. Supported:
//
//   - Classic with identical `le` bounds: cumulative counts are added. (The
//     inputs are already monotonicity-fixed, so for non-monotonic inputs this
//     can differ from fixing the sum.)
//   - NativeExponential with the same schema and zero threshold, and
//     NativeCustom: buckets with identical bounds are added, the others kept
//     (the API omits empty buckets, so the bucket sets may differ); partially
//     overlapping buckets are an error.
//
// Different kinds, schemas or zero thresholds are not merged (Prometheus would
// reduce to the lowest schema / widest zero bucket; ask Prometheus for the sum
// instead).
func Merge(a, b *Histogram) (*Histogram, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("%w: nil histogram", ErrLayoutMismatch)
	}
	if a.Kind != b.Kind {
		return nil, fmt.Errorf("%w: %v and %v", ErrLayoutMismatch, a.Kind, b.Kind)
	}
	switch a.Kind {
	case Classic:
		ua, ca, _ := a.classicData()
		ub, cb, _ := b.classicData()
		if len(ua) != len(ub) {
			return nil, fmt.Errorf("%w: different le bounds", ErrLayoutMismatch)
		}
		cum := make([]float64, len(ua))
		for i := range ua {
			if ua[i] != ub[i] {
				return nil, fmt.Errorf("%w: different le bounds", ErrLayoutMismatch)
			}
			cum[i] = ca[i] + cb[i]
		}
		return FromClassic(ua, cum)
	case NativeExponential:
		if a.Schema != b.Schema || a.ZeroThreshold != b.ZeroThreshold {
			return nil, fmt.Errorf("%w: schema %d/%d, zero threshold %g/%g",
				ErrLayoutMismatch, a.Schema, b.Schema, a.ZeroThreshold, b.ZeroThreshold)
		}
	}
	type key struct{ lo, hi float64 }
	idx := map[key]int{}
	var out []Bucket
	for _, h := range []*Histogram{a, b} {
		for _, bk := range h.Buckets {
			k := key{bk.Lower, bk.Upper}
			if i, ok := idx[k]; ok {
				out[i].Count += bk.Count
				continue
			}
			idx[k] = len(out)
			out = append(out, bk)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Lower != out[j].Lower {
			return out[i].Lower < out[j].Lower
		}
		return out[i].Upper < out[j].Upper
	})
	for i := 1; i < len(out); i++ {
		if out[i].Lower < out[i-1].Upper {
			return nil, fmt.Errorf("%w: [%g, %g] and [%g, %g]", ErrOverlap,
				out[i-1].Lower, out[i-1].Upper, out[i].Lower, out[i].Upper)
		}
	}
	sum := a.Sum + b.Sum
	if math.IsNaN(a.Sum) || math.IsNaN(b.Sum) {
		sum = math.NaN()
	}
	return &Histogram{
		Kind:          a.Kind,
		Schema:        a.Schema,
		ZeroThreshold: a.ZeroThreshold,
		Count:         a.Count + b.Count,
		Sum:           sum,
		Buckets:       out,
	}, nil
}
