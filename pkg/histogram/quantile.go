package histogram

import (
	"math"
	"sort"
)

// Quantile returns the q-quantile exactly as Prometheus 3.x's
// histogram_quantile computes it for this histogram.
//
// Special cases (both kinds): q < 0 gives -Inf, q > 1 gives +Inf, q NaN
// gives NaN, no observations give NaN.
//
// Classic (bucketQuantile): no +Inf bucket or fewer than two buckets give
// NaN; linear interpolation within a bucket, with 0 as the lower bound of the
// lowest bucket if its upper bound is positive (otherwise its upper bound is
// returned); a rank in the +Inf bucket returns the highest finite bound.
//
// Native (HistogramQuantile): for q < 0.5 (or Sum NaN) the rank q*Count is
// searched from the lowest bucket, otherwise (1-q)*Count from the highest
// bucket; empty buckets are skipped. Interpolation is exponential in
// exponential buckets, linear in the zero bucket and in custom buckets. The
// zero bucket is [0, zt] if there are only positive buckets and [-zt, 0] if
// there are only negative ones. In custom buckets the first bucket [-Inf, b0]
// counts as [0, b0] (or returns b0 if b0 <= 0) and the +Inf bucket returns its
// lower bound. If the rank is not reached (NaN observations: Count exceeds the
// bucket total), the result is NaN when Sum is NaN.
func (h *Histogram) Quantile(q float64) float64 {
	if h.Kind == Classic {
		return h.classicQuantile(q)
	}
	return h.nativeQuantile(q)
}

// classicData returns upper bounds and cumulative counts of a classic
// histogram, and whether it has a +Inf bucket.
func (h *Histogram) classicData() (ub, cum []float64, hasInf bool) {
	ub = make([]float64, len(h.Buckets))
	for i, b := range h.Buckets {
		ub[i] = b.Upper
	}
	if h.cumulative != nil && len(h.cumulative) == len(h.Buckets) {
		return ub, h.cumulative, h.hasInf
	}
	cum = make([]float64, len(h.Buckets))
	var c float64
	for i, b := range h.Buckets {
		c += b.Count
		cum[i] = c
	}
	return ub, cum, len(ub) > 0 && math.IsInf(ub[len(ub)-1], +1)
}

func (h *Histogram) classicQuantile(q float64) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(+1)
	}
	ub, cum, hasInf := h.classicData()
	if !hasInf || len(ub) < 2 {
		return math.NaN()
	}
	observations := cum[len(cum)-1]
	if observations == 0 {
		return math.NaN()
	}
	rank := q * observations
	n := len(cum)
	b := sort.Search(n-1, func(i int) bool { return cum[i] >= rank })
	switch {
	case b == n-1:
		return ub[n-2]
	case b == 0 && ub[0] <= 0:
		return ub[0]
	}
	var (
		bucketStart float64
		bucketEnd   = ub[b]
		count       = cum[b]
	)
	if b > 0 {
		bucketStart = ub[b-1]
		count -= cum[b-1]
		rank -= cum[b-1]
	}
	return bucketStart + (bucketEnd-bucketStart)*(rank/count)
}

// iterBucket returns bucket i as Prometheus's bucket iterator yields it:
// bounds of negative/positive buckets inside the zero bucket are clamped to
// the zero threshold. yielded is false for a bucket the iterator skips: the
// zero bucket is only yielded if it is populated.
func (h *Histogram) iterBucket(i int) (b Bucket, yielded bool) {
	b = h.Buckets[i]
	zt := h.ZeroThreshold
	if b.Lower > 0 {
		// A positive bucket, the common case: never the zero bucket.
		if b.Lower < zt {
			b.Lower = zt
		}
		return b, true
	}
	if h.isZeroBucket(b) {
		return b, b.Count != 0
	}
	if b.Upper < 0 && b.Upper > -zt {
		b.Upper = -zt
	}
	return b, true
}

func (h *Histogram) nativeQuantile(q float64) float64 {
	var out [1]float64
	h.nativeQuantiles([]float64{q}, out[:])
	return out[0]
}

