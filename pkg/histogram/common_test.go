package histogram

import (
	"errors"
	"math"
	"testing"
)

func TestCommon(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string // native notation; b's layout is what a is read in
		// wantA is a as Common reads it: a in b's layout.
		wantA string
	}{
		{"the same layout", "{{schema:1 count:3 sum:0 buckets:[1 2]}}", "{{schema:1 count:1 sum:0 buckets:[1]}}",
			"{{schema:1 count:3 sum:0 buckets:[1 2]}}"},
		// Schema 1 buckets 1..4 are (1,1.41], (1.41,2], (2,2.83], (2.83,4]:
		// in schema 0, (1,2] and (2,4].
		{"one schema coarser", "{{schema:1 count:10 sum:0 buckets:[1 2 3 4] offset:1}}", "{{schema:0 count:1 sum:0 buckets:[1] offset:1}}",
			"{{schema:0 count:10 sum:0 buckets:[3 7] offset:1}}"},
		// Index 0 of schema 1 is (0.71,1]: in schema -1 bucket 0, (0.25,1];
		// index 1..4 go to bucket 1, (1,4]; index 5 to bucket 2, (4,16].
		{"two schemas coarser, negative buckets too", "{{schema:1 count:21 sum:0 z_bucket:1 z_bucket_w:0.001 buckets:[1 2 3 4 5 6] offset:0 n_buckets:[2 3] n_offset:1}}",
			"{{schema:-1 count:1 sum:0 z_bucket:1 z_bucket_w:0.001 buckets:[1]}}",
			"{{schema:-1 count:21 sum:0 z_bucket:1 z_bucket_w:0.001 buckets:[1 14 6] offset:0 n_buckets:[5] n_offset:1}}"},
		{"a wider zero bucket with nothing between", "{{schema:0 count:3 sum:0 z_bucket:1 z_bucket_w:0.001 buckets:[2] offset:1}}",
			"{{schema:0 count:1 sum:0 z_bucket:1 z_bucket_w:0.5 buckets:[1] offset:1}}",
			"{{schema:0 count:3 sum:0 z_bucket:1 z_bucket_w:0.5 buckets:[2] offset:1}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, want := mustNotation(t, tc.a), mustNotation(t, tc.b), mustNotation(t, tc.wantA)
			ca, cb, err := Common(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBuckets(ca, want) || ca.Schema != want.Schema || ca.ZeroThreshold != want.ZeroThreshold || ca.Count != a.Count {
				t.Errorf("a read as\n%+v\nwant\n%+v", ca, want)
			}
			if !sameBuckets(cb, b) {
				t.Errorf("b changed: %+v", cb)
			}
			// Either order gives the same layout, and the pooled histogram's
			// quantiles are those of the two added in it.
			cb2, ca2, err := Common(b, a)
			if err != nil || !sameBuckets(ca2, ca) || !sameBuckets(cb2, cb) {
				t.Errorf("Common(b, a) = %+v, %+v, %v", cb2, ca2, err)
			}
			if _, err := Merge(ca, cb); err != nil {
				t.Errorf("Merge after Common: %v", err)
			}
			// Read through the API's JSON, as the engine reads it.
			ja, jb := mustNative(t, apiBuckets(a), a.Count, a.Sum), mustNative(t, apiBuckets(b), b.Count, b.Sum)
			jca, _, err := Common(ja, jb)
			if jw := mustNative(t, apiBuckets(want), want.Count, want.Sum); err != nil || !sameBuckets(jca, jw) {
				t.Errorf("from JSON: %+v, %v", jca, err)
			}
		})
	}
}

func TestCommonClassic(t *testing.T) {
	// A release that changed the buckets: 0.1, 0.25, 0.5, 1 became 0.1,
	// 0.2, 0.3, 0.5, 1. Both are read at 0.1, 0.5, 1 and +Inf.
	old := mustClassic(t, []float64{0.1, 0.25, 0.5, 1, inf}, []float64{10, 30, 60, 90, 100})
	cur := mustClassic(t, []float64{0.1, 0.2, 0.3, 0.5, 1, inf}, []float64{5, 8, 12, 20, 30, 33})
	co, cc, err := Common(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h        *Histogram
		ub, cum  []float64
		fullName string
	}{{co, []float64{0.1, 0.5, 1, inf}, []float64{10, 60, 90, 100}, "old"}, {cc, []float64{0.1, 0.5, 1, inf}, []float64{5, 20, 30, 33}, "new"}} {
		ub, cum, hasInf := tc.h.classicData()
		if !equalFloats(ub, tc.ub) || !equalFloats(cum, tc.cum) || !hasInf || tc.h.Count != tc.cum[len(tc.cum)-1] {
			t.Errorf("%s: le %v cum %v, want %v %v", tc.fullName, ub, cum, tc.ub, tc.cum)
		}
	}
	if _, err := Merge(co, cc); err != nil {
		t.Errorf("Merge after Common: %v", err)
	}
	if got, _ := LayoutNote(old, cur); got != "5 and 6 le bounds, counted at the 4 both have" {
		t.Errorf("note %q", got)
	}
}

