package prom

import (
	"fmt"
	"strconv"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

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
		var prev *histogram.Histogram
		for _, hs := range s.Histograms {
			h, err := histogram.FromNativeAfter(prev, hs.Buckets, hs.Count, hs.Sum)
			if err != nil {
				return nil, err
			}
			series[unixSeconds(hs.T)], prev = h, h
		}
	}
	return out, nil
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
		for _, fs := range s.Values {
			ts, v := unixSeconds(fs.T), fs.V
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

// parseFloat reads the API's number strings, including "NaN", "+Inf", "-Inf".
func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrNotProm, s)
	}
	return v, nil
}
