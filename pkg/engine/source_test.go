package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

func TestMissingRuns(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	r := prom.Range{Start: at(0), End: at(9)}
	tests := []struct {
		name    string
		present []int
		want    [][2]int
	}{
		{name: "all recorded", present: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "none recorded", want: [][2]int{{0, 9}}},
		{name: "before the rules, a gap, the newest minute", present: []int{3, 4, 5, 7, 8}, want: [][2]int{{0, 2}, {6, 6}, {9, 9}}},
		{name: "more runs than allowed become one", present: []int{1, 3, 5, 7}, want: [][2]int{{0, 9}}},
		{name: "runs up to the limit stay apart", present: []int{1, 2, 3, 5, 6, 7}, want: [][2]int{{0, 0}, {4, 4}, {8, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			has := map[int64]bool{}
			for _, m := range tt.present {
				has[at(m).Unix()] = true
			}
			got := missingRuns(r, func(ts int64) bool { return has[ts] })
			if len(got) != len(tt.want) {
				t.Fatalf("runs %v, want %v", got, tt.want)
			}
			for i, w := range tt.want {
				if !got[i].Start.Equal(at(w[0])) || !got[i].End.Equal(at(w[1])) {
					t.Errorf("run %d: %s..%s, want minutes %d..%d", i, got[i].Start.Format(time.TimeOnly), got[i].End.Format(time.TimeOnly), w[0], w[1])
				}
			}
		})
	}
}

func TestParseReading(t *testing.T) {
	for in, want := range map[string]Reading{"": ReadRaw, "raw": ReadRaw, "auto": ReadAuto, "recorded": ReadRecorded} {
		if got, err := ParseReading(in); err != nil || got != want {
			t.Errorf("ParseReading(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseReading("cache"); err == nil {
		t.Error("ParseReading(cache) accepted")
	}
}

// TestAutoWithoutRecord: against a backend holding no recorded minute
// series, the automatic reading gives the raw result, and costs one
// instant query per fleet, two when the fleet's selector has an equality
// matcher (the per-canary look-up, then the label-driven one, whose other
// matchers may be of any kind). A backend without the instant query API is read raw with a
// warning. A failed look-up fails the analysis with the error class the raw
// queries meet on the same fault: never a decision made without the data.
func TestAutoWithoutRecord(t *testing.T) {
	w, err := pairing.Ending(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), 30, 0)
	if err != nil {
		t.Fatal(err)
	}
	request := func(base, canary string, read Reading) Request {
		b, err1 := selector.Parse(base)
		c, err2 := selector.Parse(canary)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return Request{Metric: "http_request_duration_seconds", Baseline: b, Canary: c, Kind: prom.Auto, Config: verdict.Default(), Window: w, Read: read}
	}
	count := func(fake *testenv.FakeProm) map[string]int {
		n := map[string]int{}
		for _, r := range fake.Requests() {
			n[r.Path]++
		}
		return n
	}
	analyze := func(t *testing.T, fake *testenv.FakeProm, timeout time.Duration, req Request) (*Result, error) {
		t.Helper()
		client, err := prom.New(fake.URL, timeout)
		if err != nil {
			t.Fatal(err)
		}
		return Analyze(context.Background(), client, req)
	}

	for _, c := range []struct {
		name, base, canary string
		lookups            int
	}{
		{name: "equality selectors", base: `{service="checkout",track="baseline"}`, canary: `{service="checkout",track="canary"}`, lookups: 4},
		{name: "a regular expression", base: `{service=~"checkout",track="baseline"}`, canary: `{service=~"checkout",track="canary"}`, lookups: 4},
		{name: "regular expressions only", base: `{service=~"checkout",track=~"baseline"}`, canary: `{service=~"checkout",track=~"canary"}`, lookups: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
			raw, err := analyze(t, fake, 10*time.Second, request(c.base, c.canary, ReadRaw))
			if err != nil {
				t.Fatal(err)
			}
			rawCount := count(fake)
			if rawCount["/api/v1/query_range"] != 4 || rawCount["/api/v1/query"] != 0 {
				t.Fatalf("raw reading made %v, want 4 range queries (each fleet's histograms and health)", rawCount)
			}
			fake = testenv.FakePrometheus(t, testenv.FakeOptions{})
			auto, err := analyze(t, fake, 10*time.Second, request(c.base, c.canary, ReadAuto))
			if err != nil {
				t.Fatal(err)
			}
			if got := count(fake); got["/api/v1/query_range"] != 4 || got["/api/v1/query"] != c.lookups {
				t.Errorf("automatic reading made %v, want the raw 4 range queries and %d look-ups", got, c.lookups)
			}
			if a, b := fmt.Sprintf("%+v %q", raw.Window, raw.Warnings), fmt.Sprintf("%+v %q", auto.Window, auto.Warnings); a != b {
				t.Errorf("automatic reading differs from the raw one:\nraw  %s\nauto %s", a, b)
			}
			for _, s := range auto.Served {
				if s.Path != "raw" {
					t.Errorf("%s served %+v, want raw", s.What, s)
				}
			}
		})
	}

	t.Run("no instant query API", func(t *testing.T) {
		req := request(`{service="checkout",track="baseline"}`, `{service="checkout",track="canary"}`, ReadAuto)
		raw, err := analyze(t, testenv.FakePrometheus(t, testenv.FakeOptions{}), 10*time.Second, request(`{service="checkout",track="baseline"}`, `{service="checkout",track="canary"}`, ReadRaw))
		if err != nil {
			t.Fatal(err)
		}
		auto, err := analyze(t, testenv.FakePrometheus(t, testenv.FakeOptions{NoInstantQuery: true}), 10*time.Second, req)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := fmt.Sprintf("%+v", raw.Window), fmt.Sprintf("%+v", auto.Window); a != b {
			t.Errorf("automatic reading differs from the raw one:\nraw  %s\nauto %s", a, b)
		}
		if len(auto.Warnings) != len(raw.Warnings)+2 || !strings.Contains(strings.Join(auto.Warnings, "\n"), "could not be looked up") {
			t.Errorf("warnings %q, want the raw ones and one per fleet saying the record could not be looked up", auto.Warnings)
		}
		req.Read = ReadRecorded
		if _, err := analyze(t, testenv.FakePrometheus(t, testenv.FakeOptions{NoInstantQuery: true}), 10*time.Second, req); !errors.Is(err, prom.ErrNotProm) {
			t.Errorf("recorded reading without the instant query API: %v, want the failed look-up", err)
		}
	})

	classes := []error{prom.ErrAuth, prom.ErrTimeout, prom.ErrServer, prom.ErrOverloaded, prom.ErrUnavailable, prom.ErrBadQuery, prom.ErrNotProm} // ErrOverloaded is an ErrUnavailable
	class := func(err error) error {
		for _, c := range classes {
			if errors.Is(err, c) {
				return c
			}
		}
		return err
	}
	for _, f := range []struct {
		name  string
		fault testenv.Fault
		want  error
	}{
		{name: "401", fault: testenv.Fault{Status: 401}, want: prom.ErrAuth},
		{name: "503", fault: testenv.Fault{Status: 503, Body: "<html>Service Unavailable</html>"}, want: prom.ErrServer},
		{name: "500 from Prometheus", fault: testenv.Fault{Status: 500, Body: `{"status":"error","errorType":"internal","error":"boom"}`}, want: prom.ErrServer},
		{name: "502 from a proxy", fault: testenv.Fault{Status: 502}, want: prom.ErrUnavailable},
		{name: "429", fault: testenv.Fault{Status: 429}, want: prom.ErrOverloaded},
		{name: "a hang", fault: testenv.Fault{Hang: true}, want: prom.ErrTimeout},
		{name: "bad query", fault: testenv.Fault{Status: 400, Body: `{"status":"error","errorType":"bad_data","error":"bad"}`}, want: prom.ErrBadQuery},
		{name: "not the API", fault: testenv.Fault{Status: 404}, want: prom.ErrNotProm},
	} {
		t.Run(f.name, func(t *testing.T) {
			// Only the hang needs a short timeout; the other faults answer
			// at once, and a loaded machine must not turn them into timeouts.
			timeout := 10 * time.Second
			if f.fault.Hang {
				timeout = time.Second
			}
			req := request(`{service="checkout",track="baseline"}`, `{service="checkout",track="canary"}`, ReadRaw)
			errs := map[Reading]error{}
			for _, read := range []Reading{ReadRaw, ReadAuto} {
				fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
				fault := f.fault
				fake.FailAlways(&fault)
				req.Read = read
				res, err := analyze(t, fake, timeout, req)
				if err == nil {
					t.Fatalf("%s reading: a result (%s) though every query fails", read, res.Decision)
				}
				errs[read] = err
			}
			if class(errs[ReadRaw]) != f.want || class(errs[ReadAuto]) != f.want {
				t.Errorf("raw reading: %v\nautomatic reading: %v\nwant both %v", errs[ReadRaw], errs[ReadAuto], f.want)
			}
			// Only the look-up fails, the raw queries would answer: a look-up
			// that failed for the server's sake fails the analysis; one the
			// server rejected is read raw.
			fake := testenv.FakePrometheus(t, testenv.FakeOptions{})
			fake.Fail(f.fault)
			req.Read = ReadAuto
			_, err := analyze(t, fake, timeout, req)
			if unsupported := f.want == prom.ErrBadQuery || f.want == prom.ErrNotProm; unsupported != (err == nil) {
				t.Errorf("only the first look-up fails: %v", err)
			} else if err != nil && class(err) != f.want {
				t.Errorf("only the first look-up fails: %v, want %v", err, f.want)
			}
		})
	}
}

// classicSource holds fleets of classic histograms only, and a classic
// record of them, answering as Prometheus would: native queries find
// nothing, and every answer holds only the minutes of the range asked.
type classicSource struct {
	raw, rec map[string]prom.Series // by selector
	mu       sync.Mutex
	queries  []string
}

func within[V any](m map[int64]V, r prom.Range) map[int64]V {
	out := map[int64]V{}
	for t, v := range m {
		if t >= r.Start.Unix() && t <= r.End.Unix() {
			out[t] = v
		}
	}
	return out
}

func (s *classicSource) note(what string, kind prom.Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, what+" "+string(kind))
}

