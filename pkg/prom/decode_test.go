package prom

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// TestMatrixDecoding: the one-pass reader accepts what the API writes in any
// field order, with escapes, warnings and nulls, and refuses what it is not.
func TestMatrixDecoding(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		want     matrixData
		warnings []string
		status   string
		wantErr  bool
	}{
		{name: "floats and histograms",
			body: `{"status":"success","data":{"resultType":"matrix","result":[` +
				`{"metric":{"le":"0.1","a\"b":"x\u00e9"},"values":[[1800000000,"1.5"],[1800000060.5,"+Inf"]]},` +
				`{"metric":{},"histograms":[[1800000000,{"count":"3","sum":"0.3","buckets":[[0,"0.1","0.2","3"]]}]]}]}}`,
			status: "success",
			want: matrixData{ResultType: "matrix", Result: []matrixSeries{
				{Metric: map[string]string{"le": "0.1", `a"b`: "xé"}, Values: []floatSample{{1800000000, 1.5}, {1800000060.5, posInf}}},
				{Metric: map[string]string{}, Histograms: []histSample{{T: 1800000000, Count: 3, Sum: 0.3, Buckets: []histogram.APIBucket{{Boundaries: 0, Lower: 0.1, Upper: 0.2, Count: 3}}}}},
			}}},
		{name: "result before resultType, warnings, unknown fields",
			body:   ` { "data" : { "result" : [ ] , "x": {"y":[1,true,null]}, "resultType" : "matrix" } , "warnings":["partial"], "status" : "success" } `,
			status: "success", warnings: []string{"partial"},
			want: matrixData{ResultType: "matrix"}},
		{name: "an error answer", body: `{"status":"error","errorType":"bad_data","error":"x"}`, status: "error"},
		{name: "unquoted value", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,1]]}]}}`, wantErr: true},
		{name: "buckets with white space, apart, and sharing a bound",
			body: `{"status":"success","data":{"resultType":"matrix","result":[` +
				`{"metric":{},"histograms":[[1800000000,{"count":"6","sum":"1","buckets":[[ 0 , "0.1","0.2" , "3" ],[0,"0.5","1","2"],[3,"1","2","1.5"]]}]]}]}}`,
			status: "success",
			want: matrixData{ResultType: "matrix", Result: []matrixSeries{
				{Metric: map[string]string{}, Histograms: []histSample{{T: 1800000000, Count: 6, Sum: 1, Buckets: []histogram.APIBucket{
					{Boundaries: 0, Lower: 0.1, Upper: 0.2, Count: 3}, {Boundaries: 0, Lower: 0.5, Upper: 1, Count: 2}, {Boundaries: 3, Lower: 1, Upper: 2, Count: 1.5}}}}},
			}}},
		{name: "bucket bound with an escape", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1,{"count":"3","sum":"1","buckets":[[0,"0\u002e1","0.2","3"]]}]]}]}}`, wantErr: true},
		{name: "bucket with five fields", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1,{"count":"3","sum":"1","buckets":[[0,"0.1","0.2","3","4"]]}]]}]}}`, wantErr: true},
		{name: "unquoted bucket bound", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1,{"count":"3","sum":"1","buckets":[[0,0.1,"0.2","3"]]}]]}]}}`, wantErr: true},
		{name: "bucket bound not a number", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1,{"count":"3","sum":"1","buckets":[[0,"x","0.2","3"]]}]]}]}}`, wantErr: true},
		{name: "time not a number", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[["1","1"]]}]}}`, wantErr: true},
		{name: "truncated", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{}`, wantErr: true},
		{name: "trailing data", body: `{"status":"success"} x`, status: "success", wantErr: true},
	}
	// Each body is read whole, and as it arrives: a byte at a time, in
	// halves of what is asked for, and with the end reported with the
	// last bytes.
	readers := map[string]func(string) *scanner{
		"whole":    func(b string) *scanner { return &scanner{b: []byte(b)} },
		"one byte": func(b string) *scanner { return &scanner{r: iotest.OneByteReader(strings.NewReader(b))} },
		"halves":   func(b string) *scanner { return &scanner{r: iotest.HalfReader(strings.NewReader(b))} },
		"data+EOF": func(b string) *scanner { return &scanner{r: iotest.DataErrReader(strings.NewReader(b))} },
	}
	for _, tt := range tests {
		for how, read := range readers {
			t.Run(tt.name+", "+how, func(t *testing.T) {
				var m matrixData
				s := read(tt.body)
				status, warnings, err := m.decodeEnvelope(s)
				if all, _ := s.rest(); string(all) != tt.body {
					t.Errorf("the scanner kept %q of the body", all)
				}
				if tt.wantErr {
					if !errors.Is(err, ErrNotProm) {
						t.Fatalf("error %v, want ErrNotProm", err)
					}
					return
				}
				if err != nil || status != tt.status || !reflect.DeepEqual(warnings, tt.warnings) {
					t.Fatalf("status %q warnings %q error %v", status, warnings, err)
				}
				if !reflect.DeepEqual(m, tt.want) {
					t.Errorf("got %+v\nwant %+v", m, tt.want)
				}
			})
		}
	}
}

// TestStreamedRangeDecoding: a native range answer read as it arrives, in
// pieces of every size, decodes to exactly what it decodes to whole.
func TestStreamedRangeDecoding(t *testing.T) {
	body := nativeRangeBody(5, 40)
	var whole matrixData
	if _, _, err := whole.decodeEnvelope(&scanner{b: body}); err != nil {
		t.Fatal(err)
	}
	for _, piece := range []int{1, 2, 3, 7, 64, 1000, len(body)} {
		var m matrixData
		s := &scanner{r: &pieces{b: body, n: piece}}
		if _, _, err := m.decodeEnvelope(s); err != nil {
			t.Fatalf("pieces of %d bytes: %v", piece, err)
		}
		if !reflect.DeepEqual(m, whole) {
			t.Fatalf("pieces of %d bytes: the decoded answer differs", piece)
		}
	}
}

// pieces reads b n bytes at a time.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(out []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := copy(out[:min(len(out), p.n)], p.b)
	p.b = p.b[n:]
	return n, nil
}

var posInf = math.Inf(1)

// nativeRangeBody is a range query's answer as Prometheus writes it: one
// series of schema-3 native histograms, a sample a minute.
func nativeRangeBody(minutes, buckets int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[`)
	for m := range minutes {
		if m > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `[%d,{"count":"%v","sum":"%v","buckets":[`, 1780311600+60*m, 26205.333333333332+float64(m), 412.63480090021096)
		for i := range buckets {
			if i > 0 {
				b.WriteByte(',')
			}
			lo, hi := math.Pow(2, float64(i-64)/8), math.Pow(2, float64(i-63)/8)
			fmt.Fprintf(&b, `[0,"%s","%s","%s"]`, strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64),
				strconv.FormatFloat(float64(i*m%97)*4/3, 'g', -1, 64))
		}
		b.WriteString(`]}]`)
	}
	b.WriteString(`]}]}}`)
	return []byte(b.String())
}