func TestCommonCustom(t *testing.T) {
	custom := func(bs ...APIBucket) *Histogram {
		h := mustNative(t, bs, 0, 0)
		if h.Kind != NativeCustom {
			t.Fatalf("%+v is not custom", h)
		}
		return h
	}
	// A release that changed the custom buckets (0.25 became 0.2): both are
	// read at -Inf, 0.1, 0.5, +Inf.
	old := custom(APIBucket{3, ninf, 0.1, 5}, APIBucket{0, 0.1, 0.25, 10}, APIBucket{0, 0.25, 0.5, 3}, APIBucket{0, 0.5, inf, 2})
	cur := custom(APIBucket{3, ninf, 0.1, 4}, APIBucket{0, 0.1, 0.2, 6}, APIBucket{0, 0.2, 0.5, 5}, APIBucket{0, 0.5, inf, 1})
	co, cc, err := Common(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	want := func(counts ...float64) *Histogram {
		return custom(APIBucket{3, ninf, 0.1, counts[0]}, APIBucket{0, 0.1, 0.5, counts[1]}, APIBucket{0, 0.5, inf, counts[2]})
	}
	if !sameBuckets(co, want(5, 13, 2)) || !sameBuckets(cc, want(4, 11, 1)) {
		t.Errorf("read as\n%+v\n%+v", co.Buckets, cc.Buckets)
	}
	if _, err := Merge(co, cc); err != nil {
		t.Errorf("Merge after Common: %v", err)
	}
	if got, _ := LayoutNote(old, cur); got == "" {
		t.Error("no note for different custom bounds")
	}
	// One layout with different empty buckets left out is read as it is.
	sparse := custom(APIBucket{3, ninf, 0.1, 5}, APIBucket{0, 0.25, 0.5, 3})
	if a, b, err := Common(old, sparse); err != nil || a != old || b != sparse {
		t.Errorf("same layout, sparse: %v", err)
	}
	if note, err := LayoutNote(old, sparse); note != "" || err != nil {
		t.Errorf("same layout, sparse: note %q, %v", note, err)
	}
	// Nothing in common but the infinities.
	other := custom(APIBucket{3, ninf, 0.15, 5}, APIBucket{0, 0.15, 0.3, 3})
	if _, _, err := Common(old, other); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("err = %v", err)
	}
	if note, err := LayoutNote(old, other); note != "" || !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("note %q, err %v", note, err)
	}
}

func TestCommonErrors(t *testing.T) {
	native := mustNotation(t, "{{schema:0 count:3 sum:0 buckets:[1 2] offset:-2}}")
	for _, tc := range []struct {
		name string
		a, b *Histogram
	}{
		{"kinds", native, mustClassic(t, []float64{1, inf}, []float64{1, 2})},
		{"classic with only +Inf in common", mustClassic(t, []float64{1, inf}, []float64{1, 2}), mustClassic(t, []float64{2, inf}, []float64{1, 2})},
		// native's bucket (0.25,0.5] would fall inside [-1, 1].
		{"a zero bucket that takes in observations", native, mustNotation(t, "{{schema:0 count:1 sum:0 z_bucket:1 z_bucket_w:1}}")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := Common(tc.a, tc.b); !errors.Is(err, ErrLayoutMismatch) {
				t.Errorf("err = %v", err)
			}
		})
	}
	if got, _ := LayoutNote(native, mustNotation(t, "{{schema:-2 count:1 sum:0 buckets:[1]}}")); got != "native schema 0 and -2, counted at schema -2" {
		t.Errorf("note %q", got)
	}
	// Zero thresholds that differ with nothing between them change no count.
	if got, err := LayoutNote(native, mustNotation(t, "{{schema:0 count:1 sum:0 z_bucket:1 z_bucket_w:0.1}}")); got != "" || err != nil {
		t.Errorf("note %q for zero thresholds alone", got)
	}
}

func sameBuckets(a, b *Histogram) bool {
	if len(a.Buckets) != len(b.Buckets) {
		return false
	}
	for i := range a.Buckets {
		x, _ := a.iterBucket(i)
		y, _ := b.iterBucket(i)
		if x.Lower != y.Lower || x.Upper != y.Upper || x.LowerInclusive != y.LowerInclusive || x.UpperInclusive != y.UpperInclusive || math.Abs(x.Count-y.Count) > 1e-12 {
			return false
		}
	}
	return true
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCommonZeroOnly: a fleet whose observations all lie in the zero bucket
// shows no schema through the API (it lists no other bucket), so the other
// fleet keeps its own: read as schema 0 it was coarsened for nothing, and
// the pooled quantiles and tail counts moved (a p50 of 1.297 where
// Prometheus's a + b gives 1.384).
func TestCommonZeroOnly(t *testing.T) {
	a := mustNotation(t, "{{schema:3 count:20 sum:0 buckets:[1 2 3 4 3 2 2 3] offset:1}}")
	ja := mustNative(t, apiBuckets(a), a.Count, a.Sum)
	zero := mustNative(t, []APIBucket{{Boundaries: 3, Lower: -0.001, Upper: 0.001, Count: 5}}, 5, 0)
	for _, pair := range [][2]*Histogram{{ja, zero}, {zero, ja}} {
		c1, c2, err := Common(pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		ca := c1
		if pair[0] == zero {
			ca = c2
		}
		if ca.Schema != 3 || !sameBuckets(ca, ja) {
			t.Errorf("the schema-3 fleet read as schema %d: %+v", ca.Schema, ca)
		}
		if _, err := Merge(c1, c2); err != nil {
			t.Errorf("Merge after Common: %v", err)
		}
		if note, err := LayoutNote(pair[0], pair[1]); note != "" || err != nil {
			t.Errorf("layout note %q, %v: a zero bucket alone has no schema to differ", note, err)
		}
	}
}