func (s *classicSource) FleetHistograms(_ context.Context, _ string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, prom.Kind, error) {
	s.note("raw", kind)
	if kind == prom.Native {
		return nil, prom.Native, nil
	}
	return within(s.raw[sel.String()], r), prom.Classic, nil
}

func (s *classicSource) FleetHealth(_ context.Context, _ string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[int64]prom.Health, error) {
	s.note("raw health", kind)
	return s.health(s.raw[sel.String()], kind, r), nil
}

func (s *classicSource) health(series prom.Series, kind prom.Kind, r prom.Range) map[int64]prom.Health {
	out := map[int64]prom.Health{}
	if kind != prom.Classic {
		return out
	}
	for t := range within(series, r) {
		out[t] = prom.Health{Samples: 4, Series: 1, Reporting: 1}
	}
	return out
}

func (s *classicSource) RecordedHistograms(_ context.Context, _ string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, error) {
	s.note("record", kind)
	if kind != prom.Classic {
		return prom.Series{}, nil
	}
	return within(s.rec[sel.String()], r), nil
}

func (s *classicSource) RecordedHealth(_ context.Context, _ string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[int64]prom.Health, error) {
	s.note("record health", kind)
	return s.health(s.rec[sel.String()], kind, r), nil
}

func (s *classicSource) SampledSpan(_ context.Context, _ string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Range, bool, error) {
	s.note("sampled span", kind)
	if kind != prom.Classic {
		return r, false, nil
	}
	return spanOf(slices.Sorted(maps.Keys(within(s.raw[sel.String()], r))), r)
}

