package histogram

// Schema inference: which exponential schema (and zero threshold) the
// buckets of a native histogram in the HTTP API's JSON belong to, if any
// (FromNative). The bounds are computed bit-exactly as Prometheus does.

import (
	"math"
	"slices"
)

// isZeroBucketShape reports whether b looks like a native zero bucket.
func isZeroBucketShape(b Bucket) bool {
	return b.LowerInclusive && b.UpperInclusive && !math.IsInf(b.Lower, 0) &&
		b.Lower == -b.Upper && b.Lower <= 0
}

// inferSchema returns the exponential schema and zero threshold of bs (sorted)
// or ok=false if bs is not an exponential layout.
func inferSchema(bs []Bucket) (schema int32, zt float64, ok bool) {
	ztKnown := false
	// Zero bucket.
	for _, b := range bs {
		if isZeroBucketShape(b) {
			if ztKnown {
				return 0, 0, false
			}
			zt, ztKnown = b.Upper, true
		}
	}
	// Index of the highest negative and the lowest positive bucket: the only
	// ones that may be clamped to the zero threshold.
	hiNeg, loPos := -1, -1
	for i, b := range bs {
		if isZeroBucketShape(b) {
			continue
		}
		switch {
		case b.Upper <= 0:
			hiNeg = i
		case b.Lower >= 0:
			if loPos < 0 {
				loPos = i
			}
		default:
			return 0, 0, false // Spans zero without being a zero bucket.
		}
	}

	if hiNeg < 0 && loPos < 0 {
		return 0, zt, true // Only a zero bucket (or nothing): schema 0.
	}
	// fits says whether every bucket of bs is a bucket of schema s (the
	// lowest positive and highest negative ones may be clamped to the zero
	// threshold).
	fits := func(s int32) bool {
		for i, b := range bs {
			if isZeroBucketShape(b) {
				continue
			}
			inner, outer := b.Lower, b.Upper // magnitudes: inner closer to zero
			if b.Upper <= 0 {
				inner, outer = -b.Upper, -b.Lower
			}
			idx, found := boundIndex(outer, s)
			if !found {
				return false
			}
			prev := getBoundExponential(idx-1, s)
			if prev == inner {
				continue
			}
			// Clamped to the zero threshold?
			if (i == hiNeg || i == loPos) && prev < inner && inner < outer && (!ztKnown || inner == zt) {
				continue
			}
			return false
		}
		return true
	}
	for _, b := range bs {
		if isZeroBucketShape(b) {
			continue
		}
		if b.Upper <= 0 && (!b.LowerInclusive || b.UpperInclusive) {
			return 0, 0, false // Negative exponential buckets are [lower, upper).
		}
		if b.Upper > 0 && (b.LowerInclusive || !b.UpperInclusive) {
			return 0, 0, false // Positive exponential buckets are (lower, upper].
		}
	}
	// A bucket that cannot be clamped is a whole bucket of exactly one
	// schema, the one whose bucket ratio 2^(2^-s) it has: only that schema
	// can fit. Without such a bucket, try every schema, highest first.
	best, found := int32(0), false
	for i, b := range bs {
		if isZeroBucketShape(b) || i == hiNeg || i == loPos {
			continue
		}
		inner, outer := b.Lower, b.Upper
		if b.Upper <= 0 {
			inner, outer = -b.Upper, -b.Lower
		}
		if !(inner > 0) || math.IsInf(outer, 0) {
			break
		}
		s := int32(math.Round(-math.Log2(math.Log2(outer / inner))))
		if s >= ExponentialSchemaMin && s <= ExponentialSchemaMax && fits(s) {
			best, found = s, true
		}
		if !found {
			return 0, 0, false
		}
		break
	}
	for s := int32(ExponentialSchemaMax); !found && s >= ExponentialSchemaMin; s-- {
		if fits(s) {
			best, found = s, true
		}
	}
	if !found {
		return 0, 0, false
	}
	// Determine the zero threshold from clamped buckets if no zero bucket.
	clampedZT := func(i int) (float64, bool) {
		if i < 0 {
			return 0, false
		}
		b := bs[i]
		inner, outer := b.Lower, b.Upper
		if b.Upper <= 0 {
			inner, outer = -b.Upper, -b.Lower
		}
		idx, _ := boundIndex(outer, best)
		if getBoundExponential(idx-1, best) != inner {
			return inner, true
		}
		return 0, false
	}
	zn, okN := clampedZT(hiNeg)
	zp, okP := clampedZT(loPos)
	switch {
	case ztKnown:
	case okN && okP:
		if zn != zp {
			return 0, 0, false
		}
		zt = zp
	case okN:
		zt = zn
	case okP:
		zt = zp
	}
	return best, zt, true
}

// Exponential schema limits (model/histogram).
const (
	ExponentialSchemaMin = -4
	ExponentialSchemaMax = 8
)

// ExponentialBound is the upper bound of bucket idx of exponential schema s,
// bit-identical to Prometheus's: what a native bucket's bounds are.
func ExponentialBound(idx, schema int32) float64 { return getBoundExponential(idx, schema) }

// getBoundExponential returns the upper bound of the bucket with index idx in
// exponential schema s, bit-identical to Prometheus's getBoundExponential.
func getBoundExponential(idx, schema int32) float64 {
	if schema < 0 {
		exp := int(idx) << -schema
		if exp == 1024 {
			// Last bucket before the ±Inf overflow bucket.
			return math.MaxFloat64
		}
		return math.Ldexp(1, exp)
	}
	fracIdx := idx & ((1 << schema) - 1)
	frac := expBoundFrac[schema][fracIdx]
	exp := (int(idx) >> schema) + 1
	if frac == 0.5 && exp == 1025 {
		return math.MaxFloat64
	}
	return math.Ldexp(frac, exp)
}

// boundIndex returns idx with getBoundExponential(idx, s) == v exactly.
//
// A bound of a normal magnitude is f * 2^e with f one of the schema's
// fractions in [0.5, 1) (f = 0.5 for s < 0), which is exactly what
// math.Frexp splits it into: its index is read off e and the table without
// a logarithm, and checked. Bounds are strictly increasing in idx, so the
// index found is the only one; subnormal, huge and infinite values take the
// general path.
func boundIndex(v float64, s int32) (int32, bool) {
	if !(v > 0) {
		return 0, false
	}
	if v >= 0x1p-1000 && v <= 0x1p+1000 {
		f, e := math.Frexp(v)
		var g int32
		if s >= 0 {
			j, found := slices.BinarySearch(expBoundFrac[s], f)
			if !found {
				return 0, false
			}
			g = int32(e-1)<<s + int32(j)
		} else {
			g = int32(e-1) >> -s
		}
		return g, getBoundExponential(g, s) == v
	}
	return boundIndexAnywhere(v, s)
}

// boundIndexAnywhere is boundIndex for any v > 0, searched near the
// logarithm's estimate.
func boundIndexAnywhere(v float64, s int32) (int32, bool) {
	var guess float64
	switch {
	case math.IsInf(v, +1):
		guess = 1024*math.Ldexp(1, int(s)) + 1
	case v == math.MaxFloat64:
		guess = 1024 * math.Ldexp(1, int(s))
	default:
		guess = math.Round(math.Log2(v) * math.Ldexp(1, int(s)))
	}
	if math.Abs(guess) > 1<<30 {
		return 0, false
	}
	g := int32(guess)
	for _, d := range []int32{0, -1, 1} {
		if getBoundExponential(g+d, s) == v {
			return g + d, true
		}
	}
	return 0, false
}
