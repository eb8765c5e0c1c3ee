package prom

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// TestReportingIsEverySeries holds HealthFromSamples to the engine's reading
// of the same minute: the rule pack records a fleet's samples and series
// packed in one number (SamplesQuery) and takes its reporting series to be
// every series with a sample, which is the engine's count only while
// ReportingSamples is 1. For fleets of a few series and of many, with 1 to
// 60 samples each, the figures unpacked as the pack unpacks them equal
// those the engine reads off HealthCountsQuery's count_values answer.
func TestReportingIsEverySeries(t *testing.T) {
	unit, err := strconv.ParseFloat(seriesUnit, 64)
	if err != nil || unit != math.Exp2(32) {
		t.Fatalf("seriesUnit %s, want 2^32", seriesUnit)
	}
	for _, tc := range []struct {
		name string
		// samples[n] series had n samples in the minute
		samples map[int]float64
	}{
		{"one series, one sample", map[int]float64{1: 1}},
		{"ten pods, a missed scrape", map[int]float64{4: 9, 3: 1}},
		{"a pod that started in the minute", map[int]float64{5: 19, 1: 1}},
		{"two million series scraped every second", map[int]float64{60: 2_000_000, 59: 97_151}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The engine's read: one count_values series per number of samples.
			answer := &matrixData{}
			packed := 0.0
			for n, series := range tc.samples {
				answer.Result = append(answer.Result, matrixSeries{
					Metric: map[string]string{samplesLabel: strconv.Itoa(n)},
					Values: []floatSample{{T: 60, V: series}},
				})
				// The pack's read: each series adds n and 2^32 (in order, as sum() does).
				for range int(series) {
					packed += float64(n) + unit
				}
			}
			engine, err := healthByMinute(answer)
			if err != nil {
				t.Fatal(err)
			}
			// The pack's figures, as HealthFromSamples computes them.
			series := math.Floor(packed / unit)
			pack := &matrixData{Result: []matrixSeries{
				{Metric: map[string]string{HealthLabel: HealthSamples}, Values: []floatSample{{T: 60, V: math.Mod(packed, unit)}}},
				{Metric: map[string]string{HealthLabel: HealthSeries}, Values: []floatSample{{T: 60, V: series}}},
				{Metric: map[string]string{HealthLabel: HealthReporting}, Values: []floatSample{{T: 60, V: series}}},
			}}
			recorded, err := healthByMinute(pack)
			if err != nil {
				t.Fatal(err)
			}
			if engine[60] != recorded[60] {
				t.Errorf("the engine reads %+v, the pack records %+v", engine[60], recorded[60])
			}
		})
	}
}

// twoPodsTwentyMinutes serves generated fleets of two pods each over the 20
// minutes before end, from 11:40:00, in a real Prometheus.
func twoPodsTwentyMinutes(t *testing.T) (end time.Time, srv *testenv.PromServer) {
	t.Helper()
	end = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	dir, _ := testenv.Generate(t, "--end", end.Format(time.RFC3339), "--minutes", "20", "--pods", "2", "--seed", "5")
	return end, testenv.Prometheus(t, testenv.PromOptions{DataDir: dir})
}

