package prom

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// ErrRecordAmbiguous means more than one recorded series answers for a
// fleet (two groups recording the same fleet under different labels, for
// example): the reader cannot tell which is the fleet's and the caller reads
// raw series instead.
var ErrRecordAmbiguous = errors.New("more than one recorded series matches the fleet")

// RecordedHistograms reads a fleet's recorded minute histograms (see
// MinuteHistogramRecord) for the minutes of r. Only minutes the record
// holds are in the Series; the others (before the rules started, the
// newest minute not yet evaluated, a gap, a minute without data) are the
// caller's to read from raw series. kind must be Native or Classic. It
// reads raw samples: one instant query of a range selector, each sample
// stamped in [M, M+60s) being minute M.
func (c *Client) RecordedHistograms(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (Series, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	part := ""
	if kind == Classic {
		part = "le"
	} else if kind != Native {
		return nil, fmt.Errorf("recorded histograms are native or classic, not %q", kind)
	}
	series, err := c.recordedMatrix(ctx, MinuteHistogramRecord(metric, kind), sel, r, part)
	if err != nil {
		return nil, err
	}
	out := Series{}
	if kind == Native {
		for _, s := range series {
			if len(s.Values) > 0 {
				return nil, fmt.Errorf("%w: the recorded minute series holds float samples, not native histograms", ErrNotFound)
			}
			var prev *histogram.Histogram
			for _, hs := range s.Histograms {
				if m, ok := recordedMinute(hs.T, r); ok {
					h, err := histogram.FromNativeAfter(prev, hs.Buckets, hs.Count, hs.Sum)
					if err != nil {
						return nil, err
					}
					out[m], prev = h, h
				}
			}
		}
		return out, nil
	}
	m := &matrixData{ResultType: "matrix"}
	for _, s := range series {
		if len(s.Histograms) > 0 {
			return nil, fmt.Errorf("%w: the recorded _bucket series hold native histograms", ErrNotFound)
		}
		ms := matrixSeries{Metric: map[string]string{"le": s.Metric["le"]}}
		ms.Values = byMinute(s.Values, r)
		m.Result = append(m.Result, ms)
	}
	byGroup, err := classicSeries(m, "")
	if err != nil {
		return nil, err
	}
	if s := byGroup[""]; s != nil {
		return s, nil
	}
	return out, nil
}

// RecordedHealth reads a fleet's recorded minute health (see
// MinuteHealthRecord) for the minutes of r; like RecordedHistograms, only
// the minutes the record holds are returned.
func (c *Client) RecordedHealth(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (map[int64]Health, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	series, err := c.recordedMatrix(ctx, MinuteHealthRecord(metric, kind), sel, r, healthLabel)
	if err != nil {
		return nil, err
	}
	m := &matrixData{ResultType: "matrix"}
	for _, s := range series {
		ms := matrixSeries{Metric: map[string]string{healthLabel: s.Metric[healthLabel]}}
		ms.Values = byMinute(s.Values, r)
		m.Result = append(m.Result, ms)
	}
	return healthByMinute(m)
}

// byMinute keeps the last sample of each of r's minutes, stamped with
// the minute (a group evaluated twice in a minute records it twice).
func byMinute(values []floatSample, r Range) []floatSample {
	var out []floatSample
	for _, fs := range values {
		t, ok := recordedMinute(fs.T, r)
		if !ok {
			continue
		}
		if n := len(out); n > 0 && out[n-1].T == float64(t) {
			out[n-1].V = fs.V
			continue
		}
		out = append(out, floatSample{T: float64(t), V: fs.V})
	}
	return out
}

// recordedMinute is the minute a recorded sample stamped t belongs to
// (t truncated to the minute), if it is one of r's.
func recordedMinute(t float64, r Range) (int64, bool) {
	m := int64(math.Floor(t/60)) * 60
	return m, m >= r.Start.Unix() && m <= r.End.Unix()
}

// recordedMatrix returns the samples of the one group of recorded series
// name that is the fleet sel's, made at r's scrape interval: a per-canary
// group's, labelled with the selector (RecordedSelector), or else a
// label-driven group's series that is the fleet (labelDriven). part is the
// label that tells a group's series apart (le, pairwise_health), "" when a
// group is one series. Several groups are ErrRecordAmbiguous; none is an
// empty answer.
func (c *Client) recordedMatrix(ctx context.Context, name string, sel selector.Selector, r Range, part string) ([]matrixSeries, error) {
	if r.Start.Unix()%60 != 0 || r.End.Unix()%60 != 0 || r.End.Before(r.Start) {
		return nil, fmt.Errorf("recorded minutes are read over whole minutes, not %s..%s", r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339))
	}
	// Only a record made at the reader's scrape interval is its minutes.
	scrape := selector.Matcher{Name: RecordedScrapeLabel, Op: selector.Equal, Value: RecordedScrape(r.Scrape)}
	series, err := c.rangeSelector(ctx, append(RecordedSelector(sel), scrape).With(name), r)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		// A label-driven group's record: its series lack the labels of the
		// group's other matchers, so each equality matcher also accepts
		// the label's absence here, and labelDriven checks the rest.
		lookup := selector.Selector{{Name: RecordedSelectorLabel, Op: selector.Equal, Value: ""}, scrape} // not a per-canary group's
		for _, m := range sel {
			if m.Op == selector.Equal && m.Value != "" {
				lookup = append(lookup, selector.Matcher{Name: m.Name, Op: selector.Regex, Value: regexp.QuoteMeta(m.Value) + "|"})
			}
		}
		if len(lookup) > 2 {
			all, err := c.rangeSelector(ctx, lookup.With(name), r)
			if err != nil {
				return nil, err
			}
			var parts []string
			for _, s := range all {
				switch labelDriven(s.Metric, part, sel) {
				case recFleet:
					series = append(series, s)
				case recFleetPart:
					parts = append(parts, labelKey(identity(s.Metric, part)))
				}
			}
			if len(parts) > 0 {
				slices.Sort(parts)
				return nil, fmt.Errorf("%w: %s for %s: the raw series it selects are recorded as several series, %s; name every label the group records by in the selector",
					ErrRecordAmbiguous, name, sel, strings.Join(slices.Compact(parts), ", "))
			}
		}
	}
	groups := map[string]bool{}
	for _, s := range series {
		groups[labelKey(identity(s.Metric, part))] = true
	}
	if len(groups) > 1 {
		keys := slices.Sorted(maps.Keys(groups))
		return nil, fmt.Errorf("%w: %s for %s: %s", ErrRecordAmbiguous, name, sel, strings.Join(keys, ", "))
	}
	parts := map[string]bool{}
	for _, s := range series {
		if parts[s.Metric[part]] {
			return nil, fmt.Errorf("%w: %s for %s has two series with %s=%q", ErrRecordAmbiguous, name, sel, part, s.Metric[part])
		}
		parts[s.Metric[part]] = true
	}
	return series, nil
}

