package prom

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// Recorded minute series: the rule pack reads each fleet's raw series once a
// minute and records the fleet's merged histogram of the last whole minute
// and its health. Everything else in the pack is computed from these, and
// the judge and the data source read them instead of raw pods when they
// exist. This file is the one definition of their names and labels; the
// rule pack (pkg/rulegen) writes them and the readers here read them.
//
// A sample recorded at evaluation time t holds the whole wall-clock minute
// ending at t truncated to the minute: the rule group may evaluate at any
// offset inside the minute, and the sample belongs to the minute its
// timestamp truncates to.
//
// Labels: a per-canary group adds canary="<name>", fleet="baseline" or
// "canary", and RecordedSelectorLabel set to the fleet's selector as
// selector.Selector.String() renders it; a label-driven group keeps its
// identifying labels and the fleet label (for example service="checkout",
// track="canary"), and RecordedMatchersLabel set to the group's other
// matchers when it has some, so a selector made of equality matchers on
// exactly those labels, and of the group's other matchers, finds the
// fleet.

// RecordedSelectorLabel carries a per-canary group's fleet selector.
const RecordedSelectorLabel = "pairwise_selector"

// RecordedScrapeLabel carries the scrape interval a group's raw reads were
// made at (RecordedScrape): a minute is read over a minute and one interval
// and scaled by it (MinuteRange), so a record made at one interval is not
// the minute a reader at another would read.
const RecordedScrapeLabel = "pairwise_scrape"

// RecordedScrape is RecordedScrapeLabel's value for the interval d (0:
// DefaultScrapeInterval), in whole seconds: "15s".
func RecordedScrape(d time.Duration) string {
	if d <= 0 {
		d = DefaultScrapeInterval
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// RecordedMatchersLabel carries a label-driven group's matchers beyond its
// identifying and fleet labels (RecordedMatchers of them; absent when it
// has none): its records hold only the series those matchers select.
const RecordedMatchersLabel = "pairwise_matchers"

// RecordedMatchers renders matchers in one order whatever theirs, so that
// a group's recorded RecordedMatchersLabel and a reader's selector compare
// as text; "" when there are none.
func RecordedMatchers(ms selector.Selector) string {
	if len(ms) == 0 {
		return ""
	}
	sorted := slices.Clone(ms)
	slices.SortFunc(sorted, func(a, b selector.Matcher) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(string(a.Op), string(b.Op)), cmp.Compare(a.Value, b.Value))
	})
	return sorted.String()
}

// RecordMetric is metric as it stands in the names of the series Pairwise
// records: as it is in the classic syntax; a UTF-8 name
// (selector.ValidMetricName) escaped as Prometheus's value encoding escapes
// it, "U__" then each '_' doubled and each other character outside the
// classic syntax as '_', its code point in hexadecimal, '_'
// (http.server.request.duration: U__http_2e_server_2e_request_2e_duration).
// Recorded series then keep classic names, which every ruler, query and
// dashboard reads without quoting, and two metrics never share a record's
// name, so a reader never takes another metric's records for its own: a
// classic name that starts as escaped ones do, "U__", is escaped too.
func RecordMetric(metric string) string {
	if selector.ClassicMetricName(metric) && !strings.HasPrefix(metric, "U__") {
		return metric
	}
	var b strings.Builder
	b.WriteString("U__")
	for _, r := range metric {
		switch {
		case r == '_':
			b.WriteString("__")
		case r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "_%x_", r)
		}
	}
	return b.String()
}

// MinuteHistogramRecord names the recorded merged histogram of a fleet's
// minute: the result of NativeQuery (a native histogram sample) or of
// ClassicQuery (one float series per le).
func MinuteHistogramRecord(metric string, kind Kind) string {
	if kind == Classic {
		return "canary_fleet:" + RecordMetric(metric) + "_bucket:increase_1m"
	}
	return "canary_fleet:" + RecordMetric(metric) + ":increase_1m"
}

// MinuteHealthRecord names the recorded Health of a fleet's minute,
// one series per figure told apart by the label pairwise_health, as
// HealthFromSamples computes them.
func MinuteHealthRecord(metric string, kind Kind) string {
	if kind == Classic {
		return "canary_fleet:" + RecordMetric(metric) + "_bucket:health_1m"
	}
	return "canary_fleet:" + RecordMetric(metric) + ":health_1m"
}

