package histogram

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

var (
	inf  = math.Inf(+1)
	ninf = math.Inf(-1)
	nan  = math.NaN()
)

func mustClassic(t *testing.T, ub, cum []float64) *Histogram {
	t.Helper()
	h, err := FromClassic(ub, cum)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustNotation(t *testing.T, s string) *Histogram {
	t.Helper()
	n, err := parseNotation(s)
	if err != nil {
		t.Fatal(err)
	}
	return n.histogram()
}

func mustNative(t *testing.T, bs []APIBucket, count, sum float64) *Histogram {
	t.Helper()
	h, err := FromNative(bs, count, sum)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestQuantileSpecialCases(t *testing.T) {
	classic := func() *Histogram {
		return mustClassic(t, []float64{1, 2, inf}, []float64{10, 20, 30})
	}
	native := func() *Histogram { return mustNotation(t, "{{schema:0 count:4 sum:5 buckets:[1 2 1]}}") }
	custom := func() *Histogram {
		return mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[5 10] buckets:[1 2 1]}}")
	}
	for _, tc := range []struct {
		name string
		h    *Histogram
		q    float64
		want float64
	}{
		{"classic NaN q", classic(), nan, nan},
		{"classic q<0", classic(), -0.5, ninf},
		{"classic q>1", classic(), 1.5, inf},
		{"classic q=0", classic(), 0, 0},
		{"classic q=1 in +Inf bucket gives highest finite bound", classic(), 1, 2},
		{"classic rank in +Inf bucket", classic(), 0.9, 2},
		{"classic linear", classic(), 0.5, 1.5},
		{"classic empty", mustClassic(t, []float64{1, inf}, []float64{0, 0}), 0.5, nan},
		{"classic empty q<0 still -Inf", mustClassic(t, []float64{1, inf}, []float64{0, 0}), -1, ninf},
		{"classic only +Inf bucket", mustClassic(t, []float64{inf}, []float64{5}), 0.5, nan},
		{"classic no +Inf bucket", mustClassic(t, []float64{1, 2}, []float64{1, 2}), 0.5, nan},
		{"classic unsorted input", mustClassic(t, []float64{inf, 1, 2}, []float64{30, 10, 20}), 0.5, 1.5},
		{"classic lowest bucket <= 0 returns its bound", mustClassic(t, []float64{-1, 0, inf}, []float64{5, 10, 10}), 0.2, -1},
		{"classic negative buckets", mustClassic(t, []float64{-3, -2, -1, inf}, []float64{10, 12, 15, 15}), 0.9, -2 + (13.5-12)/3},
		{"classic non-monotonic fixed", mustClassic(t, []float64{1, 2, 3, inf}, []float64{10, 5, 20, 20}), 0.75, 2.5},
		{"classic non-monotonic fixed, rank at held count", mustClassic(t, []float64{1, 2, 3, inf}, []float64{10, 5, 20, 20}), 0.5, 1},
		{"native empty", mustNotation(t, "{{schema:0 count:0 sum:0}}"), 0.5, nan},
		{"native NaN q", native(), nan, nan},
		{"native q<0", native(), -0.1, ninf},
		{"native q>1", native(), 1.1, inf},
		{"native q=0 lowest populated lower bound", native(), 0, 0.5},
		{"native q=1 highest populated upper bound", native(), 1, 4},
		{"native zero bucket linear, positive only -> [0, zt]", mustNotation(t, "{{schema:0 count:10 sum:1 z_bucket:4 z_bucket_w:0.5 buckets:[6]}}"), 0.2, 0.25},
		{"native zero bucket symmetric with both sides", mustNotation(t, "{{schema:0 count:12 sum:1 z_bucket:4 z_bucket_w:0.5 buckets:[4] n_buckets:[4]}}"), 0.5, 0},
		{"native zero bucket negative only -> [-zt, 0]", mustNotation(t, "{{schema:0 count:10 sum:-1 z_bucket:4 z_bucket_w:0.5 n_buckets:[6]}}"), 0.8, -0.25},
		{"native zero bucket only", mustNotation(t, "{{schema:0 count:4 sum:0 z_bucket:4 z_bucket_w:0.5}}"), 0.25, -0.25},
		{"native negative mirrored", mustNotation(t, "{{schema:0 count:4 sum:-5 n_buckets:[1 2 1]}}"), 0.25, -2},
		{"native NaN observations, rank reached", mustNotation(t, "{{schema:0 count:15 sum:NaN buckets:[12]}}"), 0.5, math.Exp2(-1 + 7.5/12)},
		{"native NaN observations, rank beyond buckets", mustNotation(t, "{{schema:0 count:15 sum:NaN buckets:[12]}}"), 0.9, nan},
		{"custom linear", custom(), 0.5, 7.5},
		{"custom first bucket [-Inf,5] taken as [0,5]", custom(), 0.125, 2.5},
		{"custom first bucket with bound <= 0 returns bound", mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[-2 3] buckets:[2 2]}}"), 0.25, -2},
		{"custom +Inf bucket returns lower bound", custom(), 1, 10},
		// Prometheus takes [-Inf, +Inf] as [0, +Inf] and interpolates: +Inf (unlike classic, which gives NaN).
		{"custom only +Inf bucket", mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[] buckets:[4]}}"), 0.5, inf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.Quantile(tc.q); !sameFloat(got, tc.want) {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestSmallDeltas is "real example 2 - non-monotonic" of Prometheus's
