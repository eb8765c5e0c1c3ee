package prom

import (
	"cmp"
	"fmt"
	"slices"
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
			return nil, fmt.Errorf("%w: the metric has float samples, not native histograms: read a classic histogram with the classic kind, by its name without _bucket; a counter or a gauge is not a latency histogram", ErrNotFound)
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
// per value of groupLabel). Each group's series are put in `le` order once
// (the API orders them by label text, where "+Inf" comes first), so every
// minute's buckets arrive at histogram.FromClassic in order.
func classicSeries(m *matrixData, groupLabel string) (map[string]Series, error) {
	type bucketSeries struct {
		le float64
		s  *matrixSeries
	}
	groups := map[string][]bucketSeries{}
	for i := range m.Result {
		s := &m.Result[i]
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
		groups[key] = append(groups[key], bucketSeries{le, s})
	}
	out := make(map[string]Series, len(groups))
	for key, buckets := range groups {
		// NaN bounds sort first and FromClassic refuses them.
		slices.SortStableFunc(buckets, func(a, b bucketSeries) int { return cmp.Compare(a.le, b.le) })
		// Each minute's bounds and counts, in le order: one backing array
		// for the group, each minute a slice of it (a series without a
		// sample at some minute leaves that minute's slice shorter).
		type minute struct{ les, counts []float64 }
		minutes := map[int64]*minute{}
		n := len(buckets)
		var les, counts []float64
		for _, b := range buckets {
			for _, fs := range b.s.Values {
				ts := unixSeconds(fs.T)
				c := minutes[ts]
				if c == nil {
					if len(les)+n > cap(les) {
						les, counts = make([]float64, 0, n*max(len(b.s.Values), 1)), make([]float64, 0, n*max(len(b.s.Values), 1))
					}
					c = &minute{les: les[len(les) : len(les) : len(les)+n], counts: counts[len(counts) : len(counts) : len(counts)+n]}
					les, counts = les[:len(les)+n], counts[:len(counts)+n]
					minutes[ts] = c
				}
				c.les, c.counts = append(c.les, b.le), append(c.counts, fs.V)
			}
		}
		series := make(Series, len(minutes))
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
