package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestFailedScrapeBeforeMinute: four pods, two a fleet, scraped every 60 s
// at :30, each observing 60 requests a minute. Canary pod c1's scrape of
// 12:09:30 fails (up == 0, no sample). Minute 12:10 is incomplete: a target
// was down in it. Minute 12:11 is read over (12:09, 12:11], which holds one
// sample of c1, so c1 adds nothing to it although its series has a sample
// in the minute: it is incomplete too, read raw or from the rule pack's
// records, and partial (its evidence counts in no window). Every other minute is whole.
func TestFailedScrapeBeforeMinute(t *testing.T) {
	start := time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC)
	end := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
	missed := time.Date(2026, 6, 1, 12, 9, 30, 0, time.UTC)
	const metric = "m"
	var b strings.Builder
	pods := []struct{ pod, track string }{{"b0", "baseline"}, {"b1", "baseline"}, {"c0", "canary"}, {"c1", "canary"}}
	b.WriteString("# TYPE m histogram\n")
	for _, p := range pods {
		for _, le := range []string{"0.1", "1.0", "+Inf"} {
			n := 0
			for ts := start.Add(30 * time.Second); ts.Before(end); ts = ts.Add(time.Minute) {
				n += 60
				if p.pod == "c1" && ts.Equal(missed) {
					continue
				}
				fmt.Fprintf(&b, "m_bucket{le=%q,pod=%q,track=%q} %d %d\n", le, p.pod, p.track, n, ts.Unix())
			}
		}
	}
	b.WriteString("# TYPE up gauge\n")
	for _, p := range pods {
		for ts := start.Add(30 * time.Second); ts.Before(end); ts = ts.Add(time.Minute) {
			v := 1
			if p.pod == "c1" && ts.Equal(missed) {
				v = 0
			}
			fmt.Fprintf(&b, "up{pod=%q,track=%q} %d %d\n", p.pod, p.track, v, ts.Unix())
		}
	}
	b.WriteString("# EOF\n")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.om")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(testenv.Binary(t, "promtool"), "tsdb", "create-blocks-from", "openmetrics", in, data).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	base, _ := selector.Parse(`{track="baseline"}`)
	canary, _ := selector.Parse(`{track="canary"}`)
	scrape := 60
	rules := writePack(t, rulegen.File{Defaults: verdict.Overrides{ScrapeIntervalSeconds: &scrape},
		Canaries: []rulegen.Canary{{Name: "checkout", Metric: metric, Histogram: string(prom.Classic), Baseline: base.String(), Canary: canary.String()}}})
	testenv.Backfill(t, data, rules, time.Date(2026, 6, 1, 11, 50, 0, 0, time.UTC), end.Add(-time.Nanosecond), 0)
	client, err := prom.New(testenv.Prometheus(t, testenv.PromOptions{DataDir: data}).URL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verdict.Default()
	cfg.ScrapeIntervalSeconds = scrape
	w := pairing.Window{First: time.Date(2026, 6, 1, 12, 5, 0, 0, time.UTC), Last: time.Date(2026, 6, 1, 12, 15, 0, 0, time.UTC)}
	short := map[string]bool{"12:10": true, "12:11": true}
	for _, read := range []Reading{ReadRaw, ReadRecorded} {
		res, err := Analyze(context.Background(), client, Request{Metric: metric, Baseline: base, Canary: canary, Kind: prom.Classic, Config: cfg, Window: w, Read: read})
		if err != nil {
			t.Fatalf("%s: %v", read, err)
		}
		if len(res.Minutes) != 11 {
			t.Fatalf("%s: %d minutes, want 11", read, len(res.Minutes))
		}
		for _, m := range res.Minutes {
			at := m.Time.UTC().Format("15:04")
			incomplete := m.Canary.Incomplete != ""
			if incomplete != short[at] || (incomplete && m.Verdict != verdict.Partial) || (!incomplete && m.Canary.Count != 120) {
				t.Errorf("%s, minute %s: canary %.0f observations, incomplete %q, verdict %s; want incomplete and partial %v, else 120 observations",
					read, at, m.Canary.Count, m.Canary.Incomplete, m.Verdict, short[at])
			}
		}
	}
}
