package thanos

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// evalInterval is both servers' default rule evaluation interval; every
// group of the pack sets its own (interval: 1m).
const evalInterval = 15 * time.Second

// orderRules is a group of two rules, the second reading what the first
// recorded in the same evaluation: the pack relies on that (its rules read the
// minute just recorded as last_over_time(<record>[1m])). Evaluated every 10 s,
// `second` holds this evaluation's `first` (its time) if the rule sees it,
// and nothing otherwise (the previous evaluation's sample is outside (t-5s, t]).
const orderRules = `groups:
  - name: pairwise-order
    interval: 10s
    rules:
      - record: pairwise_order:first
        expr: vector(time())
      - record: pairwise_order:second
        expr: last_over_time(pairwise_order:first[5s])
`

// TestRulePackInThanosRuler checks what Thanos Ruler can run of the
// committed rules/pairwise.rules.yml. Thanos 0.42.4 parses Prometheus 3.9's
// PromQL, which has no histogram trim operators (</, >/, Prometheus 3.11),
// and the pack's promote counts use them: Thanos refuses the whole file
// (thanos tools rules-check, the parser the ruler loads it with), and the
// test fails if that changes. The ruler is given the pack's rules that read
// the raw series (each fleet's merged histogram of the minute, native buckets
// included, and its samples and series packed in one number), evaluating through the
// gRPC query API of a Thanos Query over a sidecar and the ruler's own
// StoreAPI, read back through the same Query; a Prometheus serving a copy of
// the same data runs the whole pack. Every rule must evaluate without error
// in the ruler, and those records must be the same in both for each minute
// compared, read at the end of the minute (a sample stamped in [M, M+60s)
// holds minute M, whatever each server's offset in the minute). It also
// checks directly whether a rule sees what the rule before it in its group
// recorded in the same evaluation: Prometheus's rules do, Thanos Ruler
// 0.42.4's do not, so the rest of the pack's chain could not run there as it
// is written even if it parsed.
func TestRulePackInThanosRuler(t *testing.T) {
	testenv.Binary(t, "thanos")
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	packPath := filepath.Join(root, "rules", "pairwise.rules.yml")
	pack, err := os.ReadFile(packPath)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(testenv.Binary(t, "thanos"), "tools", "rules-check", "--rules="+packPath).CombinedOutput(); err == nil || !strings.Contains(string(out), "parse error") {
		t.Errorf("thanos tools rules-check %s: want the parse error of a Prometheus 3.9 parser at the pack's trim operators, got %v:\n%s\nIf Thanos now parses the pack, load all of it into the ruler here and update rules/README.md (Thanos and Mimir)", packPath, err, out)
	}
	reads, err := rawReads(pack)
	if err != nil {
		t.Fatal(err)
	}
	readsPath := filepath.Join(t.TempDir(), "reads.yml")
	if err := os.WriteFile(readsPath, reads, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(testenv.Binary(t, "thanos"), "tools", "rules-check", "--rules="+readsPath).CombinedOutput(); err != nil {
		t.Fatalf("thanos tools rules-check of the pack's raw reads: %v\n%s", err, out)
	}
	// 80 minutes of data ending at D, a whole minute 100 to 160 s from now
	// (time to generate the data and start five servers). The canary turns
	// 1.5x slower 55 minutes in. Prometheus cannot record into the time its
	// blocks cover, so it records from minute D on: minute D (the last of the
	// data) and D+1 (no data) are compared.
	dataEnd := time.Now().UTC().Add(100 * time.Second).Truncate(time.Minute).Add(time.Minute)
	lastMinute := dataEnd.Add(time.Minute)
	dir, _ := testenv.Generate(t, "--end", dataEnd.Format(time.RFC3339), "--minutes", "80", "--pods", "4",
		"--total-rps", "2000", "--canary-share", "0.5", "--seed", "5",
		"--scenario", "regression", "--regression-factor", "1.5", "--regression-start-minute", "55")
	copyDir := filepath.Join(t.TempDir(), "data")
	if err := copyTree(dir, copyDir); err != nil {
		t.Fatal(err)
	}
	plain := testenv.Prometheus(t, testenv.PromOptions{
		DataDir: dir,
		Config:  fmt.Sprintf("global:\n  evaluation_interval: %s\nrule_files:\n  - pairwise.rules.yml\n  - order.yml\n", evalInterval),
		Files:   map[string]string{"pairwise.rules.yml": string(pack), "order.yml": orderRules},
	})
	p := testenv.ThanosPrometheus(t, testenv.PromOptions{DataDir: copyDir}, "pairwise")
	side := testenv.ThanosSidecar(t, p)
	// The ruler evaluates through the gRPC query API of a Query that also
	// reads the ruler's own StoreAPI, so rules can read the series recorded
	// before them. (Through the HTTP API, --query, Thanos Ruler 0.42.4 records
	// every native histogram result as a float 0.) Its external label is the
	// Prometheus's, so every series the Query answers carries the same
	// cluster label.
	queryGRPC := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ruler := testenv.ThanosRuler(t, testenv.ThanosRulerOptions{
		GRPCQueryAddr: queryGRPC,
		Files:         map[string]string{"pairwise.rules.yml": string(reads), "order.yml": orderRules},
		EvalInterval:  evalInterval,
		Labels:        map[string]string{testenv.ThanosPromExternalLabel: "pairwise"},
	})
	q := testenv.ThanosQuery(t, testenv.ThanosQueryOptions{GRPCAddr: queryGRPC, Endpoints: []string{side.GRPCAddr, ruler.GRPCAddr}})
	if time.Now().After(dataEnd) {
		t.Fatalf("the servers were ready at %s, after the minute compared began (%s)", time.Now().UTC().Format(time.RFC3339), dataEnd.Format(time.RFC3339))
	}

	// Every rule of both was evaluated in the last minute compared (each
	// group evaluates once in a minute, its rules in order), so every
	// evaluation of the minutes compared is over; and every one is healthy.
	time.Sleep(time.Until(lastMinute))
	rules := waitRulesHealthy(t, ruler.URL, lastMinute, 2*time.Minute)
	t.Logf("Thanos Ruler: %d rules, every one health ok without error", len(rules))
	waitRulesHealthy(t, plain.URL, lastMinute, time.Minute)

	// Each server's records, by series and minute: a sample stamped in
	// [M, M+60s) holds minute M. Read at the end of the last minute.
	at := lastMinute.Add(time.Minute - time.Millisecond)
	const recorded = `{__name__=~"canary_fleet:.+|canary:.+"}`
	rangeSel := recorded + "[3m]" // minutes D and D+1
	want := recordedMinutes(t, plain.URL, rangeSel, at)
	got := recordedMinutes(t, q.URL, rangeSel, at)
	if len(want) == 0 {
		t.Fatalf("Prometheus recorded nothing for %s at %s", rangeSel, at.Format(time.RFC3339Nano))
	}

	// The minutes read from the raw series (each fleet's merged histogram,
	// count, sum and every bucket, and its samples and series packed):
	// equal in both for every minute compared.
	for m := dataEnd; !m.After(lastMinute); m = m.Add(time.Minute) {
		n, names, maxRel := compareRecords(t, "minute "+m.Format("15:04"), want.minute(m, readsRaw), got.minute(m, readsRaw))
		t.Logf("minute ending %s: %d figures of %d record names read from the raw series equal in Prometheus and Thanos Ruler (largest relative difference %.3g)",
			m.Format(time.RFC3339), n, names, maxRel)
		if m.Equal(dataEnd) && names != 4 {
			t.Errorf("minute ending %s: records of %d of the 4 names read from the raw series (native and classic, histogram and samples) compared", m.Format(time.RFC3339), names)
		}
	}

	// The rule order, directly: in Prometheus every evaluation of
	// pairwise_order:second holds the pairwise_order:first of the same
	// evaluation; in Thanos Ruler 0.42.4 none does. (Read up to lastMinute,
	// long past: no evaluation is under way there.)
	for _, s := range []struct {
		name, url string
		sees      bool
	}{{"Prometheus", plain.URL, true}, {"Thanos Ruler", q.URL, false}} {
		first := samples(t, s.url, "pairwise_order:first[2m]", lastMinute)
		second := samples(t, s.url, "pairwise_order:second[2m]", lastMinute)
		seen := 0
		for ts, v := range first {
			if w, ok := second[ts]; ok && w == v {
				seen++
			}
		}
		t.Logf("%s: a rule saw what the rule before it in its group recorded in the same evaluation in %d of %d evaluations (%d samples of the second rule)", s.name, seen, len(first), len(second))
		if len(first) < 5 || (s.sees && (seen != len(first) || len(second) != len(first))) {
			t.Errorf("%s: want every evaluation of at least 5 to see the rule before it", s.name)
		}
		if !s.sees && (seen != 0 || len(second) != 0) {
			t.Errorf("%s now sees what an earlier rule of its group recorded in the same evaluation: compare every record of the pack, and update rules/README.md (Thanos and Mimir)", s.name)
		}
	}
}

// records are a server's recorded samples: series key -> minute (Unix ms of
// the minute's end, the sample's time truncated to the minute) -> value. A
// native histogram is a key per count, sum and bucket.
type records map[string]map[int64]float64

// readsRaw tells the records read from the raw series, each fleet's
// histogram of the minute and its samples and series packed in one number, from the
// others (the health is computed from those samples by the next rule).
func readsRaw(key string) bool {
	name := strings.SplitN(key, "{", 2)[0]
	return strings.HasSuffix(name, ":increase_1m") || strings.HasSuffix(name, ":samples_1m")
}

// minute returns the records of minute m that keep says to.
func (r records) minute(m time.Time, keep func(key string) bool) map[string]float64 {
	out := map[string]float64{}
	for key, byMinute := range r {
		if v, ok := byMinute[m.UnixMilli()]; ok && keep(key) {
			out[key] = v
		}
	}
	return out
}

// compareRecords fails the test for every series one server recorded and the
// other did not, or with another value (beyond 1e-9 relative); it returns
// how many were equal, of how many names, and the largest relative
// difference.
func compareRecords(t *testing.T, what string, want, got map[string]float64) (n, names int, maxRel float64) {
	t.Helper()
	seen := map[string]bool{}
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("%s: %s: recorded by Prometheus (%v), not by Thanos Ruler", what, key, w)
			continue
		}
		if math.IsNaN(w) || math.IsNaN(g) {
			if math.IsNaN(w) != math.IsNaN(g) {
				t.Errorf("%s: %s: Prometheus %v, Thanos Ruler %v", what, key, w, g)
				continue
			}
		} else {
			rel := math.Abs(w-g) / math.Max(1e-300, math.Max(math.Abs(w), math.Abs(g)))
			if w != g && rel > 1e-9 {
				t.Errorf("%s: %s: Prometheus %.17g, Thanos Ruler %.17g", what, key, w, g)
				continue
			}
			maxRel = math.Max(maxRel, rel)
		}
		n++
		seen[strings.SplitN(key, "{", 2)[0]] = true
	}
	for key, g := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: %s: recorded by Thanos Ruler (%v), not by Prometheus", what, key, g)
		}
	}
	return n, len(seen), maxRel
}

