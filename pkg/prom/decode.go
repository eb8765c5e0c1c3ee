package prom

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// Matrix answers (range queries, and instant queries of a range selector)
// are decoded in one pass over the body as it arrives, straight into
// samples: decoding them into generic JSON values first and parsing those
// afterwards cost the engine more than Prometheus took to answer, and
// decoding only once the last byte is in leaves all of the decoding after
// it. Anything this reader does not accept is handed to encoding/json, so
// errors keep their classification (see Client.once).

// matrixData is a matrix answer's data.
type matrixData struct {
	ResultType string
	Result     []matrixSeries
}

type matrixSeries struct {
	Metric     map[string]string
	Values     []floatSample
	Histograms []histSample
}

// floatSample and histSample are one sample of a series; T is the Unix
// time in seconds as the API writes it (milliseconds as decimals).
type floatSample struct {
	T float64
	V float64
}

type histSample struct {
	T          float64
	Count, Sum float64
	Buckets    []histogram.APIBucket
}

// unixSeconds is a sample's time rounded to the second: a range query's
// steps are whole seconds.
func unixSeconds(t float64) int64 { return int64(math.Round(t)) }

// streamDecoder is a response data type that reads the whole API envelope
// itself in one pass; Client.once falls back to encoding/json when it
// cannot.
type streamDecoder interface {
	decodeEnvelope(s *scanner) (status string, warnings []string, err error)
}

// UnmarshalJSON lets encoding/json decode the data document with the same
// reader (the fallback path).
func (m *matrixData) UnmarshalJSON(data []byte) error {
	*m = matrixData{}
	s := scanner{b: data}
	if err := s.matrixData(m); err != nil {
		return err
	}
	s.ws()
	if s.avail() {
		return s.errorf("data after the document")
	}
	return nil
}

// decodeEnvelope reads {"status":..., "data":{...}, "warnings":[...]}.
// An error answer (status other than success) is left to the caller.
func (m *matrixData) decodeEnvelope(s *scanner) (status string, warnings []string, err error) {
	*m = matrixData{}
	err = s.object(func(key []byte) error {
		switch string(key) {
		case "status":
			var err error
			status, err = s.str()
			return err
		case "data":
			return s.matrixData(m)
		case "warnings":
			return s.array(func() error {
				w, err := s.str()
				warnings = append(warnings, w)
				return err
			})
		}
		return s.skip()
	})
	if err == nil {
		s.ws()
		if s.avail() {
			err = s.errorf("data after the document")
		}
	}
	return status, warnings, err
}

// scanner reads the JSON the Prometheus API writes, from b, or from r as
// it arrives when r is set: b then holds what has been read of r so far,
// and keeps all of it (for the fallback).
type scanner struct {
	b []byte
	i int
	r io.Reader
	// rerr is the error that ended reading r (io.EOF at its end).
	rerr error
	// bounds holds the bucket bounds read so far by their text: a native
	// histogram's bounds repeat in every sample of a range, and parsing
	// their long decimals was the largest part of reading an answer.
	bounds map[string]float64
	// lastUpper is the upper bound of the last bucket read by plainBucket,
	// and its text (a slice of b).
	lastUpper     float64
	lastUpperText []byte
}

// readChunk is how much more of r the scanner asks for at a time.
const readChunk = 32 << 10

// more appends what r has next to b; false when r has nothing more.
// Slices of b taken before stay valid: b only grows.
func (s *scanner) more() bool {
	if s.r == nil || s.rerr != nil {
		return false
	}
	if cap(s.b)-len(s.b) < readChunk/2 {
		s.b = slices.Grow(s.b, max(readChunk, len(s.b)))
	}
	n, err := s.r.Read(s.b[len(s.b):cap(s.b)])
	s.b = s.b[:len(s.b)+n]
	if err != nil {
		s.rerr = err
	}
	return n > 0 || err == nil
}

// avail reports whether a byte is there at s.i, reading more if need be.
func (s *scanner) avail() bool {
	for s.i >= len(s.b) {
		if !s.more() {
			return false
		}
	}
	return true
}

