package histogram

import (
	"fmt"
	"math"
	"testing"
)

// Conformance cases: histogram_quantile evaluations taken from Prometheus
// v0.313.5 (3.13.5) promql/promqltest/testdata/histograms.test and
// native_histograms.test. Each case names the source file, the line of the
// `eval` statement, the expression and the result series; the input is the
// value of the series at the evaluation time (classic: `le` bounds and
// cumulative counts; native: the test's own {{...}} notation, parsed by
// notation_test.go). Results must match to 1e-12 relative, NaN and ±Inf
// exactly.
//
// Notes on inputs:
//   - load_with_nhcb loads every classic histogram also as a native histogram
//     with custom buckets (NHCB) under the name without _bucket; those cases
//     are built by nhcbFromClassic from the same `le` data.
//   - Series `0+Nx10` loaded every 5m have the value 10N at 50m and N at 5m..9m.
//   - rate(x[10m]) at 50m of such series is N/300 per bucket (two samples,
//     extrapolated to the full range); rate(x[15m]) at 47m likewise scales all
//     buckets by one common factor (here 1/300). Sums over series are the sums
//     of those rates. Quantiles are invariant to the common factor up to
//     rounding, well inside 1e-12.

type classicData struct {
	les []string
	cum []float64
	sum float64
}

func scaled(d classicData, f float64) classicData {
	out := classicData{les: d.les, sum: d.sum * f}
	for _, c := range d.cum {
		out.cum = append(out.cum, c*f)
	}
	return out
}

func rate5m(n float64) float64 { return n * (600.0 / 300.0) / 600 }

func sumRates(ns ...float64) float64 {
	var s float64
	for _, n := range ns {
		s += rate5m(n)
	}
	return s
}

type confCase struct {
	name    string
	classic *classicData // classic histogram_quantile over `le` series
	nhcb    *classicData // NHCB built from the same `le` data (load_with_nhcb)
	native  string       // native histogram notation
	q       float64
	want    float64
}

var (
	// histograms.test:7 testhistogram at 50m.
	thPos = classicData{les: []string{"0.1", ".2", "1e0", "+Inf"}, cum: []float64{50, 70, 110, 120}}
	thNeg = classicData{les: []string{"-.2", "-0.1", "0.3", "+Inf"}, cum: []float64{10, 20, 20, 30}}
	// histograms.test:28 testhistogram3 at 50m.
	th3Pos = classicData{les: []string{"0", "0.1", ".2", "1e0", "+Inf"}, cum: []float64{0, 50, 70, 110, 110}, sum: 330}
	th3Neg = classicData{les: []string{"-.25", "-.2", "-0.1", "0.3", "+Inf"}, cum: []float64{0, 10, 20, 20, 20}, sum: 80}
	// histograms.test:18 testhistogram2 at 7m (sample of 5m).
	th2 = classicData{les: []string{"0", "2", "4", "6", "+Inf"}, cum: []float64{0, 1, 2, 3, 3}}
	// histograms.test:46 request_duration_seconds, sum(rate(...[10m])) by (le) at 50m.
	rdAll = classicData{les: []string{"0.1", "0.2", "+Inf"}, cum: []float64{
		sumRates(1, 2, 3, 4), sumRates(3, 5, 4, 7), sumRates(4, 6, 6, 9)}}
	// ... by (job) for job2 (instances ins1, ins2).
	rdJob2 = classicData{les: []string{"0.1", "0.2", "+Inf"}, cum: []float64{
		sumRates(3, 4), sumRates(4, 7), sumRates(6, 9)}}
	// ... unaggregated job1/ins2.
	rdJ1I2 = classicData{les: []string{"0.1", "0.2", "+Inf"}, cum: []float64{rate5m(2), rate5m(5), rate5m(6)}}
	// histograms.test:1016 nonmonotonic_bucket at 50m.
	nonmono = classicData{les: []string{"0.1", "1", "10", "100", "1000", "+Inf"}, cum: []float64{20, 10, 50, 40, 90, 80}}
	// native_histograms.test:1891 nonmonotonic_bucket (0+Nx10 every 1m) at 1m.
	nonmono1m = classicData{les: []string{"0.1", "1", "10", "100", "1000", "+Inf"}, cum: []float64{2, 1, 5, 4, 9, 8}}
	// histograms.test:61 mixed_bucket rate at 50m: ins1 (le 0.2 three times), ins2 (only +Inf, twice).
	mixedIns1 = classicData{les: []string{"0.1", "0.2", "2e-1", "2.0e-1", "+Inf"}, cum: []float64{rate5m(1), rate5m(1), rate5m(1), rate5m(1), rate5m(4)}}
	mixedIns2 = classicData{les: []string{"+inf", "+Inf"}, cum: []float64{0, 0}}
	// histograms.test:1087 const_histogram: sum by (le) (rate(...)) is 0 everywhere.
	constClassic = classicData{les: []string{"0.0", "1.0", "2.0", "+Inf"}, cum: []float64{0, 0, 0, 0}}
	// histograms.test:1060 empty_bucket, rate is 0.
	emptyBucket = classicData{les: []string{"0.1", "0.2", "+Inf"}, cum: []float64{0, 0, 0}}
)