// recordedMinutes reads the range selector sel at `at` from base, each sample
// by its series (without the external label the Thanos stack adds) and its
// minute.
func recordedMinutes(t *testing.T, base, sel string, at time.Time) records {
	t.Helper()
	out := records{}
	add := func(key string, ms int64, v float64) {
		if out[key] == nil {
			out[key] = map[int64]float64{}
		}
		m := time.UnixMilli(ms).UTC().Truncate(time.Minute).UnixMilli()
		if _, dup := out[key][m]; dup {
			t.Errorf("%s: %s: two samples in the minute ending %s", base, key, time.UnixMilli(m).UTC().Format(time.RFC3339))
		}
		out[key][m] = v
	}
	for _, s := range queryMatrix(t, base, sel, at) {
		key := seriesKey(s.Metric)
		for _, v := range s.Values {
			add(key, sampleTime(t, base, v[0]), parseFloat(t, base, key, fmt.Sprint(v[1])))
		}
		for _, h := range s.Histograms {
			ms := sampleTime(t, base, h[0])
			for suffix, v := range histogramFigures(t, base, key, h[1]) {
				add(key+suffix, ms, v)
			}
		}
	}
	return out
}

// samples reads the float samples of the range selector sel at `at` from
// base, of one series, by their time (Unix ms).
func samples(t *testing.T, base, sel string, at time.Time) map[int64]float64 {
	t.Helper()
	res := queryMatrix(t, base, sel, at)
	if len(res) > 1 {
		t.Fatalf("%s: %s: %d series, want one", base, sel, len(res))
	}
	out := map[int64]float64{}
	for _, s := range res {
		for _, v := range s.Values {
			out[sampleTime(t, base, v[0])] = parseFloat(t, base, sel, fmt.Sprint(v[1]))
		}
	}
	return out
}