// fill reads until b holds at least n bytes or r ends.
func (s *scanner) fill(n int) {
	for len(s.b) < n && s.more() {
	}
}

// rest reads the remainder of r into b and returns all of it, and the
// error that ended reading (nil at the end).
func (s *scanner) rest() ([]byte, error) {
	for s.more() {
	}
	if s.rerr == io.EOF {
		return s.b, nil
	}
	return s.b, s.rerr
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %d of the response", ErrNotProm, fmt.Sprintf(format, args...), s.i)
}

func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // the API writes no white space between tokens
	}
	s.skipSpace()
}

func (s *scanner) skipSpace() {
	for s.avail() {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i]
	}
	s.skipSpace()
	if s.avail() {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.errorf("expected %q", c)
	}
	s.i++
	return nil
}

// rawString returns a string's bytes without quotes; escaped says it holds
// escapes still to be decoded.
func (s *scanner) rawString() (raw []byte, escaped bool, err error) {
	if err := s.expect('"'); err != nil {
		return nil, false, err
	}
	start := s.i
	// Most strings hold no escape: find the closing quote at once.
	n, from := -1, start
	for {
		if n = bytes.IndexByte(s.b[from:], '"'); n >= 0 {
			n += from - start
			break
		}
		from = len(s.b)
		if !s.more() {
			break
		}
	}
	if n >= 0 {
		plain := true
		for _, c := range s.b[start : start+n] {
			if c == '\\' || c < 0x20 {
				plain = false
				break
			}
		}
		if plain {
			s.i = start + n + 1
			return s.b[start : start+n], false, nil
		}
	}
	for s.avail() {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], escaped, nil
		case c == '\\':
			escaped = true
			s.i += 2
		case c < 0x20:
			return nil, false, s.errorf("control character in a string")
		default:
			s.i++
		}
	}
	return nil, false, s.errorf("unterminated string")
}

func (s *scanner) str() (string, error) {
	s.ws()
	from := s.i
	raw, escaped, err := s.rawString()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw), nil
	}
	var out string
	if err := json.Unmarshal(s.b[from:s.i], &out); err != nil {
		return "", s.errorf("string: %v", err)
	}
	return out, nil
}

// quotedFloat reads a sample value, a JSON string such as "12.5" or "+Inf".
func (s *scanner) quotedFloat() (float64, error) {
	raw, err := s.numberText("a sample value")
	if err != nil {
		return 0, err
	}
	return parseFloatBytes(raw)
}

// numberText reads the text of a quoted number (what names it in errors).
func (s *scanner) numberText(what string) ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errorf("%s is not a quoted number", what)
	}
	raw, escaped, err := s.rawString()
	if err != nil {
		return nil, err
	}
	if escaped {
		return nil, s.errorf("%s %q is not a number", what, raw)
	}
	return raw, nil
}

// atof is strconv.ParseFloat of the text, with the texts Prometheus
// writes most (sample times, counts, bucket bounds: an optional minus, at
// most 15 digits, an optional fraction) converted without copying the text
// or leaving the stack. At most 15 digits are a whole number m below 2^53,
// and 10^k for k <= 15 is exact too, so m / 10^k is one correctly rounded
// division: the value strconv gives (its own exact fast path). Anything else
// (exponents, more digits, NaN, Inf) goes to strconv.
func atof(b []byte) (float64, error) {
	if v, ok := exactDecimal(b); ok {
		return v, nil
	}
	return strconv.ParseFloat(string(b), 64)
}

// pow10 holds the exact powers of ten exactDecimal divides by.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

func exactDecimal(b []byte) (float64, bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	var m uint64
	digits, frac := 0, -1 // frac: digits after the point, -1 without one
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
		if digits > 15 {
			return 0, false
		}
	}
	if digits == 0 || frac == 0 {
		return 0, false
	}
	v := float64(m)
	if frac > 0 {
		v /= pow10[frac]
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseFloatBytes is atof with the error a sample value's text gets.
func parseFloatBytes(raw []byte) (float64, error) {
	v, err := atof(raw)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrNotProm, raw)
	}
	return v, nil
}