// spanOf is the span from the first sampled minute to the last, at the
// finest resolution SampledSpan can have.
func spanOf(sampled []int64, r prom.Range) (prom.Range, bool, error) {
	if len(sampled) == 0 {
		return r, false, nil
	}
	return prom.Range{Start: time.Unix(sampled[0], 0), End: time.Unix(sampled[len(sampled)-1], 0), Scrape: r.Scrape}, true, nil
}

// TestAutoKindReadsClassicRecord: with the histogram kind left to the judge
// (auto) and fleets of classic histograms only, the classic record is read
// (the raw path's own native query finding nothing first), the newest
// minute, not recorded yet, raw; the result is the raw one. (Fleets with
// native series and a classic record: TestRecordedEqualsRaw.)
func TestAutoKindReadsClassicRecord(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	src := &classicSource{raw: map[string]prom.Series{base: minutes(t, 20, 10), canary: minutes(t, 20, 40)}, rec: map[string]prom.Series{}}
	for sel, s := range src.raw {
		src.rec[sel] = within(s, prom.Range{Start: end.Add(-19 * time.Minute), End: end.Add(-time.Minute)})
	}
	req := request(t, 0)
	req.Read = ReadRaw
	raw, err := Analyze(context.Background(), src, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, read := range []Reading{ReadAuto, ReadRecorded} {
		src.queries = nil
		req.Read = read
		res, err := Analyze(context.Background(), src, req)
		if err != nil {
			t.Fatalf("%s: %v", read, err)
		}
		if a, b := fmt.Sprintf("%+v %s/%s", raw.Window, raw.BaselineKind, raw.CanaryKind), fmt.Sprintf("%+v %s/%s", res.Window, res.BaselineKind, res.CanaryKind); a != b {
			t.Errorf("%s reading differs from the raw one:\nraw %s\ngot %s", read, a, b)
		}
		for _, s := range res.Served {
			// Health reads a few minutes earlier (before the data: a short
			// run, read raw without asking).
			if s.Path != "recorded" || s.RawMinutes != 1 && !strings.HasSuffix(s.What, "health") || s.RawMinutes == 0 {
				t.Errorf("%s reading: %s served %+v, want recorded but the newest minute", read, s.What, s)
			}
		}
		if n := strings.Count(strings.Join(src.queries, "\n"), "raw native"); n != 2 {
			t.Errorf("%s reading: %d native raw queries, want one per fleet: %q", read, n, src.queries)
		}
	}
	if raw.BaselineKind != prom.Classic || raw.Decision != verdict.Rollback {
		t.Fatalf("the fixture is not the classic rollback it should be: %s, %s", raw.BaselineKind, raw.Decision)
	}
}

// sampledMinutes is a RecordedSource whose raw series have samples in the
// given minutes only (SampledSpan answers with the span from the first to
// the last of those in a range, as the Prometheus reader does at its
// finest), and counts the questions.
type sampledMinutes struct {
	RecordedSource
	minutes   map[int64]bool
	questions int
}

func (s *sampledMinutes) SampledSpan(_ context.Context, _ string, _ selector.Selector, _ prom.Kind, r prom.Range) (prom.Range, bool, error) {
	s.questions++
	var sampled []int64
	for t := r.Start; !t.After(r.End); t = t.Add(time.Minute) {
		if s.minutes[t.Unix()] {
			sampled = append(sampled, t.Unix())
		}
	}
	return spanOf(sampled, r)
}

func TestSampledSpan(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	tests := []struct {
		name     string
		run      [2]int
		sampled  []int
		want     [2]int // the span read
		none     bool   // nothing to read
		maxAsked int
	}{
		{name: "a short run is read without asking", run: [2]int{0, 4}, want: [2]int{0, 4}},
		{name: "no raw samples", run: [2]int{0, 1439}, none: true, maxAsked: 1},
		{name: "samples at the end only: the day before a fleet's first scrape", run: [2]int{0, 1438}, sampled: []int{1437, 1438}, want: [2]int{1436, 1438}, maxAsked: 1},
		{name: "samples at the start only: after a fleet's last scrape", run: [2]int{0, 999}, sampled: []int{0}, want: [2]int{0, 1}, maxAsked: 1},
		{name: "samples near both ends: the minutes between them are read", run: [2]int{0, 599}, sampled: []int{3, 590}, want: [2]int{2, 591}, maxAsked: 1},
		{name: "samples in the second half", run: [2]int{0, 99}, sampled: []int{60, 70, 80, 99}, want: [2]int{59, 99}, maxAsked: 1},
		{name: "one sampled minute in a day", run: [2]int{0, 1439}, sampled: []int{700}, want: [2]int{699, 701}, maxAsked: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &sampledMinutes{minutes: map[int64]bool{}}
			for _, m := range tt.sampled {
				src.minutes[at(m).Unix()] = true
			}
			got, has, err := sampledSpan(context.Background(), src, "m", nil, prom.Native, prom.Range{Start: at(tt.run[0]), End: at(tt.run[1])})
			if err != nil {
				t.Fatal(err)
			}
			if has == tt.none {
				t.Fatalf("has samples %v, want %v", has, !tt.none)
			}
			if has && (!got.Start.Equal(at(tt.want[0])) || !got.End.Equal(at(tt.want[1]))) {
				t.Errorf("reads %s..%s, want minutes %d..%d", got.Start.Format(time.TimeOnly), got.End.Format(time.TimeOnly), tt.want[0], tt.want[1])
			}
			for _, m := range tt.sampled {
				if has && tt.run[0] <= m && m <= tt.run[1] && (at(m).Before(got.Start) || at(m).After(got.End)) {
					t.Errorf("minute %d has samples and is left out of %s..%s", m, got.Start.Format(time.TimeOnly), got.End.Format(time.TimeOnly))
				}
			}
			if src.questions > tt.maxAsked {
				t.Errorf("asked %d times, want at most %d", src.questions, tt.maxAsked)
			}
		})
	}
}

