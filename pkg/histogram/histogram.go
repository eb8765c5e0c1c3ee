// Package histogram holds a fleet histogram (the histogram Prometheus returns
// for sum by (le) (...) of a classic histogram, or for sum(...) of a native
// histogram) and computes quantiles from it exactly as Prometheus 3.x's
// histogram_quantile does, plus the counts and confidence bounds the canary
// verdict needs.
//
// The quantile code follows promql/quantile.go of Prometheus v3.13
// (BucketQuantile for classic histograms, HistogramQuantile for native
// histograms); bucket boundaries of exponential schemas follow getBound in
// model/histogram. See docs/quantiles.md.
package histogram

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Kind of bucket layout.
type Kind int

const (
	// Classic is a classic histogram made of `le` buckets. Quantiles use
	// Prometheus's bucketQuantile (linear interpolation, the highest finite
	// bucket bound for the +Inf bucket, monotonicity fix).
	Classic Kind = iota
	// NativeExponential is a native histogram with an exponential schema
	// (-4..8). Quantiles use exponential interpolation, except in the zero
	// bucket (linear).
	NativeExponential
	// NativeCustom is a native histogram with custom buckets (schema -53,
	// NHCB), or any native layout that is not exactly exponential. Quantiles
	// use linear interpolation.
	NativeCustom
)

func (k Kind) String() string {
	switch k {
	case Classic:
		return "classic"
	case NativeExponential:
		return "native-exponential"
	case NativeCustom:
		return "native-custom"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Bucket is one bucket of a fleet histogram with non-cumulative Count.
type Bucket struct {
	Lower, Upper                   float64
	LowerInclusive, UpperInclusive bool
	Count                          float64
}

// Histogram is a fleet histogram.
//
// Buckets are sorted ascending and hold non-cumulative counts. For native
// histograms the zero bucket is a bucket [-ZeroThreshold, ZeroThreshold] with
// both sides inclusive. For classic histograms the buckets are the `le`
// buckets after Prometheus's coalescing and monotonicity fix; the lowest
// bucket has Lower 0 if its upper bound is positive (the natural lower bound
// Prometheus assumes) and -Inf otherwise, and the highest bucket is the +Inf
// bucket (if the input had one).
type Histogram struct {
	Kind          Kind
	Schema        int32   // exponential schema -4..8 (only for NativeExponential)
	ZeroThreshold float64 // native only
	Count, Sum    float64 // FromClassic sets Count to the +Inf (highest) bucket and leaves Sum 0: classic bucket series carry no sum
	Buckets       []Bucket

	// Classic only: the cumulative counts exactly as Prometheus uses them
	// (after coalescing and the monotonicity fix), so that quantiles do not
	// suffer from re-accumulating the non-cumulative Buckets. nil for
	// histograms not built by FromClassic; then they are derived from Buckets.
	cumulative []float64
	// Classic only: whether the highest input bound was +Inf. Without a +Inf
	// bucket Prometheus's histogram_quantile returns NaN.
	hasInf bool
}

// APIBucket is one bucket of the Prometheus HTTP API JSON representation of
// a native histogram: [boundaryRule, "lower", "upper", "count"].
//
// Boundaries (see util/jsonutil.MarshalHistogram and docs/querying/api.md):
//
//	0: (lower, upper]  lower exclusive, upper inclusive ("open left"; positive buckets and custom buckets)
//	1: [lower, upper)  lower inclusive, upper exclusive ("open right"; negative buckets)
//	2: (lower, upper)  both exclusive
//	3: [lower, upper]  both inclusive (the zero bucket, and the first custom bucket [-Inf, b0])
type APIBucket struct {
	Boundaries          int
	Lower, Upper, Count float64
}

// Errors returned by the constructors.
var (
	ErrLengthMismatch = errors.New("histogram: upper bounds and counts differ in length")
	ErrNoBuckets      = errors.New("histogram: no buckets")
	ErrInvalidBound   = errors.New("histogram: invalid bucket bound")
	ErrInvalidRule    = errors.New("histogram: invalid boundary rule (must be 0..3)")
	ErrOverlap        = errors.New("histogram: overlapping buckets")
)

// smallDeltaTolerance is Prometheus's tolerance for relative differences
// between successive cumulative classic bucket counts that are treated as
// floating point noise (promql/quantile.go).
const smallDeltaTolerance = 1e-12

// FromClassic builds a classic histogram from `le` upper bounds and the
// CUMULATIVE counts Prometheus returns for sum by (le) (...).
//
// The input may be unsorted; equal bounds are merged by adding their counts
// (as Prometheus does for e.g. le="0.2" and le="2e-1"). Then Prometheus's
// monotonicity fix is applied: relative differences below 1e-12 between
// successive cumulative counts are ignored, and decreases are removed (the
// cumulative count is held at the running maximum). The +Inf bucket may be
// missing; Quantile then returns NaN as Prometheus does.
func FromClassic(upperBounds, cumulativeCounts []float64) (*Histogram, error) {
	if len(upperBounds) != len(cumulativeCounts) {
		return nil, ErrLengthMismatch
	}
	if len(upperBounds) == 0 {
		return nil, ErrNoBuckets
	}
	sorted := true
	for i, ub := range upperBounds {
		if math.IsNaN(ub) {
			return nil, fmt.Errorf("%w: le is NaN", ErrInvalidBound)
		}
		sorted = sorted && (i == 0 || upperBounds[i-1] <= ub)
	}
	if !sorted {
		type pair struct{ ub, c float64 }
		ps := make([]pair, len(upperBounds))
		for i, ub := range upperBounds {
			ps[i] = pair{ub, cumulativeCounts[i]}
		}
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].ub < ps[j].ub })
		upperBounds, cumulativeCounts = make([]float64, len(ps)), make([]float64, len(ps))
		for i, p := range ps {
			upperBounds[i], cumulativeCounts[i] = p.ub, p.c
		}
	}

	// Coalesce equal upper bounds.
	h := &Histogram{Kind: Classic, Buckets: make([]Bucket, 0, len(upperBounds))}
	cum := make([]float64, 0, len(upperBounds))
	for i, ub := range upperBounds {
		if n := len(h.Buckets); n > 0 && ub == h.Buckets[n-1].Upper {
			cum[n-1] += cumulativeCounts[i]
			continue
		}
		h.Buckets = append(h.Buckets, Bucket{Upper: ub, UpperInclusive: true})
		cum = append(cum, cumulativeCounts[i])
	}
	ensureMonotonic(cum)

	h.Count, h.cumulative = cum[len(cum)-1], cum
	h.hasInf = math.IsInf(h.Buckets[len(h.Buckets)-1].Upper, +1)
	for i := range h.Buckets {
		b := &h.Buckets[i]
		switch {
		case i > 0:
			b.Lower, b.Count = h.Buckets[i-1].Upper, cum[i]-cum[i-1]
		case b.Upper > 0:
			b.Lower, b.Count = 0, cum[i]
		default:
			b.Lower, b.Count = math.Inf(-1), cum[i]
		}
	}
	return h, nil
}