// TestBoundsParsedOnce: a bound read from the cache is the bound parsed.
func TestBoundsParsedOnce(t *testing.T) {
	var m matrixData
	if _, _, err := m.decodeEnvelope(&scanner{b: nativeRangeBody(3, 40)}); err != nil {
		t.Fatal(err)
	}
	for _, h := range m.Result[0].Histograms {
		for i, b := range h.Buckets {
			lo, hi := math.Pow(2, float64(i-64)/8), math.Pow(2, float64(i-63)/8)
			if b.Lower != lo || b.Upper != hi {
				t.Fatalf("bucket %d at %v: (%v, %v], want (%v, %v]", i, h.T, b.Lower, b.Upper, lo, hi)
			}
		}
	}
}

// BenchmarkDecodeNativeRange: one fleet's hour of native histograms.
func BenchmarkDecodeNativeRange(b *testing.B) {
	body := nativeRangeBody(61, 100)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var m matrixData
		if _, _, err := m.decodeEnvelope(&scanner{b: body}); err != nil {
			b.Fatal(err)
		}
	}
}

// classicRange is one fleet's hour of classic buckets as the API answers
// sum by (le) (...): les series of minutes points each, in the API's order.
func classicRange(minutes, les int) *matrixData {
	m := &matrixData{}
	for i := range les {
		le := "+Inf"
		if i < les-1 {
			le = strconv.FormatFloat(0.25*math.Pow(2, float64(i)), 'g', -1, 64) // 0.25 to 256: "16" sorts before "2" as text
		}
		s := matrixSeries{Metric: map[string]string{"le": le}}
		for t := range minutes {
			s.Values = append(s.Values, floatSample{T: float64(1780311600 + 60*t), V: float64(i*(t+1)) * 4 / 3})
		}
		m.Result = append(m.Result, s)
	}
	// The API orders series by their labels as strings: "+Inf" first, then
	// "0.25", "0.5", "1", "128", "16", "2", ... as text, not as numbers.
	slices.SortFunc(m.Result, func(a, b matrixSeries) int { return strings.Compare(a.Metric["le"], b.Metric["le"]) })
	return m
}