// TestSharedSeriesMinutes: in a real Prometheus, the series both
// selectors select are counted at each whole minute, native histograms and
// classic buckets: a baseline pod that the canary's selector also takes is
// counted at every minute of the data and none before it; fleets that
// share no series give no minute.
func TestSharedSeriesMinutes(t *testing.T) {
	end, srv := twoPodsTwentyMinutes(t)
	c, err := New(srv.URL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const metric = "http_request_duration_seconds"
	base, canary := testenv.GeneratedFleets(t)
	byPod, err := selector.Parse(`{service="checkout",pod=~"checkout-canary-.+|checkout-baseline-0"}`)
	if err != nil {
		t.Fatal(err)
	}
	r := Range{Start: end.Add(-40 * time.Minute), End: end}
	shared, err := c.SharedSeries(context.Background(), metric, base, byPod, r)
	if err != nil {
		t.Fatal(err)
	}
	// One pod, whose histogram is written in both forms (a native
	// histogram and classic buckets): one series.
	const want = 1
	for m := r.Start; !m.After(r.End); m = m.Add(time.Minute) {
		inData := !m.Before(end.Add(-20 * time.Minute)) // its first samples are at 11:40:00
		if n, ok := shared[m.Unix()]; ok != inData || (inData && n != want) {
			t.Errorf("%s: %d shared (listed %v), want %d in the data's minutes only", m.Format(time.TimeOnly), n, ok, want)
		}
	}
	apart, err := c.SharedSeries(context.Background(), metric, base, canary, r)
	if err != nil || len(apart) != 0 {
		t.Fatalf("fleets apart: %v, %v", apart, err)
	}
}

// TestSharedSeriesCountsEachHistogramOnce: in a real Prometheus scraping
// pods whose histogram is native only, classic only, or in both forms (as
// client libraries expose it during a move to native histograms, stored
// with always_scrape_classic_histograms), SharedSeriesQuery counts one
// series per pod's histogram: a pod in both forms is not counted twice,
// and two pods are two.
func TestSharedSeriesCountsEachHistogramOnce(t *testing.T) {
	const metric = "http_request_duration_seconds"
	// Each target exposes two pods' histograms, of one form.
	forms := map[string]prometheus.HistogramOpts{
		"native":  {NativeHistogramBucketFactor: 1.1},
		"classic": {Buckets: []float64{0.1, 1}},
		"both":    {Buckets: []float64{0.1, 1}, NativeHistogramBucketFactor: 1.1},
	}
	var jobs strings.Builder
	for _, form := range slices.Sorted(maps.Keys(forms)) {
		opts := forms[form]
		opts.Name, opts.Help = metric, "request latency"
		opts.ConstLabels = prometheus.Labels{"service": "checkout"}
		reg := prometheus.NewRegistry()
		h := prometheus.NewHistogramVec(opts, []string{"pod"})
		reg.MustRegister(h)
		for i := range 2 {
			h.WithLabelValues(fmt.Sprintf("%s-%d", form, i)).Observe(0.05)
		}
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		fmt.Fprintf(&jobs, "  - job_name: %s\n    scrape_native_histograms: %v\n    always_scrape_classic_histograms: %v\n    static_configs:\n      - targets: [%q]\n",
			form, opts.NativeHistogramBucketFactor > 1, len(opts.Buckets) > 0, strings.TrimPrefix(srv.URL, "http://"))
	}
	srv := testenv.Prometheus(t, testenv.PromOptions{Config: "global:\n  scrape_interval: 1s\nscrape_configs:\n" + jobs.String()})
	// Every target's first scrape is in.
	deadline := time.Now().Add(time.Minute)
	for len(testenv.Query(t, srv.URL, "up == 1", time.Time{})) < len(forms) {
		if time.Now().After(deadline) {
			t.Fatalf("the targets were not scraped within a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The forms stored are those meant: a native series for the native
	// and both pods, a +Inf bucket for the classic and both pods.
	pods := func(query string) []string {
		var out []string
		for _, s := range testenv.Query(t, srv.URL, query, time.Time{}) {
			out = append(out, s.Metric["pod"])
		}
		slices.Sort(out)
		return out
	}
	if got, want := pods("histogram_count("+metric+")"), []string{"both-0", "both-1", "native-0", "native-1"}; !slices.Equal(got, want) {
		t.Fatalf("native histograms of %v, want %v", got, want)
	}
	if got, want := pods(metric+`_bucket{le="+Inf"}`), []string{"both-0", "both-1", "classic-0", "classic-1"}; !slices.Equal(got, want) {
		t.Fatalf("classic +Inf buckets of %v, want %v", got, want)
	}
	base, err := selector.Parse(`{service="checkout"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, canary string
		want         int // 0: no series
	}{
		{"native only", `{pod=~"native-.+"}`, 2},
		{"classic only", `{pod=~"classic-.+"}`, 2},
		{"both forms", `{pod=~"both-.+"}`, 2},
		{"one pod in both forms", `{pod="both-0"}`, 1},
		{"every form", `{pod=~".+"}`, 6},
		{"none", `{pod="other"}`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			canary, err := selector.Parse(tt.canary)
			if err != nil {
				t.Fatal(err)
			}
			query := SharedSeriesQuery(metric, base, canary)
			res := testenv.Query(t, srv.URL, query, time.Time{})
			got := 0
			if len(res) > 1 {
				t.Fatalf("%s: %d series, not one count", query, len(res))
			}
			if len(res) == 1 {
				v, err := res[0].Float()
				if err != nil {
					t.Fatal(err)
				}
				got = int(v)
			}
			if got != tt.want {
				t.Errorf("%s counts %d, want %d", query, got, tt.want)
			}
		})
	}
}

// TestFleetHealthAroundAScrapeGap: in a real Prometheus, the health of a
// canary of two pods scraped every 15 s, one of whose scrapes fail from
// 11:50:00 to 11:52:00 (up == 0, no samples), read by minute end M. A
// minute's samples are those in (M-1m, M]: 4 a series, not the 5 of the
// minute and one interval that increase() reads. Its down figure is read
// over that minute and one interval: in the minute after the gap every
// series has its 4 samples, but the sample that minute's increase() starts
// from failed, so the pod still counts as down. A minute of one series
// reads 4 samples per series too. Native and classic (+Inf bucket) alike.
func TestFleetHealthAroundAScrapeGap(t *testing.T) {
	end := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	dir, _ := testenv.Generate(t, "--end", end.Format(time.RFC3339), "--minutes", "20", "--pods", "2", "--seed", "5",
		"--scrape-gap", "canary-0@10-12")
	srv := testenv.Prometheus(t, testenv.PromOptions{DataDir: dir})
	c, err := New(srv.URL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, canary := testenv.GeneratedFleets(t)
	at := func(hhmm string) time.Time {
		m, err := time.Parse("15:04", hhmm)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 6, 1, m.Hour(), m.Minute(), 0, 0, time.UTC)
	}
	r := Range{Start: at("11:41"), End: end, Scrape: 15 * time.Second}
	for _, kind := range []Kind{Native, Classic} {
		health, err := c.FleetHealth(context.Background(), testenv.GeneratedMetric, canary, kind, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			minute string
			want   Health
		}{
			{"both pods", "11:45", Health{Samples: 8, Series: 2, Reporting: 2}},
			{"the last minute before the gap", "11:50", Health{Samples: 8, Series: 2, Reporting: 2}},
			{"canary-0's scrapes failing", "11:51", Health{Samples: 4, Series: 1, Reporting: 1, Down: 1}},
			{"canary-0's scrapes still failing", "11:52", Health{Samples: 4, Series: 1, Reporting: 1, Down: 1}},
			{"after the gap: every sample, the one before the minute failed", "11:53", Health{Samples: 8, Series: 2, Reporting: 2, Down: 1}},
			{"both pods again", "11:54", Health{Samples: 8, Series: 2, Reporting: 2}},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				got := health[at(tc.minute).Unix()]
				if got != tc.want {
					t.Errorf("%s: %+v, want %+v", tc.minute, got, tc.want)
				}
				if n := got.SamplesPerSeries(); n != 4 {
					t.Errorf("%s: %v samples per series, want 4", tc.minute, n)
				}
			})
		}
	}
}

// TestSampledSpan: on generated fleets in a real Prometheus, the span
// SampledSpan finds holds every minute with a sample and starts at most a
// part (of SpanParts) before the data's first minute; every minute the raw
// histogram query gives lies in it widened by a minute (what the engine
// reads raw for a run the record lacks); a range without data has none;
// native and classic, for ranges of a few parts and of many.
func TestSampledSpan(t *testing.T) {
	end, srv := twoPodsTwentyMinutes(t)
	c, err := New(srv.URL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	aligned, err := New(stepAligning(t, srv.URL), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const metric = "http_request_duration_seconds"
	base, _ := testenv.GeneratedFleets(t)
	dataStart := end.Add(-20 * time.Minute) // the data are (end-20m, end]
	for _, tc := range []struct {
		name string
		r    Range
		part time.Duration // the span's resolution, at most (spanPart)
		none bool
	}{
		{"an hour before the data to ten minutes after it", Range{Start: end.Add(-80 * time.Minute), End: end.Add(10 * time.Minute)}, 2 * 2 * time.Minute, false},
		{"a day ending with the data", Range{Start: end.Add(-1440 * time.Minute), End: end}, 2 * 23 * time.Minute, false},
		{"a day before the data", Range{Start: dataStart.Add(-1470 * time.Minute), End: dataStart.Add(-30 * time.Minute)}, 0, true},
	} {
		for _, kind := range []Kind{Native, Classic} {
			t.Run(tc.name+"/"+string(kind), func(t *testing.T) {
				span, has, err := c.SampledSpan(context.Background(), metric, base, kind, tc.r)
				if err != nil {
					t.Fatal(err)
				}
				// Through a query frontend that aligns range queries with
				// their step, as Thanos's does by default, the same span.
				span2, has2, err := aligned.SampledSpan(context.Background(), metric, base, kind, tc.r)
				if err != nil || has2 != has || !span2.Start.Equal(span.Start) || !span2.End.Equal(span.End) {
					t.Errorf("through a frontend that aligns with the step: %s..%s %v (%v), directly %s..%s %v",
						span2.Start.Format(time.TimeOnly), span2.End.Format(time.TimeOnly), has2, err, span.Start.Format(time.TimeOnly), span.End.Format(time.TimeOnly), has)
				}
				if has == tc.none {
					t.Fatalf("has samples %v, want %v", has, !tc.none)
				}
				if tc.none {
					return
				}
				if span.Start.Before(tc.r.Start) || span.End.After(tc.r.End) || span.Start.After(dataStart) ||
					span.Start.Before(dataStart.Add(-tc.part)) || span.End.Before(minTime(end, tc.r.End)) {
					t.Errorf("span %s..%s, want within the range, from at most %s before the data's first minute (after %s) to its last (%s)",
						span.Start.Format(time.TimeOnly), span.End.Format(time.TimeOnly), tc.part, dataStart.Format(time.TimeOnly), end.Format(time.TimeOnly))
				}
				raw, _, err := c.FleetHistograms(context.Background(), metric, base, kind, tc.r)
				if err != nil {
					t.Fatal(err)
				}
				if len(raw) == 0 {
					t.Fatal("no raw minute")
				}
				for m := range raw {
					if m < span.Start.Unix()-60 || m > span.End.Unix()+60 {
						t.Errorf("the raw query gives minute %s, outside the span widened by a minute", time.Unix(m, 0).UTC().Format(time.TimeOnly))
					}
				}
			})
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// stepAligning is a proxy to the Prometheus at target that moves a range
// query's start and end down to multiples of its step, as Thanos's query
// frontend does by default (--query-range.align-range-with-step).
func stepAligning(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/query_range" {
			if err := r.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			step, err := strconv.ParseInt(r.Form.Get("step"), 10, 64)
			if err != nil || step <= 0 {
				http.Error(w, "step", http.StatusBadRequest)
				return
			}
			for _, k := range []string{"start", "end"} {
				v, err := strconv.ParseInt(r.Form.Get(k), 10, 64)
				if err != nil {
					http.Error(w, k, http.StatusBadRequest)
					return
				}
				r.Form.Set(k, strconv.FormatInt(v/step*step, 10))
			}
			body := r.Form.Encode()
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.URL.RawQuery = ""
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSpanPart: a part is at least a range's length over SpanParts in whole
// minutes, at most twice that, and ends the range when a length in between
// divides its end.
func TestSpanPart(t *testing.T) {
	day := func(end time.Time) Range { return Range{Start: end.Add(-1439 * time.Minute), End: end} }
	for _, tc := range []struct {
		name string
		r    Range
		want int64
	}{
		{"a day ending at midnight: 23 minutes do not divide it, 1,440 s does", day(time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)), 1440},
		{"a day ending at a multiple of 23 minutes", day(time.Unix(1380*1290084, 0)), 1380},
		{"an hour: one minute", Range{Start: time.Unix(6000, 0), End: time.Unix(6000+59*60, 0)}, 60},
		// 65 minute ends: one-minute parts would be 65, more than SpanParts.
		{"65 minutes: two minutes", Range{Start: time.Unix(7200-64*60, 0), End: time.Unix(7200, 0)}, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := spanPart(tc.r)
			least := int64((tc.r.Minutes()+SpanParts-1)/SpanParts) * 60
			if got < least || got > 2*least {
				t.Fatalf("part %d s, want between %d and %d", got, least, 2*least)
			}
			if got != tc.want || tc.r.End.Unix()%got != 0 {
				t.Errorf("part %d s, want %d, which the range's end is a multiple of", got, tc.want)
			}
		})
	}
}

// TestRangeMinutes: a Range's minutes are its minute ends Start, Start+1m,
// ..., End, both ends included.
func TestRangeMinutes(t *testing.T) {
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    Range
		want int
	}{
		{"one minute", Range{Start: start, End: start}, 1},
		{"12:00 to 13:00", Range{Start: start, End: start.Add(time.Hour)}, 61},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Minutes(); got != tc.want {
				t.Errorf("%d minutes, want %d", got, tc.want)
			}
		})
	}
}

// TestLabelDriven: a label-driven group's recorded series is a fleet's
// when the selector fixes every label it records by and names exactly the
// group's own other matchers; when the selector leaves one of its labels
// free, the group holds the fleet as several series, none of which is it.
func TestLabelDriven(t *testing.T) {
	rec := func(labels ...string) map[string]string {
		m := map[string]string{"__name__": "canary_fleet:h:increase_1m", "le": "0.1", RecordedScrapeLabel: "15"}
		for i := 0; i+1 < len(labels); i += 2 {
			m[labels[i]] = labels[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name   string
		labels map[string]string
		sel    string
		want   int
	}{
		{"the fleet", rec("service", "checkout", "track", "canary"), `{service="checkout",track="canary"}`, recFleet},
		{"another service", rec("service", "cart", "track", "canary"), `{service="checkout",track="canary"}`, recNotFleet},
		{"a regex on a recorded label", rec("service", "checkout", "track", "canary"), `{service=~"checkout",track="canary"}`, recNotFleet},
		{"the group's matchers named", rec("service", "checkout", "track", "canary", RecordedMatchersLabel, `{job="checkout"}`), `{job="checkout",service="checkout",track="canary"}`, recFleet},
		{"the group's matchers left out", rec("service", "checkout", "track", "canary", RecordedMatchersLabel, `{job="checkout"}`), `{service="checkout",track="canary"}`, recNotFleet},
		{"a matcher the group does not have", rec("service", "checkout", "track", "canary"), `{service="checkout",track="canary",zone="a"}`, recNotFleet},
		// By namespace and service: the selector without the namespace
		// selects every namespace's series.
		{"the namespace left free", rec("namespace", "shop", "service", "checkout", "track", "canary"), `{service="checkout",track="canary"}`, recFleetPart},
		{"the namespace named", rec("namespace", "shop", "service", "checkout", "track", "canary"), `{namespace="shop",service="checkout",track="canary"}`, recFleet},
		{"a series without the namespace, the selector naming one", rec("service", "checkout", "track", "canary"), `{namespace="shop",service="checkout",track="canary"}`, recNotFleet},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := selector.Parse(tt.sel)
			if err != nil {
				t.Fatal(err)
			}
			if got := labelDriven(tt.labels, "le", sel); got != tt.want {
				t.Errorf("labelDriven = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestByMinute: a recorded sample belongs to the minute it was stamped in,
// truncated; the range's first and last minutes are kept, the minutes
// outside it are not, and a minute recorded twice (a group evaluated
// twice in it) keeps its last sample.
func TestByMinute(t *testing.T) {
	r := Range{Start: time.Unix(600, 0), End: time.Unix(720, 0)}
	got := byMinute([]floatSample{
		{T: 599, V: 1},   // the minute before the range
		{T: 600.5, V: 2}, // the first minute, recorded twice
		{T: 630, V: 3},
		{T: 661, V: 4},
		{T: 725, V: 5}, // the last minute
		{T: 780, V: 6}, // after the range
	}, r)
	want := []floatSample{{T: 600, V: 3}, {T: 660, V: 4}, {T: 720, V: 5}}
	if !slices.Equal(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}
