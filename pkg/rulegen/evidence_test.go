package rulegen

import (
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pairwise-canary/pairwise/internal/testenv"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// spaced normalises PromQL text for comparison: one space around parentheses.
func spaced(s string) string {
	return strings.Join(strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(s)), " ")
}

// has reports whether PromQL text holds a fragment, whatever the line breaks.
func has(text, fragment string) bool { return strings.Contains(spaced(text), spaced(fragment)) }

// recordedName finds the recording rules an expression reads.
var recordedName = regexp.MustCompile(`canary(_fleet)?:[a-zA-Z_][a-zA-Z0-9_]*:[a-z0-9_]+`)

func TestRulesReadOnlySeriesRecordedAboveThemInTheirGroup(t *testing.T) {
	for _, rule := range []func(Canary) Canary{func(c Canary) Canary { return c }, reference} {
		for _, kind := range []string{"native", "classic", "generic"} {
			c := rule(checkout(kind))
			f := File{Canaries: []Canary{c}}
			if kind == "generic" {
				f = File{Generic: []Generic{httpServices()}, Canaries: []Canary{rule(genericCanary("checkout", "checkout")), rule(genericCanary("search", "search"))}}
			}
			t.Run(fmt.Sprintf("%s/%v", kind, c.Rule != nil), func(t *testing.T) {
				rf := renderFile(t, f)
				if len(rf.Groups) != 1 {
					t.Fatalf("%d groups, want 1", len(rf.Groups))
				}
				recorded := map[string]bool{}
				for _, r := range rf.Groups[0].Rules {
					for _, read := range recordedName.FindAllString(r.Expr+r.Annotations["description"]+r.Annotations["summary"], -1) {
						if !recorded[read] {
							t.Errorf("%s%s reads %s, which its group has not recorded above it", r.Record, r.Alert, read)
						}
					}
					if r.Record != "" {
						recorded[r.Record] = true
					}
				}
			})
		}
	}
}