// Quantiles sets out[i] to Quantile(qs[i]) for every i, bit for bit, reading
// a native histogram's buckets once in each direction the quantiles are
// searched from; out must be at least as long as qs.
func (h *Histogram) Quantiles(qs, out []float64) {
	if h.Kind == Classic {
		for i, q := range qs {
			out[i] = h.classicQuantile(q)
		}
		return
	}
	h.nativeQuantiles(qs, out)
}

// nativeQuantiles is Quantiles of a native histogram. Each quantile's rank
// is searched as Prometheus searches it: from the lowest bucket for q < 0.5
// (or Sum NaN), else from the highest, skipping empty buckets, stopping at
// the first bucket where the running count reaches the rank. The ranks of
// one direction are taken in ascending order along one walk: where the
// running count first reaches a rank it has reached every lower one, so
// each stops at the same bucket with the same running count as its own
// walk would.
func (h *Histogram) nativeQuantiles(qs, out []float64) {
	var fwdBuf, bwdBuf [8]int
	fwd, bwd := fwdBuf[:0], bwdBuf[:0]
	for i, q := range qs {
		switch {
		case q < 0:
			out[i] = math.Inf(-1)
		case q > 1:
			out[i] = math.Inf(+1)
		case h.Count == 0 || math.IsNaN(q):
			out[i] = math.NaN()
		case math.IsNaN(h.Sum) || q < 0.5:
			fwd = append(fwd, i)
		default:
			bwd = append(bwd, i)
		}
	}
	h.walkRanks(qs, out, fwd, true)
	h.walkRanks(qs, out, bwd, false)
}

// walkRanks resolves the quantiles qs[i], i in idx, searched in one
// direction (see nativeQuantiles).
func (h *Histogram) walkRanks(qs, out []float64, idx []int, forward bool) {
	if len(idx) == 0 {
		return
	}
	rank := func(i int) float64 {
		if forward {
			return qs[i] * h.Count
		}
		return (1 - qs[i]) * h.Count
	}
	// Ascending ranks, a NaN rank (never reached) last; insertion sort: a
	// handful of quantiles.
	before := func(a, b float64) bool { return a < b || (!math.IsNaN(a) && math.IsNaN(b)) }
	for j := 1; j < len(idx); j++ {
		for k := j; k > 0 && before(rank(idx[k]), rank(idx[k-1])); k-- {
			idx[k], idx[k-1] = idx[k-1], idx[k]
		}
	}
	var (
		bucket Bucket
		count  float64
		next   int
	)
	n := len(h.Buckets)
	for k := 0; k < n && next < len(idx); k++ {
		i := k
		if !forward {
			i = n - 1 - k
		}
		b, yielded := h.iterBucket(i)
		if !yielded {
			continue
		}
		bucket = b
		if bucket.Count == 0 {
			continue
		}
		count += bucket.Count
		for next < len(idx) && count >= rank(idx[next]) {
			out[idx[next]] = h.interpolate(bucket, count, rank(idx[next]), forward)
			next++
		}
	}
	// Ranks not reached (NaN observations) end at the last bucket read.
	for ; next < len(idx); next++ {
		out[idx[next]] = h.interpolate(bucket, count, rank(idx[next]), forward)
	}
}

