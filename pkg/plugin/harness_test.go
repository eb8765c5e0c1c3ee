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

// TestHarnessFrames writes what the data source answers for a regression hour
// and for a whole day, as QueryData responses, for the panel harness in
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
	}{
		// A 5% canary that turns 1.3x slower at minute 40: noisy minutes, a rollback.
		{"engine-hour.json", 60, []string{"--minutes", "65", "--pods", "6", "--scenario", "regression", "--regression-factor", "1.3", "--regression-start-minute", "45"}},
		// A day of a smaller service with a cold-starting canary.
		{"engine-day.json", 1440, []string{"--minutes", "1441", "--pods", "3", "--total-rps", "120", "--scenario", "cold-start"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			dir, _ := testenv.Generate(t, append([]string{"--end", liveEnd.Format(time.RFC3339), "--seed", "3"}, tt.gen...)...)
			ds := newLiveDatasource(t, testenv.Prometheus(t, testenv.PromOptions{DataDir: dir}).URL)
			from := liveEnd.Add(-time.Duration(tt.minutes) * time.Minute)
			var queries []backend.DataQuery
			for _, qt := range []string{"minutes", "decision", "pods"} {
				q := liveQuery(qt, `,"queryType":"`+qt+`"`)
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
			if rows := resp.Responses["minutes"].Frames[0].Rows(); rows != tt.minutes {
				t.Fatalf("%d minute rows, want %d", rows, tt.minutes)
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