// MinuteSamplesRecord names the recorded samples and series of a fleet's
// minute, packed into one number (SamplesQuery), from which the rule pack
// computes MinuteHealthRecord's figures (HealthFromSamples): the raw series
// are read once for them, and a fleet's figures are one series, not one per
// series read.
func MinuteSamplesRecord(metric string, kind Kind) string {
	if kind == Classic {
		return "canary_fleet:" + RecordMetric(metric) + "_bucket:samples_1m"
	}
	return "canary_fleet:" + RecordMetric(metric) + ":samples_1m"
}

// seriesUnit packs a fleet's series above its samples in one number
// (SamplesQuery): samples + 2^32 x series. A float64 holds every integer up
// to 2^53 exactly, so both figures are exact while a fleet has fewer than
// 2^32 samples and 2^21 (two million) series in a minute.
const seriesUnit = "4294967296"

// SamplesQuery is a fleet's samples and series in the minute, kept apart by
// the labels by, packed into one number: each series with a sample adds its
// number of samples and 2^32. One read of the series HealthCountsQuery
// counts (native histograms as they are, classic ones by their +Inf bucket)
// gives both figures; HealthFromSamples unpacks them.
func SamplesQuery(metric string, sel selector.Selector, kind Kind, by []string) string {
	return "sum" + grouping(by) + "(count_over_time(" + countedSeries(metric, sel, kind) + "[1m]) + " + seriesUnit + ")"
}

// HealthFromSamples is Health's figures (those HealthCountsQuery reads),
// kept apart by the labels by, computed from samples, an expression of the
// fleet's packed samples and series of the minute (SamplesQuery, as
// recorded), and the down figure from the fleet's up series of the last
// complete minute (DownQuery, at the fleet's scrape interval). Reporting is the series: every series with a sample in
// the minute reports, as ReportingSamples is 1 (TestReportingIsEverySeries).
func HealthFromSamples(samples string, sel selector.Selector, by []string, scrape time.Duration) string {
	g := grouping(by)
	figure := func(name, expr string) string {
		return `label_replace(` + expr + `, "` + HealthLabel + `", "` + name + `", "", "")`
	}
	packed := "sum" + g + "(" + samples + ")"
	series := "floor(" + packed + " / " + seriesUnit + ")"
	return figure(HealthSamples, packed+" % "+seriesUnit) +
		" or " + figure(HealthSeries, series) +
		" or " + figure(HealthReporting, series) +
		" or last_over_time((" + figure(HealthDown, DownQuery(sel, by, scrape)) + ")[1m:1m])"
}

// RecordedSelector is the selector a reader uses for a per-canary group's
// recorded series of the fleet sel.
func RecordedSelector(sel selector.Selector) selector.Selector {
	return selector.Selector{{Name: RecordedSelectorLabel, Op: selector.Equal, Value: sel.String()}}
}

// HealthLabel and the Health* values name the figures of
// MinuteHealthRecord's series, as HealthFromSamples writes them.
const (
	HealthLabel     = "pairwise_health"
	HealthSamples   = "samples"
	HealthSeries    = "series"
	HealthReporting = "reporting"
	HealthDown      = "down"
)

// GroupedHistogramQuery is NativeQuery or ClassicQuery kept apart by the
// labels by: a label-driven group's read of every fleet of every canary at
// once (by holds the identifying labels and the fleet label). The merged
// histograms are NativeQuery's and ClassicQuery's for the selector of one
// fleet; with no labels it is exactly their text.
func GroupedHistogramQuery(metric string, sel selector.Selector, kind Kind, by []string, scrape time.Duration) string {
	if kind == Classic {
		return minuteSum(grouping(append(slices.Clone(by), "le")), sel.With(metric+"_bucket"), scrape)
	}
	return minuteSum(grouping(by), sel.With(metric), scrape)
}

// grouping is an aggregation's " by (a, b) " clause, empty without labels;
// a label name outside the classic syntax is quoted (selector.QuoteLabelName).
func grouping(by []string) string {
	if len(by) == 0 {
		return ""
	}
	return " by (" + LabelList(by) + ") "
}

// LabelList is labels as a by, without or on clause lists them: "a, b", each
// name quoted when outside the classic syntax.
func LabelList(labels []string) string {
	quoted := make([]string, len(labels))
	for i, l := range labels {
		quoted[i] = selector.QuoteLabelName(l)
	}
	return strings.Join(quoted, ", ")
}
