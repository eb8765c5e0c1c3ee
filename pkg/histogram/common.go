package histogram

import (
	"fmt"
	"math"
	"slices"
)

// Common returns a and b in the finest layout both can be read in, as
// Prometheus's a + b reads them: the histograms themselves when their
// layouts are the same; otherwise
//
//   - NativeExponential of different schemas: the finer one reduced to the
//     coarser schema, each of its buckets added into the coarser bucket that
//     holds it (exact: a bucket of schema s is a union of buckets of every
//     finer schema). Of different zero thresholds the wider is taken, when
//     the narrower histogram has no observation between the two;
//   - Classic of different `le` bounds: each cut down to the bounds both
//     have, its cumulative count at each (exact: a cumulative count does not
//     depend on the bounds below it).
//
// A canary whose release changed the buckets, or whose fresh pods have not
// yet lost resolution as the baseline's long-running ones have (OpenTelemetry
// SDKs and client_golang with a bucket limit lower a series' schema as its
// range widens), is compared with its baseline bucket for bucket this way.
//   - NativeCustom (custom buckets, as Prometheus's
//     convert_classic_histograms_to_nhcb records classic buckets) whose
//     buckets overlap: each cut to the bounds both list, as Prometheus
//     intersects custom bounds. The API lists no empty bucket, so a bound
//     with nothing on either side in one fleet is not seen, and the two
//     are read coarser there than Prometheus reads them.
//
// Different kinds, a zero threshold that would take in observations, or
// bounds with nothing in common but the infinities are an error wrapping
// ErrLayoutMismatch.
func Common(a, b *Histogram) (ca, cb *Histogram, err error) {
	if a == nil || b == nil {
		return nil, nil, fmt.Errorf("%w: nil histogram", ErrLayoutMismatch)
	}
	if a.Kind != b.Kind {
		return nil, nil, fmt.Errorf("%w: %v and %v", ErrLayoutMismatch, a.Kind, b.Kind)
	}
	switch a.Kind {
	case NativeExponential:
		if a.Schema == b.Schema && a.ZeroThreshold == b.ZeroThreshold {
			return a, b, nil
		}
		// A histogram with nothing outside its zero bucket shows no schema
		// (the API lists no other bucket): it keeps the other's, as
		// Prometheus's a + b keeps a schema both share.
		schema, zt := min(a.Schema, b.Schema), max(a.ZeroThreshold, b.ZeroThreshold)
		withSchema := func(h *Histogram, s int32) *Histogram {
			c := *h
			c.Schema = s
			return &c
		}
		switch {
		case a.zeroOnly() && !b.zeroOnly():
			schema, a = b.Schema, withSchema(a, b.Schema)
		case b.zeroOnly() && !a.zeroOnly():
			schema, b = a.Schema, withSchema(b, a.Schema)
		}
		if ca, err = a.reduced(schema, zt); err == nil {
			cb, err = b.reduced(schema, zt)
		}
		return ca, cb, err
	case Classic:
		if slices.EqualFunc(a.Buckets, b.Buckets, func(x, y Bucket) bool { return x.Upper == y.Upper }) {
			return a, b, nil
		}
		ua, _, _ := a.classicData()
		ub, _, _ := b.classicData()
		var both []float64
		for _, u := range ua {
			if _, ok := slices.BinarySearch(ub, u); ok {
				both = append(both, u)
			}
		}
		if len(both) == 0 || len(both) == 1 && math.IsInf(both[0], +1) {
			return nil, nil, fmt.Errorf("%w: no le bound in common but +Inf", ErrLayoutMismatch)
		}
		if ca, err = a.cutTo(both); err == nil {
			cb, err = b.cutTo(both)
		}
		return ca, cb, err
	}
	// NativeCustom: the API omits empty buckets, so two lists of one layout
	// may list different bounds; they are read as they are unless their
	// buckets overlap.
	if !overlap(a.Buckets, b.Buckets) {
		return a, b, nil
	}
	both := knownBounds(a)
	kb := knownBounds(b)
	both = slices.DeleteFunc(both, func(u float64) bool { _, ok := slices.BinarySearch(kb, u); return !ok })
	if len(both) <= 2 {
		return nil, nil, fmt.Errorf("%w: custom buckets with no bound in common", ErrLayoutMismatch)
	}
	return a.customCut(both), b.customCut(both), nil
}

// overlap says whether two ascending bucket lists have buckets that
// overlap without being the same bucket.
func overlap(a, b []Bucket) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		x, y := a[i], b[j]
		switch {
		case x.Lower == y.Lower && x.Upper == y.Upper:
			i++
			j++
		case x.Upper <= y.Lower:
			i++
		case y.Upper <= x.Lower:
			j++
		default:
			return true
		}
	}
	return false
}

