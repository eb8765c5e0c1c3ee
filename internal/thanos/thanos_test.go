// Package thanos runs Pairwise against Thanos 0.42.4 (built by
// tools/install.sh): the judge through Thanos Query over a sidecar must see
// what it sees in Prometheus itself, a partial answer from Thanos must hold
// the decision, and the rule pack must evaluate in Thanos Ruler as it does in
// Prometheus.
package thanos

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/pairing"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// end is the end of the judge's data: a fixed whole minute.
var end = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const metric = testenv.GeneratedMetric

// judgeStack is generated fleets in a Prometheus with a sidecar, and a
// Thanos Query over the sidecar.
type judgeStack struct {
	prom    *testenv.PromServer
	sidecar *testenv.ThanosServer
	query   *testenv.ThanosServer
	direct  *prom.Client // Prometheus itself
	thanos  *prom.Client // Thanos Query
}

// startJudgeStack serves 100 minutes of 4 pods a fleet at 1,000 req/s each,
// the canary 1.5x slower from minute 80 (the window ending at `end` rolls
// back; the one ending 20 minutes earlier, before the regression, promotes),
// with a counter reset in each fleet.
func startJudgeStack(t *testing.T) *judgeStack {
	t.Helper()
	testenv.Binary(t, "thanos") // fail first, and clearly, without Thanos
	dir, _ := testenv.Generate(t, "--end", end.Format(time.RFC3339), "--minutes", "100", "--pods", "4",
		"--total-rps", "2000", "--canary-share", "0.5", "--seed", "11",
		"--scenario", "regression", "--regression-factor", "1.5", "--regression-start-minute", "80",
		"--restart", "checkout-canary-1@50", "--restart", "checkout-baseline-2@70")
	p := testenv.ThanosPrometheus(t, testenv.PromOptions{DataDir: dir}, "pairwise")
	side := testenv.ThanosSidecar(t, p)
	q := testenv.ThanosQuery(t, testenv.ThanosQueryOptions{Endpoints: []string{side.GRPCAddr}})
	return &judgeStack{prom: p, sidecar: side, query: q, direct: client(t, p.URL), thanos: client(t, q.URL)}
}