func TestEvidenceSumsReadTheRecordedMinutes(t *testing.T) {
	for _, kind := range []string{"native", "classic"} {
		t.Run(kind, func(t *testing.T) {
			rf := renderFile(t, File{Canaries: []Canary{checkout(kind)}})
			exprs := map[string]string{}
			for _, r := range rf.Groups[0].Rules {
				exprs[r.Record+r.Alert] = oneLine(r.Expr)
			}
			k := prom.Kind(kind)
			c := verdict.Default()
			inputs, counts := exprs["canary:http_request_duration_seconds:evidence_inputs_1m"], exprs["canary:http_request_duration_seconds:evidence_counts_1m"]
			hists, health := prom.MinuteHistogramRecord("http_request_duration_seconds", k), prom.MinuteHealthRecord("http_request_duration_seconds", k)
			readInput := func(term string) string {
				return fmt.Sprintf(`sum(last_over_time(canary:http_request_duration_seconds:evidence_inputs_1m{canary="checkout",term=%q}[1m]))`, term)
			}
			for _, fleet := range []string{"baseline", "canary"} {
				hist := fmt.Sprintf(`last_over_time(%s{canary="checkout",fleet=%q}[1m])`, hists, fleet)
				for _, want := range []string{
					hist,
					// the fleet's samples per series, from its health
					fmt.Sprintf(`sum(last_over_time(%s{canary="checkout",fleet=%q,pairwise_health="samples"}[1m])) / sum(last_over_time(%s{canary="checkout",fleet=%q,pairwise_health="series"}[1m]))`, health, fleet, health, fleet),
				} {
					if !has(inputs, want) {
						t.Errorf("the minute's inputs do not read %s:\n%.300s", want, inputs)
					}
				}
				// The counts read the fleet's histogram and its recorded scale,
				// and do not compute the scale again (its samples are read
				// only to tell a partial minute).
				if !has(counts, hist) || !has(counts, readInput(fleet+"_scale")) || has(counts, "> 0 ) + 1 )") {
					t.Errorf("the minute's counts do not read the %s histogram and its recorded scale only:\n%.300s", fleet, counts)
				}
			}
			if !has(inputs, "histogram_quantile("+verdict.QuantileKey(c.VerdictQuantile)+",") {
				t.Errorf("the minute's inputs lack the pooled quantile")
			}
			// The counts read each vote's threshold as recorded, never the
			// merged histogram's quantile again.
			if !has(counts, readInput("threshold")) || !has(counts, readInput("p90_threshold")) || has(counts, "histogram_quantile(") {
				t.Errorf("the minute's counts do not read the recorded thresholds:\n%.300s", counts)
			}
			if bound := readInput("threshold_bound"); has(counts, bound) != (kind == "native") || has(inputs, `"threshold_bound"`) != (kind == "native") {
				t.Errorf("native counts read the recorded bucket bound, classic counts find it by rank: %s in counts %v", bound, has(counts, bound))
			}
			for _, a := range verdict.TailIndices {
				if want := fmt.Sprintf(`label_replace(vector(%s), "term", "llr_%s"`, numText(math.Pow(c.RollbackThreshold, a)), fmtNum(a)); !has(exprs["canary:http_request_duration_seconds:evidence_terms_1m"], want) {
					t.Errorf("the minute's terms lack the alternative %s", want)
				}
			}
			sums, recent := exprs["canary:http_request_duration_seconds:evidence_sums_60m"], exprs["canary:http_request_duration_seconds:recent_evidence_sums"]
			if want := `sum by (term) (sum_over_time(canary:http_request_duration_seconds:evidence_terms_1m{canary="checkout"}[60m]))`; sums != want {
				t.Errorf("window sums:\n%s\nwant %s", sums, want)
			}
			for _, l := range c.RecentLengths() {
				// Only the LLR terms of every vote.
				llr := `llr_4|llr_8|llr_16|p90_llr_4|p90_llr_8|p90_llr_16|bound_llr_4|bound_llr_8|bound_llr_16`
				run := fmt.Sprintf(`sum by (term) (sum_over_time(canary:http_request_duration_seconds:evidence_terms_1m{canary="checkout",term=~"%s"}[%dm])) or label_replace(vector(%d), "term", "length", "", ""), "recent_minutes", "%d", "", "")`, llr, l, l, l)
				if !has(recent, run) {
					t.Errorf("recent sums lack the %d-minute run %s", l, run)
				}
			}
		})
	}
}

