package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/rulegen"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// TestRecordedEqualsRaw: on generated fleets in a real Prometheus, with
// the minute series recorded by the rule pack itself (rendered by
// pkg/rulegen for the fleets, evaluated over the data's history by
// pairwise-backfill with Prometheus's rule engine), reading the record
// gives minute for minute what reading raw pods gives (histograms, health,
// verdicts, decision), for classic and native histograms, per-canary and
// label-driven groups, including a minute missing from the record, minutes
// before it starts and the newest minute, not yet recorded.
func TestRecordedEqualsRaw(t *testing.T) {
	end := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	dataDir, _ := testenv.Generate(t, "--end", end.Format(time.RFC3339), "--minutes", "80", "--pods", "4",
		"--scenario", "regression", "--regression-start-minute", "50", "--seed", "11")
	const metric = "http_request_duration_seconds"
	fleets := func(b, c string) [2]selector.Selector {
		base, err1 := selector.Parse(b)
		canary, err2 := selector.Parse(c)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return [2]selector.Selector{base, canary}
	}
	cases := []struct {
		name     string
		kind     prom.Kind
		canaries []string // per-canary groups; none: a label-driven group
		fleets   [2]selector.Selector
		// ambiguous: two groups record the fleets, so the record is not
		// read; the warning says why.
		ambiguous bool
		why       string
		// unrecorded: the record holds part of what the selectors select
		// (a label-driven group's other matchers left out), so it is not
		// read.
		unrecorded bool
	}{
		{name: "per-canary classic", kind: prom.Classic, canaries: []string{"checkout"}, fleets: fleets(`{track="baseline"}`, `{track="canary"}`)},
		{name: "per-canary native", kind: prom.Native, canaries: []string{"checkout-native"}, fleets: fleets(`{track="baseline",service=~".+"}`, `{track="canary",service=~".+"}`)},
		{name: "label-driven classic", kind: prom.Classic, fleets: fleets(`{job="checkout",track="baseline"}`, `{job="checkout",track="canary"}`)},
		// A group with matchers of its own ({job="checkout"}): it records
		// only the series they select.
		{name: "label-driven native, the group's matchers named", kind: prom.Native, fleets: fleets(`{service="checkout",track="baseline",job="checkout"}`, `{job="checkout",track="canary",service="checkout"}`)},
		{name: "label-driven native, the group's matchers left out", kind: prom.Native, unrecorded: true, fleets: fleets(`{service="checkout",track="baseline"}`, `{service="checkout",track="canary"}`)},
		{name: "ambiguous", kind: prom.Classic, canaries: []string{"a", "b"}, ambiguous: true, why: "more than one recorded series",
			fleets: fleets(`{track="baseline",job=~"checkout"}`, `{track="canary",job=~"checkout"}`)},
		// The group records by service; a selector that leaves the service
		// free selects what the group holds as one series a service.
		{name: "label-driven native, a label the group records by left free", kind: prom.Native, ambiguous: true, why: "recorded as several series",
			fleets: fleets(`{job="checkout",track="baseline"}`, `{track="canary",job="checkout"}`)},
	}
	// The rule pack for these fleets, as a user renders it.
	pack := rulegen.File{Generic: []rulegen.Generic{{Name: "tracks", Metric: metric, Histogram: string(prom.Classic), By: []string{"job"},
		FleetLabel: "track", Baseline: "baseline", Canary: "canary"},
		{Name: "services", Metric: metric, Histogram: string(prom.Native), By: []string{"service"},
			FleetLabel: "track", Baseline: "baseline", Canary: "canary", Matchers: `{job="checkout"}`}}}
	for _, c := range cases {
		for _, name := range c.canaries {
			pack.Canaries = append(pack.Canaries, rulegen.Canary{Name: name, Metric: metric, Histogram: string(c.kind),
				Baseline: c.fleets[0].String(), Canary: c.fleets[1].String()})
		}
	}
	rules := writePack(t, pack)
	// The record starts 40 minutes before the end (earlier minutes of the
	// window are read raw), lacks the minute 15 minutes before the end, and
	// stops before the newest minute. Evaluations stamped in [M, M+60s)
	// record minute M: the first run ends before the gap's minute, the
	// second starts after it.
	gap := end.Add(-15 * time.Minute)
	recStart, recEnd := end.Add(-40*time.Minute), end.Add(-time.Minute)
	testenv.Backfill(t, dataDir, rules, recStart, gap.Add(-time.Nanosecond), 0)
	testenv.Backfill(t, dataDir, rules, gap.Add(time.Minute), recEnd.Add(time.Minute-time.Nanosecond), 0)
	srv := testenv.Prometheus(t, testenv.PromOptions{DataDir: dataDir})
	client, err := prom.New(srv.URL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// readsRaw: where the record is not the fleets', the automatic
			// reading reads raw and gives the raw reading's window.
			readsRaw := func(req Request) (rawRes, autoRes *Result) {
				t.Helper()
				var err error
				req.Read = ReadRaw
				if rawRes, err = Analyze(ctx, client, req); err != nil {
					t.Fatal(err)
				}
				req.Read = ReadAuto
				if autoRes, err = Analyze(ctx, client, req); err != nil {
					t.Fatal(err)
				}
				if a, b := fmt.Sprintf("%+v", rawRes.Window), fmt.Sprintf("%+v", autoRes.Window); a != b {
					t.Errorf("the automatic reading differs from the raw one")
				}
				for _, s := range autoRes.Served {
					if s.Path != "raw" {
						t.Errorf("%s served %+v, want raw", s.What, s)
					}
				}
				return rawRes, autoRes
			}
			w, err := pairing.Ending(end, 45, 0)
			if err != nil {
				t.Fatal(err)
			}
			cfg := verdict.Default()
			base, canary := c.fleets[0], c.fleets[1]
			req := Request{Metric: metric, Baseline: base, Canary: canary, Kind: c.kind, Config: cfg, Window: w}
			if c.ambiguous {
				_, err := client.RecordedHistograms(ctx, metric, base, c.kind, prom.Range{Start: w.First, End: w.Last})
				if !errors.Is(err, prom.ErrRecordAmbiguous) {
					t.Fatalf("RecordedHistograms: %v, want ErrRecordAmbiguous", err)
				}
				req.Read = ReadRecorded
				if _, err := Analyze(ctx, client, req); !errors.Is(err, ErrNotRecorded) {
					t.Fatalf("recorded reading: %v, want ErrNotRecorded", err)
				}
				rawRes, autoRes := readsRaw(req)
				if len(autoRes.Warnings) != len(rawRes.Warnings)+2 || !strings.Contains(strings.Join(autoRes.Warnings, "\n"), c.why) {
					t.Errorf("warnings %q, want the raw ones and one per fleet saying %q", autoRes.Warnings, c.why)
				}
				return
			}

			if c.unrecorded {
				for _, sel := range []selector.Selector{base, canary} {
					rec, err := client.RecordedHistograms(ctx, metric, sel, c.kind, prom.Range{Start: w.First, End: w.Last})
					if err != nil || len(rec) != 0 {
						t.Fatalf("%s: %d recorded minutes (%v), want none", sel, len(rec), err)
					}
				}
				readsRaw(req)
				return
			}

			// The record itself: only the recorded minutes, each equal to the raw one.
			r := prom.Range{Start: end.Add(-60 * time.Minute), End: end}
			for _, sel := range []selector.Selector{base, canary} {
				rec, err := client.RecordedHistograms(ctx, metric, sel, c.kind, r)
				if err != nil {
					t.Fatal(err)
				}
				raw, _, err := client.FleetHistograms(ctx, metric, sel, c.kind, r)
				if err != nil {
					t.Fatal(err)
				}
				recHealth, err := client.RecordedHealth(ctx, metric, sel, c.kind, r)
				if err != nil {
					t.Fatal(err)
				}
				rawHealth, err := client.FleetHealth(ctx, metric, sel, c.kind, r)
				if err != nil {
					t.Fatal(err)
				}
				// Minutes read at another scrape interval are other minutes
				// (a minute and one interval, scaled by it): the record,
				// made at 15 s, is not theirs.
				other := r
				other.Scrape = 30 * time.Second
				if n, err := client.RecordedHistograms(ctx, metric, sel, c.kind, other); err != nil || len(n) != 0 {
					t.Errorf("%s at 30 s: %d recorded minutes (%v), want none", sel, len(n), err)
				}
				if n, err := client.RecordedHealth(ctx, metric, sel, c.kind, other); err != nil || len(n) != 0 {
					t.Errorf("%s health at 30 s: %d recorded minutes (%v), want none", sel, len(n), err)
				}
				for m := r.Start; !m.After(r.End); m = m.Add(time.Minute) {
					ts := m.Unix()
					recorded := !m.Before(recStart) && !m.After(recEnd) && !m.Equal(gap)
					if _, ok := rec[ts]; ok != recorded {
						t.Errorf("%s %s: recorded histogram present %v, want %v", sel, m.Format(time.TimeOnly), ok, recorded)
					}
					if _, ok := recHealth[ts]; ok != recorded {
						t.Errorf("%s %s: recorded health present %v, want %v", sel, m.Format(time.TimeOnly), ok, recorded)
					}
					if !recorded {
						continue
					}
					if !reflect.DeepEqual(rec[ts], raw[ts]) {
						t.Errorf("%s %s: recorded histogram %v, raw %v", sel, m.Format(time.TimeOnly), rec[ts], raw[ts])
					}
					if recHealth[ts] != rawHealth[ts] {
						t.Errorf("%s %s: recorded health %+v, raw %+v", sel, m.Format(time.TimeOnly), recHealth[ts], rawHealth[ts])
					}
				}
			}

			// The analysis: the same minute for minute, whatever the reading.
			req.Read = ReadAuto
			autoRes, err := Analyze(ctx, client, req)
			if err != nil {
				t.Fatal(err)
			}
			req.Read = ReadRaw
			rawRes, err := Analyze(ctx, client, req)
			if err != nil {
				t.Fatal(err)
			}
			req.Read = ReadRecorded
			recRes, err := Analyze(ctx, client, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(rawRes.Minutes) != len(recRes.Minutes) || len(rawRes.Minutes) != w.Minutes() {
				t.Fatalf("%d raw minutes, %d recorded, want %d", len(rawRes.Minutes), len(recRes.Minutes), w.Minutes())
			}
			if a, b := fmt.Sprintf("%+v %+v", recRes.Window, recRes.Served), fmt.Sprintf("%+v %+v", autoRes.Window, autoRes.Served); a != b {
				t.Errorf("automatic and recorded readings differ")
			}
			for i := range rawRes.Minutes {
				if a, b := fmt.Sprintf("%+v", rawRes.Minutes[i]), fmt.Sprintf("%+v", recRes.Minutes[i]); a != b {
					t.Errorf("minute %s differs:\nraw      %s\nrecorded %s", rawRes.Minutes[i].Time.Format(time.TimeOnly), a, b)
				}
			}
			if rawRes.Decision != recRes.Decision || rawRes.Reason != recRes.Reason || !reflect.DeepEqual(rawRes.Warnings, recRes.Warnings) {
				t.Errorf("decision raw %s (%s) %q, recorded %s (%s) %q", rawRes.Decision, rawRes.Reason, rawRes.Warnings, recRes.Decision, recRes.Reason, recRes.Warnings)
			}
			if rawRes.BaselineKind != recRes.BaselineKind || rawRes.CanaryKind != recRes.CanaryKind {
				t.Errorf("kinds raw %s/%s, recorded %s/%s", rawRes.BaselineKind, rawRes.CanaryKind, recRes.BaselineKind, recRes.CanaryKind)
			}
			t.Logf("decision %s: %s; served %+v", recRes.Decision, recRes.Reason, recRes.Served)
			for _, s := range recRes.Served {
				if s.Path != "recorded" || s.RecordedMinutes == 0 || s.RawMinutes == 0 {
					t.Errorf("%s served %+v, want recorded with the unrecorded minutes raw", s.What, s)
				}
			}
			for _, s := range rawRes.Served {
				if s.Path != "raw" {
					t.Errorf("raw reading: %s served %+v", s.What, s)
				}
			}
			// The histogram kind left to the judge (the default): the raw
			// path reads these fleets' native series, so a native record
			// answers and a classic one does not.
			req.Kind, req.Read = prom.Auto, ReadRaw
			rawAuto, err := Analyze(ctx, client, req)
			if err != nil {
				t.Fatal(err)
			}
			req.Read = ReadAuto
			autoKind, err := Analyze(ctx, client, req)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := fmt.Sprintf("%+v %s/%s", rawAuto.Window, rawAuto.BaselineKind, rawAuto.CanaryKind), fmt.Sprintf("%+v %s/%s", autoKind.Window, autoKind.BaselineKind, autoKind.CanaryKind); a != b {
				t.Errorf("histogram kind auto: the automatic reading differs from the raw one:\nraw  %s\nauto %s", a, b)
			}
			if rawAuto.BaselineKind != prom.Native {
				t.Errorf("histogram kind auto read %s raw series, want native", rawAuto.BaselineKind)
			}
			for _, s := range autoKind.Served {
				if want := map[bool]string{true: "recorded", false: "raw"}[c.kind == prom.Native]; s.Path != want {
					t.Errorf("histogram kind auto: %s served %+v, want %s", s.What, s, want)
				}
			}
			req.Read = ReadRecorded
			if _, err := Analyze(ctx, client, req); (err == nil) != (c.kind == prom.Native) || err != nil && !errors.Is(err, ErrNotRecorded) {
				t.Errorf("histogram kind auto, recorded reading: %v", err)
			}
		})
	}
}

