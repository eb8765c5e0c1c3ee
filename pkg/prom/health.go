package prom

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// Health is what Prometheus says of a fleet's members in one minute.
type Health struct {
	// Samples is the number of samples of the fleet's series in the minute,
	// Series the number of series with any, and Reporting the number with
	// at least ReportingSamples (those whose minute is read).
	Samples, Series, Reporting float64
	// Down is the number of the fleet's targets with up == 0 in the minute;
	// 0 also when the fleet's labels are not target labels.
	Down float64
}

// HealthCountsQuery reads a fleet's Health reading its series once:
// count_values tells how many series had each number of samples in the
// minute (label pairwise_samples), from which the samples, the series and
// those with two samples or more follow, and the down figure counts its
// targets with up == 0 (found when the fleet's matchers are target labels;
// DownQuery).
// The rule pack cannot read a number off a label; it records each series'
// samples instead and computes the same figures from them
// (HealthFromSamples).
func HealthCountsQuery(metric string, sel selector.Selector, kind Kind, scrape time.Duration) string {
	counted := "count_over_time(" + countedSeries(metric, sel, kind) + "[1m])"
	return `count_values("` + samplesLabel + `", ` + counted + `)` +
		` or label_replace(` + DownQuery(sel, nil, scrape) + `, "` + healthLabel + `", "down", "", "")`
}

// DownQuery counts the fleet's targets with up == 0 (kept apart by the
// labels by) over the range a minute's increase() reads (MinuteRange), not
// the minute alone: a scrape that failed in the interval before the minute
// took the sample the minute starts from, so the minute is read short
// (at a 60 s scrape, that series adds nothing) though every series has a
// sample in it.
func DownQuery(sel selector.Selector, by []string, scrape time.Duration) string {
	return "count" + grouping(by) + "(min_over_time(" + sel.With("up") + "[" + MinuteRange(scrape) + "]) == 0)"
}

// ReportingSamples is how many samples a series needs in a minute for its
// minute to be read: one, as the minute's increase() also reads the last
// sample before it (MinuteRange).
const ReportingSamples = 1

// samplesLabel carries a number of samples per series in HealthCountsQuery.
const samplesLabel = "pairwise_samples"

// FleetHealth is Health's figures for every minute of r, by minute end
// in Unix seconds, read with HealthCountsQuery; minutes without any sample
// are absent. kind is Native or Classic.
func (c *Client) FleetHealth(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (map[int64]Health, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	res, err := c.rangeQuery(ctx, HealthCountsQuery(metric, sel, kind, r.Scrape), r)
	if err != nil {
		return nil, err
	}
	return healthByMinute(res)
}

// healthLabel tells the figures apart (HealthFromSamples, HealthCountsQuery's down).
const healthLabel = "pairwise_health"

// healthByMinute reads a recorded health's or HealthCountsQuery's answer by
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
				if n >= ReportingSamples {
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
// minute, which tells how much the minute's increase() extrapolates
// (verdict.Config.ScrapeScale); 0 without samples.
func (h Health) SamplesPerSeries() float64 {
	if !(h.Series > 0) {
		return 0
	}
	return h.Samples / h.Series
}

// MedianSamplesPerSeries is SamplesPerSeries in the median minute of health
// with samples, and how many minutes have samples; 0 and 0 without any.
// Series that start, stop or miss a scrape lower only a few minutes.
func MedianSamplesPerSeries(health map[int64]Health) (median float64, minutes int) {
	per := samplesPerSeries(health)
	if len(per) == 0 {
		return 0, 0
	}
	slices.Sort(per)
	return per[len(per)/2], len(per)
}

// samplesPerSeries is SamplesPerSeries of each minute of health with
// samples, in no order.
func samplesPerSeries(health map[int64]Health) []float64 {
	var per []float64
	for _, h := range health {
		if n := h.SamplesPerSeries(); n > 0 {
			per = append(per, n)
		}
	}
	return per
}

// ScrapedEvery is the scrape interval, in whole seconds, that a fleet's
// health shows plainly: a whole number n of samples per series that divides
// a minute, in at least two minutes of three with samples (within
// unevenOff, as UnevenScrapes allows), giving 60/n seconds. 0 when it shows
// none: fewer than scrapedMinutes minutes with samples, an interval that
// does not divide a minute (UnevenScrapes: 45 s gives 1 sample in two
// minutes of three), or scrapes missed so often that the minutes disagree.
func ScrapedEvery(health map[int64]Health) int {
	median, minutes := MedianSamplesPerSeries(health)
	n := math.Round(median)
	if _, uneven := UnevenScrapes(health); uneven || minutes < scrapedMinutes || n < 1 || math.Mod(60, n) != 0 {
		return 0
	}
	agree := 0
	for _, m := range samplesPerSeries(health) {
		if math.Abs(m-n) < unevenOff {
			agree++
		}
	}
	if 3*agree < 2*minutes {
		return 0
	}
	return int(60 / n)
}

// scrapedMinutes is how many minutes with samples ScrapedEvery needs: as
// many as UnevenScrapes needs to tell an interval that does not divide a
// minute (45 s looks like 60 s over a few minutes).
const scrapedMinutes = unevenMinutes

// UnevenScrapes tells whether a fleet's series, over the minutes of health,
// have numbers of samples a minute that no scrape interval dividing a
// minute gives. An interval that divides a minute (10, 15, 20, 30 s) gives
// every series the same number of samples every minute, and
// verdict.Config.ScrapeScale takes increase()'s extrapolation out exactly. One
// that does not (25 s: 2 or 3 samples) covers a different part of each
// minute, which ScrapeScale cannot tell from the counts of one minute: at
// 25 s, 3 minutes in 5 are counted 1.2 times and 2 in 5 0.8 times.
//
// Series that start, stop or miss a scrape only lower a few minutes'
// samples per series. So the fleet is uneven when the median minute's mean
// is at least 0.15 from a whole number (series scraped at different
// offsets, each minute a mix), or when at least a third of the minutes
// have half a sample per series or more fewer than the fullest minute
// (series scraped together, minutes alternating). It takes 5 minutes with
// samples to tell; samplesPerMinute is the mean over the minutes, 60 over
// the interval.
func UnevenScrapes(health map[int64]Health) (samplesPerMinute float64, uneven bool) {
	per := samplesPerSeries(health)
	mean := 0.0
	for _, n := range per {
		mean += n
	}
	if len(per) < unevenMinutes {
		return 0, false
	}
	slices.Sort(per)
	median, fullest := per[len(per)/2], per[len(per)-1]
	low := 0
	for _, n := range per {
		if n <= fullest-0.5 {
			low++
		}
	}
	return mean / float64(len(per)), math.Abs(median-math.Round(median)) >= unevenOff || 3*low >= len(per)
}

// unevenMinutes and unevenOff are UnevenScrapes' thresholds.
const (
	unevenMinutes = 5
	unevenOff     = 0.15
)