func client(t *testing.T, url string) *prom.Client {
	t.Helper()
	c, err := prom.New(url, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request(t *testing.T, kind prom.Kind, at time.Time) engine.Request {
	t.Helper()
	baseline, canary := testenv.GeneratedFleets(t)
	w, err := pairing.Ending(at, 60, 0)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Request{Metric: metric, Baseline: baseline, Canary: canary, Kind: kind, Config: verdict.Default(), Window: w}
}

// analyze runs engine.Analyze against c; on an error the test fails with the
// end of the logs of the Thanos components named (those it went through).
func analyze(t *testing.T, c *prom.Client, req engine.Request, through ...*testenv.ThanosServer) *engine.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := engine.Analyze(ctx, c, req)
	if err != nil {
		var logs strings.Builder
		for _, s := range through {
			fmt.Fprintf(&logs, "\nlast lines of %s:\n%s", s.LogFile, s.LogTail(40))
		}
		t.Fatalf("engine.Analyze against %s: %v%s", c.BaseURL, err, logs.String())
	}
	return res
}

// TestJudgeThroughThanosQuery runs the judge's checks on one stack
// (generating and serving the data is the slow part).
func TestJudgeThroughThanosQuery(t *testing.T) {
	st := startJudgeStack(t)
	t.Run("engine through Thanos Query equals Prometheus", st.engineParity)
	t.Run("pairwise judge through Thanos Query", st.judgeBinary)
	t.Run("a partial answer holds", st.partialResponse)
}

// engineParity: for native and classic histograms, and a window that rolls
// back and one that promotes, engine.Analyze through Thanos Query gives what
// it gives against Prometheus: the fleets' merged histograms and health per
// minute, every minute's quantiles, verdict, evidence and decision, and the
// window's decision, counts and flags (floats to relTolerance).
//
// The data hold a counter reset in each fleet. When a minute was a one-minute
// increase(), Thanos Query extrapolated a classic bucket's increase in the
// minute after a reset as if the counter had not reset (no cut at its zero
// point) and counted 3% more than Prometheus there. A minute read over a
// minute and one scrape interval starts from the last sample before the
// reset, which is far from zero, so both agree everywhere.
func (st *judgeStack) engineParity(t *testing.T) {
	for _, kind := range []prom.Kind{prom.Native, prom.Classic} {
		for _, c := range []struct {
			at   time.Time
			want verdict.Decision
		}{{end, verdict.Rollback}, {end.Add(-20 * time.Minute), verdict.Promote}} {
			t.Run(fmt.Sprintf("%s at %s", kind, c.at.Format("15:04")), func(t *testing.T) {
				req := request(t, kind, c.at)
				direct, thanos := analyze(t, st.direct, req), analyze(t, st.thanos, req, st.query, st.sidecar)
				if direct.Decision != c.want || len(direct.Minutes) != 60 {
					t.Fatalf("against Prometheus: %s over %d minutes, want %s over 60: the scenario is not the one this test compares", direct.Decision, len(direct.Minutes), c.want)
				}
				if direct.BaselineKind != thanos.BaselineKind || direct.CanaryKind != thanos.CanaryKind {
					t.Errorf("kinds read: Prometheus %s/%s, Thanos %s/%s", direct.BaselineKind, direct.CanaryKind, thanos.BaselineKind, thanos.CanaryKind)
				}
				if !slices.Equal(direct.Warnings, thanos.Warnings) {
					t.Errorf("warnings: Prometheus %q, Thanos %q", direct.Warnings, thanos.Warnings)
				}
				// The raw material, minute by minute, over the range the engine fetched.
				r := prom.Range{Start: req.Window.First.Add(-time.Duration(req.Config.WindowMinutes+req.Config.WarmupMinutes+verdict.StableMinutes) * time.Minute), End: req.Window.Last}
				for _, sel := range []selector.Selector{req.Baseline, req.Canary} {
					if differs := st.compareFleet(t, sel, kind, r); len(differs) > 0 {
						t.Errorf("%s: %s histograms differ in the minutes %v", sel, kind, minutes(differs))
					}
				}
				if d := diff("window", reflect.ValueOf(direct.Window), reflect.ValueOf(thanos.Window)); d != "" {
					t.Errorf("the judged window differs through Thanos Query: %s", d)
				}
				t.Logf("%s: %s %+v through both (60 minutes, and the histograms and health of every minute fetched)", kind, thanos.Decision, thanos.Counts)
			})
		}
	}
}

// compareFleet compares one fleet's merged histograms and health over r,
// through Prometheus and Thanos Query, and returns the minutes whose
// histograms differ.
func (st *judgeStack) compareFleet(t *testing.T, sel selector.Selector, kind prom.Kind, r prom.Range) []int64 {
	t.Helper()
	ctx := context.Background()
	hd, kd, err := st.direct.FleetHistograms(ctx, metric, sel, kind, r)
	if err != nil {
		t.Fatal(err)
	}
	ht, kt, err := st.thanos.FleetHistograms(ctx, metric, sel, kind, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(hd) < 60 || len(ht) != len(hd) || kd != kt {
		t.Fatalf("%s: Prometheus gives %d minutes of %s histograms, Thanos %d of %s", sel, len(hd), kd, len(ht), kt)
	}
	var differs []int64
	for ts, h := range hd {
		if d := diff("histogram", reflect.ValueOf(h), reflect.ValueOf(ht[ts])); d != "" {
			differs = append(differs, ts)
			t.Logf("%s, minute %s: %s", sel, time.Unix(ts, 0).UTC().Format("15:04"), d)
		}
	}
	slices.Sort(differs)
	gd, err := st.direct.FleetHealth(ctx, metric, sel, kind, r)
	if err != nil {
		t.Fatal(err)
	}
	gt, err := st.thanos.FleetHealth(ctx, metric, sel, kind, r)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff("health", reflect.ValueOf(gd), reflect.ValueOf(gt)); d != "" || len(gd) == 0 {
		t.Errorf("%s: fleet health differs through Thanos Query (%d minutes): %s", sel, len(gd), d)
	}
	return differs
}

func minutes(ts []int64) []string {
	out := make([]string, len(ts))
	for i, s := range ts {
		out[i] = time.Unix(s, 0).UTC().Format("15:04")
	}
	return out
}

// judgeBinary runs the built `pairwise judge` against Prometheus and against
// Thanos Query: the same exit code and the same JSON document (numbers to
// relTolerance).
func (st *judgeStack) judgeBinary(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "pairwise")
	build := exec.Command("go", "build", "-o", bin, "./cmd/pairwise")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/pairwise: %v\n%s", err, out)
	}
	judge := func(url string) (int, map[string]any) {
		cmd := exec.Command(bin, "judge", "--prometheus", url, "--metric", metric,
			"--baseline", `{service="checkout",track="baseline"}`, "--canary", `{service="checkout",track="canary"}`,
			"--at", end.Format(time.RFC3339), "--output", "json")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("pairwise judge --prometheus %s: exit %d, no JSON document (%v): %s %s", url, code, err, out, stderr.String())
		}
		return code, doc
	}
	codeP, docP := judge(st.prom.URL)
	codeT, docT := judge(st.query.URL)
	if codeP != 2 || docP["decision"] != "rollback" {
		t.Fatalf("against Prometheus: exit %d, decision %v; want 2, rollback", codeP, docP["decision"])
	}
	if d := diff("document", reflect.ValueOf(docP), reflect.ValueOf(docT)); codeT != codeP || d != "" {
		t.Fatalf("pairwise judge: exit %d against Prometheus, %d against Thanos Query; %s", codeP, codeT, d)
	}
	t.Logf("pairwise judge --output json: exit %d, decision %v, the same document through Thanos Query", codeT, docT["decision"])
}

