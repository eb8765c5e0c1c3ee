package histogram

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// This file holds a small parser for the native histogram notation of
// Prometheus's promqltest files, e.g.
//
//	{{schema:0 count:12 sum:100 z_bucket:2 z_bucket_w:0.001 buckets:[2 3 0 1 4] offset:1 n_buckets:[1] n_offset:0}}
//	{{schema:-53 sum:5 count:4 custom_values:[5 10] buckets:[1 2 1]}}
//
// Defaults are those of promql/parser (buildHistogramFromMap): schema 0,
// zero threshold 0, offsets 0. Bucket j of buckets:[...] has index offset+j;
// in an exponential schema its bounds are (getBound(idx-1), getBound(idx)],
// negative bucket j (index n_offset+j) is [-getBound(idx), -getBound(idx-1));
// custom bucket idx is (cv[idx-1], cv[idx]] with cv[-1] = -Inf (inclusive)
// and cv[len] = +Inf.

type notation struct {
	schema           int32
	sum, count       float64
	zCount, zWidth   float64
	pos, neg         []float64
	posOff, negOff   int32
	customValues     []float64
	hasCustomValues  bool
	counterResetHint string
}

func parseNum(s string) (float64, error) {
	switch strings.ToLower(strings.TrimPrefix(s, "+")) {
	case "inf":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(+1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

func parseNotation(s string) (*notation, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{{") || !strings.HasSuffix(s, "}}") {
		return nil, fmt.Errorf("not a histogram notation: %q", s)
	}
	body := s[2 : len(s)-2]
	// Tokenize: key:value or key:[v v v].
	n := &notation{}
	for body = strings.TrimSpace(body); body != ""; body = strings.TrimSpace(body) {
		colon := strings.Index(body, ":")
		if colon < 0 {
			return nil, fmt.Errorf("missing ':' in %q", body)
		}
		key := strings.TrimSpace(body[:colon])
		rest := strings.TrimSpace(body[colon+1:])
		var val string
		var list []float64
		isList := strings.HasPrefix(rest, "[")
		if isList {
			end := strings.Index(rest, "]")
			if end < 0 {
				return nil, fmt.Errorf("unterminated list in %q", rest)
			}
			for _, f := range strings.Fields(rest[1:end]) {
				v, err := parseNum(f)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			body = rest[end+1:]
		} else {
			end := strings.IndexAny(rest, " \t")
			if end < 0 {
				end = len(rest)
			}
			val = rest[:end]
			body = rest[end:]
		}
		num := func() (float64, error) { return parseNum(val) }
		var err error
		switch key {
		case "schema":
			var v int64
			v, err = strconv.ParseInt(val, 10, 32)
			n.schema = int32(v)
		case "sum":
			n.sum, err = num()
		case "count":
			n.count, err = num()
		case "z_bucket":
			n.zCount, err = num()
		case "z_bucket_w":
			n.zWidth, err = num()
		case "offset", "n_offset":
			var v int64
			v, err = strconv.ParseInt(val, 10, 32)
			if key == "offset" {
				n.posOff = int32(v)
			} else {
				n.negOff = int32(v)
			}
		case "buckets":
			n.pos = list
		case "n_buckets":
			n.neg = list
		case "custom_values":
			n.customValues, n.hasCustomValues = list, true
		case "counter_reset_hint":
			n.counterResetHint = val
		default:
			return nil, fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if isList && key != "buckets" && key != "n_buckets" && key != "custom_values" {
			return nil, fmt.Errorf("unexpected list for %q", key)
		}
	}
	return n, nil
}

// histogram expands the notation into a Histogram with all buckets of the
// spans (including empty ones), as Prometheus's bucket iterators see them
// before clamping to the zero threshold.
func (n *notation) histogram() *Histogram {
	h := &Histogram{Count: n.count, Sum: n.sum}
	if n.schema == -53 {
		h.Kind = NativeCustom
		cv := n.customValues
		for j, c := range n.pos {
			idx := int(n.posOff) + j
			b := Bucket{Upper: math.Inf(+1), UpperInclusive: true, Count: c}
			if idx < len(cv) {
				b.Upper = cv[idx]
			}
			if idx == 0 {
				b.Lower, b.LowerInclusive = math.Inf(-1), true
			} else {
				b.Lower = cv[idx-1]
			}
			h.Buckets = append(h.Buckets, b)
		}
		return h
	}
	h.Kind = NativeExponential
	h.Schema = n.schema
	h.ZeroThreshold = n.zWidth
	for j, c := range n.neg {
		idx := n.negOff + int32(j)
		h.Buckets = append(h.Buckets, Bucket{
			Lower: -getBoundExponential(idx, n.schema), Upper: -getBoundExponential(idx-1, n.schema),
			LowerInclusive: true, Count: c,
		})
	}
	h.Buckets = append(h.Buckets, Bucket{
		Lower: -n.zWidth, Upper: n.zWidth, LowerInclusive: true, UpperInclusive: true, Count: n.zCount,
	})
	for j, c := range n.pos {
		idx := n.posOff + int32(j)
		h.Buckets = append(h.Buckets, Bucket{
			Lower: getBoundExponential(idx-1, n.schema), Upper: getBoundExponential(idx, n.schema),
			UpperInclusive: true, Count: c,
		})
	}
	sort.SliceStable(h.Buckets, func(i, j int) bool { return h.Buckets[i].Lower < h.Buckets[j].Lower })
	return h
}

// apiBuckets renders h as the Prometheus HTTP API would (MarshalHistogram):
// bounds clamped to the zero threshold as by AllBucketIterator, empty buckets
// (and an empty zero bucket) omitted, boundary rule from the inclusivity.
func apiBuckets(h *Histogram) []APIBucket {
	var out []APIBucket
	for i := range h.Buckets {
		b, _ := h.iterBucket(i)
		if b.Count == 0 {
			continue
		}
		rule := 2
		switch {
		case b.LowerInclusive && b.UpperInclusive:
			rule = 3
		case b.LowerInclusive:
			rule = 1
		case b.UpperInclusive:
			rule = 0
		}
		out = append(out, APIBucket{Boundaries: rule, Lower: b.Lower, Upper: b.Upper, Count: b.Count})
	}
	return out
}

// nhcbFromClassic converts classic `le` buckets (cumulative counts, as
// loaded by load_with_nhcb) into the equivalent native histogram with custom
// buckets: custom_values are the finite bounds, bucket counts the differences.
func nhcbFromClassic(les []string, cum []float64, sum float64) (*Histogram, error) {
	type p struct{ ub, c float64 }
	ps := make([]p, len(les))
	for i, le := range les {
		v, err := parseNum(le)
		if err != nil {
			return nil, err
		}
		ps[i] = p{v, cum[i]}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ub < ps[j].ub })
	var cv, counts []float64
	prev := 0.0
	for _, x := range ps {
		if !math.IsInf(x.ub, +1) {
			cv = append(cv, x.ub)
		}
		counts = append(counts, x.c-prev)
		prev = x.c
	}
	n := &notation{schema: -53, customValues: cv, hasCustomValues: true, pos: counts, count: prev, sum: sum}
	return n.histogram(), nil
}
