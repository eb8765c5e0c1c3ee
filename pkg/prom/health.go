package prom

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// Health is what Prometheus says of a fleet's members in one minute.
type Health struct {
	// Samples is the number of samples of the fleet's series in the minute,
	// Series the number of series with any, and Reporting the number with
	// at least two (those a one-minute increase() reads).
	Samples, Series, Reporting float64
	// Down is the number of the fleet's targets with up == 0 in the minute;
	// 0 also when the fleet's labels are not target labels.
	Down float64
}

// HealthQuery reads a fleet's Health in one range query: one series per
// figure, told apart by the label pairwise_health. Native histograms are
// counted as they are, classic ones by their +Inf bucket; `up` is selected
// with the fleet's own matchers, which works when they are target labels
// (service, track, pod template labels) and finds nothing otherwise.
func HealthQuery(metric string, sel selector.Selector, kind Kind) string {
	series := countedSeries(metric, sel, kind)
	counted := "count_over_time(" + series + "[1m])"
	figure := func(name, expr string) string {
		return `label_replace(` + expr + `, "` + healthLabel + `", "` + name + `", "", "")`
	}
	return figure("samples", "sum("+counted+")") +
		" or " + figure("series", "count("+counted+")") +
		" or " + figure("reporting", "count("+counted+" >= 2)") +
		" or " + figure("down", "count(min_over_time("+sel.With("up")+"[1m]) == 0)")
}

// HealthCountsQuery reads the figures of HealthQuery reading the fleet's
// series once instead of three times: count_values tells how many series
// had each number of samples in the minute (label pairwise_samples), from
// which the samples, the series and those with two samples or more follow.
// The rule pack cannot use it (PromQL cannot read a number off a label), so
// it records HealthQuery's figures; the engine reads this, which costs a
// third of the raw reads on large fleets.
func HealthCountsQuery(metric string, sel selector.Selector, kind Kind) string {
	counted := "count_over_time(" + countedSeries(metric, sel, kind) + "[1m])"
	return `count_values("` + samplesLabel + `", ` + counted + `)` +
		` or label_replace(count(min_over_time(` + sel.With("up") + `[1m]) == 0), "` + healthLabel + `", "down", "", "")`
}

// samplesLabel carries a number of samples per series in HealthCountsQuery.
const samplesLabel = "pairwise_samples"

// FleetHealth is HealthQuery's figures for every minute of r, by minute end
// in Unix seconds, read with HealthCountsQuery; minutes without any sample
// are absent. kind is Native or Classic.
func (c *Client) FleetHealth(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (map[int64]Health, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	res, err := c.rangeQuery(ctx, HealthCountsQuery(metric, sel, kind), r)
	if err != nil {
		return nil, err
	}
	return healthByMinute(res)
}

// healthLabel tells HealthQuery's figures apart.
const healthLabel = "pairwise_health"

// healthByMinute reads HealthQuery's or HealthCountsQuery's answer by
// minute end.
func healthByMinute(res *matrixData) (map[int64]Health, error) {
	out := map[int64]Health{}
	for _, s := range res.Result {
		samples, counts := s.Metric[samplesLabel]
		n, err := strconv.ParseFloat(samples, 64)
		if counts && (err != nil || !(n >= 1) || math.IsInf(n, 0)) {
			return nil, fmt.Errorf("%w: the fleet health query returned %s=%q, not a number of samples", ErrNotProm, samplesLabel, samples)
		}
		for _, fs := range s.Values {
			ts, v := unixSeconds(fs.T), fs.V
			h := out[ts]
			if counts {
				// v series had n samples each in the minute.
				h.Samples += n * v
				h.Series += v
				if n >= 2 {
					h.Reporting += v
				}
				out[ts] = h
				continue
			}
			switch s.Metric[healthLabel] {
			case "samples":
				h.Samples = v
			case "series":
				h.Series = v
			case "reporting":
				h.Reporting = v
			case "down":
				h.Down = v
			default:
				return nil, fmt.Errorf("%w: the fleet health query returned a series without its figure", ErrNotProm)
			}
			out[ts] = h
		}
	}
	return out, nil
}

// SamplesPerSeries is the mean number of samples each series has in the
// minute, which tells how much a one-minute increase() extrapolates; 0
// without samples.
func (h Health) SamplesPerSeries() float64 {
	if !(h.Series > 0) {
		return 0
	}
	return h.Samples / h.Series
}