// generatedEnd is the end of the data liveFleets generates.
var generatedEnd = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// liveFleets serves pairwise-gen's fleets, generated with args up to
// generatedEnd, from a real Prometheus: a client, the fleets' selectors,
// the window of the last shown minutes and the truth file.
func liveFleets(t *testing.T, shown int, args ...string) (client *prom.Client, base, canary selector.Selector, w pairing.Window, truthFile string) {
	t.Helper()
	dataDir, truthFile := testenv.Generate(t, append([]string{"--end", generatedEnd.Format(time.RFC3339)}, args...)...)
	srv := testenv.Prometheus(t, testenv.PromOptions{DataDir: dataDir})
	client, err := prom.New(srv.URL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	base, canary = testenv.GeneratedFleets(t)
	if w, err = pairing.Ending(generatedEnd, shown, 0); err != nil {
		t.Fatal(err)
	}
	return client, base, canary, w, truthFile
}

// TestSparseScrapesInPrometheus: fleets scraped every 60 s, in a real
// Prometheus, for every histogram kind, judged with the default 15 s
// interval: their health shows 60 s, their minutes are read at it, every
// one of them with both fleets, and the judgement warns that the interval
// set is not the fleets'. (Fleets that disagree keep the interval set:
// TestScrapeIntervalFromHealth.)
func TestSparseScrapesInPrometheus(t *testing.T) {
	client, base, canary, w, _ := liveFleets(t, 20, "--minutes", "30", "--pods", "2", "--scrape-interval", "60s")
	for _, kind := range []prom.Kind{prom.Auto, prom.Native, prom.Classic} {
		req := Request{Metric: "http_request_duration_seconds", Baseline: base, Canary: canary, Kind: kind, Config: verdict.Default(), Window: w}
		res, err := Analyze(context.Background(), client, req)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		want := "the fleets' series are scraped every 60 s, not every 15 s as scrapeIntervalSeconds says"
		if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("%s: warnings %q, want one starting %q", kind, res.Warnings, want)
		}
		for _, m := range res.Minutes {
			if !m.Baseline.Present || !m.Canary.Present || m.Baseline.Incomplete != "" || m.Canary.Incomplete != "" {
				t.Errorf("%s: minute %s is not read whole at 60 s: %+v", kind, m.Time.UTC().Format(time.RFC3339), m)
			}
		}
	}
}