const (
	hq1 = "{{schema:0 count:12 sum:100 z_bucket:2 z_bucket_w:0.001 buckets:[2 3 0 1 4]}}"
	hq2 = "{{schema:0 count:12 sum:100 z_bucket:2 z_bucket_w:0.001 n_buckets:[2 3 0 1 4]}}"
	hq3 = "{{schema:0 count:24 sum:100 z_bucket:4 z_bucket_w:0.001 buckets:[2 3 0 1 4] n_buckets:[2 3 0 1 4]}}"
)

func conformanceCases() []confCase {
	inf, nan := math.Inf(+1), math.NaN()
	ptr := func(d classicData) *classicData { return &d }
	cl := func(name string, d classicData, q, want float64) confCase {
		return confCase{name: "histograms.test:" + name, classic: ptr(d), q: q, want: want}
	}
	nh := func(name string, d classicData, q, want float64) confCase {
		return confCase{name: "histograms.test:" + name, nhcb: ptr(d), q: q, want: want}
	}
	nat := func(name, notation string, q, want float64) confCase {
		return confCase{name: "native_histograms.test:" + name, native: notation, q: q, want: want}
	}
	return []confCase{
		// testhistogram3: classic and NHCB, q = 0, 0.25, 0.5, 0.75, 1.
		nh(`551 histogram_quantile(0, testhistogram3) {start="positive"}`, th3Pos, 0, 0),
		nh(`551 histogram_quantile(0, testhistogram3) {start="negative"}`, th3Neg, 0, -0.25),
		cl(`556 histogram_quantile(0, testhistogram3_bucket) {start="positive"}`, th3Pos, 0, 0),
		cl(`556 histogram_quantile(0, testhistogram3_bucket) {start="negative"}`, th3Neg, 0, -0.25),
		nh(`561 histogram_quantile(0.25, testhistogram3) {start="positive"}`, th3Pos, 0.25, 0.055),
		nh(`561 histogram_quantile(0.25, testhistogram3) {start="negative"}`, th3Neg, 0.25, -0.225),
		cl(`566 histogram_quantile(0.25, testhistogram3_bucket) {start="positive"}`, th3Pos, 0.25, 0.055),
		cl(`566 histogram_quantile(0.25, testhistogram3_bucket) {start="negative"}`, th3Neg, 0.25, -0.225),
		nh(`571 histogram_quantile(0.5, testhistogram3) {start="positive"}`, th3Pos, 0.5, 0.125),
		nh(`571 histogram_quantile(0.5, testhistogram3) {start="negative"}`, th3Neg, 0.5, -0.2),
		cl(`576 histogram_quantile(0.5, testhistogram3_bucket) {start="positive"}`, th3Pos, 0.5, 0.125),
		cl(`576 histogram_quantile(0.5, testhistogram3_bucket) {start="negative"}`, th3Neg, 0.5, -0.2),
		nh(`581 histogram_quantile(0.75, testhistogram3) {start="positive"}`, th3Pos, 0.75, 0.45),
		nh(`581 histogram_quantile(0.75, testhistogram3) {start="negative"}`, th3Neg, 0.75, -0.15),
		cl(`586 histogram_quantile(0.75, testhistogram3_bucket) {start="positive"}`, th3Pos, 0.75, 0.45),
		cl(`586 histogram_quantile(0.75, testhistogram3_bucket) {start="negative"}`, th3Neg, 0.75, -0.15),
		nh(`591 histogram_quantile(1, testhistogram3) {start="positive"}`, th3Pos, 1, 1),
		nh(`591 histogram_quantile(1, testhistogram3) {start="negative"}`, th3Neg, 1, -0.1),
		cl(`596 histogram_quantile(1, testhistogram3_bucket) {start="positive"}`, th3Pos, 1, 1),
		cl(`596 histogram_quantile(1, testhistogram3_bucket) {start="negative"}`, th3Neg, 1, -0.1),

		// testhistogram: q out of range, NaN, lowest and highest bucket (+Inf).
		nh(`637 histogram_quantile(-0.1, testhistogram) {start="positive"}`, thPos, -0.1, math.Inf(-1)),
		cl(`642 histogram_quantile(-0.1, testhistogram_bucket) {start="negative"}`, thNeg, -0.1, math.Inf(-1)),
		nh(`659 histogram_quantile(1.01, testhistogram) {start="negative"}`, thNeg, 1.01, inf),
		cl(`664 histogram_quantile(1.01, testhistogram_bucket) {start="positive"}`, thPos, 1.01, inf),
		nh(`681 histogram_quantile(NaN, testhistogram) {start="positive"}`, thPos, nan, nan),
		cl(`686 histogram_quantile(NaN, testhistogram_bucket) {start="negative"}`, thNeg, nan, nan),
		nh(`709 histogram_quantile(0, testhistogram) {start="positive"}`, thPos, 0, 0),
		nh(`709 histogram_quantile(0, testhistogram) {start="negative"}`, thNeg, 0, -0.2),
		cl(`714 histogram_quantile(0, testhistogram_bucket) {start="positive"}`, thPos, 0, 0),
		cl(`714 histogram_quantile(0, testhistogram_bucket) {start="negative"}`, thNeg, 0, -0.2),
		nh(`721 histogram_quantile(1, testhistogram) {start="positive"}`, thPos, 1, 1),
		nh(`721 histogram_quantile(1, testhistogram) {start="negative"}`, thNeg, 1, 0.3),
		cl(`726 histogram_quantile(1, testhistogram_bucket) {start="positive"}`, thPos, 1, 1),
		cl(`726 histogram_quantile(1, testhistogram_bucket) {start="negative"}`, thNeg, 1, 0.3),
		nh(`733 histogram_quantile(0.2, testhistogram) {start="positive"}`, thPos, 0.2, 0.048),
		nh(`733 histogram_quantile(0.2, testhistogram) {start="negative"}`, thNeg, 0.2, -0.2),
		cl(`738 histogram_quantile(0.2, testhistogram_bucket) {start="positive"}`, thPos, 0.2, 0.048),
		cl(`738 histogram_quantile(0.2, testhistogram_bucket) {start="negative"}`, thNeg, 0.2, -0.2),
		nh(`743 histogram_quantile(0.5, testhistogram) {start="positive"}`, thPos, 0.5, 0.15),
		nh(`743 histogram_quantile(0.5, testhistogram) {start="negative"}`, thNeg, 0.5, -0.15),
		cl(`748 histogram_quantile(0.5, testhistogram_bucket) {start="positive"}`, thPos, 0.5, 0.15),
		cl(`748 histogram_quantile(0.5, testhistogram_bucket) {start="negative"}`, thNeg, 0.5, -0.15),
		nh(`753 histogram_quantile(0.8, testhistogram) {start="positive"}`, thPos, 0.8, 0.72),
		nh(`753 histogram_quantile(0.8, testhistogram) {start="negative"}`, thNeg, 0.8, 0.3),
		cl(`758 histogram_quantile(0.8, testhistogram_bucket) {start="positive"}`, thPos, 0.8, 0.72),
		cl(`758 histogram_quantile(0.8, testhistogram_bucket) {start="negative"}`, thNeg, 0.8, 0.3),
		nh(`764 histogram_quantile(0.2, rate(testhistogram[10m])) {start="positive"}`, scaled(thPos, 1.0/3000), 0.2, 0.048),
		cl(`789 histogram_quantile(0.8, rate(testhistogram_bucket[10m])) {start="negative"}`, scaled(thNeg, 1.0/3000), 0.8, 0.3),

		// testhistogram2: results in the middle of buckets.
		nh(`796 histogram_quantile(1./6., testhistogram2)`, th2, 1./6., 1),
		cl(`800 histogram_quantile(1./6., testhistogram2_bucket)`, th2, 1./6., 1),
		nh(`804 histogram_quantile(0.5, testhistogram2)`, th2, 0.5, 3),
		cl(`808 histogram_quantile(0.5, testhistogram2_bucket)`, th2, 0.5, 3),
		nh(`812 histogram_quantile(5./6., testhistogram2)`, th2, 5./6., 5),
		cl(`816 histogram_quantile(5./6., testhistogram2_bucket)`, th2, 5./6., 5),
		cl(`840 histogram_quantile(5./6., rate(testhistogram2_bucket[15m]))`, scaled(th2, 1.0/300), 5./6., 5),

		// request_duration_seconds: fleet sums (the use case of this package).
		nh(`847 histogram_quantile(0.3, sum(rate(request_duration_seconds[10m])))`, rdAll, 0.3, 0.075),
		cl(`851 histogram_quantile(0.3, sum(rate(request_duration_seconds_bucket[10m])) by (le))`, rdAll, 0.3, 0.075),
		nh(`855 histogram_quantile(0.5, sum(rate(request_duration_seconds[10m])))`, rdAll, 0.5, 0.1277777777777778),
		cl(`859 histogram_quantile(0.5, sum(rate(request_duration_seconds_bucket[10m])) by (le))`, rdAll, 0.5, 0.1277777777777778),
		nh(`904 histogram_quantile(0.3, sum(rate(request_duration_seconds[10m])) by (job)) {job="job2"}`, rdJob2, 0.3, 0.0642857142857143),
		cl(`919 histogram_quantile(0.5, sum(rate(request_duration_seconds_bucket[10m])) by (le, job)) {job="job2"}`, rdJob2, 0.5, 0.1125),
		nh(`968 histogram_quantile(0.5, rate(request_duration_seconds[10m])) {instance="ins2", job="job1"}`, rdJ1I2, 0.5, 0.13333333333333333),
		cl(`975 histogram_quantile(0.5, rate(request_duration_seconds_bucket[10m])) {instance="ins2", job="job1"}`, rdJ1I2, 0.5, 0.13333333333333333),

		// Non-monotonic classic buckets (monotonicity fix).
		cl(`1025 histogram_quantile(0.01, nonmonotonic_bucket)`, nonmono, 0.01, 0.0045),
		cl(`1029 histogram_quantile(0.5, nonmonotonic_bucket)`, nonmono, 0.5, 8.5),
		cl(`1033 histogram_quantile(0.99, nonmonotonic_bucket)`, nonmono, 0.99, 979.75),
		{name: "native_histograms.test:1904 histogram_quantile(0.5, nonmonotonic_bucket)", classic: ptr(nonmono1m), q: 0.5, want: 8.5},

		// Equal bounds with different spellings are coalesced; only +Inf -> NaN.
		cl(`1044 histogram_quantile(0.5, rate(mixed_bucket[10m])) {instance="ins1", job="job1"}`, mixedIns1, 0.5, 0.15),
		cl(`1044 histogram_quantile(0.5, rate(mixed_bucket[10m])) {instance="ins2", job="job1"}`, mixedIns2, 0.5, nan),
		cl(`1052 histogram_quantile(0.75, rate(mixed_bucket[10m])) {instance="ins1", job="job1"}`, mixedIns1, 0.75, 0.2),
		cl(`1056 histogram_quantile(1, rate(mixed_bucket[10m])) {instance="ins1", job="job1"}`, mixedIns1, 1, 0.2),

		// No observations.
		nh(`1065 histogram_quantile(0.2, rate(empty_bucket[10m])) {instance="ins1", job="job1"}`, emptyBucket, 0.2, nan),
		cl(`1107 histogram_quantile(1.0, sum by (le) (rate(const_histogram_bucket[5m])))`, constClassic, 1, nan),
		nh(`1110 histogram_quantile(1.0, sum(rate(const_histogram[5m])))`, constClassic, 1, nan),

		// Native exponential histograms.
		nat("61 histogram_quantile(0.5, single_histogram)", "{{schema:0 sum:5 count:4 buckets:[1 2 1]}}", 0.5, 1.414213562373095),
		nat("152 histogram_quantile(0.5, incr_histogram) (value at 50m from line 136)", "{{count:14 sum:24 buckets:[1 12 1]}}", 0.5, 1.414213562373095),
		nat("162 histogram_quantile(0.5, rate(incr_histogram[10m])) (rate from line 158)", "{{count:0.0033333333333333335 sum:0.006666666666666667 offset:1 buckets:[0.0033333333333333335]}}", 0.5, 1.414213562373095),
		nat("215 histogram_quantile(0.5, single_zero_histogram)", "{{schema:0 z_bucket:1 z_bucket_w:0.5 sum:0.25 count:1}}", 0.5, 0),
		nat("238 histogram_quantile(0.5, negative_histogram)", "{{schema:0 sum:-5 count:4 n_buckets:[1 2 1]}}", 0.5, -1.414213562373095),
		nat("261 histogram_quantile(0.5, two_samples_histogram) (newest sample)", "{{schema:0 sum:-4 count:4 n_buckets:[1 2 1]}}", 0.5, -1.414213562373095),
		nat("284 histogram_quantile(0.5, balanced_histogram) (sum of both samples of line 268)", "{{schema:0 sum:0 count:8 buckets:[1 2 1] n_buckets:[1 2 1]}}", 0.5, 0.5),

		nat("416 histogram_quantile(1.001, histogram_quantile_1)", hq1, 1.001, inf),
		nat("420 histogram_quantile(1, histogram_quantile_1)", hq1, 1, 16),
		nat("427 histogram_quantile(0.99, histogram_quantile_1)", hq1, 0.99, 15.67072476139083),
		nat("431 histogram_quantile(0.9, histogram_quantile_1)", hq1, 0.9, 12.99603834169977),
		nat("435 histogram_quantile(0.6, histogram_quantile_1)", hq1, 0.6, 4.594793419988138),
		nat("439 histogram_quantile(0.5, histogram_quantile_1)", hq1, 0.5, 1.5874010519681994),
		nat("444 histogram_quantile(0.1, histogram_quantile_1) (zero bucket, linear)", hq1, 0.1, 0.0006),
		nat("448 histogram_quantile(0, histogram_quantile_1)", hq1, 0, 0),
		nat("452 histogram_quantile(-1, histogram_quantile_1)", hq1, -1, math.Inf(-1)),

		nat("462 histogram_quantile(1.001, histogram_quantile_2)", hq2, 1.001, inf),
		nat("466 histogram_quantile(1, histogram_quantile_2)", hq2, 1, 0),
		nat("473 histogram_quantile(0.99, histogram_quantile_2) (zero bucket)", hq2, 0.99, -0.00006),
		nat("477 histogram_quantile(0.9, histogram_quantile_2) (zero bucket)", hq2, 0.9, -0.0006),
		nat("481 histogram_quantile(0.5, histogram_quantile_2)", hq2, 0.5, -1.5874010519681996),
		nat("485 histogram_quantile(0.1, histogram_quantile_2)", hq2, 0.1, -12.996038341699768),
		nat("489 histogram_quantile(0, histogram_quantile_2)", hq2, 0, -16),
		nat("493 histogram_quantile(-1, histogram_quantile_2)", hq2, -1, math.Inf(-1)),

		nat("505 histogram_quantile(1.001, histogram_quantile_3)", hq3, 1.001, inf),
		nat("509 histogram_quantile(1, histogram_quantile_3)", hq3, 1, 16),
		nat("513 histogram_quantile(0.99, histogram_quantile_3)", hq3, 0.99, 15.34822590920423),
		nat("517 histogram_quantile(0.9, histogram_quantile_3)", hq3, 0.9, 10.556063286183155),
		nat("521 histogram_quantile(0.7, histogram_quantile_3)", hq3, 0.7, 1.2030250360821164),
		nat("527 histogram_quantile(0.55, histogram_quantile_3) (zero bucket)", hq3, 0.55, 0.0006),
		nat("531 histogram_quantile(0.5, histogram_quantile_3) (zero bucket)", hq3, 0.5, 0),
		nat("535 histogram_quantile(0.45, histogram_quantile_3) (zero bucket)", hq3, 0.45, -0.0006),
		nat("540 histogram_quantile(0.3, histogram_quantile_3)", hq3, 0.3, -1.2030250360821169),
		nat("544 histogram_quantile(0.1, histogram_quantile_3)", hq3, 0.1, -10.556063286183155),
		nat("548 histogram_quantile(0.01, histogram_quantile_3)", hq3, 0.01, -15.34822590920423),
		nat("552 histogram_quantile(0, histogram_quantile_3)", hq3, 0, -16),
		nat("556 histogram_quantile(-1, histogram_quantile_3)", hq3, -1, math.Inf(-1)),

		// Different schemas (-1, 0, +1), positive and negative.
		nat(`569 histogram_quantile(0.5, var_res_histogram) {schema="-1"}`, "{{schema:-1 sum:6 count:5 buckets:[0 5]}}", 0.5, 2.0),
		nat(`569 histogram_quantile(0.5, var_res_histogram) {schema="0"}`, "{{schema:0 sum:4 count:5 buckets:[0 5]}}", 0.5, 1.4142135623730951),
		nat(`590 histogram_quantile(0.5, var_res_histogram) {schema="-1"}`, "{{schema:-1 sum:6 count:5 buckets:[0 0 5]}}", 0.5, 8.0),
		nat(`590 histogram_quantile(0.5, var_res_histogram) {schema="0"}`, "{{schema:0 sum:4 count:5 buckets:[0 0 5]}}", 0.5, 2.82842712474619),
		nat(`590 histogram_quantile(0.5, var_res_histogram) {schema="+1"}`, "{{schema:1 sum:4 count:5 buckets:[0 0 5]}}", 0.5, 1.6817928305074292),
		nat(`611 histogram_quantile(0.5, var_res_histogram) {schema="-1"}`, "{{schema:-1 sum:6 count:5 n_buckets:[0 5]}}", 0.5, -2.0),
		nat(`611 histogram_quantile(0.5, var_res_histogram) {schema="0"}`, "{{schema:0 sum:4 count:5 n_buckets:[0 5]}}", 0.5, -1.4142135623730951),
		nat(`631 histogram_quantile(0.5, var_res_histogram) {schema="-1"}`, "{{schema:-1 sum:6 count:5 n_buckets:[0 0 5]}}", 0.5, -8.0),
		nat(`631 histogram_quantile(0.5, var_res_histogram) {schema="0"}`, "{{schema:0 sum:4 count:5 n_buckets:[0 0 5]}}", 0.5, -2.82842712474619),
		nat(`631 histogram_quantile(0.5, var_res_histogram) {schema="+1"}`, "{{schema:1 sum:4 count:5 n_buckets:[0 0 5]}}", 0.5, -1.6817928305074292),

		// Custom buckets (NHCB).
		nat("1083 histogram_quantile(0.5, custom_buckets_histogram)", "{{schema:-53 sum:5 count:4 custom_values:[5 10] buckets:[1 2 1]}}", 0.5, 7.5),
		nat("1183 histogram_quantile(1.0, rate(const_histogram[5m])) (rate from line 1152)", "{{schema:0 sum:0 count:0}}", 1, nan),

		// NaN observations (Sum NaN, Count above the bucket total).
		nat(`1616 histogram_quantile(1, histogram_nan) {case="100% NaNs"}`, "{{schema:0 count:3 sum:NaN}}", 1, nan),
		nat(`1616 histogram_quantile(1, histogram_nan) {case="20% NaNs"}`, "{{schema:0 count:15 sum:NaN buckets:[12]}}", 1, nan),
		nat(`1621 histogram_quantile(0.81, histogram_nan) {case="20% NaNs"}`, "{{schema:0 count:15 sum:NaN buckets:[12]}}", 0.81, nan),
		nat(`1635 histogram_quantile(0.8, histogram_nan{case="20% NaNs"})`, "{{schema:0 count:15 sum:NaN buckets:[12]}}", 0.8, 1),
		nat(`1639 histogram_quantile(0.4, histogram_nan{case="100% NaNs"})`, "{{schema:0 count:3 sum:NaN}}", 0.4, nan),
		nat(`1644 histogram_quantile(0.4, histogram_nan{case="20% NaNs"})`, "{{schema:0 count:15 sum:NaN buckets:[12]}}", 0.4, 0.7071067811865475),

		nat("1986 histogram_quantile(0.5, histogram unless histogram_count(histogram) == 0)", "{{schema:0 count:10 sum:50 counter_reset_hint:gauge buckets:[1 2 3 4]}}", 0.5, 3.1748021039363987),
	}
}

