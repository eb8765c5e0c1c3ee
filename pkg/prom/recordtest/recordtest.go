// Package recordtest writes the rule pack's recorded minute series (see
// prom/recorded.go) into a Prometheus data directory for tests and
// benchmarks of the readers: recording rules with the expressions the pack
// records, evaluated by promtool tsdb create-blocks-from rules (the
// Prometheus tool that backfills recording rules through the query API, at
// the evaluation times the rule manager would use).
//
// promtool 3.13.5 writes float samples only: a native histogram record
// cannot be backfilled this way, so Rules refuses the native kind and
// callers read classic records.
package recordtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// Fleet is one fleet of a per-canary group.
type Fleet struct {
	Canary string // the group's canary label
	Name   string // baseline or canary
	Sel    selector.Selector
}

// minute is the record of the minute an evaluation time truncates to.
func minute(expr string) string { return "last_over_time((" + expr + ")[1m:1m])" }

// Rules renders one group recording each fleet's classic minute histogram
// and health, labelled as per-canary groups label them.
func Rules(metric string, kind prom.Kind, fleets []Fleet) (string, error) {
	if kind != prom.Classic {
		return "", fmt.Errorf("recordtest: promtool backfills float samples only, so records are classic, not %s", kind)
	}
	var b strings.Builder
	b.WriteString("groups:\n- name: pairwise-minutes\n  interval: 1m\n  rules:\n")
	for _, f := range fleets {
		labels := map[string]string{"canary": f.Canary, "fleet": f.Name, prom.RecordedSelectorLabel: f.Sel.String()}
		rule(&b, prom.MinuteHistogramRecord(metric, kind), minute(prom.ClassicQuery(metric, f.Sel)), labels)
		rule(&b, prom.MinuteHealthRecord(metric, kind), minute(prom.HealthQuery(metric, f.Sel, kind)), labels)
	}
	return b.String(), nil
}

// LabelDrivenRules renders one group recording the classic minute
// histogram and health of every fleet of metric that by's labels tell
// apart, keeping those labels (a label-driven group); where selects the
// fleets' series (label matchers, no braces).
func LabelDrivenRules(metric string, by []string, where string) string {
	var b strings.Builder
	b.WriteString("groups:\n- name: pairwise-minutes\n  interval: 1m\n  rules:\n")
	labels := strings.Join(by, ", ")
	all := metric + "_bucket{" + where + "}"
	inf := metric + `_bucket{le="+Inf",` + where + "}"
	counted := "count_over_time(" + inf + "[1m])"
	figure := func(name, expr string) string {
		return `label_replace(` + expr + `, "pairwise_health", "` + name + `", "", "")`
	}
	rule(&b, prom.MinuteHistogramRecord(metric, prom.Classic), minute("sum by ("+labels+", le) (increase("+all+"[1m]))"), nil)
	rule(&b, prom.MinuteHealthRecord(metric, prom.Classic), minute(figure("samples", "sum by ("+labels+") ("+counted+")")+
		" or "+figure("series", "count by ("+labels+") ("+counted+")")+
		" or "+figure("reporting", "count by ("+labels+") ("+counted+" >= 2)")+
		" or "+figure("down", "count by ("+labels+") (min_over_time(up{"+where+"}[1m]) == 0)")), nil)
	return b.String()
}

func rule(b *strings.Builder, record, expr string, labels map[string]string) {
	fmt.Fprintf(b, "  - record: %s\n    expr: %q\n", record, expr)
	if len(labels) == 0 {
		return
	}
	b.WriteString("    labels:\n")
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "      %s: %q\n", k, labels[k])
	}
}

// Backfill evaluates the rules in rulesFile against the Prometheus at url
// for every evaluation time in [start, end] and writes the blocks into
// outDir, which the caller moves into a data directory before (re)starting
// Prometheus on it.
func Backfill(promtool, url, rulesFile, outDir string, start, end time.Time) error {
	cmd := exec.Command(promtool, "tsdb", "create-blocks-from", "rules", "--quiet",
		"--url", url, "--start", start.Format(time.RFC3339), "--end", end.Format(time.RFC3339),
		"--output-dir", outDir, rulesFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("promtool tsdb create-blocks-from rules: %v\n%s", err, out)
	}
	return nil
}

// MoveBlocks moves the blocks promtool wrote into outDir into dataDir.
func MoveBlocks(outDir, dataDir string) (int, error) {
	entries, err := os.ReadDir(outDir)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(outDir, e.Name()), filepath.Join(dataDir, e.Name())); err != nil {
			return 0, err
		}
	}
	return len(entries), nil
}