// How a label-driven group's recorded series stands to a fleet's selector.
const (
	recNotFleet  = iota
	recFleet     // the series is the fleet
	recFleetPart // the series is part of the fleet: sel leaves one of its labels free
)

// labelDriven says how a label-driven group's recorded series (its labels)
// stands to the fleet sel. It is the fleet when sel fixes every label of
// the series with an equality matcher (those are the group's identifying
// and fleet labels) and sel's other matchers are exactly the group's own
// others (RecordedMatchersLabel): a selector without them would read raw
// series the group never recorded; one with more, fewer. It is part of the
// fleet when the same holds except that sel leaves some of the series'
// labels free: the group records the raw series sel selects as several
// series (a group by namespace and service, read by a selector without
// the namespace), so no one of them is the fleet.
func labelDriven(labels map[string]string, part string, sel selector.Selector) int {
	rec := identity(labels, part)
	others := rec[RecordedMatchersLabel]
	delete(rec, RecordedMatchersLabel)
	delete(rec, RecordedScrapeLabel) // the look-up's own
	fixed := map[string]bool{}
	var rest selector.Selector
	for _, m := range sel {
		v, ok := rec[m.Name]
		switch {
		case !ok:
			rest = append(rest, m)
		case m.Op != selector.Equal || m.Value != v:
			return recNotFleet
		default:
			fixed[m.Name] = true
		}
	}
	switch {
	case RecordedMatchers(rest) != others:
		return recNotFleet
	case len(fixed) == len(rec):
		return recFleet
	}
	return recFleetPart
}

// identity is a recorded series' labels without its name and part label.
func identity(labels map[string]string, part string) map[string]string {
	out := maps.Clone(labels)
	delete(out, "__name__")
	if part != "" {
		delete(out, part)
	}
	return out
}

func labelKey(labels map[string]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// rangeSelector reads every raw sample of the series sel selects whose
// minute is one of r's: an instant query of sel[range] at End+59.999s.
func (c *Client) rangeSelector(ctx context.Context, sel string, r Range) ([]matrixSeries, error) {
	span := r.End.Sub(r.Start) + time.Minute
	query := sel + "[" + strconv.FormatInt(int64(span/time.Second), 10) + "s]"
	at := r.End.Add(time.Minute - time.Millisecond)
	form := url.Values{
		"query": {query},
		"time":  {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)},
	}
	c.setTimeout(form)
	var data matrixData
	if err := c.post(ctx, "/api/v1/query", form, &data); err != nil {
		return nil, fmt.Errorf("%w (query %s)", err, query)
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("%w: a range selector returned %q, not a matrix", ErrNotProm, data.ResultType)
	}
	return data.Result, nil
}