// promql/quantile_test.go (TestBucketQuantile_ForcedMonotonicity): relative
// differences below 1e-12 are floating point noise and ignored.
func TestSmallDeltas(t *testing.T) {
	ub := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, inf}
	cum := []float64{9.6, 9.688888889, 9.755555556, 9.844444444, 9.888888889, 9.888888889, 9.888888889,
		9.888888889, 9.888888889, 9.888888889, 9.888888889001, 9.888888889, 9.888888888999, 9.888888889, 9.888888889}
	h := mustClassic(t, ub, cum)
	for _, tc := range []struct {
		name    string
		q, want float64
	}{
		{"q=1", 1, 0.1},
		{"q=0.99", 0.99, 0.03468750000281261},
		{"q=0.9", 0.9, 0.00463541666671875},
		{"q=0.5", 0.5, 0.0025752314815104174},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.Quantile(tc.q); !sameFloat(got, tc.want) {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestExponentialInterpolation checks exponential interpolation for several
// schemas against the closed form 2^((i-1+f)*2^-s) for a quantile at fraction
// f of the bucket with index i.
func TestExponentialInterpolation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema int32
		idx    int32
	}{
		{"schema -4", -4, 1},
		{"schema -4 negative index", -4, -1},
		{"schema 0", 0, 3},
		{"schema 3", 3, 13},
		{"schema 3 below one", 3, -5},
		{"schema 8", 8, 300},
		{"schema 8 below one", 8, -77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Histogram{Kind: NativeExponential, Schema: tc.schema, Count: 8, Sum: 1, Buckets: []Bucket{{
				Lower: getBoundExponential(tc.idx-1, tc.schema), Upper: getBoundExponential(tc.idx, tc.schema),
				UpperInclusive: true, Count: 8,
			}}}
			for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
				want := math.Exp2((float64(tc.idx) - 1 + q) * math.Exp2(-float64(tc.schema)))
				if got := h.Quantile(q); math.Abs(got-want) > 1e-12*want {
					t.Errorf("q=%v: got %v, want %v", q, got, want)
				}
				// Mirrored negative bucket.
				n := &Histogram{Kind: NativeExponential, Schema: tc.schema, Count: 8, Sum: -1, Buckets: []Bucket{{
					Lower: -getBoundExponential(tc.idx, tc.schema), Upper: -getBoundExponential(tc.idx-1, tc.schema),
					LowerInclusive: true, Count: 8,
				}}}
				if got := n.Quantile(1 - q); math.Abs(got+want) > 1e-12*want {
					t.Errorf("negative q=%v: got %v, want %v", 1-q, got, -want)
				}
			}
			// The JSON rendering infers the same schema.
			fh := mustNative(t, apiBuckets(h), h.Count, h.Sum)
			if fh.Kind != NativeExponential || fh.Schema != tc.schema {
				t.Errorf("inferred %v schema %d", fh.Kind, fh.Schema)
			}
		})
	}
}

func TestGetBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		idx    int32
		schema int32
		want   float64
	}{
		{"schema 0 idx 0", 0, 0, 1},
		{"schema 0 idx 1", 1, 0, 2},
		{"schema 0 idx -1", -1, 0, 0.5},
		{"schema 1 idx 1", 1, 1, math.Sqrt2},
		{"schema -1 idx 1", 1, -1, 4},
		{"schema -4 idx 1", 1, -4, 65536},
		{"schema 3 idx 8", 8, 3, 2},
		{"schema 8 idx 256", 256, 8, 2},
		{"schema 0 last finite bucket", 1024, 0, math.MaxFloat64},
		{"schema 0 overflow bucket", 1025, 0, inf},
		{"schema -2 last finite bucket", 256, -2, math.MaxFloat64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := getBoundExponential(tc.idx, tc.schema); got != tc.want && math.Abs(got-tc.want) > 1e-15*tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBoundIndexReadsEveryBound: boundIndex finds each bound of each
// schema by its exponent and fraction, and finds nothing between bounds,
// as the search near the logarithm's estimate does, across the whole
// range of float64 bounds (subnormal, huge and infinite ones included).
func TestBoundIndexReadsEveryBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for s := int32(ExponentialSchemaMin); s <= ExponentialSchemaMax; s++ {
		top := int32(1024) << max(s, 0) >> max(-s, 0)
		step := max(1, top/997)
		for idx := -top - 1; idx <= top+1; idx += step {
			v := getBoundExponential(idx, s)
			for _, probe := range []float64{v, math.Nextafter(v, 0), math.Nextafter(v, inf), v * (1 + rng.Float64()*1e-3)} {
				got, ok := boundIndex(probe, s)
				want, wantOK := boundIndexAnywhere(probe, s)
				if ok != wantOK || (ok && got != want) {
					t.Fatalf("schema %d, %v (bound %d is %v): boundIndex %d %v, the search %d %v", s, probe, idx, v, got, ok, want, wantOK)
				}
				if probe == v && v > 0 && !math.IsInf(v, 0) && (!ok || getBoundExponential(got, s) != v) {
					t.Fatalf("schema %d: bound %v of index %d not found (got %d %v)", s, v, idx, got, ok)
				}
			}
		}
	}
}

// inferenceCases are native histograms' buckets and the schema inferred
// from them.
var inferenceCases = []struct {
	name       string
	buckets    []APIBucket
	wantKind   Kind
	wantSchema int32
	wantZT     float64
}{
	{"schema 0", []APIBucket{{0, 1, 2, 3}, {0, 2, 4, 1}}, NativeExponential, 0, 0},
	{"schema 0 unsorted with gap", []APIBucket{{0, 8, 16, 1}, {0, 1, 2, 3}}, NativeExponential, 0, 0},
	{"schema -1", []APIBucket{{0, 1, 4, 3}}, NativeExponential, -1, 0},
	{"schema -4", []APIBucket{{0, 1, 65536, 3}}, NativeExponential, -4, 0},
	{"schema 1", []APIBucket{{0, 1, getBoundExponential(1, 1), 3}}, NativeExponential, 1, 0},
	// Prometheus's bound 2^(1/2) is 1.414213562373095, one ulp below math.Sqrt2.
	{"custom: sqrt(2) is not the schema 1 bound", []APIBucket{{0, 1, math.Sqrt2, 3}}, NativeCustom, 0, 0},
	{"schema 3 from table bounds", []APIBucket{{0, getBoundExponential(4, 3), getBoundExponential(5, 3), 1}}, NativeExponential, 3, 0},
	{"schema 8 from table bounds", []APIBucket{{0, getBoundExponential(-9, 8), getBoundExponential(-8, 8), 1}}, NativeExponential, 8, 0},
	{"negative and zero bucket", []APIBucket{{1, -2, -1, 1}, {3, -0.001, 0.001, 2}, {0, 0.5, 1, 1}}, NativeExponential, 0, 0.001},
	{"clamped lowest positive bucket", []APIBucket{{3, -0.75, 0.75, 2}, {0, 0.75, 1, 1}, {0, 1, 2, 1}}, NativeExponential, 0, 0.75},
	{"clamped without zero bucket", []APIBucket{{0, 0.75, 1, 1}, {0, 1, 2, 1}}, NativeExponential, 0, 0.75},
	{"zero bucket only", []APIBucket{{3, -0.5, 0.5, 2}}, NativeExponential, 0, 0.5},
	{"custom: not exponential bounds", []APIBucket{{3, ninf, 0.1, 1}, {0, 0.1, 0.25, 2}, {0, 0.25, inf, 1}}, NativeCustom, 0, 0},
	{"custom: 1,2,5 is not one schema", []APIBucket{{0, 1, 2, 1}, {0, 2, 5, 1}}, NativeCustom, 0, 0},
	{"custom: two schemas mixed", []APIBucket{{0, 1, 2, 1}, {0, 2, 2 * math.Sqrt2, 1}}, NativeCustom, 0, 0},
	{"custom: positive bucket with wrong rule", []APIBucket{{1, 1, 2, 1}}, NativeCustom, 0, 0},
	{"custom: bucket spanning zero", []APIBucket{{0, -2, 3, 1}}, NativeCustom, 0, 0},
	{"custom: clamp not next to zero", []APIBucket{{0, 0.5, 1, 1}, {0, 1.5, 2, 1}}, NativeCustom, 0, 0},
	{"ambiguous custom on exponential bounds taken as exponential", []APIBucket{{0, 1, 2, 1}, {0, 2, 4, 1}}, NativeExponential, 0, 0},
}

func TestFromNativeInference(t *testing.T) {
	for _, tc := range inferenceCases {
		t.Run(tc.name, func(t *testing.T) {
			h := mustNative(t, tc.buckets, 4, 1)
			if h.Kind != tc.wantKind || (h.Kind == NativeExponential && (h.Schema != tc.wantSchema || h.ZeroThreshold != tc.wantZT)) {
				t.Errorf("got %v schema %d zt %g, want %v schema %d zt %g", h.Kind, h.Schema, h.ZeroThreshold, tc.wantKind, tc.wantSchema, tc.wantZT)
			}
		})
	}
}

// TestFromNativeAfter: a histogram read after another is the histogram
// read alone, whether their bounds are the same (the schema is taken over)
// or not (it is inferred).
func TestFromNativeAfter(t *testing.T) {
	for _, p := range inferenceCases {
		prev := mustNative(t, p.buckets, 4, 1)
		for _, tc := range inferenceCases {
			want := mustNative(t, tc.buckets, 5, 2)
			got, err := FromNativeAfter(prev, tc.buckets, 5, 2)
			if err != nil {
				t.Fatalf("%s after %s: %v", tc.name, p.name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s after %s: %+v, want %+v", tc.name, p.name, got, want)
			}
		}
	}
}

func TestFromNativeBoundaryRules(t *testing.T) {
	h := mustNative(t, []APIBucket{
		{0, 1, 2, 1}, {1, -2, -1, 1}, {2, 5, 6, 1}, {3, -0.5, 0.5, 1},
	}, 4, 0)
	want := map[float64][2]bool{ // by lower bound: LowerInclusive, UpperInclusive
		-2: {true, false}, -0.5: {true, true}, 1: {false, true}, 5: {false, false},
	}
	for _, b := range h.Buckets {
		w := want[b.Lower]
		if b.LowerInclusive != w[0] || b.UpperInclusive != w[1] {
			t.Errorf("bucket [%g,%g]: inclusive %v/%v, want %v/%v", b.Lower, b.Upper, b.LowerInclusive, b.UpperInclusive, w[0], w[1])
		}
	}
	for _, tc := range []struct {
		name string
		bs   []APIBucket
		err  error
	}{
		{"rule 4", []APIBucket{{4, 1, 2, 1}}, ErrInvalidRule},
		{"rule -1", []APIBucket{{-1, 1, 2, 1}}, ErrInvalidRule},
		{"lower above upper", []APIBucket{{0, 2, 1, 1}}, ErrInvalidBound},
		{"NaN bound", []APIBucket{{0, nan, 1, 1}}, ErrInvalidBound},
		// Nothing observable lies in them, and counting beyond a bound
		// of one would index past the layout's cuts.
		{"a bucket at +Inf", []APIBucket{{0, 0.3, 1.3, 5}, {3, inf, inf, 5}}, ErrInvalidBound},
		{"a bucket at -Inf", []APIBucket{{3, -inf, -inf, 5}, {0, 0.3, 1.3, 5}}, ErrInvalidBound},
		{"overlap", []APIBucket{{0, 1, 3, 1}, {0, 2, 4, 1}}, ErrOverlap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FromNative(tc.bs, 1, 0); !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

func TestFromNativeQuantile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bs      []APIBucket
		count   float64
		sum     float64
		q, want float64
	}{
		// Custom buckets: linear.
		{"custom linear", []APIBucket{{3, ninf, 5, 1}, {0, 5, 10, 2}, {0, 10, inf, 1}}, 4, 5, 0.5, 7.5},
		// Not exponential (1,2],(2,5]: linear in (2,5].
		{"non-exponential layout is linear", []APIBucket{{0, 1, 2, 2}, {0, 2, 5, 2}}, 4, 8, 0.75, 3.5},
		// Exponential: (1,2] and (2,4], median at the boundary, q=0.75 at sqrt(8).
		{"exponential", []APIBucket{{0, 1, 2, 2}, {0, 2, 4, 2}}, 4, 8, 0.75, 2 * math.Sqrt2},
		// Zero bucket + positive: zero bucket taken as [0, zt].
		{"zero bucket positive only", []APIBucket{{3, -0.5, 0.5, 2}, {0, 0.5, 1, 2}}, 4, 2, 0.25, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mustNative(t, tc.bs, tc.count, tc.sum)
			if got := h.Quantile(tc.q); !sameFloat(got, tc.want) {
				t.Errorf("Quantile(%v) = %v, want %v (kind %v)", tc.q, got, tc.want, h.Kind)
			}
		})
	}
}

// TestQuantileAsPrometheusIterates: histogram_quantile of native
// histograms as Prometheus holds them, in cases the conformance files do not
// reach; every want is what Prometheus 3.13.5's histogram_quantile gives for
// the same {{...}} series (promtool test rules). It guards what Prometheus's
// search does beyond plain interpolation:
//   - buckets holding more than Count (rounding in a rate() or a sum()): the
//     running count is clamped to Count before the rank is placed in the
//     bucket, from below and from above;
//   - a bucket reaching into the zero bucket (here (0.5, 1] and [-1, -0.5)
//     with a zero threshold of 0.75) is read from the zero threshold, as
//     Prometheus's bucket iterator clamps it;
//   - a rank the buckets never reach with a finite sum (Count above the
//     buckets' total) is the bound of the last populated bucket read: an
//     empty zero bucket is not one, as the iterator does not yield it.
func TestQuantileAsPrometheusIterates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       string
		q, want float64
	}{
		{"buckets above Count, from below", "{{schema:0 count:4 sum:5 buckets:[6]}}", 0.25, 0.7071067811865475},
		{"buckets above Count, from above", "{{schema:0 count:4 sum:5 buckets:[6]}}", 0.75, 0.7071067811865475},
		{"positive bucket clamped to the zero threshold, median", "{{schema:0 count:4 sum:3 z_bucket:0 z_bucket_w:0.75 buckets:[4]}}", 0.5, 0.8660254037844386},
		{"positive bucket clamped to the zero threshold, q=0.25", "{{schema:0 count:4 sum:3 z_bucket:0 z_bucket_w:0.75 buckets:[4]}}", 0.25, 0.8059274488676564},
		{"negative bucket clamped to the zero threshold, median", "{{schema:0 count:4 sum:-3 z_bucket:0 z_bucket_w:0.75 n_buckets:[4]}}", 0.5, -0.8660254037844386},
		{"negative bucket clamped to the zero threshold, q=0.9", "{{schema:0 count:4 sum:-3 z_bucket:0 z_bucket_w:0.75 n_buckets:[4]}}", 0.9, -0.7718895067235705},
		{"rank beyond the buckets from above: the lowest positive bucket's bound, not the empty zero bucket's", "{{schema:0 count:10 sum:5 z_bucket:0 z_bucket_w:0.001 buckets:[4]}}", 0.5, 1},
		{"rank beyond the buckets from below: the highest negative bucket's bound, not the empty zero bucket's", "{{schema:0 count:10 sum:-5 z_bucket:0 z_bucket_w:0.001 n_buckets:[4]}}", 0.45, -0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustNotation(t, tc.h).Quantile(tc.q); !sameFloat(got, tc.want) {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestMixedSchemaSum: native_histograms.test:174 loads a schema -1 histogram
// plus a schema 0 histogram; line 177 gives the result in the lowest schema,
// {{schema:-1 count:5 sum:8 offset:1 buckets:[5]}}. The test file has no
// histogram_quantile for it; the expectation here is derived by hand: all 5
// observations in (1,4], q=0.5 at fraction 1/2 on the log scale = 2.
func TestMixedSchemaSum(t *testing.T) {
	h := mustNotation(t, "{{schema:-1 count:5 sum:8 offset:1 buckets:[5]}}")
	for _, tc := range []struct {
		name    string
		q, want float64
	}{
		{"median", 0.5, 2},
		{"q=0.25", 0.25, math.Sqrt2},
		{"q=1", 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.Quantile(tc.q); !sameFloat(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			fh := mustNative(t, apiBuckets(h), h.Count, h.Sum)
			if fh.Kind != NativeExponential || fh.Schema != -1 {
				t.Errorf("inferred %v schema %d", fh.Kind, fh.Schema)
			}
		})
	}
}

func TestCountAboveTailCount(t *testing.T) {
	classic := mustClassic(t, []float64{1, 2, 4, inf}, []float64{10, 30, 36, 40})
	native := mustNotation(t, "{{schema:0 count:12 sum:100 z_bucket:2 z_bucket_w:0.001 buckets:[2 3 0 1 4]}}")
	custom := mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[5 10] buckets:[1 2 1]}}")
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"classic above everything finite", classic.CountAbove(100), 4},
		{"classic below everything", classic.CountAbove(-1), 40},
		{"classic on a bound", classic.CountAbove(2), 10},
		{"classic inside a bucket (linear)", classic.CountAbove(1.5), 20},
		{"classic lowest bucket from 0", classic.CountAbove(0.5), 35},
		{"classic NaN", classic.CountAbove(nan), nan},
		{"classic tail of median", classic.TailCount(0.5), 20},
		{"classic tail in +Inf bucket is the whole +Inf bucket", classic.TailCount(0.95), 4},
		{"classic tail q>1", classic.TailCount(2), 0},
		{"classic tail q<0", classic.TailCount(-1), 40},
		{"native inside exponential bucket", native.CountAbove(math.Sqrt2), 1.5 + 0 + 1 + 4},
		{"native in zero bucket (positive only: [0, zt])", native.CountAbove(0.0005), 1 + 10},
		{"native above all", native.CountAbove(1000), 0},
		{"native tail q=0.9", native.TailCount(0.9), 12 - 0.9*12},
		{"native tail q=0.5", native.TailCount(0.5), 6},
		{"custom inside", custom.CountAbove(7.5), 1 + 1},
		{"custom +Inf bucket counts fully", custom.CountAbove(20), 1},
		{"custom first bucket [0,5]", custom.CountAbove(2.5), 3.5},
		{"custom tail q=1 (lower bound of +Inf bucket)", custom.TailCount(1), 1},
		{"empty tail", mustClassic(t, []float64{1, inf}, []float64{0, 0}).TailCount(0.5), nan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !sameFloat(tc.got, tc.want) && math.Abs(tc.got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	// Consistency: CountAbove(Quantile(q)) = (1-q)*Count inside interior buckets.
	for _, q := range []float64{0.1, 0.3, 0.6, 0.8} {
		if got, want := native.TailCount(q), (1-q)*native.Count; math.Abs(got-want) > 1e-9 {
			t.Errorf("native TailCount(%v) = %v, want %v", q, got, want)
		}
	}
	// CountsAbove reads the buckets once for several thresholds and gives
	// each CountAbove to the bit.
	vs := []float64{-1, 0.0005, 0.5, 1, math.Sqrt2, 1.5, 2, 2.5, 7.5, 20, 100, 1000, nan, inf}
	for _, h := range []*Histogram{classic, native, custom} {
		got := make([]float64, len(vs))
		h.CountsAbove(vs, got)
		for i, v := range vs {
			if want := h.CountAbove(v); got[i] != want && !(math.IsNaN(got[i]) && math.IsNaN(want)) {
				t.Errorf("%s CountsAbove at %v = %v, CountAbove %v", h.Kind, v, got[i], want)
			}
		}
	}
}

// TestCountAboveAsHistogramFraction: CountAbove(v) is Count times what
// Prometheus 3.13.5's histogram_fraction(v, +Inf) gives for the same {{...}}
// series (promtool test rules) where its interpolation and CountAbove's
// agree. It guards
//   - exponential interpolation in negative buckets: the part of [-2, -1)
//     above -2^0.25 is a quarter of it on the log scale, the part nearest
//     zero, not three quarters;
//   - v = -Inf (the quantile of q < 0, so TailCount(q < 0)): every
//     observation lies above it, those of a bucket reaching down to -Inf
//     too (fraction 1), while a finite v inside that bucket counts none of
//     it;
//   - a NaN bucket count below v: NaN, not the count of the buckets above
//     v alone (CountsAbove's start at the first bucket above v must not
//     drop it).
func TestCountAboveAsHistogramFraction(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       *Histogram
		v, want float64
	}{
		{"negative exponential bucket, a quarter above", mustNotation(t, "{{schema:0 count:4 sum:-5 n_buckets:[0 4]}}"), -math.Pow(2, 0.25), 4 * 0.2499999999999999},
		{"negative exponential bucket, three quarters above", mustNotation(t, "{{schema:0 count:4 sum:-5 n_buckets:[0 4]}}"), -math.Pow(2, 0.75), 4 * 0.75},
		{"negative exponential buckets with a zero bucket", mustNotation(t, hq2), -12, 12 * 0.861654166907052},
		{"custom: -Inf, the first bucket [-Inf, -2] counts fully", mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[-2 3] buckets:[2 2]}}"), ninf, 4},
		{"custom: inside [-Inf, -2], nothing of it", mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[-2 3] buckets:[2 2]}}"), -5, 2},
		{"NaN count below v", mustNotation(t, "{{schema:0 count:6 sum:5 buckets:[NaN 2 4]}}"), 1.5, nan},
		{"NaN count in the bucket below v's", mustNotation(t, "{{schema:0 count:6 sum:5 buckets:[2 NaN 4]}}"), 2.5, nan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.CountAbove(tc.v); !sameFloat(got, tc.want) {
				t.Errorf("CountAbove(%v) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
	// The quantile of q < 0 is -Inf: everything lies beyond it, also in a
	// classic histogram whose lowest bucket reaches down to -Inf.
	for _, h := range []*Histogram{
		mustClassic(t, []float64{-1, 0, inf}, []float64{5, 10, 10}),
		mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[-2 3] buckets:[2 2]}}"),
	} {
		if got := h.TailCount(-0.5); got != h.Count {
			t.Errorf("%v %v: TailCount(-0.5) = %v, want Count %v", h.Kind, h.Buckets, got, h.Count)
		}
	}
}

// TestBucketBound: the bound of the bucket holding v at or above it, as
// histogram_quantile(1, h </ v) reads it for native histograms and as the
// bucket histogram_quantile finds a classic quantile in; counts beyond it
// are whole buckets.
func TestBucketBound(t *testing.T) {
	classic := mustClassic(t, []float64{1, 2, 4, inf}, []float64{10, 30, 36, 40})
	native := mustNotation(t, "{{schema:0 count:12 sum:100 z_bucket:2 z_bucket_w:0.001 buckets:[2 3 0 1 4]}}")
	custom := mustNotation(t, "{{schema:-53 count:4 sum:5 custom_values:[5 10] buckets:[1 2 1]}}")
	for _, tc := range []struct {
		name        string
		h           *Histogram
		v           float64
		bound, tail float64
	}{
		{"classic inside a bucket", classic, 1.5, 2, 10},
		{"classic on a bound: the bucket below it", classic, 2, 2, 10},
		{"classic lowest bucket from 0", classic, 0.5, 1, 30},
		{"classic pinned to the highest finite bound (rank in +Inf)", classic, 4, 4, 4},
		{"classic at the natural lower bound: no bucket below it", classic, 0, nan, nan},
		{"classic NaN", classic, nan, nan, nan},
		{"native inside an exponential bucket", native, math.Sqrt2, 2, 5},
		{"native inside an empty bucket: the populated one below", native, 3, 2, 5},
		{"native in the zero bucket", native, 0.0005, 0.001, 10},
		{"native inside the highest bucket", native, 10, 16, 0},
		{"custom inside", custom, 7.5, 10, 1},
		{"custom pinned to the +Inf bucket's lower bound", custom, 10, 10, 1},
		{"custom first bucket [0,5]", custom, 2.5, 5, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.h.BucketBound(tc.v)
			if !sameFloat(b, tc.bound) {
				t.Errorf("BucketBound(%v) = %v, want %v", tc.v, b, tc.bound)
			}
			if got := tc.h.CountAbove(b); !sameFloat(got, tc.tail) {
				t.Errorf("CountAbove(BucketBound(%v)) = %v, want %v", tc.v, got, tc.tail)
			}
		})
	}
	// It is the highest upper bound of the populated buckets reaching below
	// v, whatever the signs of the buckets.
	negative := mustNotation(t, "{{schema:0 count:12 sum:-100 z_bucket:2 z_bucket_w:0.001 n_buckets:[2 3 0 1 4]}}")
	both := mustNotation(t, "{{schema:1 count:21 sum:0 z_bucket:1 z_bucket_w:0.001 buckets:[1 2 0 4 5 6] offset:0 n_buckets:[2 3] n_offset:1}}")
	emptyZero := mustNotation(t, "{{schema:1 count:20 sum:0 z_bucket:0 z_bucket_w:0.001 buckets:[1 2 0 4 5 6] offset:0 n_buckets:[2 0] n_offset:1}}")
	for _, h := range []*Histogram{classic, native, custom, negative, both, emptyZero} {
		for _, v := range []float64{ninf, -40, -9, -4, -3, -1.5, -1, -0.001, -0.0005, 0, 0.0005, 0.001, 0.7, 1, 1.2, 1.5, 2, 3, 8, 10, 100, inf} {
			want := nan
			e := effective{h: h}
			for i := range h.Buckets {
				if b, ok := e.at(i); ok && b.Count > 0 && b.Lower < v && (math.IsNaN(want) || b.Upper > want) {
					want = b.Upper
				}
			}
			if got := h.BucketBound(v); !sameFloat(got, want) {
				t.Errorf("%s %v: BucketBound(%v) = %v, the highest bound of a populated bucket below it %v", h.Kind, h.Buckets, v, got, want)
			}
		}
	}
	// The bound is never below v, and what lies beyond it never more than
	// what lies beyond v.
	for _, h := range []*Histogram{classic, native, custom} {
		for _, q := range []float64{0.05, 0.3, 0.5, 0.75, 0.9, 0.99} {
			v := h.Quantile(q)
			if b := h.BucketBound(v); !(b >= v) || h.CountAbove(b) > h.CountAbove(v)+1e-12 {
				t.Errorf("%s q %v: bound %v of %v holds %v beyond, %v beyond v", h.Kind, q, b, v, h.CountAbove(b), h.CountAbove(v))
			}
		}
	}
}

func TestZFromConfidence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		c, want float64
	}{
		{"0.90", 0.90, 1.6449},
		{"0.95", 0.95, 1.9600},
		{"0.99", 0.99, 2.5758},
		{"0.6827", 0.682689492137, 1.0000},
		{"0 invalid", 0, nan},
		{"1 invalid", 1, nan},
		{"NaN invalid", nan, nan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ZFromConfidence(tc.c)
			if math.IsNaN(tc.want) {
				if !math.IsNaN(got) {
					t.Errorf("got %v, want NaN", got)
				}
				return
			}
			if math.Abs(got-tc.want) > 5e-5 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// More digits: Phi^-1(0.975) = 1.959963984540054.
	if got := ZFromConfidence(0.95); math.Abs(got-1.959963984540054) > 1e-12 {
		t.Errorf("z(0.95) = %.15f", got)
	}
}

func TestQuantileBounds(t *testing.T) {
	ub := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, inf}
	mk := func(scale float64) *Histogram {
		cum := make([]float64, len(ub))
		for i := range ub {
			c := float64(i+1) * 10
			if c > 100 {
				c = 100
			}
			if i == len(ub)-1 {
				c = 101 // one observation above 1
			}
			cum[i] = c * scale
		}
		return mustClassic(t, ub, cum)
	}
	t.Run("contain quantile", func(t *testing.T) {
		for _, scale := range []float64{0.05, 0.3, 1, 10, 1000} {
			h := mk(scale)
			for _, q := range []float64{0, 0.01, 0.1, 0.5, 0.9, 0.99, 1} {
				lo, hi := h.QuantileBounds(q, 0.95)
				v := h.Quantile(q)
				if !(lo <= v && v <= hi) {
					t.Errorf("scale %v q %v: %v not in [%v, %v]", scale, q, v, lo, hi)
				}
			}
		}
	})
	t.Run("widen as n shrinks", func(t *testing.T) {
		prevW := 0.0
		for _, scale := range []float64{1000, 10, 1, 0.3} {
			lo, hi := mk(scale).QuantileBounds(0.5, 0.95)
			w := hi - lo
			if w < prevW {
				t.Errorf("scale %v: width %v narrower than %v", scale, w, prevW)
			}
			prevW = w
		}
		lo, hi := mk(1000).QuantileBounds(0.5, 0.95)
		if lo != 0.5 || hi != 0.6 {
			t.Errorf("large n: [%v, %v], want the median's bucket [0.5, 0.6]", lo, hi)
		}
		// n=101: ranks 50.5 -/+ 1.96*sqrt(25.25) = 40.65, 60.35.
		lo, hi = mk(1).QuantileBounds(0.5, 0.95)
		if lo != 0.4 || hi != 0.7 {
			t.Errorf("n=101: [%v, %v], want [0.4, 0.7]", lo, hi)
		}
	})
	t.Run("wider with higher confidence", func(t *testing.T) {
		h := mk(1)
		l90, h90 := h.QuantileBounds(0.5, 0.90)
		l99, h99 := h.QuantileBounds(0.5, 0.99)
		if l99 > l90 || h99 < h90 {
			t.Errorf("0.99 [%v,%v] not wider than 0.90 [%v,%v]", l99, h99, l90, h90)
		}
	})
	t.Run("+Inf upper when the upper rank is in the +Inf bucket", func(t *testing.T) {
		h := mk(1)
		if _, hi := h.QuantileBounds(0.999, 0.95); !math.IsInf(hi, +1) {
			t.Errorf("upper = %v, want +Inf", hi)
		}
		h = mustClassic(t, []float64{1, inf}, []float64{50, 100})
		lo, hi := h.QuantileBounds(0.9, 0.95)
		if lo != 1 || !math.IsInf(hi, +1) {
			t.Errorf("got [%v, %v], want [1, +Inf]", lo, hi)
		}
	})
	t.Run("native exponential and custom", func(t *testing.T) {
		h := mustNotation(t, hq3)
		for _, q := range []float64{0.01, 0.3, 0.5, 0.7, 0.99} {
			lo, hi := h.QuantileBounds(q, 0.95)
			v := h.Quantile(q)
			if !(lo <= v && v <= hi) {
				t.Errorf("q %v: %v not in [%v, %v]", q, v, lo, hi)
			}
		}
		c := mustNotation(t, "{{schema:-53 count:400 sum:5 custom_values:[5 10] buckets:[100 200 100]}}")
		if lo, hi := c.QuantileBounds(0.5, 0.95); lo != 5 || hi != 10 {
			t.Errorf("custom: [%v, %v], want [5, 10]", lo, hi)
		}
		if _, hi := c.QuantileBounds(0.9, 0.95); !math.IsInf(hi, +1) {
			t.Errorf("custom +Inf bucket: upper %v", hi)
		}
	})
	t.Run("NaN cases", func(t *testing.T) {
		for name, f := range map[string]func() (float64, float64){
			"empty classic": func() (float64, float64) { return mk(0).QuantileBounds(0.5, 0.95) },
			"empty native":  func() (float64, float64) { return mustNotation(t, "{{count:0 sum:0}}").QuantileBounds(0.5, 0.95) },
			"q NaN":         func() (float64, float64) { return mk(1).QuantileBounds(nan, 0.95) },
			"q > 1":         func() (float64, float64) { return mk(1).QuantileBounds(1.5, 0.95) },
			"confidence 1":  func() (float64, float64) { return mk(1).QuantileBounds(0.5, 1) },
			"no +Inf classic": func() (float64, float64) {
				return mustClassic(t, []float64{1, 2}, []float64{1, 2}).QuantileBounds(0.5, 0.95)
			},
			"confidence zero":   func() (float64, float64) { return mk(1).QuantileBounds(0.5, 0) },
			"negative quantile": func() (float64, float64) { return mk(1).QuantileBounds(-0.5, 0.95) },
		} {
			t.Run(name, func(t *testing.T) {
				lo, hi := f()
				if !math.IsNaN(lo) || !math.IsNaN(hi) {
					t.Errorf("got [%v, %v], want NaN, NaN", lo, hi)
				}
			})
		}
	})
}

