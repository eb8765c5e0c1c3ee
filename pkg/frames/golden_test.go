package frames

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

var updateGolden = flag.Bool("update", false, "rewrite pkg/frames/testdata/*.json from the fixed analyses")

// goldenEnd is the last minute of every golden analysis.
var goldenEnd = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

// expFleet is a classic histogram of n observations in a minute,
// exponentially distributed with a p99 of about p99 seconds, in 10 ms
// buckets up to 0.6 s.
func expFleet(t *testing.T, n, p99 float64) *histogram.Histogram {
	t.Helper()
	var bounds, counts []float64
	for le := 1; le <= 60; le++ {
		x := float64(le) / 100
		bounds = append(bounds, x)
		counts = append(counts, math.Round(n*(1-math.Exp(-x*math.Log(100)/p99))))
	}
	h, err := histogram.FromClassic(append(bounds, math.Inf(1)), append(counts, n))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// goldenHour judges the shown minutes of a checkout service's canary, as
// the engine would from Prometheus, without Prometheus: a 5% canary whose
// tail wobbles around the baseline's, with a minute no fleet reported, a
// canary minute too thin to judge, the warm-up minute after it, a minute a
// canary pod did not report, and a regression over the last 15 minutes
// that rolls the window back. deployed judges the same shown minutes as a
// deployment that started two hours before the first of them: each shown
// minute's decision pools the evidence since that start (verdict.Options
// Anchored), 121 to 180 minutes of it, past the window's 60.
func goldenHour(t *testing.T, shown int, rule string, deployed bool) *engine.Result {
	t.Helper()
	c := verdict.Default()
	c.Rule, c.WarmupMinutes = rule, 1
	total := shown + c.WindowMinutes - 1
	if deployed {
		total = shown + deployedBefore
	}
	// The canary's p99 against the baseline's 0.2 s, minute by minute.
	wobble := []float64{0.86, 0.91, 0.97, 1.0, 0.89, 1.04, 0.93, 0.88, 1.12, 0.9}
	minutes := make([]verdict.Minute, total)
	canaryAt := map[time.Time]bool{}
	for i := range minutes {
		at := goldenEnd.Add(time.Duration(i-total+1) * time.Minute)
		fromEnd := total - 1 - i
		b, k := expFleet(t, 24000, 0.2), expFleet(t, 1200, 0.2*wobble[(i*7)%len(wobble)])
		incomplete := ""
		switch {
		case fromEnd < 15:
			k = expFleet(t, 1200, 0.2*1.3)
		case fromEnd == shown-3:
			b, k = nil, nil // nothing reported
		case fromEnd == 25:
			k = expFleet(t, 300, 0.2) // too few tail observations, and a quarter of the canary's share
		}
		if fromEnd == 8 {
			incomplete = "1 of 2 canary targets down"
		}
		bs, ks := verdict.Stats(c, b), verdict.Stats(c, k)
		ks.Incomplete = incomplete
		minutes[i] = verdict.Minute{Time: at, Baseline: bs, Canary: ks, Evidence: verdict.MinuteEvidence(c, b, k, 1, 1)}
		canaryAt[at] = k != nil
	}
	sel := func(track string) selector.Selector {
		s, err := selector.Parse(`{app="checkout",track="` + track + `"}`)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	req := engine.Request{Metric: "http_request_duration_seconds", Baseline: sel("baseline"), Canary: sel("canary"), Kind: prom.Auto, Config: c,
		Window: pairing.Window{First: goldenEnd.Add(-time.Duration(shown-1) * time.Minute), Last: goldenEnd}}
	opts := verdict.Options{Shown: shown, CanaryHadTrafficAt: func(at time.Time) bool { return canaryAt[at] }}
	if deployed {
		opts.Anchored = true
		req.Since = minutes[0].Time.Add(-time.Minute)
	}
	w := verdict.Decide(c, minutes, opts)
	return &engine.Result{Window: w, Request: req, BaselineKind: prom.Classic, CanaryKind: prom.Classic}
}

// deployedBefore is how many minutes the golden deployment ran before the
// shown ones.
const deployedBefore = 120

// goldenPods is a fixed per-pod spread of the shown minutes.
func goldenPods(res *engine.Result) []engine.Spread {
	var out []engine.Spread
	for i, m := range res.Minutes {
		for _, f := range []struct {
			name string
			pods int
			max  float64
		}{{"baseline", 20, 0.26}, {"canary", 2, 0.34}} {
			out = append(out, engine.Spread{Time: m.Time, Fleet: f.name, Min: 0.15, Median: 0.2, Max: f.max, Pods: f.pods,
				WorstPod: "checkout-" + f.name + "-7d9f-" + string(rune('a'+i%3))})
		}
	}
	return out
}

// goldenByPod is a fixed attribution of a rollback to the canary's two pods
// (nil for any other decision), as engine.Attribute writes it: the frames
// carry its sentence.
func goldenByPod(res *engine.Result) *engine.Attribution {
	if res.Decision != verdict.Rollback {
		return nil
	}
	return &engine.Attribution{Quantile: 0.99, Minutes: 16, Beyond: 120, Expected: 60, Pods: []engine.PodShare{
		{Pod: "checkout-canary-7d9f-b", Beyond: 96, Expected: 30},
		{Pod: "checkout-canary-7d9f-a", Beyond: 24, Expected: 30},
	}}
}

// goldenJSON is the frames as the data source sends them: each frame as
// the SDK writes it (data.FrameToJSON), in a JSON array.
func goldenJSON(t *testing.T, tables ...Table) []byte {
	t.Helper()
	var frames []json.RawMessage
	for i, tb := range tables {
		f, err := DataFrame(tb, string(rune('A'+i)), false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := data.FrameToJSON(f, data.IncludeAll)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
	compact, err := json.Marshal(frames)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", " "); err != nil {
		t.Fatal(err)
	}
	return append(out.Bytes(), '\n')
}

// TestGoldenFrames keeps testdata/*.json, the frames the panel's tests
// read, equal to the frames of fixed analyses. Regenerate with
// go test ./pkg/frames -run TestGoldenFrames -update.
func TestGoldenFrames(t *testing.T) {
	for _, tt := range []struct {
		name     string
		shown    int
		rule     string
		deployed bool
	}{{"hour", 60, verdict.RuleEvidence, false}, {"hour-reference", 60, verdict.RuleReference, false}, {"hour-deployed", 60, verdict.RuleEvidence, true}} {
		t.Run(tt.name, func(t *testing.T) {
			res := goldenHour(t, tt.shown, tt.rule, tt.deployed)
			got := goldenJSON(t, Minutes(res), Decision(res, goldenByPod(res)), Pods(res, goldenPods(res)))
			path := filepath.Join("testdata", tt.name+".json")
			if *updateGolden {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the frames of its analysis; if the change is meant, regenerate it: go test ./pkg/frames -run TestGoldenFrames -update", path)
			}
		})
	}
}