// knownBounds are the bounds of h's listed buckets, ascending, with -Inf
// and +Inf, the ends of every custom layout: the API lists no empty bucket,
// so a bound with nothing on either side is not known.
func knownBounds(h *Histogram) []float64 {
	out := []float64{math.Inf(-1), math.Inf(+1)}
	for _, b := range h.Buckets {
		out = append(out, b.Lower, b.Upper)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// customCut is h (NativeCustom) in the buckets between consecutive bounds
// of keep (ascending, -Inf and +Inf first and last, each a known bound of
// h): each of h's buckets lies inside one of them. The first is [-Inf, b],
// the others (a, b], as Prometheus's custom buckets are.
func (h *Histogram) customCut(keep []float64) *Histogram {
	out := &Histogram{Kind: NativeCustom, Count: h.Count, Sum: h.Sum, Buckets: make([]Bucket, 0, len(h.Buckets))}
	for _, b := range h.Buckets {
		j, found := slices.BinarySearch(keep, b.Lower) // keep[j-1] < b.Lower <= keep[j]
		if !found {
			j--
		}
		nb := Bucket{Lower: keep[j], Upper: keep[j+1], LowerInclusive: j == 0, UpperInclusive: true, Count: b.Count}
		if n := len(out.Buckets); n > 0 && out.Buckets[n-1].Lower == nb.Lower {
			out.Buckets[n-1].Count += nb.Count
			continue
		}
		out.Buckets = append(out.Buckets, nb)
	}
	return out
}

// LayoutNote is how Common reads a and b, for the warning that tells a user
// the fleets' tails are counted coarser than either was recorded: "" when it
// reads them as they are (or differ only in zero thresholds with nothing
// between, which changes no count), Common's error when it cannot read them
// together.
func LayoutNote(a, b *Histogram) (string, error) {
	ca, cb, err := Common(a, b)
	if err != nil || ca == a && cb == b {
		return "", err
	}
	switch a.Kind {
	case NativeExponential:
		if a.Schema == b.Schema || a.zeroOnly() || b.zeroOnly() {
			return "", nil // a zero bucket alone shows no schema to differ
		}
		return fmt.Sprintf("native schema %d and %d, counted at schema %d", a.Schema, b.Schema, ca.Schema), nil
	case Classic:
		return fmt.Sprintf("%d and %d le bounds, counted at the %d both have", len(a.Buckets), len(b.Buckets), len(ca.Buckets)), nil
	}
	return "custom buckets of different bounds, counted at the bounds both list", nil
}

// reduced is h (NativeExponential) at a schema no finer than its own and a
// zero threshold no narrower: each bucket goes to the bucket of the schema
// that holds it, whose inner bound is clamped to the zero threshold as
// Prometheus clamps it. A populated bucket that reaches below the new zero
// threshold is an error: Prometheus would take it into the zero bucket and
// widen the threshold further, and the bounds the JSON gives cannot tell
// whether that is what it did.
func (h *Histogram) reduced(schema int32, zt float64) (*Histogram, error) {
	if schema == h.Schema && zt == h.ZeroThreshold {
		return h, nil
	}
	if schema > h.Schema || zt < h.ZeroThreshold {
		return nil, fmt.Errorf("%w: cannot refine schema %d to %d or narrow zero threshold %g to %g", ErrLayoutMismatch, h.Schema, schema, h.ZeroThreshold, zt)
	}
	out := &Histogram{Kind: NativeExponential, Schema: schema, ZeroThreshold: zt, Count: h.Count, Sum: h.Sum,
		Buckets: make([]Bucket, 0, len(h.Buckets))}
	for _, b := range h.Buckets {
		if isZeroBucketShape(b) {
			out.Buckets = append(out.Buckets, Bucket{Lower: -zt, Upper: zt, LowerInclusive: true, UpperInclusive: true, Count: b.Count})
			continue
		}
		negative := b.Upper <= 0
		inner, outer := b.Lower, b.Upper
		if negative {
			inner, outer = -b.Upper, -b.Lower
		}
		if inner < zt {
			if b.Count == 0 {
				continue
			}
			return nil, fmt.Errorf("%w: zero threshold %g would take in the bucket (%g, %g]", ErrLayoutMismatch, zt, inner, outer)
		}
		idx, ok := boundIndex(outer, h.Schema)
		if !ok {
			return nil, fmt.Errorf("%w: bound %g is not of schema %d", ErrLayoutMismatch, outer, h.Schema)
		}
		// Prometheus's targetIdx: bucket idx of schema s lies in bucket
		// ((idx-1) >> (s-t)) + 1 of schema t.
		to := ((idx - 1) >> (h.Schema - schema)) + 1
		lo, hi := max(getBoundExponential(to-1, schema), zt), getBoundExponential(to, schema)
		nb := Bucket{Lower: lo, Upper: hi, UpperInclusive: true, Count: b.Count}
		if negative {
			nb = Bucket{Lower: -hi, Upper: -lo, LowerInclusive: true, Count: b.Count}
		}
		if n := len(out.Buckets); n > 0 && out.Buckets[n-1].Lower == nb.Lower && out.Buckets[n-1].Upper == nb.Upper {
			out.Buckets[n-1].Count += nb.Count
			continue
		}
		out.Buckets = append(out.Buckets, nb)
	}
	return out, nil
}

// cutTo is h (Classic) with only the bounds in keep (ascending, all of them
// bounds of h): the cumulative count at each kept bound is h's.
func (h *Histogram) cutTo(keep []float64) (*Histogram, error) {
	ub, cum, _ := h.classicData()
	cc := make([]float64, 0, len(keep))
	for _, u := range keep {
		i, ok := slices.BinarySearch(ub, u)
		if !ok {
			return nil, fmt.Errorf("%w: le %g is not a bound", ErrLayoutMismatch, u)
		}
		cc = append(cc, cum[i])
	}
	return FromClassic(keep, cc)
}

// zeroOnly says whether h lists no bucket but its zero bucket.
func (h *Histogram) zeroOnly() bool {
	for _, b := range h.Buckets {
		if !isZeroBucketShape(b) {
			return false
		}
	}
	return true
}