// TestQuantileBoundsLowestRank: the lower bound comes from the rank r_lo
// clamped to 1, the first observation, and a rank lies in the bucket whose
// cumulative count reaches it. It guards
//   - a rank equal to a bucket's cumulative count lying in that bucket:
//     of 10 observations, one in [0, 1], the interval of the 20th
//     percentile reaches down to the first observation, in [0, 1], not to
//     the next bucket;
//   - the clamp to 1: with fractional counts (increase() extrapolates), half
//     an observation below the first whole one does not lower the bound to
//     its bucket.
func TestQuantileBoundsLowestRank(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ub, cum        []float64
		q              float64
		wantLo, wantHi float64
	}{
		// n=10, q=0.2: ranks 2 -/+ 1.96*sqrt(1.6) = -0.48, 4.48; r_lo clamped to 1.
		{"rank 1 at the first bucket's cumulative count", []float64{1, 2, inf}, []float64{1, 10, 10}, 0.2, 0, 2},
		// n=4, q=0.5: ranks 2 -/+ 1.96 = 0.04, 3.96; r_lo clamped to 1, in (1, 2].
		{"half an observation below the first", []float64{1, 2, 3, inf}, []float64{0.5, 2, 4, 4}, 0.5, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mustClassic(t, tc.ub, tc.cum)
			if lo, hi := h.QuantileBounds(tc.q, 0.95); lo != tc.wantLo || hi != tc.wantHi {
				t.Errorf("QuantileBounds(%v, 0.95) = [%v, %v], want [%v, %v] (quantile %v)", tc.q, lo, hi, tc.wantLo, tc.wantHi, h.Quantile(tc.q))
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t.Run("classic", func(t *testing.T) {
		a := mustClassic(t, []float64{0.1, 0.2, inf}, []float64{1, 3, 4})
		b := mustClassic(t, []float64{0.1, 0.2, inf}, []float64{2, 5, 6})
		m, err := Merge(a, b)
		if err != nil {
			t.Fatal(err)
		}
		// histograms.test:954 {instance="ins1"/"ins2", job="job1"} summed = by (instance) ... job1 only:
		// 0.1: 3, 0.2: 8, +Inf: 10 -> q=0.3: 0.1, see histograms.test:906 {job="job1"} 0.1.
		if got := m.Quantile(0.3); !sameFloat(got, 0.1) {
			t.Errorf("got %v, want 0.1", got)
		}
		if got := m.Quantile(0.5); !sameFloat(got, 0.14) {
			t.Errorf("got %v, want 0.14 (histograms.test:914)", got)
		}
	})
	t.Run("native same schema, different bucket sets", func(t *testing.T) {
		a := mustNative(t, []APIBucket{{0, 1, 2, 2}}, 2, 3)
		b := mustNative(t, []APIBucket{{0, 2, 4, 2}, {0, 1, 2, 0}}, 2, 6)
		m, err := Merge(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if m.Count != 4 || len(m.Buckets) != 2 || m.Buckets[0].Count != 2 {
			t.Fatalf("merged %+v", m)
		}
		if got := m.Quantile(0.75); !sameFloat(got, 2*math.Sqrt2) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("errors", func(t *testing.T) {
		a := mustNative(t, []APIBucket{{0, 1, 2, 2}}, 2, 3)
		b := mustNative(t, []APIBucket{{0, 1, 4, 2}}, 2, 3) // schema -1
		if _, err := Merge(a, b); !errors.Is(err, ErrLayoutMismatch) {
			t.Errorf("schemas: err = %v", err)
		}
		c := mustClassic(t, []float64{1, inf}, []float64{1, 2})
		if _, err := Merge(a, c); !errors.Is(err, ErrLayoutMismatch) {
			t.Errorf("kinds: err = %v", err)
		}
		d := mustClassic(t, []float64{2, inf}, []float64{1, 2})
		if _, err := Merge(c, d); !errors.Is(err, ErrLayoutMismatch) {
			t.Errorf("le: err = %v", err)
		}
	})
}

// TestMergeCustomOverlap: Merge adds custom-bucket histograms whose listed
// buckets are buckets of one layout (the API omits empty ones), and refuses
// with ErrOverlap those whose buckets partly overlap, the layouts of a
// release that changed its bucket bounds: no bucket of the sum could hold
// both counts. It guards the overlap check on the merged list.
func TestMergeCustomOverlap(t *testing.T) {
	a := mustNative(t, []APIBucket{{3, ninf, 1, 2}, {0, 1, 5, 2}, {0, 5, inf, 1}}, 5, 10)
	for _, tc := range []struct {
		name    string
		b       []APIBucket
		err     error
		buckets int
	}{
		{"one layout, a bucket not listed", []APIBucket{{3, ninf, 1, 3}, {0, 5, inf, 1}}, nil, 3},
		{"bounds moved from 1 to 2", []APIBucket{{3, ninf, 2, 3}, {0, 2, 5, 1}, {0, 5, inf, 1}}, ErrOverlap, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNative(t, tc.b, 4, 8)
			if a.Kind != NativeCustom || b.Kind != NativeCustom {
				t.Fatalf("kinds %v and %v, want custom", a.Kind, b.Kind)
			}
			m, err := Merge(a, b)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v (merged %+v)", err, tc.err, m)
			}
			if err == nil && (len(m.Buckets) != tc.buckets || m.Count != 9) {
				t.Errorf("merged %+v, want %d buckets and count 9", m, tc.buckets)
			}
		})
	}
}

func TestFromClassicErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ub, cum []float64
		err     error
	}{
		{"length mismatch", []float64{1}, []float64{1, 2}, ErrLengthMismatch},
		{"empty", nil, nil, ErrNoBuckets},
		{"NaN bound", []float64{nan, inf}, []float64{1, 2}, ErrInvalidBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FromClassic(tc.ub, tc.cum); !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

// Every schema is inferred from runs of its own buckets, positive and
// negative, with and without a zero bucket and with gaps: the shortcut that
// reads the schema off one whole bucket's ratio agrees with trying them all.
func TestFromNativeInferenceEverySchema(t *testing.T) {
	for s := int32(ExponentialSchemaMin); s <= ExponentialSchemaMax; s++ {
		for _, first := range []int32{-40, -3, 0, 5, 17} {
			for _, zero := range []bool{false, true} {
				var bs []APIBucket
				if zero {
					zt := getBoundExponential(first-3, s)
					bs = append(bs, APIBucket{3, -zt, zt, 1})
					// A negative bucket mirrors the first positive one.
					bs = append(bs, APIBucket{1, -getBoundExponential(first, s), -getBoundExponential(first-1, s), 1})
				}
				for _, idx := range []int32{first, first + 1, first + 2, first + 5} { // a gap after first+2
					bs = append(bs, APIBucket{0, getBoundExponential(idx-1, s), getBoundExponential(idx, s), 1})
				}
				h := mustNative(t, bs, float64(len(bs)), 1)
				if h.Kind != NativeExponential || h.Schema != s {
					t.Errorf("schema %d from index %d (zero bucket %v): got %v schema %d", s, first, zero, h.Kind, h.Schema)
				}
			}
		}
	}
}

// BenchmarkFromNative reads a schema 3 histogram of 40 buckets, the shape of
// one fleet's minute in the engine.
func BenchmarkFromNative(b *testing.B) {
	var bs []APIBucket
	for idx := int32(-20); idx < 20; idx++ {
		bs = append(bs, APIBucket{0, getBoundExponential(idx-1, 3), getBoundExponential(idx, 3), 1})
	}
	for b.Loop() {
		if _, err := FromNative(bs, 40, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMergeAscendingMatchesAny: the one-pass merge of ascending bucket
// lists gives exactly what the general merge gives (bounds, flags, counts
// and order), on lists that share some buckets and not others; it declines
// lists that are not strictly ascending.
func TestMergeAscendingMatchesAny(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	list := func() []Bucket {
		var l []Bucket
		for i := -20; i < 20; i++ {
			if rng.IntN(3) == 0 {
				continue
			}
			lo, hi := math.Exp2(float64(i)/8), math.Exp2(float64(i+1)/8)
			l = append(l, Bucket{Lower: lo, Upper: hi, UpperInclusive: true, LowerInclusive: rng.IntN(2) == 0, Count: float64(rng.IntN(50)) + 0.25})
		}
		return l
	}
	for n := range 200 {
		a, b := list(), list()
		if n%10 == 0 {
			b = nil
		}
		got, ok := mergeAscending(a, b)
		if !ok {
			t.Fatalf("ascending lists declined: %v %v", a, b)
		}
		if want := mergeAny(a, b); !reflect.DeepEqual(got, want) {
			t.Fatalf("merge of\n%v\n%v\ngot  %v\nwant %v", a, b, got, want)
		}
	}
	for _, tc := range []struct {
		name string
		a    []Bucket
	}{
		{"descending", []Bucket{{Lower: 2, Upper: 4}, {Lower: 1, Upper: 2}}},
		{"the same bounds twice", []Bucket{{Lower: 1, Upper: 2}, {Lower: 1, Upper: 2}}},
	} {
		if _, ok := mergeAscending(tc.a, nil); ok {
			t.Errorf("%s: merged in one pass", tc.name)
		}
	}
}

// TestQuantilesOneWalk: Quantiles, which reads every quantile of one search
// direction in one walk, gives bit for bit what Quantile gives for each
// quantile alone (a one-rank walk is Prometheus's search), on exponential
// histograms with and without a zero bucket and negative buckets, custom
// buckets reaching to -Inf and +Inf, a NaN sum (every search from below),
// fractional, zero, NaN and infinite counts, and a count above the buckets'
// total (NaN observations); the quantiles include duplicates, 0, 0.5, 1, NaN
// and values outside [0, 1], in any order.
func TestQuantilesOneWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	count := func() float64 {
		switch rng.IntN(20) {
		case 0:
			return 0
		case 1:
			return nan
		case 2:
			return inf
		}
		return float64(rng.IntN(200)) * 4 / 3
	}
	exponential := func() (*Histogram, error) {
		var bs []APIBucket
		zt := 0.0
		if rng.IntN(2) == 0 {
			zt = math.Exp2(-10)
			bs = append(bs, APIBucket{3, -zt, zt, count()})
		}
		if rng.IntN(3) == 0 {
			for idx := -8; idx < -2; idx++ {
				bs = append(bs, APIBucket{1, -getBoundExponential(int32(-idx), 3), -getBoundExponential(int32(-idx-1), 3), count()})
			}
		}
		for idx := int32(-30); idx < 30; idx++ {
			if rng.IntN(4) > 0 {
				bs = append(bs, APIBucket{0, getBoundExponential(idx-1, 3), getBoundExponential(idx, 3), count()})
			}
		}
		return FromNative(bs, 0, 0)
	}
	custom := func() (*Histogram, error) {
		bounds := []float64{ninf, 0.1, 0.25, 0.5, 1, 2.5, 5, inf}
		if rng.IntN(2) == 0 {
			bounds[1] = -0.1
		}
		var bs []APIBucket
		for i := 0; i+1 < len(bounds); i++ {
			rule := 0
			if i == 0 {
				rule = 3
			}
			bs = append(bs, APIBucket{rule, bounds[i], bounds[i+1], count()})
		}
		return FromNative(bs, 0, 0)
	}
	qs := []float64{0.5, 0.99, 0.999, 0.9999, 0.99, 0.989, 0.991, 0, 1, 0.25, 0.01, nan, -0.5, 1.5, 0.49999, 0.9, 0.1}
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
	}
	for n := range 2000 {
		build := exponential
		if n%3 == 2 {
			build = custom
		}
		h, err := build()
		if err != nil {
			t.Fatal(err)
		}
		var total float64
		for _, b := range h.Buckets {
			total += b.Count
		}
		h.Count, h.Sum = total, 1
		switch rng.IntN(6) {
		case 0:
			h.Sum = nan
		case 1:
			h.Count = total + 5 // observations in no bucket
		}
		rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
		m := qs[:1+rng.IntN(len(qs))]
		got := make([]float64, len(m))
		h.Quantiles(m, got)
		for i, q := range m {
			if want := h.Quantile(q); !same(got[i], want) {
				t.Fatalf("histogram %d (%v, sum %v), quantiles %v: Quantiles gives %v for %v, Quantile %v", n, h.Kind, h.Sum, m, got[i], q, want)
			}
		}
	}
}