// partialResponse: a Thanos Query with a second store endpoint that does not
// answer (--endpoint-strict keeps it in the fan-out) answers with partial
// response enabled (its default) and a warning. The engine must carry the
// warning, flag partial-response and hold a window that, read from
// Prometheus itself, promotes; the minutes themselves are unchanged.
func (st *judgeStack) partialResponse(t *testing.T) {
	dead := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	q := testenv.ThanosQuery(t, testenv.ThanosQueryOptions{Endpoints: []string{st.sidecar.GRPCAddr}, Args: []string{"--endpoint-strict=" + dead}})
	req := request(t, prom.Native, end.Add(-20*time.Minute))
	direct := analyze(t, st.direct, req)
	partial := analyze(t, client(t, q.URL), req, q, st.sidecar)
	if direct.Decision != verdict.Promote || slices.Contains(direct.Flags, verdict.FlagPartialResponse) {
		t.Fatalf("against Prometheus: %s with flags %v, want promote without partial-response", direct.Decision, direct.Flags)
	}
	if !slices.Contains(partial.Flags, verdict.FlagPartialResponse) {
		t.Fatalf("through Thanos Query with a dead store: flags %v, notes %q: the partial answer was not noticed", partial.Flags, partial.Notes)
	}
	if partial.Decision == verdict.Promote || partial.Decision == "" {
		t.Fatalf("through Thanos Query with a dead store: %s (%s), want hold", partial.Decision, partial.Reason)
	}
	if !strings.Contains(strings.Join(partial.Notes, " "), dead) {
		t.Errorf("the notes do not name the store that did not answer (%s): %q", dead, partial.Notes)
	}
	// The flag holds every minute's decision; the figures are the live store's, in full.
	for i, m := range direct.Minutes {
		o := partial.Minutes[i]
		for _, f := range []struct {
			name string
			a, b any
		}{{"baseline", m.Baseline, o.Baseline}, {"canary", m.Canary, o.Canary}, {"verdict", m.Verdict, o.Verdict}, {"evidence", m.Evidence, o.Evidence}, {"window evidence", m.Window, o.Window}} {
			if d := diff(f.name, reflect.ValueOf(f.a), reflect.ValueOf(f.b)); d != "" {
				t.Errorf("minute %s differs (the live store answered in full): %s", m.Time.Format("15:04"), d)
			}
		}
		if o.Decision == verdict.Promote {
			t.Errorf("minute %s: the window ending there promotes on a partial answer", m.Time.Format("15:04"))
		}
	}
	t.Logf("through Thanos Query with a dead store: %s, flags %v; %s", partial.Decision, partial.Flags, strings.Join(partial.Notes, " "))

	// What rules/README.md says of a dead store given with plain --endpoint:
	// Thanos Query leaves it out of the fan-out, and its answer carries no
	// warning, so nothing lets the engine notice.
	q = testenv.ThanosQuery(t, testenv.ThanosQueryOptions{Endpoints: []string{st.sidecar.GRPCAddr}, Args: []string{"--endpoint=" + dead}})
	if unseen := analyze(t, client(t, q.URL), req, q, st.sidecar); unseen.Decision != verdict.Promote || slices.Contains(unseen.Flags, verdict.FlagPartialResponse) {
		t.Errorf("with a dead store given with --endpoint, Thanos Query now warns (%s, flags %v, notes %q): update rules/README.md", unseen.Decision, unseen.Flags, unseen.Notes)
	}
}

// relTolerance is how far apart two floats may be and still be equal: the
// last bits of a sum depend on the order of its terms, and Thanos Query sums a
// fleet's series in another order than Prometheus.
const relTolerance = 1e-12

// diff reports the first difference between a and b, of the same type: NaN
// equals NaN, times are compared as instants, floats to relTolerance, and
// everything else exactly.
func diff(path string, a, b reflect.Value) string {
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: types %s and %s", path, a.Type(), b.Type())
	}
	if a.Type() == reflect.TypeFor[time.Time]() && a.CanInterface() {
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		if !ta.Equal(tb) {
			return fmt.Sprintf("%s: %s != %s", path, ta, tb)
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		if x == y || math.IsNaN(x) && math.IsNaN(y) || math.Abs(x-y) <= relTolerance*math.Max(math.Abs(x), math.Abs(y)) {
			return ""
		}
		return fmt.Sprintf("%s: %.17g != %.17g", path, x, y)
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v, nil %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return diff(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if d := diff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d != %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d entries != %d", path, a.Len(), b.Len())
		}
		keys := a.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		for _, k := range keys {
			vb := b.MapIndex(k)
			if !vb.IsValid() {
				return fmt.Sprintf("%s[%v]: missing", path, k)
			}
			if d := diff(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), vb); d != "" {
				return d
			}
		}
		return ""
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf("%s: %q != %q", path, a.String(), b.String())
		}
		return ""
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Sprintf("%s: %v != %v", path, a.Bool(), b.Bool())
		}
		return ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Sprintf("%s: %d != %d", path, a.Int(), b.Int())
		}
		return ""
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if a.Uint() != b.Uint() {
			return fmt.Sprintf("%s: %d != %d", path, a.Uint(), b.Uint())
		}
		return ""
	case reflect.Func:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: func set %v, %v", path, !a.IsNil(), !b.IsNil())
		}
		return ""
	}
	return fmt.Sprintf("%s: cannot compare a %s", path, a.Kind())
}