type matrixSeries struct {
	Metric     map[string]string `json:"metric"`
	Values     [][2]any          `json:"values"`
	Histograms [][2]any          `json:"histograms"` // [time, {count, sum, buckets}]
}

func queryMatrix(t *testing.T, base, query string, at time.Time) []matrixSeries {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/query", url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string         `json:"resultType"`
			Result     []matrixSeries `json:"result"`
		} `json:"data"`
		Warnings []string `json:"warnings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" || body.Data.ResultType != "matrix" {
		t.Fatalf("%s: query %s: %v %s (result type %q)", base, query, err, body.Error, body.Data.ResultType)
	}
	if len(body.Warnings) > 0 {
		t.Errorf("%s: query %s: warnings %q", base, query, body.Warnings)
	}
	return body.Data.Result
}

// seriesKey is a series' name and labels, without the external label the
// Thanos stack adds.
func seriesKey(metric map[string]string) string {
	var labels []string
	for k, v := range metric {
		if k != "__name__" && k != testenv.ThanosPromExternalLabel {
			labels = append(labels, fmt.Sprintf("%s=%q", k, v))
		}
	}
	slices.Sort(labels)
	return metric["__name__"] + "{" + strings.Join(labels, ",") + "}"
}

// sampleTime reads a sample's time (seconds, as a JSON number) in Unix ms.
func sampleTime(t *testing.T, base string, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s: sample time %v", base, v)
	}
	return int64(math.Round(f * 1000))
}

// histogramFigures returns a recorded native histogram's count, sum and
// buckets, by a key suffix each.
func histogramFigures(t *testing.T, base, key string, v any) map[string]float64 {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Count   string  `json:"count"`
		Sum     string  `json:"sum"`
		Buckets [][]any `json:"buckets"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("%s: %s: histogram %s: %v", base, key, raw, err)
	}
	out := map[string]float64{" count": parseFloat(t, base, key, h.Count), " sum": parseFloat(t, base, key, h.Sum)}
	for _, b := range h.Buckets {
		if len(b) != 4 {
			t.Fatalf("%s: %s: bucket %v", base, key, b)
		}
		out[fmt.Sprintf(" bucket %v(%v,%v)", b[0], b[1], b[2])] = parseFloat(t, base, key, fmt.Sprint(b[3]))
	}
	return out
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

// rawReads is the rule file pack with only its rules that read the raw
// series (readsRaw), each group's other settings kept.
func rawReads(pack []byte) ([]byte, error) {
	var file struct {
		Groups []map[string]any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(pack, &file); err != nil {
		return nil, err
	}
	n := 0
	for _, g := range file.Groups {
		rules, _ := g["rules"].([]any)
		var kept []any
		for _, r := range rules {
			if rule, ok := r.(map[string]any); ok && readsRaw(fmt.Sprint(rule["record"])) {
				kept = append(kept, r)
			}
		}
		g["rules"] = kept
		n += len(kept)
	}
	if n == 0 {
		return nil, fmt.Errorf("no rule of the pack reads the raw series")
	}
	return yaml.Marshal(file)
}