func sameFloat(got, want float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0) || want == 0:
		return got == want
	}
	return math.Abs(got-want) <= 1e-12*math.Abs(want)
}

func buildCase(c confCase) (*Histogram, error) {
	switch {
	case c.classic != nil:
		ub := make([]float64, len(c.classic.les))
		for i, le := range c.classic.les {
			v, err := parseNum(le)
			if err != nil {
				return nil, err
			}
			ub[i] = v
		}
		return FromClassic(ub, c.classic.cum)
	case c.nhcb != nil:
		return nhcbFromClassic(c.nhcb.les, c.nhcb.cum, c.nhcb.sum)
	default:
		n, err := parseNotation(c.native)
		if err != nil {
			return nil, err
		}
		return n.histogram(), nil
	}
}

func TestConformance(t *testing.T) {
	cases := conformanceCases()
	if len(cases) < 30 {
		t.Fatalf("only %d conformance cases", len(cases))
	}
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		names[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			h, err := buildCase(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Quantile(c.q); !sameFloat(got, c.want) {
				t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
			}
			if c.classic != nil {
				return
			}
			// The same histogram as the HTTP API JSON renders it (empty
			// buckets dropped, bounds clamped), through FromNative with
			// schema inference.
			fh, err := FromNative(apiBuckets(h), h.Count, h.Sum)
			if err != nil {
				t.Fatalf("FromNative: %v", err)
			}
			if got := fh.Quantile(c.q); !sameFloat(got, c.want) {
				t.Errorf("FromNative(...).Quantile(%v) = %v, want %v (kind %v schema %d)", c.q, got, c.want, fh.Kind, fh.Schema)
			}
			if h.Kind == NativeExponential && hasPopulatedNonZero(h) {
				if fh.Kind != NativeExponential || fh.Schema != h.Schema {
					t.Errorf("inferred %v schema %d, want exponential schema %d", fh.Kind, fh.Schema, h.Schema)
				}
			}
		})
	}
	t.Logf("%d conformance cases", len(cases))
}

func hasPopulatedNonZero(h *Histogram) bool {
	for _, b := range h.Buckets {
		if !h.isZeroBucket(b) && b.Count != 0 {
			return true
		}
	}
	return false
}

// TestConformanceSources: both of Prometheus's test files give cases (a
// parser that lost one of them would leave TestConformance with the other's).
func TestConformanceSources(t *testing.T) {
	per := map[string]int{}
	for _, c := range conformanceCases() {
		var file string
		fmt.Sscanf(c.name, "%s", &file)
		for i := range file {
			if file[i] == ':' {
				file = file[:i]
				break
			}
		}
		per[file]++
	}
	for _, src := range []string{"histograms.test", "native_histograms.test"} {
		if per[src] < 20 {
			t.Errorf("%d conformance cases from %s; want at least 20 (cases per source: %v)", per[src], src, per)
		}
	}
}