// healthFirst answers a fleet's histograms only once the fleet's health of
// the kind the raw path reads first has been asked for: the health must be
// on its way beside the histograms, not asked for after them.
type healthFirst struct {
	Source
	mu    sync.Mutex
	asked map[string]chan struct{} // by selector and kind
}

func (s *healthFirst) askedFor(sel selector.Selector, kind prom.Kind) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sel.String() + " " + string(kind)
	if s.asked[key] == nil {
		s.asked[key] = make(chan struct{})
	}
	return s.asked[key]
}

func (s *healthFirst) FleetHealth(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[int64]prom.Health, error) {
	ch := s.askedFor(sel, kind)
	s.mu.Lock()
	select {
	case <-ch:
	default:
		close(ch)
	}
	s.mu.Unlock()
	return s.Source.FleetHealth(ctx, metric, sel, kind, r)
}

func (s *healthFirst) FleetHistograms(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, prom.Kind, error) {
	first := kind
	if first == prom.Auto {
		first = prom.Native
	}
	select {
	case <-s.askedFor(sel, first):
	case <-time.After(5 * time.Second):
		return nil, kind, fmt.Errorf("the %s histograms of %s were asked for, and their health was not", first, sel)
	}
	return s.Source.FleetHistograms(ctx, metric, sel, kind, r)
}

