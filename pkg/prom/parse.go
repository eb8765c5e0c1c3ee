package prom

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// nativeHistogram is a native histogram sample as the HTTP API writes it.
type nativeHistogram struct {
	Count   string      `json:"count"`
	Sum     string      `json:"sum"`
	Buckets []apiBucket `json:"buckets"`
}

// apiBucket is one bucket, [boundaryRule, "lower", "upper", "count"]. It is
// read by hand: a response holds a bucket per minute and per occupied bucket,
// and decoding each through encoding/json's reflection dominated the
// engine's own time.
type apiBucket histogram.APIBucket

func (b *apiBucket) UnmarshalJSON(data []byte) error {
	text := strings.TrimSpace(string(data))
	if len(text) < 2 || text[0] != '[' || text[len(text)-1] != ']' {
		return fmt.Errorf("%w: bucket %s is not an array", ErrNotProm, text)
	}
	parts := strings.Split(text[1:len(text)-1], ",")
	if len(parts) != 4 {
		return fmt.Errorf("%w: bucket %s does not have 4 fields", ErrNotProm, text)
	}
	rule, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil {
		return fmt.Errorf("%w: bucket boundary rule %q", ErrNotProm, parts[0])
	}
	var vals [3]float64
	for i, part := range parts[1:] {
		part = strings.TrimSpace(part)
		if len(part) < 2 || part[0] != '"' || part[len(part)-1] != '"' {
			return fmt.Errorf("%w: bucket field %s is not a quoted number", ErrNotProm, part)
		}
		if vals[i], err = parseFloat(part[1 : len(part)-1]); err != nil {
			return err
		}
	}
	*b = apiBucket{Boundaries: rule, Lower: vals[0], Upper: vals[1], Count: vals[2]}
	return nil
}

// nativeSeries turns a matrix of native histogram samples into histograms per
// minute, grouped by the value of groupLabel ("" for a fleet sum). Float
// samples mean the metric is not a native histogram.
func nativeSeries(m *matrixData, groupLabel string) (map[string]Series, error) {
	out := map[string]Series{}
	for _, s := range m.Result {
		if len(s.Values) > 0 && len(s.Histograms) == 0 {
			return nil, fmt.Errorf("%w: the metric has float samples, not native histograms; choose the classic kind", ErrNotFound)
		}
		key := s.Metric[groupLabel]
		series := out[key]
		if series == nil {
			series = Series{}
			out[key] = series
		}
		for _, pair := range s.Histograms {
			ts, err := parseTime(pair[0])
			if err != nil {
				return nil, err
			}
			var nh nativeHistogram
			if err := json.Unmarshal(pair[1], &nh); err != nil {
				return nil, fmt.Errorf("%w: native histogram sample: %v", ErrNotProm, err)
			}
			h, err := toHistogram(nh)
			if err != nil {
				return nil, err
			}
			series[ts] = h
		}
	}
	return out, nil
}

func toHistogram(nh nativeHistogram) (*histogram.Histogram, error) {
	count, err := parseFloat(nh.Count)
	if err != nil {
		return nil, err
	}
	sum, err := parseFloat(nh.Sum)
	if err != nil {
		return nil, err
	}
	buckets := make([]histogram.APIBucket, len(nh.Buckets))
	for i, b := range nh.Buckets {
		buckets[i] = histogram.APIBucket(b)
	}
	return histogram.FromNative(buckets, count, sum)
}

// classicSeries groups `le` series into one classic histogram per minute (and
// per value of groupLabel).
func classicSeries(m *matrixData, groupLabel string) (map[string]Series, error) {
	type cumulative struct{ les, counts []float64 }
	acc := map[string]map[int64]*cumulative{}
	for _, s := range m.Result {
		if len(s.Histograms) > 0 {
			return nil, fmt.Errorf("%w: the _bucket series hold native histograms", ErrNotFound)
		}
		leText, ok := s.Metric["le"]
		if !ok {
			return nil, fmt.Errorf("%w: a _bucket series has no le label", ErrNotFound)
		}
		le, err := parseFloat(leText)
		if err != nil {
			return nil, fmt.Errorf("%w: le=%q is not a number", ErrNotFound, leText)
		}
		key := s.Metric[groupLabel]
		if acc[key] == nil {
			acc[key] = map[int64]*cumulative{}
		}
		for _, pair := range s.Values {
			ts, v, err := parseSample(pair)
			if err != nil {
				return nil, err
			}
			c := acc[key][ts]
			if c == nil {
				c = &cumulative{}
				acc[key][ts] = c
			}
			c.les = append(c.les, le)
			c.counts = append(c.counts, v)
		}
	}
	out := map[string]Series{}
	for key, minutes := range acc {
		series := Series{}
		for ts, c := range minutes {
			h, err := histogram.FromClassic(c.les, c.counts)
			if err != nil {
				return nil, fmt.Errorf("classic histogram at %d: %w", ts, err)
			}
			series[ts] = h
		}
		out[key] = series
	}
	return out, nil
}

// parseSample reads one [time, "value"] pair of a matrix series.
func parseSample(pair [2]json.RawMessage) (int64, float64, error) {
	ts, err := parseTime(pair[0])
	if err != nil {
		return 0, 0, err
	}
	v, err := parseQuoted(pair[1])
	return ts, v, err
}

// parseTime reads a sample's Unix time, a JSON number such as 1780315200.
func parseTime(raw json.RawMessage) (int64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: sample time %s is not a number", ErrNotProm, raw)
	}
	return int64(math.Round(f)), nil
}

// parseQuoted reads a sample value, a JSON string such as "12.5" or "+Inf".
func parseQuoted(raw json.RawMessage) (float64, error) {
	text := strings.TrimSpace(string(raw))
	if len(text) < 2 || text[0] != '"' || text[len(text)-1] != '"' {
		return 0, fmt.Errorf("%w: sample value %s is not a quoted number", ErrNotProm, raw)
	}
	return parseFloat(text[1 : len(text)-1])
}

// parseFloat reads the API's number strings, including "NaN", "+Inf", "-Inf".
func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrNotProm, s)
	}
	return v, nil
}
