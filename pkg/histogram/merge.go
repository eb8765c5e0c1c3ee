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
// Different kinds, schemas or zero thresholds are not merged: Common reads
// two histograms in the layout both have first, as Prometheus's sum does.
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
	out, ok := mergeAscending(a.Buckets, b.Buckets)
	if !ok {
		out = mergeAny(a.Buckets, b.Buckets)
	}
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

// bucketBefore orders buckets by lower, then upper bound.
func bucketBefore(x, y Bucket) bool {
	if x.Lower != y.Lower {
		return x.Lower < y.Lower
	}
	return x.Upper < y.Upper
}

// mergeAscending merges two bucket lists that are each strictly ascending
// (bucketBefore, no bounds twice) in one pass: buckets with the same bounds
// are added (a's first), the others kept, in ascending order. ok is false
// when a list is not strictly ascending; mergeAny then gives the result.
func mergeAscending(a, b []Bucket) (out []Bucket, ok bool) {
	for _, l := range [][]Bucket{a, b} {
		for i := 1; i < len(l); i++ {
			if !bucketBefore(l[i-1], l[i]) {
				return nil, false
			}
		}
	}
	out = make([]Bucket, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && bucketBefore(a[i], b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || bucketBefore(b[j], a[i]):
			out = append(out, b[j])
			j++
		default: // the same bounds
			bk := a[i]
			bk.Count += b[j].Count
			out = append(out, bk)
			i++
			j++
		}
	}
	return out, true
}

// mergeAny merges bucket lists in any order: buckets with the same bounds
// are added (in list order), the others kept, then sorted (bucketBefore).
func mergeAny(a, b []Bucket) []Bucket {
	type key struct{ lo, hi float64 }
	idx := map[key]int{}
	var out []Bucket
	for _, l := range [][]Bucket{a, b} {
		for _, bk := range l {
			k := key{bk.Lower, bk.Upper}
			if i, ok := idx[k]; ok {
				out[i].Count += bk.Count
				continue
			}
			idx[k] = len(out)
			out = append(out, bk)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return bucketBefore(out[i], out[j]) })
	return out
}