// interpolate is the quantile of rank in bucket, where the search stopped
// with the running count count.
func (h *Histogram) interpolate(bucket Bucket, count, rank float64, forward bool) float64 {
	custom := h.Kind != NativeExponential
	if !custom && bucket.Lower < 0 && bucket.Upper > 0 {
		hasNeg, hasPos := h.negPos()
		switch {
		case !hasNeg && hasPos:
			bucket.Lower = 0
		case !hasPos && hasNeg:
			bucket.Upper = 0
		}
	} else if custom {
		if math.IsInf(bucket.Lower, -1) {
			if bucket.Upper <= 0 {
				return bucket.Upper
			}
			bucket.Lower = 0
		} else if math.IsInf(bucket.Upper, +1) {
			return bucket.Lower
		}
	}
	if count > h.Count {
		count = h.Count
	}
	if count < rank {
		if math.IsNaN(h.Sum) {
			return math.NaN()
		}
		return bucket.Upper
	}
	if forward {
		rank -= count - bucket.Count
	} else {
		rank = count - rank
	}
	fraction := rank / bucket.Count

	if custom || (bucket.Lower <= 0 && bucket.Upper >= 0) {
		return bucket.Lower + (bucket.Upper-bucket.Lower)*fraction
	}
	logLower := math.Log2(math.Abs(bucket.Lower))
	logUpper := math.Log2(math.Abs(bucket.Upper))
	if bucket.Lower > 0 {
		return math.Exp2(logLower + (logUpper-logLower)*fraction)
	}
	return -math.Exp2(logUpper + (logLower-logUpper)*(1-fraction))
}

// interpBucket is a bucket with the interpolation Quantile uses for it.
type interpBucket struct {
	Bucket
	linear bool
}

// effective reads the buckets, one at a time in ascending order, with the
// bounds Quantile assumes when a rank falls into them: classic buckets as
// stored (lowest bucket from 0 if its upper bound is positive); native
// buckets clamped to the zero threshold, the zero bucket one-sided if the
// histogram has only positive (or only negative) buckets, and a custom
// first bucket [-Inf, b0] with b0 > 0 taken as [0, b0]. It looks for
// negative and positive buckets only when a native zero bucket needs to
// know.
type effective struct {
	h              *Histogram
	signs          bool // hasNeg and hasPos are known
	hasNeg, hasPos bool
}

// at is bucket i with those bounds; ok is false for a bucket Quantile
// skips (an empty native zero bucket).
func (e *effective) at(i int) (ib interpBucket, ok bool) {
	h := e.h
	if h.Kind == Classic {
		ib = interpBucket{Bucket: h.Buckets[i], linear: true}
		// Use the exact Prometheus cumulative differences if available.
		if h.cumulative != nil && len(h.cumulative) == len(h.Buckets) {
			ib.Count = h.cumulative[i]
			if i > 0 {
				ib.Count = h.cumulative[i] - h.cumulative[i-1]
			}
		}
		return ib, true
	}
	b, yielded := h.iterBucket(i)
	if !yielded {
		return ib, false
	}
	ib = interpBucket{Bucket: b, linear: h.Kind != NativeExponential}
	if h.Kind == NativeExponential && b.Lower <= 0 && b.Upper >= 0 {
		ib.linear = true
		if b.Lower < 0 && b.Upper > 0 {
			if !e.signs {
				e.hasNeg, e.hasPos = h.negPos()
				e.signs = true
			}
			switch {
			case !e.hasNeg && e.hasPos:
				ib.Lower = 0
			case !e.hasPos && e.hasNeg:
				ib.Upper = 0
			}
		}
	}
	if h.Kind != NativeExponential && math.IsInf(b.Lower, -1) && b.Upper > 0 {
		ib.Lower = 0
	}
	return ib, true
}

// fractionAbove returns the fraction of the observations of b above v,
// interpolating as Quantile does. Observations in an infinite-width bucket are
// taken to lie at its infinite end.
func (b interpBucket) fractionAbove(v float64) float64 {
	switch {
	case b.Upper <= v:
		return 0
	case b.Lower >= v:
		return 1
	case math.IsInf(b.Upper, +1):
		return 1
	case math.IsInf(b.Lower, -1):
		return 0
	}
	if b.linear {
		return (b.Upper - v) / (b.Upper - b.Lower)
	}
	logLower := math.Log2(math.Abs(b.Lower))
	logUpper := math.Log2(math.Abs(b.Upper))
	logV := math.Log2(math.Abs(v))
	if v > 0 {
		return (logUpper - logV) / (logUpper - logLower)
	}
	return (logV - logUpper) / (logLower - logUpper)
}