// TestCountedObservationsAtEveryInterval: the evidence counts exactly the
// observations of each whole minute, whatever the scrape interval (set in
// the configuration) and offset, through a real Prometheus. The minute's
// increase() extrapolates what it reads to its range, a minute and one
// interval; the evidence takes that out (verdict.Config.ScrapeScale of the samples
// per series), and the false-rollback budget rests on it: counts inflated by
// a fifth would make every minute's likelihood ratio too large. The truth
// file counts the observations between the last scrape before each minute
// and the minute's last scrape.
func TestCountedObservationsAtEveryInterval(t *testing.T) {
	const minutes = 12
	for _, tt := range []struct{ interval, offset string }{
		{"10s", "0s"}, {"15s", "0s"}, {"15s", "7s"}, {"20s", "0s"}, {"30s", "0s"}, {"30s", "20s"}, {"60s", "0s"}, {"60s", "35s"}, {"25s", "0s"},
	} {
		// 25 s does not divide a minute: the counts are off, and the
		// judgement says so instead (prom.UnevenScrapes).
		uneven := tt.interval == "25s"
		t.Run(tt.interval+" offset "+tt.offset, func(t *testing.T) {
			client, base, canary, w, truthFile := liveFleets(t, minutes-1, "--minutes", fmt.Sprint(minutes), "--pods", "3",
				"--scrape-interval", tt.interval, "--scrape-offset", tt.offset, "--seed", "5")
			truth := testenv.LoadTruth(t, truthFile)
			// Each kind is read with the interval set, and with the default
			// (15 s), which Analyze corrects from the fleets' health.
			for _, read := range []struct {
				kind prom.Kind
				set  bool
			}{{prom.Native, true}, {prom.Classic, true}, {prom.Native, false}, {prom.Classic, false}} {
				kind, cfg := read.kind, verdict.Default()
				if d, _ := time.ParseDuration(tt.interval); !uneven && read.set {
					cfg.ScrapeIntervalSeconds = int(d / time.Second)
				}
				req := Request{Metric: testenv.GeneratedMetric, Baseline: base, Canary: canary, Kind: kind, Config: cfg, Window: w}
				res, err := Analyze(context.Background(), client, req)
				if err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				corrected := slices.ContainsFunc(res.Warnings, func(w string) bool {
					return strings.Contains(w, "as scrapeIntervalSeconds says: their minutes were read at")
				})
				if want := !uneven && !read.set && tt.interval != "15s"; corrected != want {
					t.Fatalf("%s, interval set %v: warnings %q, want one about reading at the fleets' interval: %v", kind, read.set, res.Warnings, want)
				}
				if warned := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "which does not divide a minute") }); warned != uneven {
					t.Fatalf("%s: warnings %q, want one about the scrape interval: %v", kind, res.Warnings, uneven)
				}
				if uneven {
					continue
				}
				// The data's first minutes are its counters' first: increase()
				// does not extrapolate a counter below zero, so a series
				// younger than its range reads less (TestSparseScrapesInPrometheus).
				first, _ := time.Parse(time.RFC3339, truth.Start)
				interval, _ := time.ParseDuration(tt.interval)
				checked := 0
				for _, m := range res.Minutes {
					if m.Time.Before(first.Add(time.Minute + 2*interval)) {
						continue
					}
					at := m.Time.UTC().Format(time.RFC3339)
					tb, okB := truth.Minute("baseline", at)
					tc, okC := truth.Minute("canary", at)
					if !okB || !okC || !m.Evidence.Valid {
						continue
					}
					for _, c := range []struct {
						fleet string
						got   float64
						want  int
					}{{"baseline", m.Evidence.BaselineCount, tb.Count}, {"canary", m.Evidence.CanaryCount, tc.Count}} {
						if d := c.got - float64(c.want); d > 1e-6*float64(c.want) || -d > 1e-6*float64(c.want) {
							t.Errorf("%s, minute %s, %s: counted %.3f observations, the minute holds %d", kind, at, c.fleet, c.got, c.want)
						}
					}
					checked++
				}
				if checked < minutes-3 {
					t.Fatalf("%s: %d minutes checked of %d", kind, checked, len(res.Minutes))
				}
			}
		})
	}
}

