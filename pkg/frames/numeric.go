package frames

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// The numeric shape is what Grafana's server-side expressions (alert rules,
// Math, Reduce, Threshold) accept from a data source: a wide time series, one
// non-nullable time field and numeric fields only, each numeric field one
// series told apart by its labels. Strings cannot be in it: Grafana reads a
// frame with a string or bool field as a long frame and rejects it ("input
// data must be a wide series"). They go to the frame's meta instead.

// FieldLabel is the label naming the field a series comes from, so that the
// series of one query stay unique by their labels (Grafana alerting refuses
// results with duplicate label sets).
const FieldLabel = "field"

// FleetLabel tells the pods query's per-fleet series apart.
const FleetLabel = "fleet"

// DefaultNumericFields are the fields an alerting query returns when it does
// not name any: one series per query (per fleet for pods), so a Threshold on
// it judges the decision and nothing else.
var DefaultNumericFields = map[string][]string{
	MinutesName:  {"decision_code"},
	DecisionName: {"decision_code"},
	PodsName:     {"max"},
}

// SeriesLabels are the labels every numeric series of an analysis carries:
// the equality matchers the baseline and canary selectors have in common
// (service="checkout" for {service="checkout",track="baseline"} and
// {service="checkout",track="canary"}), plus the metric. They identify the
// canary in an alert rule's instances and notifications.
func SeriesLabels(res *engine.Result) map[string]string {
	labels := map[string]string{}
	canary := map[string]string{}
	for _, m := range res.Request.Canary {
		if m.Op == selector.Equal {
			canary[m.Name] = m.Value
		}
	}
	for _, m := range res.Request.Baseline {
		if v, ok := canary[m.Name]; ok && m.Op == selector.Equal && v == m.Value {
			labels[m.Name] = m.Value
		}
	}
	labels["metric"] = res.Request.Metric
	return labels
}

// NumericFields lists the fields of a table that the numeric shape can carry:
// its numbers and its booleans (as 0 and 1), in table order.
func NumericFields(t Table) []string {
	var out []string
	for _, c := range t.Columns {
		switch c.Values.(type) {
		case []*float64, []bool:
			out = append(out, c.Name)
		}
	}
	return out
}

// Numeric lays a Table (Minutes, Decision or Pods) out in the numeric shape:
// its first time column, then the requested numeric fields (the type's
// DefaultNumericFields when none are named), each with labels plus
// field=<name>. A table with a "fleet" column (Pods) is pivoted: one series
// per fleet and field, labelled fleet=<fleet>. The string columns' values of
// the last row, and the table's meta, go to Meta; nothing is lost silently:
// an unknown field is an error that lists the known ones.
func Numeric(t Table, labels map[string]string, fields []string) (Table, error) {
	if len(fields) == 0 {
		fields = DefaultNumericFields[t.Name]
	}
	cols := map[string]Column{}
	for _, c := range t.Columns {
		cols[c.Name] = c
	}
	known := NumericFields(t)
	seen := map[string]bool{}
	for _, f := range fields {
		c, ok := cols[f]
		if !ok || !isNumeric(c) {
			return Table{}, fmt.Errorf("%q is not a numeric field of the %s query; choose from %s", f, t.Name, strings.Join(known, ", "))
		}
		if seen[f] {
			return Table{}, fmt.Errorf("field %q is asked for twice", f)
		}
		seen[f] = true
	}
	times, ok := cols["time"].Values.([]time.Time)
	if !ok {
		return Table{}, fmt.Errorf("the %s table has no time column", t.Name)
	}

	meta := map[string]any{}
	for k, v := range t.Meta {
		meta[k] = v
	}
	meta["format"] = "alerting"
	last := map[string]string{}
	for _, c := range t.Columns {
		if s, ok := c.Values.([]string); ok && len(s) > 0 && c.Name != FleetLabel {
			last[c.Name] = s[len(s)-1]
		}
	}
	meta["lastValues"] = last
	out := Table{Name: t.Name, Meta: meta, Warnings: t.Warnings}

	if fleetCol, ok := cols[FleetLabel].Values.([]string); ok {
		return pivot(out, times, fleetCol, cols, labels, fields)
	}
	out.Columns = append(out.Columns, Column{Name: "time", Values: times})
	for _, f := range fields {
		c := cols[f]
		out.Columns = append(out.Columns, Column{Name: f, Values: asNumbers(c), Unit: c.Unit, Labels: withLabels(labels, FieldLabel, f)})
	}
	return out, nil
}

// pivot turns a long table with one row per time and fleet into one time
// column (the union of the times, ascending) and one column per fleet and
// field; a fleet without a row at a time has null there.
func pivot(out Table, times []time.Time, fleets []string, cols map[string]Column, labels map[string]string, fields []string) (Table, error) {
	index := map[time.Time]int{}
	var union []time.Time
	for _, ts := range times {
		if _, ok := index[ts]; !ok {
			index[ts] = 0
			union = append(union, ts)
		}
	}
	sort.Slice(union, func(i, j int) bool { return union[i].Before(union[j]) })
	for i, ts := range union {
		index[ts] = i
	}
	var fleetNames []string
	seen := map[string]bool{}
	for _, f := range fleets {
		if !seen[f] {
			seen[f] = true
			fleetNames = append(fleetNames, f)
		}
	}
	sort.Strings(fleetNames)
	out.Columns = append(out.Columns, Column{Name: "time", Values: union})
	for _, field := range fields {
		values := asNumbers(cols[field])
		for _, fleet := range fleetNames {
			col := make([]*float64, len(union))
			for row, f := range fleets {
				if f == fleet {
					col[index[times[row]]] = values[row]
				}
			}
			l := withLabels(labels, FieldLabel, field)
			l[FleetLabel] = fleet
			out.Columns = append(out.Columns, Column{Name: field, Values: col, Unit: cols[field].Unit, Labels: l})
		}
	}
	return out, nil
}

func isNumeric(c Column) bool {
	switch c.Values.(type) {
	case []*float64, []bool:
		return true
	}
	return false
}

// asNumbers gives a numeric column as nullable floats; booleans are 0 and 1.
func asNumbers(c Column) []*float64 {
	switch v := c.Values.(type) {
	case []*float64:
		return v
	case []bool:
		out := make([]*float64, len(v))
		for i, b := range v {
			f := 0.0
			if b {
				f = 1
			}
			out[i] = &f
		}
		return out
	}
	return nil
}

func withLabels(base map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(base)+2)
	for name, value := range base {
		out[name] = value
	}
	out[k] = v
	return out
}
