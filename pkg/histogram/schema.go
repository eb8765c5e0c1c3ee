package histogram

// Schema inference: which exponential schema (and zero threshold) the
// buckets of a native histogram in the HTTP API's JSON belong to, if any
// (FromNative). The bounds are computed bit-exactly as Prometheus does.

import "math"

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
	fits := make(map[int32]bool)
	for s := int32(ExponentialSchemaMin); s <= ExponentialSchemaMax; s++ {
		fits[s] = true
	}
	for i, b := range bs {
		if isZeroBucketShape(b) {
			continue
		}
		var inner, outer float64 // magnitudes: inner closer to zero
		if b.Upper <= 0 {
			if !b.LowerInclusive || b.UpperInclusive {
				return 0, 0, false // Negative exponential buckets are [lower, upper).
			}
			inner, outer = -b.Upper, -b.Lower
		} else {
			if b.LowerInclusive || !b.UpperInclusive {
				return 0, 0, false // Positive exponential buckets are (lower, upper].
			}
			inner, outer = b.Lower, b.Upper
		}
		mayClamp := i == hiNeg || i == loPos
		for s := range fits {
			if !fits[s] {
				continue
			}
			idx, found := boundIndex(outer, s)
			if !found {
				fits[s] = false
				continue
			}
			prev := getBoundExponential(idx-1, s)
			if prev == inner {
				continue
			}
			// Clamped to the zero threshold?
			if mayClamp && prev < inner && inner < outer && (!ztKnown || inner == zt) {
				continue
			}
			fits[s] = false
		}
	}
	best, found := int32(0), false
	for s := int32(ExponentialSchemaMax); s >= ExponentialSchemaMin; s-- {
		if fits[s] {
			best, found = s, true
			break
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
func boundIndex(v float64, s int32) (int32, bool) {
	if !(v > 0) {
		return 0, false
	}
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
