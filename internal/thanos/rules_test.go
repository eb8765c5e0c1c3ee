package thanos

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// evalInterval is both servers' rule evaluation interval.
const evalInterval = 15 * time.Second

// TestRulePackInThanosRuler loads the committed rules/pairwise.rules.yml, as
// it is, into Thanos Ruler (evaluating through Thanos Query over a sidecar,
// and reading the series it recorded back through the same Query) and into a
// Prometheus serving a copy of the same data. Every rule must evaluate
// without error in the ruler, and every recorded series (canary_fleet:* and
// canary:*: the fleets' minute figures, verdicts, evidence and decisions)
// must have the same value in both at the same minute.
func TestRulePackInThanosRuler(t *testing.T) {
	testenv.Binary(t, "thanos")
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	pack, err := os.ReadFile(filepath.Join(root, "rules", "pairwise.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// 80 minutes of data ending at D, a whole minute 4 minutes from now (time
	// to generate the data and start five servers on a busy machine). The
	// rules evaluated in the minute [D, D+60s) figure the minute ending at D
	// and windows ending there, all inside the data: that minute is compared.
	// (Prometheus cannot record into the time its blocks cover, so its rules
	// fail until D; later minutes have no data.) The canary turns 1.5x slower
	// 55 minutes in.
	dataEnd := time.Now().UTC().Truncate(time.Minute).Add(4 * time.Minute)
	dir, _ := testenv.Generate(t, "--end", dataEnd.Format(time.RFC3339), "--minutes", "80", "--pods", "4",
		"--total-rps", "2000", "--canary-share", "0.5", "--seed", "5",
		"--scenario", "regression", "--regression-factor", "1.5", "--regression-start-minute", "55")
	copyDir := filepath.Join(t.TempDir(), "data")
	if err := copyTree(dir, copyDir); err != nil {
		t.Fatal(err)
	}

	plain := testenv.Prometheus(t, testenv.PromOptions{
		DataDir: dir,
		Config:  fmt.Sprintf("global:\n  evaluation_interval: %s\nrule_files:\n  - pairwise.rules.yml\n", evalInterval),
		Files:   map[string]string{"pairwise.rules.yml": string(pack)},
	})
	p := testenv.ThanosPrometheus(t, testenv.PromOptions{DataDir: copyDir}, "pairwise")
	side := testenv.ThanosSidecar(t, p)
	// The ruler evaluates through a Query that also reads the ruler's own
	// StoreAPI, so rules can read the series recorded before them. Its
	// external label is the Prometheus's, so every series the Query answers
	// carries the same cluster label.
	queryAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ruler := testenv.ThanosRuler(t, testenv.ThanosRulerOptions{
		QueryAddr:    queryAddr,
		Files:        map[string]string{"pairwise.rules.yml": string(pack)},
		EvalInterval: evalInterval,
		Labels:       map[string]string{testenv.ThanosPromExternalLabel: "pairwise"},
	})
	q := testenv.ThanosQuery(t, testenv.ThanosQueryOptions{Addr: queryAddr, Endpoints: []string{side.GRPCAddr, ruler.GRPCAddr}})
	queryReady := time.Now()

	// Every rule of the ruler evaluated, without error, after the Query was up.
	rules := waitRulesHealthy(t, ruler.URL, queryReady.Add(evalInterval), 4*time.Minute)
	t.Logf("Thanos Ruler: %d rules, every one health ok without error", len(rules))

	// Minute D: each rule's figure is for the whole minute ending at D
	// ([1m:1m] subqueries) at every evaluation in [D, D+60s). The value at
	// D+50s is the last evaluation at or before it, in that minute on both.
	at := dataEnd.Add(50 * time.Second)
	time.Sleep(time.Until(dataEnd))
	waitRulesHealthy(t, plain.URL, dataEnd, 2*time.Minute)
	if time.Now().After(at) {
		t.Fatalf("the servers took until %s to evaluate after %s: too late to compare the minute ending then", time.Now().UTC().Format(time.RFC3339), dataEnd.Format(time.RFC3339))
	}
	time.Sleep(time.Until(at.Add(2 * evalInterval))) // let a slow group finish its evaluations before `at`
	waitRulesHealthy(t, ruler.URL, at, 2*time.Minute)
	waitRulesHealthy(t, plain.URL, at, time.Minute)

	const recorded = `{__name__=~"canary_fleet:.+|canary:.+"}`
	want := instantVector(t, plain.URL, recorded, at)
	got := instantVector(t, q.URL, recorded, at)
	if len(want) == 0 {
		t.Fatalf("Prometheus recorded nothing for %s at %s", recorded, at.Format(time.RFC3339))
	}
	names := map[string]bool{}
	var maxRel float64
	for key, w := range want {
		names[strings.SplitN(key, "{", 2)[0]] = true
		g, ok := got[key]
		if !ok {
			t.Errorf("%s: recorded by Prometheus (%v), not by Thanos Ruler", key, w)
			continue
		}
		if math.IsNaN(w) || math.IsNaN(g) {
			if math.IsNaN(w) != math.IsNaN(g) {
				t.Errorf("%s: Prometheus %v, Thanos Ruler %v", key, w, g)
			}
			continue
		}
		rel := math.Abs(w-g) / math.Max(1e-300, math.Max(math.Abs(w), math.Abs(g)))
		if w != g && rel > 1e-9 {
			t.Errorf("%s: Prometheus %.17g, Thanos Ruler %.17g", key, w, g)
		}
		maxRel = math.Max(maxRel, rel)
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: recorded by Thanos Ruler, not by Prometheus", key)
		}
	}
	for _, c := range []string{"checkout", "checkout-classic"} {
		key := fmt.Sprintf(`canary:http_request_duration_seconds:decision_60m{canary=%q}`, c)
		if _, ok := want[key]; !ok {
			t.Errorf("no decision recorded for canary %s: the comparison does not reach the end of the pack's chain", c)
		}
		t.Logf("%s: Prometheus %v, Thanos Ruler %v (0 promote, 1 hold, 2 rollback)", key, want[key], got[key])
	}
	t.Logf("minute ending %s: %d recorded series of %d names equal in Prometheus and Thanos Ruler (largest relative difference %.3g)",
		dataEnd.Format(time.RFC3339), len(want), len(names), maxRel)
}

// waitRulesHealthy waits until every rule of the server at base was last
// evaluated after `after`, and fails the test unless each is healthy.
func waitRulesHealthy(t *testing.T, base string, after time.Time, timeout time.Duration) []testenv.RuleState {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rules, err := testenv.Rules(base)
		if err != nil {
			t.Fatal(err)
		}
		stale := 0
		for _, r := range rules {
			if !r.LastEvaluation.After(after) {
				stale++
			}
		}
		if len(rules) > 0 && stale == 0 {
			var bad []string
			for _, r := range rules {
				if r.Health != "ok" || r.LastError != "" {
					bad = append(bad, fmt.Sprintf("%s/%s (%s): health %q, error %q", r.Group, r.Name, r.Type, r.Health, r.LastError))
				}
			}
			if len(bad) > 0 {
				t.Fatalf("%s: %d of %d rules fail:\n%s", base, len(bad), len(rules), strings.Join(bad, "\n"))
			}
			return rules
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d rules not evaluated since %s after %v", base, stale, len(rules), after.Format(time.RFC3339), timeout)
		}
		time.Sleep(time.Second)
	}
}

