package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// TestHarnessFrames writes what the data source answers for a regression hour,
// for a whole day and for an hour of a deployment that started three hours
// before it, as QueryData responses, for the panel harness in
// headless Chromium (tests/harness/run.mjs). The panel is thus tested on
// frames the engine produced from generated data, never on typed fixtures.
// The files go to $PAIRWISE_HARNESS_FRAMES_DIR (scripts/test.sh sets it), or
// to a temporary folder.
func TestHarnessFrames(t *testing.T) {
	out := os.Getenv("PAIRWISE_HARNESS_FRAMES_DIR")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		file    string
		minutes int
		gen     []string
		// since: the deployment's start, before the range; its minutes pool the
		// evidence from it (the anchored column), more minutes than a window.
		since time.Time
	}{
		// A 5% canary that turns 1.3x slower at minute 40: noisy minutes, a rollback.
		{"engine-hour.json", 60, []string{"--minutes", "65", "--pods", "6", "--scenario", "regression", "--regression-factor", "1.3", "--regression-start-minute", "45"}, time.Time{}},
		// A day of a smaller service with a cold-starting canary.
		{"engine-day.json", 1440, []string{"--minutes", "1441", "--pods", "3", "--total-rps", "120", "--scenario", "cold-start"}, time.Time{}},
		// The last hour of a deployment that started three hours before it, and regressed 40 minutes into the hour.
		{"engine-deployed.json", 60, []string{"--minutes", "245", "--pods", "6", "--scenario", "regression", "--regression-factor", "1.3", "--regression-start-minute", "225"}, liveEnd.Add(-4 * time.Hour)},
	} {
		t.Run(tt.file, func(t *testing.T) {
			dir, _ := testenv.Generate(t, append([]string{"--end", liveEnd.Format(time.RFC3339), "--seed", "3"}, tt.gen...)...)
			ds := newLiveDatasource(t, testenv.Prometheus(t, testenv.PromOptions{DataDir: dir}).URL)
			from := liveEnd.Add(-time.Duration(tt.minutes) * time.Minute)
			var queries []backend.DataQuery
			extra := ""
			if !tt.since.IsZero() {
				extra = `,"since":"` + tt.since.Format(time.RFC3339) + `"`
			}
			for _, qt := range []string{"minutes", "decision", "pods"} {
				q := liveQuery(qt, `,"queryType":"`+qt+`"`+extra)
				q.TimeRange.From = from
				queries = append(queries, q)
			}
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: queries})
			if err != nil {
				t.Fatal(err)
			}
			for refID, dr := range resp.Responses {
				if dr.Error != nil {
					t.Fatalf("%s: %v", refID, dr.Error)
				}
			}
			minutes := resp.Responses["minutes"].Frames[0]
			if rows := minutes.Rows(); rows != tt.minutes {
				t.Fatalf("%d minute rows, want %d", rows, tt.minutes)
			}
			// Every minute of a deployment's first day pools since its start, so over more
			// minutes than a window; without a start none does.
			col := fieldOf(t, minutes)
			window, ok := minutes.Meta.Custom.(map[string]any)["windowMinutes"].(int)
			if !ok || window <= 0 {
				t.Fatalf("meta windowMinutes %v", minutes.Meta.Custom.(map[string]any)["windowMinutes"])
			}
			for i := 0; i < minutes.Rows(); i++ {
				anchored := col("anchored").At(i).(bool)
				ev := -1.0
				if p := col("evidence_minutes").At(i).(*float64); p != nil {
					ev = *p
				}
				if anchored != !tt.since.IsZero() || anchored && ev <= float64(window) {
					t.Fatalf("row %d: anchored %v with %v evidence minutes (window %d), since %v", i, anchored, ev, window, tt.since)
				}
			}
			b, err := json.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, tt.file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