// bound reads a bucket bound, a quoted number, parsing each text once.
func (s *scanner) bound() (float64, error) {
	raw, err := s.numberText("a bucket bound")
	if err != nil {
		return 0, err
	}
	if v, ok := s.cachedBound(raw); ok {
		return v, nil
	}
	return parseFloatBytes(raw)
}

// number reads a JSON number.
func (s *scanner) number() (float64, error) {
	s.ws()
	start := s.i
	for s.avail() {
		c := s.b[s.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	f, err := atof(s.b[start:s.i])
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, s.errorf("%q is not a number", s.b[start:s.i])
	}
	return f, nil
}

// object calls field for each key, positioned at its value, which field
// must consume.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, escaped, err := s.rawString()
		if err != nil {
			return err
		}
		if escaped {
			k, err := strconv.Unquote(`"` + string(key) + `"`)
			if err != nil {
				return s.errorf("key %q", key)
			}
			key = []byte(k)
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("expected , or }")
		}
	}
}

// array calls elem for each element, which elem must consume.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("expected , or ]")
		}
	}
}

// skip consumes any value.
func (s *scanner) skip() error {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.number()
		return err
	}
	s.fill(s.i + len("false"))
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return nil
		}
	}
	return s.errorf("unexpected value")
}

func (s *scanner) matrixData(m *matrixData) error {
	if s.peek() == 'n' {
		return s.skip() // null: no data
	}
	return s.object(func(key []byte) error {
		switch string(key) {
		case "resultType":
			var err error
			m.ResultType, err = s.str()
			return err
		case "result":
			if s.peek() == 'n' {
				return s.skip()
			}
			return s.array(func() error {
				var ms matrixSeries
				if err := s.series(&ms); err != nil {
					return err
				}
				m.Result = append(m.Result, ms)
				return nil
			})
		}
		return s.skip()
	})
}

func (s *scanner) series(ms *matrixSeries) error {
	if s.peek() != '{' {
		return s.skip() // a scalar or string result: the result type says so
	}
	return s.object(func(key []byte) error {
		switch string(key) {
		case "metric":
			ms.Metric = map[string]string{}
			return s.object(func(name []byte) error {
				v, err := s.str()
				ms.Metric[string(name)] = v
				return err
			})
		case "values":
			return s.array(func() error {
				var fs floatSample
				if err := s.sampleTime(&fs.T); err != nil {
					return err
				}
				var err error
				if fs.V, err = s.quotedFloat(); err != nil {
					return err
				}
				ms.Values = append(ms.Values, fs)
				return s.expect(']')
			})
		case "histograms":
			return s.array(func() error {
				var hs histSample
				if n := len(ms.Histograms); n > 0 {
					// The samples of a series mostly have as many buckets.
					hs.Buckets = make([]histogram.APIBucket, 0, len(ms.Histograms[n-1].Buckets))
				}
				if err := s.sampleTime(&hs.T); err != nil {
					return err
				}
				if err := s.nativeHistogram(&hs); err != nil {
					return err
				}
				ms.Histograms = append(ms.Histograms, hs)
				return s.expect(']')
			})
		}
		return s.skip()
	})
}

// sampleTime reads `[time,` of a sample pair.
func (s *scanner) sampleTime(t *float64) error {
	if err := s.expect('['); err != nil {
		return err
	}
	var err error
	if *t, err = s.number(); err != nil {
		return fmt.Errorf("%w: sample time: %v", ErrNotProm, err)
	}
	return s.expect(',')
}

// nativeHistogram reads {"count":"..","sum":"..","buckets":[...]}.
func (s *scanner) nativeHistogram(hs *histSample) error {
	return s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "count":
			hs.Count, err = s.quotedFloat()
		case "sum":
			hs.Sum, err = s.quotedFloat()
		case "buckets":
			err = s.array(func() error {
				var b apiBucket
				if err := s.bucket(&b); err != nil {
					return err
				}
				hs.Buckets = append(hs.Buckets, histogram.APIBucket(b))
				return nil
			})
		default:
			err = s.skip()
		}
		return err
	})
}