// TestHealthReadBesideHistograms: read raw, a fleet's health is asked for
// beside its histograms, of the kind they are read as (native first when
// the kind is left to the judge); a classic fleet's health is then read as
// classic, and every minute carries evidence (its counts scaled by that
// health).
func TestHealthReadBesideHistograms(t *testing.T) {
	base, canary := `{track="baseline"}`, `{track="canary"}`
	for _, tc := range []struct {
		name string
		kind prom.Kind
		src  func() Source
	}{
		{"native, kind given", prom.Native, func() Source {
			return &fleetSource{series: map[string]prom.Series{base: minutes(t, 20, 10), canary: minutes(t, 20, 10)}}
		}},
		{"native, auto kind", prom.Auto, func() Source {
			return &fleetSource{series: map[string]prom.Series{base: minutes(t, 20, 10), canary: minutes(t, 20, 10)}}
		}},
		{"classic, auto kind", prom.Auto, func() Source {
			return &classicSource{raw: map[string]prom.Series{base: minutes(t, 20, 10), canary: minutes(t, 20, 10)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := tc.src()
			req := request(t, 0)
			req.Kind, req.Read = tc.kind, ReadRaw
			res, err := Analyze(context.Background(), &healthFirst{Source: inner, asked: map[string]chan struct{}{}}, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Minutes {
				if !m.Evidence.Valid {
					t.Fatalf("minute %s carries no evidence: the fleets' health did not reach it", m.Time.Format(time.TimeOnly))
				}
			}
			if c, ok := inner.(*classicSource); ok {
				got := strings.Join(c.queries, "\n")
				if strings.Count(got, "raw health native") != 2 || strings.Count(got, "raw health classic") != 2 {
					t.Errorf("queries %q, want each fleet's native health read ahead and its classic health after", c.queries)
				}
			}
		})
	}
}

// TestScrapedEveryReadsRecordedHealth: the interval the fleets' samples
// show is read off their health whether their minutes were read raw or
// from the record (which counts the raw samples too), so a window served
// from a record made at the wrong interval is read again at the right one,
// where that record is not read (prom.RecordedScrapeLabel).
func TestScrapedEveryReadsRecordedHealth(t *testing.T) {
	every30 := map[int64]prom.Health{}
	series := prom.Series{}
	for m := int64(0); m < 10; m++ {
		every30[m*60] = prom.Health{Samples: 20, Series: 10, Reporting: 10}
		series[m*60] = nil
	}
	for _, path := range []string{"raw", "recorded"} {
		fleets := []fetched{{series: series, served: Served{Path: path}}, {series: series, served: Served{Path: path}}}
		if got := scrapedEvery(fleets, []map[int64]prom.Health{every30, every30}, make([]map[int64]prom.Health, 2)); got != 30 {
			t.Errorf("%s: scraped every %d s, want 30", path, got)
		}
	}
}
