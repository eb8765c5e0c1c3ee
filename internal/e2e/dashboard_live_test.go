package e2e

// Live checks: the simulator the compose stack runs, scraped by the pinned
// Prometheus, started through internal/testenv.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/pairwise-canary/pairwise/internal/procs"
	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/plugin"
)

// dashBuild builds the pairwise command into a temporary directory.
func dashBuild(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pairwise")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/pairwise")
	cmd.Dir = dashRoot
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build pairwise: %v\n%s", err, b)
	}
	return out
}

// TestSimulatorScrapedAsNativeHistograms: `pairwise simulate` on a free port,
// scraped every second by the pinned Prometheus 3 with native histograms on,
// yields native histogram samples for both fleets, classic buckets beside
// them, and the series labels of pairwise-gen's backfill.
func TestSimulatorScrapedAsNativeHistograms(t *testing.T) {
	bin := dashBuild(t)
	dir := t.TempDir()

	simPort := strconv.Itoa(testenv.FreePort(t))
	sim := testenv.Start(t, "simulator", bin, dir, "simulate", "--listen", "127.0.0.1:"+simPort, "--scenario", "regression", "--pods", "3")
	testenv.WaitReady(t, sim, "http://127.0.0.1:"+simPort+"/metrics", 60*time.Second)

	// The text exposition (no protobuf Accept header) carries the classic buckets.
	resp, err := http.Get("http://127.0.0.1:" + simPort + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`http_request_duration_seconds_bucket{instance="checkout-canary-0:8080",job="checkout",pod="checkout-canary-0",service="checkout",track="canary",le="0.001"}`,
		`http_request_duration_seconds_bucket{instance="checkout-baseline-2:8080",job="checkout",pod="checkout-baseline-2",service="checkout",track="baseline",le="+Inf"}`,
		`http_requests_total{code="500",instance="checkout-canary-1:8080"`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the text exposition lacks %s", want)
		}
	}

	prom := testenv.Prometheus(t, testenv.PromOptions{Config: fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: pairwise-simulator
    honor_labels: true
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: ['127.0.0.1:%s']
`, simPort)})
	promURL := prom.URL

	query := func(q string) []procs.Series { return testenv.Query(t, promURL, q, time.Time{}) }
	// Wait for at least three scrapes of each pod (native histogram samples).
	deadline := time.Now().Add(30 * time.Second)
	var native []procs.Series
	for time.Now().Before(deadline) {
		native = query(`http_request_duration_seconds[10s]`)
		enough := len(native) == 6
		for _, s := range native {
			enough = enough && len(s.Histograms) >= 3
		}
		if enough {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	fleets := map[string]int{}
	for _, s := range native {
		if len(s.Histograms) < 3 {
			t.Errorf("%v: %d native histogram samples, want >= 3 (a scrape per second)", s.Metric, len(s.Histograms))
		}
		pod := s.Metric["pod"]
		if s.Metric["job"] != "checkout" || s.Metric["instance"] != pod+":8080" || s.Metric["service"] != "checkout" {
			t.Errorf("stored labels %v are not pairwise-gen's", s.Metric)
		}
		fleets[s.Metric["track"]]++
	}
	if fleets["baseline"] != 3 || fleets["canary"] != 3 {
		t.Fatalf("native histogram series per fleet = %v, want 3 baseline and 3 canary; Prometheus log:\n%s", fleets, prom.LogTail(40))
	}
	// The fleet-merged native histogram gives a p99 for each fleet, and the
	// classic buckets are stored beside it.
	for _, q := range []string{
		`histogram_quantile(0.99, sum by (track) (rate(http_request_duration_seconds[5s])))`,
		`histogram_quantile(0.99, sum by (track, le) (rate(http_request_duration_seconds_bucket[5s])))`,
	} {
		got := query(q)
		var tracks []string
		for _, s := range got {
			tracks = append(tracks, s.Metric["track"])
		}
		sort.Strings(tracks)
		if !slices.Equal(tracks, []string{"baseline", "canary"}) {
			t.Errorf("%s: fleets %v, want baseline and canary", q, tracks)
		}
	}

	// The query editor's metric list, the data source's metrics resource,
	// reads the metadata a scrape gives (generated blocks have none): the
	// histogram is listed once as native and once as classic, the counter
	// not at all.
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "pairwise-e2e", URL: promURL, JSONData: []byte(`{"timeout":20}`)})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	defer ds.Dispose()
	var listed []struct{ Name, Kind string }
	testenv.GetResource(t, ds, "metrics", &listed)
	want := []struct{ Name, Kind string }{{"http_request_duration_seconds", "classic"}, {"http_request_duration_seconds", "native"}}
	if !slices.Equal(listed, want) {
		t.Errorf("metrics resource lists %v, want %v", listed, want)
	}
}