// SampledSpan is the part of r whose minutes may hold a raw sample of the
// series a fleet's minutes read (its histogram series, counted as
// HealthCountsQuery counts them, and its targets' up), each minute M being
// (M-60s, M]. Time is cut into equal parts (spanPart), each ending at a
// multiple of its length, so that a query frontend that aligns a range
// query's start and end with its step (Thanos's does by default) changes
// nothing; the span runs from the first minute of the first part that
// holds a sample to the last minute of the last, within r, and is false
// when none does. A part at r's ends may reach beyond it and count samples
// there: the span is then wider than it need be, never narrower. It costs
// one range query of at most SpanParts+2 steps, whatever r's length, so
// that a run of minutes the record lacks is read raw only where there is
// something to read (not the day before a fleet's first scrape, for
// example) at the cost of one round trip and one pass over its samples.
// kind must be Native or Classic.
func (c *Client) SampledSpan(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (Range, bool, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return r, false, err
	}
	part := spanPart(r)
	span := "[" + strconv.FormatInt(part, 10) + "s]"
	query := "count(count_over_time(" + countedSeries(metric, sel, kind) + span + ")) or count(count_over_time(" + sel.With("up") + span + "))"
	// Each part (T-part, T] is evaluated at its end T: from the first that
	// reaches into r's first minute to the first that holds its last.
	ceil := func(t int64) int64 { return (t + part - 1) / part * part }
	first, last := ceil(r.Start.Unix()-59), ceil(r.End.Unix())
	res, err := c.rangeQueryStep(ctx, query, time.Unix(first, 0), time.Unix(last, 0), time.Duration(part)*time.Second)
	if err != nil {
		return r, false, err
	}
	var ends []int64
	for _, s := range res.Result {
		for _, fs := range s.Values {
			ends = append(ends, unixSeconds(fs.T))
		}
	}
	if len(ends) == 0 {
		return r, false, nil
	}
	// The minutes the first part and the last reach into.
	lo, hi := slices.Min(ends)-part, slices.Max(ends)
	out := Range{Start: time.Unix(lo/60*60+60, 0).UTC(), End: time.Unix((hi+59)/60*60, 0).UTC(), Scrape: r.Scrape}
	if out.Start.Before(r.Start) {
		out.Start = r.Start
	}
	if out.End.After(r.End) {
		out.End = r.End
	}
	// The first part reaches into r's first minute and the last part ends
	// at or after it, so the clipped span is never empty.
	return out, true, nil
}

// spanPart is SampledSpan's part length in seconds: r's length over
// SpanParts in whole minutes at least, and if possible one that r.End is
// a multiple of (up to twice as long), so that the last part ends with r
// and counts no sample after it: the minutes after a run the record lacks
// are usually recorded minutes, whose raw samples are there.
func spanPart(r Range) int64 {
	least := int64((r.Minutes()+SpanParts-1)/SpanParts) * 60
	for s := least; s <= 2*least; s++ {
		if r.End.Unix()%s == 0 {
			return s
		}
	}
	return least
}

// SpanParts is about how many parts SampledSpan cuts a range into.
const SpanParts = 64

// SharedSeriesQuery counts the series of metric that both selectors
// select (within Prometheus's lookback): native histograms (read through
// histogram_count, which Prometheus decodes without their buckets), and
// classic buckets by their +Inf bucket; nothing when there are none. A
// histogram exposed in both forms (client libraries do during a move to
// native histograms, and Prometheus stores both with
// always_scrape_classic_histograms) counts once: its +Inf bucket is left
// out where a native series has the same labels but le (or ignoring(le);
// or ignores __name__ already). A series is in both fleets when it matches
// every matcher of both selectors, so one selector of them all finds it,
// and reads no series that is in one fleet only. Fleets must not share
// one: a pod in both fleets puts the same requests on both sides of the
// comparison. metric must be valid (selector.ValidMetricName).
func SharedSeriesQuery(metric string, a, b selector.Selector) string {
	both := slices.Clone(a)
	for _, m := range b {
		if !slices.Contains(both, m) {
			both = append(both, m)
		}
	}
	return "count(histogram_count(" + countedSeries(metric, both, Native) + ") or ignoring(le) " + countedSeries(metric, both, Classic) + ")"
}

// SharedSeries is SharedSeriesQuery's count at each whole minute of r
// (the minute's end, Unix seconds), in one range query: the minutes
// without a shared series are absent.
func (c *Client) SharedSeries(ctx context.Context, metric string, a, b selector.Selector, r Range) (map[int64]int, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	query := SharedSeriesQuery(metric, a, b)
	res, err := c.rangeQuery(ctx, query, r)
	if err != nil {
		return nil, err
	}
	if len(res.Result) > 1 {
		return nil, fmt.Errorf("%w: a count returned %d series, not one (query %s)", ErrNotProm, len(res.Result), query)
	}
	out := map[int64]int{}
	for _, s := range res.Result {
		for _, v := range s.Values {
			if v.V > 0 {
				out[unixSeconds(v.T)] = int(v.V)
			}
		}
	}
	return out, nil
}