// ensureMonotonic is Prometheus's ensureMonotonicAndIgnoreSmallDeltas on a
// slice of cumulative counts sorted by upper bound.
func ensureMonotonic(cum []float64) {
	prev := cum[0]
	for i := 1; i < len(cum); i++ {
		curr := cum[i]
		if curr == prev {
			continue
		}
		if almostEqual(prev, curr, smallDeltaTolerance) {
			cum[i] = prev // Ignore floating point noise; keep prev.
			continue
		}
		if curr < prev {
			cum[i] = prev // Remove the decrease; keep prev.
			continue
		}
		prev = curr
	}
}

// minNormal is the smallest positive normal float64.
var minNormal = math.Float64frombits(0x0010000000000000)

// almostEqual is Prometheus's util/almost.Equal (without the StaleNaN case,
// which cannot occur in query results).
func almostEqual(a, b, epsilon float64) bool {
	if math.IsNaN(a) && math.IsNaN(b) {
		return true
	}
	if a == b {
		return true
	}
	absSum := math.Abs(a) + math.Abs(b)
	diff := math.Abs(a - b)
	if a == 0 || b == 0 || absSum < minNormal {
		return diff < epsilon*minNormal
	}
	return diff/math.Min(absSum, math.MaxFloat64) < epsilon
}