// apiBucket is one bucket, [boundaryRule, "lower", "upper", "count"].
type apiBucket histogram.APIBucket

func (b *apiBucket) UnmarshalJSON(data []byte) error {
	s := scanner{b: data}
	if err := s.bucket(b); err != nil {
		return err
	}
	if s.ws(); s.avail() {
		return s.errorf("data after the bucket")
	}
	return nil
}

func (s *scanner) bucket(b *apiBucket) error {
	if s.plainBucket(b) {
		return nil
	}
	if err := s.expect('['); err != nil {
		return fmt.Errorf("%w: a bucket is not an array", ErrNotProm)
	}
	rule, err := s.number()
	if err != nil {
		return fmt.Errorf("%w: bucket boundary rule: %v", ErrNotProm, err)
	}
	if rule != math.Trunc(rule) {
		return fmt.Errorf("%w: bucket boundary rule %v is not a whole number", ErrNotProm, rule)
	}
	b.Boundaries = int(rule)
	for i, v := range []*float64{&b.Lower, &b.Upper, &b.Count} {
		if err := s.expect(','); err != nil {
			return fmt.Errorf("%w: a bucket does not have 4 fields", ErrNotProm)
		}
		if i == 2 {
			*v, err = s.quotedFloat()
		} else {
			*v, err = s.bound()
		}
		if err != nil {
			return err
		}
	}
	if err := s.expect(']'); err != nil {
		return fmt.Errorf("%w: a bucket does not have 4 fields", ErrNotProm)
	}
	return nil
}

// plainBucket reads a bucket written as Prometheus writes it, with no white
// space or escape, [0,"0.1","0.2","3"], when all of it has arrived: most of
// an answer's bytes are buckets, and reading one token at a time cost more
// than the rest of the answer. It reads nothing and returns false for
// anything else, which bucket then reads (or rejects) token by token.
func (s *scanner) plainBucket(b *apiBucket) bool {
	rest := s.b[s.i:]
	end := bytes.IndexByte(rest, ']')
	if end < 0 || end < 14 || rest[0] != '[' || rest[1] < '0' || rest[1] > '3' || rest[2] != ',' {
		return false
	}
	seg := rest[3:end] // "lower","upper","count"
	var texts [3][]byte
	for i := range texts {
		if len(seg) < 2 || seg[0] != '"' {
			return false
		}
		n := bytes.IndexByte(seg[1:], '"')
		if n < 1 {
			return false
		}
		texts[i], seg = seg[1:1+n], seg[2+n:]
		if i < 2 {
			if len(seg) == 0 || seg[0] != ',' {
				return false
			}
			seg = seg[1:]
		}
	}
	if len(seg) != 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return false
	}
	// A bucket's lower bound is most often the upper bound just read.
	lower, ok := s.lastUpper, bytes.Equal(texts[0], s.lastUpperText)
	if !ok {
		if lower, ok = s.cachedBound(texts[0]); !ok {
			return false
		}
	}
	upper, ok := s.cachedBound(texts[1])
	if !ok {
		return false
	}
	s.lastUpper, s.lastUpperText = upper, texts[1]
	count, err := atof(texts[2])
	if err != nil {
		return false
	}
	b.Boundaries, b.Lower, b.Upper, b.Count = int(rest[1]-'0'), lower, upper, count
	s.i += end + 1
	return true
}

// cachedBound parses a bucket bound's text once per answer.
func (s *scanner) cachedBound(raw []byte) (float64, bool) {
	if v, ok := s.bounds[string(raw)]; ok {
		return v, true
	}
	v, err := atof(raw)
	if err != nil {
		return 0, false
	}
	if s.bounds == nil {
		s.bounds = map[string]float64{}
	}
	s.bounds[string(raw)] = v
	return v, true
}