func TestEvidenceBoundariesComeFromTheConfig(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := func(v int) *int { return &v }
	for _, tt := range []struct {
		name string
		o    verdict.Overrides
	}{
		{"defaults", verdict.Overrides{}},
		{"budgets", verdict.Overrides{FalseRollback: f(0.05), FalsePromote: f(0.2)}},
		{"threshold", verdict.Overrides{RollbackThreshold: f(1.25)}},
		{"window", verdict.Overrides{WindowMinutes: n(20), GoodNeeded: n(10), BadLimit: n(3)}},
		{"quantile", verdict.Overrides{VerdictQuantile: f(0.999)}},
		{"minimum", verdict.Overrides{MinRollbackMinutes: n(4)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			canary := checkout("native")
			canary.Overrides = tt.o
			rf := renderFile(t, File{Canaries: []Canary{canary}})
			c := tt.o.Apply(verdict.Default())
			w := strconv.Itoa(c.WindowMinutes) + "m"
			exprs := map[string]string{}
			for _, r := range rf.Groups[0].Rules {
				exprs[r.Record+r.Alert] = oneLine(r.Expr)
			}
			decision := exprs["canary:http_request_duration_seconds:decision_"+w]
			for _, want := range []string{
				">= " + numText(c.RollbackBoundary(false)), ">= " + numText(c.RecentBoundary(false)),
				"<= " + numText(-c.PromoteBoundary(false)), ">= " + strconv.Itoa(c.PromoteMinutes()),
				"unless on() canary:http_request_duration_seconds:flags_" + w + `{canary="checkout"}`,
				// too small to tell: the verdict quantile's summed expected
				// tail beyond its bucket bound, the bound vote's
				`(sum(canary:http_request_duration_seconds:evidence_sums_` + w + `{canary="checkout",term="bound_expected_beyond"}) or vector(0)) >= ` + numText(c.PromoteExpected(false)),
			} {
				if !has(decision, want) {
					t.Errorf("decision lacks %q:\n%s", want, decision)
				}
			}
			// A minute counts towards a rollback at most the cap, and a
			// last minute weighing that much holds a promotion.
			all := strings.Join(slices.Collect(maps.Values(exprs)), "\n")
			if cap := numText(c.MinuteCap()); strings.Count(all, cap) < 2 {
				t.Errorf("the minute's cap %s is not in the pack", cap)
			}
			if def := numText(verdict.Default().MinuteCap()); c.MinRollbackMinutes != 2 && strings.Contains(all, def) {
				t.Errorf("the default cap %s is in a pack with minRollbackMinutes %d", def, c.MinRollbackMinutes)
			}
			if rollback := exprs["PairwiseCanaryRollback"]; !has(rollback, ">= "+numText(c.RollbackBoundary(false))) || !has(rollback, ">= "+numText(c.RecentBoundary(false))) {
				t.Errorf("rollback alert lacks the boundaries:\n%s", rollback)
			}
			sums := exprs["canary:http_request_duration_seconds:evidence_sums_"+w]
			if !strings.HasSuffix(spaced(sums), spaced("["+w+"]))")) || !has(exprs["canary:http_request_duration_seconds:evidence_inputs_1m"], "histogram_quantile("+verdict.QuantileKey(c.VerdictQuantile)+",") {
				t.Errorf("window sums do not follow the window and quantile:\n%.300s", sums)
			}
			recent := exprs["canary:http_request_duration_seconds:recent_evidence_sums"]
			for _, l := range c.RecentLengths() {
				if !has(recent, fmt.Sprintf("[%dm]))", l)) {
					t.Errorf("recent sums lack the %d-minute run", l)
				}
			}
			if has(recent, fmt.Sprintf("[%dm]))", c.WindowMinutes)) {
				t.Errorf("recent sums hold a run as long as the window")
			}
		})
	}
}

func TestQueriesFollowTheRule(t *testing.T) {
	f := File{Canaries: []Canary{checkout("native"), func() Canary { c := reference(checkout("classic")); c.Name = "ref"; return c }()}}
	qs, err := MinuteQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	pack, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	flat := spaced(string(pack))
	ev, ref := qs[0], qs[1]
	if ev.MinuteTerms == "" || ev.Evidence == "" || ev.RecentEvidence == "" || ev.PromoteEvidence == "" || ev.EvidenceMinutes == "" {
		t.Errorf("evidence queries missing: %+v", ev)
	}
	if ref.MinuteTerms != "" || ref.Evidence != "" {
		t.Errorf("reference canary has evidence queries")
	}
	for _, q := range qs {
		if q.Decision == "" || q.Rollback == "" || q.Flags == "" || len(q.Recorded) == 0 {
			t.Errorf("%s: decision, rollback or flags query missing", q.Name)
		}
		// The parity queries derive from the recorded minutes only, as the
		// pack does, never from the series the group records from them.
		for _, read := range recordedName.FindAllString(q.Decision+q.Rollback+q.Flags+q.MinuteTerms+q.Bad+q.Good+q.Verdict, -1) {
			if !strings.HasPrefix(read, "canary_fleet:") && !strings.HasSuffix(read, "_1m") {
				t.Errorf("%s: a parity query reads %s, a window series the pack records", q.Name, read)
			}
		}
		for _, r := range q.Recorded {
			if !strings.Contains(flat, spaced(r)) {
				t.Errorf("%s: the pack does not record %.200s", q.Name, r)
			}
		}
	}
	if !strings.Contains(ref.Rollback, fmt.Sprintf(">= %d", ref.Config.BadLimit)) {
		t.Errorf("reference rollback: %s", ref.Rollback)
	}
}