// instantVector queries base at `at` and returns each series' value by its
// name and labels, without the external label the Thanos stack adds.
func instantVector(t *testing.T, base, query string, at time.Time) map[string]float64 {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/query", url.Values{"query": {query}, "time": {strconv.FormatInt(at.Unix(), 10)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric    map[string]string `json:"metric"`
				Value     [2]any            `json:"value"`
				Histogram []json.RawMessage `json:"histogram"` // [time, {count, sum, buckets}]
			} `json:"result"`
		} `json:"data"`
		Warnings []string `json:"warnings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("%s: query %s: %v %s", base, query, err, body.Error)
	}
	if len(body.Warnings) > 0 {
		t.Errorf("%s: query %s: warnings %q", base, query, body.Warnings)
	}
	out := map[string]float64{}
	for _, s := range body.Data.Result {
		name := s.Metric["__name__"]
		var labels []string
		for k, v := range s.Metric {
			if k != "__name__" && k != testenv.ThanosPromExternalLabel {
				labels = append(labels, fmt.Sprintf("%s=%q", k, v))
			}
		}
		slices.Sort(labels)
		key := name + "{" + strings.Join(labels, ",") + "}"
		if len(s.Histogram) == 2 {
			// A recorded native histogram: its count, sum and each bucket.
			var h struct {
				Count   string  `json:"count"`
				Sum     string  `json:"sum"`
				Buckets [][]any `json:"buckets"`
			}
			if err := json.Unmarshal(s.Histogram[1], &h); err != nil {
				t.Fatalf("%s: %s: histogram %s: %v", base, key, s.Histogram[1], err)
			}
			out[key+" count"] = parseFloat(t, base, key, h.Count)
			out[key+" sum"] = parseFloat(t, base, key, h.Sum)
			for _, b := range h.Buckets {
				if len(b) != 4 {
					t.Fatalf("%s: %s: bucket %v", base, key, b)
				}
				out[fmt.Sprintf("%s bucket %v(%v,%v)", key, b[0], b[1], b[2])] = parseFloat(t, base, key, fmt.Sprint(b[3]))
			}
			continue
		}
		out[key] = parseFloat(t, base, key, fmt.Sprint(s.Value[1]))
	}
	return out
}

func parseFloat(t *testing.T, base, key, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%s: %s: value %q", base, key, s)
	}
	return v
}

// copyTree copies the regular files under src to dst: two servers must not
// share one TSDB directory.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
