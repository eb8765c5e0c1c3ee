package prom

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// nativeHistogram is a native histogram sample as the HTTP API writes it.
type nativeHistogram struct {
	Count   string               `json:"count"`
	Sum     string               `json:"sum"`
	Buckets [][4]json.RawMessage `json:"buckets"`
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
	buckets := make([]histogram.APIBucket, 0, len(nh.Buckets))
	for _, b := range nh.Buckets {
		var rule int
		if err := json.Unmarshal(b[0], &rule); err != nil {
			return nil, fmt.Errorf("%w: bucket boundary rule: %v", ErrNotProm, err)
		}
		var vals [3]float64
		for i := range vals {
			var s string
			if err := json.Unmarshal(b[i+1], &s); err != nil {
				return nil, fmt.Errorf("%w: bucket field: %v", ErrNotProm, err)
			}
			if vals[i], err = parseFloat(s); err != nil {
				return nil, err
			}
		}
		buckets = append(buckets, histogram.APIBucket{Boundaries: rule, Lower: vals[0], Upper: vals[1], Count: vals[2]})
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
			ts, err := parseTime(pair[0])
			if err != nil {
				return nil, err
			}
			var text string
			if err := json.Unmarshal(pair[1], &text); err != nil {
				return nil, fmt.Errorf("%w: sample value: %v", ErrNotProm, err)
			}
			v, err := parseFloat(text)
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

func parseTime(raw json.RawMessage) (int64, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("%w: sample time: %v", ErrNotProm, err)
	}
	return int64(math.Round(f)), nil
}

// parseFloat reads the API's number strings, including "NaN", "+Inf", "-Inf".
func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrNotProm, s)
	}
	return v, nil
}