// TestRecordedAtAnotherInterval: fleets scraped every 10 s, a rule pack
// and a reader at 15 s. Read at 15 s every minute holds more samples than
// a 15 s interval gives, so all are partial; the engine sees the interval
// in the fleets' health and reads them again at 10 s. Raw and automatic
// reading do so from raw series; recorded reading finds no record made at
// 10 s and must say so, not answer with the minutes read at 15 s (a
// regression held for a whole window). A reader at 15 s of a pack made at
// 30 s is told where the record is.
func TestRecordedAtAnotherInterval(t *testing.T) {
	end := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	const metric = "http_request_duration_seconds"
	w, err := pairing.Ending(end, 45, 0)
	if err != nil {
		t.Fatal(err)
	}
	analyze := func(client *prom.Client, read Reading) (*Result, error) {
		base, canary := testenv.GeneratedFleets(t)
		return Analyze(context.Background(), client, Request{Metric: metric, Baseline: base, Canary: canary, Kind: prom.Classic,
			Config: verdict.Default(), Window: w, Read: read})
	}
	serve := func(every string, packScrape int) *prom.Client {
		dataDir, _ := testenv.Generate(t, "--end", end.Format(time.RFC3339), "--minutes", "80", "--pods", "4",
			"--scenario", "regression", "--regression-start-minute", "40", "--seed", "11", "--scrape-interval", every)
		base, canary := testenv.GeneratedFleets(t)
		pack := rulegen.File{Canaries: []rulegen.Canary{{Name: "checkout", Metric: metric, Histogram: string(prom.Classic), Baseline: base.String(), Canary: canary.String()}}}
		if packScrape > 0 {
			pack.Defaults.ScrapeIntervalSeconds = &packScrape
		}
		rules := writePack(t, pack)
		testenv.Backfill(t, dataDir, rules, end.Add(-70*time.Minute), end.Add(-time.Nanosecond), 0)
		client, err := prom.New(testenv.Prometheus(t, testenv.PromOptions{DataDir: dataDir}).URL, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return client
	}

	t.Run("fleets scraped every 10 s, the pack at 15 s", func(t *testing.T) {
		client := serve("10s", 0)
		raw, err := analyze(client, ReadRaw)
		if err != nil {
			t.Fatal(err)
		}
		if raw.Decision != verdict.Rollback || !strings.Contains(strings.Join(raw.Warnings, "\n"), "read at 10 s") {
			t.Fatalf("raw reading: %s, warnings %q; want the regression rolled back, read again at 10 s", raw.Decision, raw.Warnings)
		}
		auto, err := analyze(client, ReadAuto)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := fmt.Sprintf("%+v", raw.Window), fmt.Sprintf("%+v", auto.Window); a != b {
			t.Errorf("the automatic reading differs from the raw one: %s against %s", auto.Decision, raw.Decision)
		}
		res, err := analyze(client, ReadRecorded)
		if !errors.Is(err, ErrNotRecorded) || !strings.Contains(fmt.Sprint(err), "scraped every 10 s, not every 15 s") {
			decision := verdict.Decision("none")
			if res != nil {
				decision = res.Decision
			}
			t.Fatalf("recorded reading: %s, %v; want ErrNotRecorded naming the intervals", decision, err)
		}
	})

	t.Run("fleets and the pack at 30 s, the reader at 15 s", func(t *testing.T) {
		client := serve("30s", 30)
		if _, err := analyze(client, ReadRecorded); !errors.Is(err, ErrNotRecorded) || !strings.Contains(fmt.Sprint(err), "at a 15 s scrape interval") {
			t.Fatalf("recorded reading: %v; want ErrNotRecorded naming the reader's interval", err)
		}
		auto, err := analyze(client, ReadAuto)
		if err != nil {
			t.Fatal(err)
		}
		recorded := 0
		for _, s := range auto.Served {
			recorded += s.RecordedMinutes
		}
		if recorded == 0 {
			t.Errorf("automatic reading served %+v: want the minutes read again at 30 s from the record", auto.Served)
		}
	})
}

// TestQueryOffsetRecordsTheSameMinutes: a pack rendered with queryOffset
// 1m reads and records every minute as of a minute before each evaluation
// (Prometheus's query_offset, applied by its rule engine): its records are
// still each minute's raw figures, and its newest recorded minute is the
// one before the newest of a pack without the offset, evaluated over the
// same history.
func TestQueryOffsetRecordsTheSameMinutes(t *testing.T) {
	end := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	const metric = "http_request_duration_seconds"
	base, canary := testenv.GeneratedFleets(t)
	r := prom.Range{Start: end.Add(-30 * time.Minute), End: end}
	newest := func(offset string) int64 {
		dataDir, _ := testenv.Generate(t, "--end", end.Format(time.RFC3339), "--minutes", "60", "--pods", "3", "--seed", "5")
		rules := writePack(t, rulegen.File{QueryOffset: offset, Canaries: []rulegen.Canary{{Name: "checkout", Metric: metric,
			Histogram: string(prom.Classic), Baseline: base.String(), Canary: canary.String()}}})
		testenv.Backfill(t, dataDir, rules, end.Add(-20*time.Minute), end.Add(time.Minute-time.Nanosecond), 0)
		client, err := prom.New(testenv.Prometheus(t, testenv.PromOptions{DataDir: dataDir}).URL, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var last int64
		for _, sel := range []selector.Selector{base, canary} {
			rec, err := client.RecordedHistograms(context.Background(), metric, sel, prom.Classic, r)
			if err != nil {
				t.Fatal(err)
			}
			raw, _, err := client.FleetHistograms(context.Background(), metric, sel, prom.Classic, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec) < 15 {
				t.Fatalf("queryOffset %q: %d recorded minutes of %s, want about 20", offset, len(rec), sel)
			}
			for ts, h := range rec {
				if !reflect.DeepEqual(h, raw[ts]) {
					t.Errorf("queryOffset %q, %s, minute %s: recorded %v, raw %v", offset, sel, time.Unix(ts, 0).UTC().Format(time.TimeOnly), h, raw[ts])
				}
				last = max(last, ts)
			}
		}
		return last
	}
	without, with := newest(""), newest("1m")
	if with != without-60 {
		t.Errorf("newest recorded minute: %s with queryOffset 1m, %s without; want the minute before",
			time.Unix(with, 0).UTC().Format(time.TimeOnly), time.Unix(without, 0).UTC().Format(time.TimeOnly))
	}
}

// writePack renders the rule pack f, as a user does, into a file of the
// test's and returns its path.
func writePack(t *testing.T, f rulegen.File) string {
	t.Helper()
	text, err := rulegen.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "pairwise.rules.yml")
	if err := os.WriteFile(rules, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return rules
}