// BenchmarkClassicSeries: one fleet's hour of 25 classic buckets into
// histograms.
func BenchmarkClassicSeries(b *testing.B) {
	m := classicRange(61, 25)
	for b.Loop() {
		if _, err := classicSeries(m, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// TestClassicSeriesInLeOrder: series in the API's text order ("+Inf" and
// "10" before "2"), one of them missing a minute, give each minute the
// histogram of its bounds in numeric order.
func TestClassicSeriesInLeOrder(t *testing.T) {
	m := classicRange(4, 12)
	last := &m.Result[len(m.Result)-1]
	last.Values = last.Values[1:] // the first minute lacks this bound
	got, err := classicSeries(m, "")
	if err != nil {
		t.Fatal(err)
	}
	for ts, h := range got[""] {
		var les, cum []float64
		for _, s := range m.Result {
			le, _ := strconv.ParseFloat(s.Metric["le"], 64)
			for _, v := range s.Values {
				if unixSeconds(v.T) == ts {
					les, cum = append(les, le), append(cum, v.V)
				}
			}
		}
		want, err := histogram.FromClassic(les, cum)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("minute %d: %+v, want %+v", ts, h.Buckets, want.Buckets)
		}
		if n := len(h.Buckets); ts == 1780311600 && n != 11 || ts != 1780311600 && n != 12 {
			t.Errorf("minute %d: %d buckets", ts, n)
		}
	}
	if len(got[""]) != 4 {
		t.Errorf("%d minutes, want 4", len(got[""]))
	}
}

// TestExactDecimalIsStrconv: the fast path gives strconv's value, bit for
// bit, or leaves the text to strconv; strconv's answer is the reference.
func TestExactDecimalIsStrconv(t *testing.T) {
	texts := []string{
		"0", "-0", "1", "17", "0.1", "0.25", ".5", "5.", "-", "", ".", "-.5", "1748772000", "1748772000.123",
		"1748772000.5", "999999999999999", "9999999999999999", "123456789012345.6", "0.000000000000001",
		"0.0000000000000001", "1e3", "+1", "NaN", "Inf", "-Inf", "1.2.3", "00012.500", "0x10", "1_000",
		"4503599627370497", "9007199254740993", "3.14159265358979", "2.718281828459045",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		digits := 1 + rng.IntN(17)
		var b []byte
		if rng.IntN(4) == 0 {
			b = append(b, '-')
		}
		point := rng.IntN(digits + 2)
		for d := 0; d < digits; d++ {
			if d == point {
				b = append(b, '.')
			}
			b = append(b, byte('0'+rng.IntN(10)))
		}
		texts = append(texts, string(b))
	}
	fast := 0
	for _, text := range texts {
		want, wantErr := strconv.ParseFloat(text, 64)
		got, err := atof([]byte(text))
		if (err != nil) != (wantErr != nil) || math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("atof(%q) = %v, %v; strconv: %v, %v", text, got, err, want, wantErr)
		}
		if _, ok := exactDecimal([]byte(text)); ok {
			fast++
		}
	}
	if fast < len(texts)/2 {
		t.Fatalf("the fast path took %d of %d texts", fast, len(texts))
	}
}

// The histogram's name as the judge, the gate, the data source and the rule
// pack take it: without _bucket, which a user copying a classic series'
// name brings along.
func TestValidHistogramName(t *testing.T) {
	for _, tt := range []struct{ name, err string }{
		{"http_request_duration_seconds", ""},
		{"http.server.request.duration", ""},
		{"bucket_fill_seconds", ""},
		{"http_request_duration_seconds_bucket", `give the histogram name without _bucket (http_request_duration_seconds), not "http_request_duration_seconds_bucket"`},
		{"sum(up)", "invalid metric name"},
		{"", "invalid metric name"},
	} {
		err := ValidHistogramName(tt.name)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ValidHistogramName(%q) = %v, want %q", tt.name, err, tt.err)
		}
	}
}