// CountAbove returns the number of observations strictly above v. Buckets
// entirely above v count fully; a bucket containing v counts the part above v
// by the same interpolation Quantile uses (linear for classic, custom and zero
// buckets, exponential for exponential buckets, with the same natural bounds
// at zero). Observations in an infinite-width bucket are taken to lie at its
// infinite end: a +Inf bucket containing v counts fully, a bucket reaching
// down to -Inf that contains v (upper bound <= 0) not at all. Observations
// that are in Count but in no bucket (NaN observations of a native histogram)
// are not counted. v NaN gives NaN.
func (h *Histogram) CountAbove(v float64) float64 {
	var out [1]float64
	h.CountsAbove([]float64{v}, out[:])
	return out[0]
}

// CountsAbove sets out[i] to CountAbove(vs[i]) for every i, reading the
// buckets once; out must be at least as long as vs.
func (h *Histogram) CountsAbove(vs, out []float64) {
	lowest := math.Inf(+1)
	for i, v := range vs {
		out[i] = 0
		if math.IsNaN(v) {
			out[i] = math.NaN()
			continue
		}
		lowest = min(lowest, v)
	}
	e := effective{h: h}
	// Buckets whose upper bound is at or below every v hold nothing above
	// any v (they would add exact zeros): the sums start at the first
	// bucket that reaches above the lowest v and run upwards, in the order
	// every bucket would be added.
	start := len(h.Buckets)
	for _, b := range h.Buckets {
		if math.IsNaN(b.Count) || math.IsInf(b.Count, 0) {
			start = 0 // its zero fraction is NaN: every bucket is read
		}
	}
	for start > 0 {
		if b, ok := e.at(start - 1); ok && b.Upper <= lowest {
			break
		}
		start--
	}
	for k := start; k < len(h.Buckets); k++ {
		b, ok := e.at(k)
		if !ok || b.Count == 0 {
			continue
		}
		for i, v := range vs {
			if !math.IsNaN(v) {
				out[i] += b.Count * b.fractionAbove(v)
			}
		}
	}
}

// TailCount returns the number of observations beyond the q-quantile, i.e.
// CountAbove(Quantile(q)). It is computed from the bucket counts, not as
// (1-q)*Count: if the quantile is pinned to a bucket bound (Prometheus returns
// the highest finite bound for a rank in the +Inf bucket, or the edge of a
// populated bucket after empty ones) the tail holds the whole bucket. NaN if
// Quantile(q) is NaN.
func (h *Histogram) TailCount(q float64) float64 {
	return h.TailBeyond(h.Quantile(q))
}

// TailBeyond is TailCount(q) for a quantile already read: v = Quantile(q).
func (h *Histogram) TailBeyond(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return math.NaN()
	case math.IsInf(v, +1):
		return 0
	}
	return h.CountAbove(v)
}

// QuantileBounds returns distribution-free confidence bounds for the
// q-quantile at the given confidence level (e.g. 0.95).
//
// The rank of the true q-quantile among n = Count observations is uncertain:
// the number of observations below it is Binomial(n, q). With the normal
// approximation, ranks r_lo/hi = n*q -/+ z*sqrt(n*q*(1-q)) (z = ZFromConfidence,
// 1.96 for 0.95), clamped to [1, n], form an order-statistic interval. Each
// rank is mapped to a value at bucket level: lower is the LOWER edge of the
// bucket holding rank r_lo, upper the UPPER edge of the bucket holding rank
// r_hi (cumulative counts, empty buckets skipped), so the bounds also cover
// the bucket resolution. Edges are those Quantile assumes (e.g. 0 as the lower
// edge of a classic lowest bucket with positive bound). If r_hi falls into the
// +Inf bucket (or beyond all buckets) upper is +Inf; if r_lo falls into a
// bucket reaching down to -Inf, lower is -Inf. Finally the interval is widened
// to contain Quantile(q) if needed (only possible with fractional counts
// below 1).
//
// An empty histogram, q outside [0, 1] or NaN, a confidence outside (0, 1),
// or a classic histogram without +Inf bucket give NaN, NaN.
func (h *Histogram) QuantileBounds(q, confidence float64) (lower, upper float64) {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return math.NaN(), math.NaN()
	}
	return h.QuantileBoundsAt(q, h.Quantile(q), confidence)
}