// mixture is verdict.Mixture over verdict.Components, in the real
// Prometheus: with every vote present, and with a vote the config leaves out
// (its components are a likelihood ratio of 1, absent from the series), for
// sums far below and far above 0, beyond verdict.MixtureLimit, where an
// unbounded exp over- or underflows.
func TestMixtureInPrometheus(t *testing.T) {
	promtool := testenv.Binary(t, "promtool")
	for _, tt := range []struct {
		name  string
		terms int
		llr   []float64
	}{
		{"every vote", verdict.Components, []float64{-3, 2, 5, -700, 1, 0.5, 4, -1, 3}},
		{"every vote, all far below", verdict.Components, []float64{-900, -950, -1000, -1200, -904, -907, -1100, -920, -990}},
		{"every vote, some far above", verdict.Components, []float64{900, 1200, 5, -3, -2000, 699, 10, 0, 701}},
		{"no decade below", 2 * len(verdict.TailIndices), []float64{-3, 5, -700, 2, 1, -4}},
		{"no decade below, all far below", 2 * len(verdict.TailIndices), []float64{-900, -950, -1000, -930, -990, -1010}},
		{"no decade below, far above", 2 * len(verdict.TailIndices), []float64{900, 1200, 901, 5, 950, -3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			all := make([]float64, verdict.Components) // the absent ones are 0
			copy(all, tt.llr)
			want := verdict.Mixture(all...)
			var series strings.Builder
			for i, v := range tt.llr {
				fmt.Fprintf(&series, "      - series: 'llr{term=\"t%d\"}'\n        values: '%s'\n", i, strconv.FormatFloat(v, 'g', -1, 64))
			}
			// Equal to 1e-12 relative: the sums run in another order.
			check := fmt.Sprintf("abs((%s) - %s) <= bool %s", mixture(leaf("llr"), nil, tt.terms).flat(),
				strconv.FormatFloat(want, 'g', -1, 64), strconv.FormatFloat(1e-12*math.Max(1, math.Abs(want)), 'g', -1, 64))
			test := fmt.Sprintf("tests:\n  - interval: 1m\n    input_series:\n%s    promql_expr_test:\n      - expr: '%s'\n        eval_time: 0m\n        exp_samples:\n          - labels: '{}'\n            value: 1\n",
				series.String(), check)
			dir := t.TempDir()
			path := filepath.Join(dir, "mixture.yml")
			if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
				t.Fatalf("Prometheus's mixture differs from verdict.Mixture %v: %v\n%s\n%s", want, err, out, test)
			}
		})
	}
}

// The bound vote has no counts of its own: its canary and baseline terms
// are the verdict quantile's counts beyond its bucket bound, recorded once
// in the minute's counts, its expected count is what the too-small floor
// sums, and its deep tail is the verdict quantile's.
func TestBoundVoteSharesTheVerdictQuantilesCounts(t *testing.T) {
	q := verdict.Default().VerdictQuantile
	v0, b := TermsOfVote(0, q), TermsOfVote(verdict.BoundVote, q)
	for _, tt := range []struct{ name, got, want string }{
		{"canary", v0.BoundCanary, b.Canary},
		{"baseline", v0.BoundBaseline, b.Baseline},
		{"expected", v0.PromoteExpected, b.Expected},
		{"deep canary", b.DeepCanary, v0.DeepCanary},
		{"deep baseline", b.DeepBaseline, v0.DeepBaseline},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if b.LLR[0] != "bound_llr_4" || b.Canary != "bound_canary_beyond" {
		t.Errorf("bound vote terms %+v, want the bound_ prefix", b)
	}
	for _, kind := range []string{"native", "classic"} {
		rf := renderFile(t, File{Canaries: []Canary{checkout(kind)}})
		found := false
		for _, r := range rf.Groups[0].Rules {
			if r.Record != "canary:http_request_duration_seconds:evidence_counts_1m" {
				continue
			}
			found = true
			for term, want := range map[string]int{b.Canary: 1, b.Baseline: 1, v0.DeepCanary: 1, "bound_canary_deep": 0, "canary_bound": 0} {
				if n := strings.Count(spaced(r.Expr), spaced(`"term", "`+term+`"`)); n != want {
					t.Errorf("%s: the minute's counts label %d rows %s, want %d", kind, n, term, want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no record of the minute's counts", kind)
		}
	}
}