// FromNative builds a native histogram from the buckets of the Prometheus
// HTTP API JSON plus count and sum. Buckets may come in any order; the API
// omits empty buckets.
//
// Schema inference: the JSON does not carry the schema. Exponential buckets
// of schema s have bounds exactly 2^(i*2^-s), computed bit-exactly as
// Prometheus's getBound does (frexp-style table for schemas 0..8, powers of
// two for negative schemas). The layout is taken as NativeExponential with
// schema s if
//
//   - every positive bucket is (getBound(i-1,s), getBound(i,s)] (boundary
//     rule 0) and every negative bucket is [-getBound(i,s), -getBound(i-1,s))
//     (rule 1), for one and the same s in -4..8;
//   - the only exceptions are the bucket next to the zero bucket on each side,
//     whose inner bound Prometheus clamps to the zero threshold when it lies
//     inside the zero bucket (that bucket only has to end on a bound of s);
//   - a zero bucket, if present, is [-zt, zt] (rule 3).
//
// Each unclamped bucket determines s uniquely (its bound ratio is 2^(2^-s)).
// If several schemas fit (only clamped buckets), the finest fitting one is
// taken; if there are no non-zero buckets at all, the schema is 0. This does
// not change quantiles: exponential interpolation only uses a bucket's bounds.
//
// Otherwise the layout is NativeCustom (custom buckets, schema -53: linear
// interpolation, first bucket [-Inf, b0] with rule 3). Known ambiguity: a
// custom-bucket histogram whose non-empty buckets all happen to lie on
// consecutive bounds of one exponential schema (e.g. only (1,2] and (2,4]
// non-empty) cannot be told apart from an exponential one in the JSON and is
// taken as exponential. ZeroThreshold is taken from the zero bucket, or from a
// clamped bucket bound, and is 0 otherwise.
//
// A second limitation of the JSON: Prometheus treats the zero bucket as
// [0, zt] when the histogram has no negative buckets (and as [-zt, 0] when it
// has no positive ones), where "has" includes empty buckets inside the spans.
// The JSON omits empty buckets, so here only non-empty buckets count.
func FromNative(buckets []APIBucket, count, sum float64) (*Histogram, error) {
	return FromNativeAfter(nil, buckets, count, sum)
}

// FromNativeAfter is FromNative for the next sample of a series whose last
// histogram was prev (nil: none): when the buckets have prev's bounds, the
// schema inferred from them is prev's, and is not inferred again (a range
// of native histograms mostly repeats its bounds).
func FromNativeAfter(prev *Histogram, buckets []APIBucket, count, sum float64) (*Histogram, error) {
	bs := make([]Bucket, 0, len(buckets))
	for _, ab := range buckets {
		if ab.Boundaries < 0 || ab.Boundaries > 3 {
			return nil, fmt.Errorf("%w: %d", ErrInvalidRule, ab.Boundaries)
		}
		// A bucket has a finite side: [+Inf, +Inf] and [-Inf, -Inf] hold
		// nothing Prometheus can observe.
		if math.IsNaN(ab.Lower) || math.IsNaN(ab.Upper) || ab.Lower > ab.Upper || math.IsInf(ab.Lower, 1) || math.IsInf(ab.Upper, -1) {
			return nil, fmt.Errorf("%w: [%g, %g]", ErrInvalidBound, ab.Lower, ab.Upper)
		}
		bs = append(bs, Bucket{
			Lower:          ab.Lower,
			Upper:          ab.Upper,
			LowerInclusive: ab.Boundaries == 1 || ab.Boundaries == 3,
			UpperInclusive: ab.Boundaries == 0 || ab.Boundaries == 3,
			Count:          ab.Count,
		})
	}
	// Prometheus writes buckets in ascending order: sort only if not.
	if !slices.IsSortedFunc(bs, compareBuckets) {
		slices.SortStableFunc(bs, compareBuckets)
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].Lower < bs[i-1].Upper {
			return nil, fmt.Errorf("%w: [%g, %g] and [%g, %g]", ErrOverlap,
				bs[i-1].Lower, bs[i-1].Upper, bs[i].Lower, bs[i].Upper)
		}
	}
	h := &Histogram{Count: count, Sum: sum, Buckets: bs}
	if prev != nil && prev.Kind != Classic && sameBounds(prev.Buckets, bs) {
		h.Kind, h.Schema, h.ZeroThreshold = prev.Kind, prev.Schema, prev.ZeroThreshold
		return h, nil
	}
	schema, zt, ok := inferSchema(bs)
	if ok {
		h.Kind = NativeExponential
		h.Schema = schema
		h.ZeroThreshold = zt
	} else {
		h.Kind = NativeCustom
	}
	return h, nil
}

// sameBounds says whether a and b are buckets with the same bounds.
func sameBounds(a, b []Bucket) bool {
	return slices.EqualFunc(a, b, func(x, y Bucket) bool {
		return x.Lower == y.Lower && x.Upper == y.Upper && x.LowerInclusive == y.LowerInclusive && x.UpperInclusive == y.UpperInclusive
	})
}

// compareBuckets orders buckets by lower, then upper bound.
func compareBuckets(a, b Bucket) int {
	if c := cmp.Compare(a.Lower, b.Lower); c != 0 {
		return c
	}
	return cmp.Compare(a.Upper, b.Upper)
}