// QuantileBoundsAt is QuantileBounds(q, confidence) for a quantile already
// read: qv = Quantile(q).
func (h *Histogram) QuantileBoundsAt(q, qv, confidence float64) (lower, upper float64) {
	nan := math.NaN()
	if math.IsNaN(q) || q < 0 || q > 1 || !(confidence > 0 && confidence < 1) {
		return nan, nan
	}
	n := h.Count
	if !(n > 0) || math.IsNaN(qv) {
		return nan, nan
	}
	z := ZFromConfidence(confidence)
	r := n * q
	d := z * math.Sqrt(n*q*(1-q))
	lo, hi := math.Min(1, n), n
	rLo := math.Max(lo, math.Min(hi, r-d))
	rHi := math.Max(lo, math.Min(hi, r+d))

	e := effective{h: h}
	lower, upper = math.Inf(-1), math.Inf(+1)
	var cum float64
	lowerSet := false
	for i := range h.Buckets {
		b, ok := e.at(i)
		if !ok || b.Count <= 0 {
			continue
		}
		cum += b.Count
		if !lowerSet && cum >= rLo {
			lower, lowerSet = b.Lower, true
		}
		if cum >= rHi {
			upper = b.Upper
			break
		}
	}
	if !lowerSet {
		// Rank beyond all buckets (NaN observations): fall back to Quantile below.
		lower = upper
	}
	if !math.IsInf(qv, 0) {
		lower = math.Min(lower, qv)
		upper = math.Max(upper, qv)
	}
	return lower, upper
}

// ZFromConfidence returns the two-sided standard normal quantile z for a
// confidence level c, i.e. Phi^-1(1 - (1-c)/2): 0.90 -> 1.6449,
// 0.95 -> 1.9600, 0.99 -> 2.5758. It uses the inverse complementary error
// function (accurate to float64 precision): z = sqrt(2) * erfcinv(1-c).
// NaN for c outside (0, 1).
func ZFromConfidence(c float64) float64 {
	if !(c > 0 && c < 1) {
		return math.NaN()
	}
	return math.Sqrt2 * math.Erfcinv(1-c)
}

// isZeroBucket reports whether bucket i of a NativeExponential histogram is
// its zero bucket.
func (h *Histogram) isZeroBucket(b Bucket) bool {
	return h.Kind == NativeExponential && isZeroBucketShape(b) && b.Upper == h.ZeroThreshold
}

// negPos reports whether h has negative and positive (non-zero) buckets.
func (h *Histogram) negPos() (hasNeg, hasPos bool) {
	for _, b := range h.Buckets {
		if h.isZeroBucket(b) {
			continue
		}
		if b.Upper <= 0 {
			hasNeg = true
		}
		if b.Lower >= 0 {
			hasPos = true
		}
	}
	return hasNeg, hasPos
}

// BucketBound is the bound of the bucket holding v that lies at or above
// it: the upper bound of the highest populated bucket whose lower bound is
// below v, with the bounds Quantile assumes. Counts beyond it are exact:
// nothing is interpolated inside a bucket. For a native histogram it is what
// Prometheus's histogram_quantile(1, h </ v) returns (the trim keeps a part
// of every such bucket and nothing of the others; the highest one's upper
// bound is the quantile 1), and for a classic one the upper bound of the
// bucket histogram_quantile found v in (a v pinned to the highest finite
// bound, a rank in the +Inf bucket, gives that bound). NaN for v NaN or
// when no populated bucket reaches below v.
func (h *Histogram) BucketBound(v float64) float64 {
	if math.IsNaN(v) {
		return math.NaN()
	}
	// The buckets ascend, and so do the bounds Quantile assumes for them:
	// the first such bucket from the top has the highest upper bound.
	e := effective{h: h}
	for i := len(h.Buckets) - 1; i >= 0; i-- {
		if b, ok := e.at(i); ok && b.Count > 0 && b.Lower < v {
			return b.Upper
		}
	}
	return math.NaN()
}
