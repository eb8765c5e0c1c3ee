// Package grafana stands in for the parts of Grafana that Pairwise's tests
// need and that cannot run here (there is no Grafana server on these
// machines): how Grafana starts a backend plugin and talks to it (plugin.go),
// and how its server-side expressions, which alert rules are made of, read a
// data source's frames (this file).
//
// The conversion below follows Grafana's pkg/expr (converter.go: Convert,
// isNumberTable, extractNumberSet, WideToMany; mathexp: SeriesFromFrame,
// the reducers and the threshold), the path a frame takes when it carries
// no dataplane type in its meta, as Pairwise's frames do not. It was written
// from reading that code, as a test oracle: it is stricter than Grafana
// where Grafana would only log.
package grafana

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Kind of a converted result, as Grafana's converter names them.
const (
	KindNoData    = "no-data"
	KindNumberSet = "number set"
	KindSeries    = "series"
)

// Series is one time series of a result: a time field and a nullable float
// field, with the value field's name and labels.
type Series struct {
	Name   string
	Labels data.Labels
	Times  []time.Time
	Values []*float64
}

// Number is one labelled number (a reduced series, or a row of a number table).
type Number struct {
	Name   string
	Labels data.Labels
	Value  *float64
}

// Result is what an expression reads from a data source query.
type Result struct {
	Kind    string
	Series  []Series
	Numbers []Number
}

// Convert reads a data source's frames as Grafana's expressions do. It fails
// where Grafana fails: a frame that is neither a wide time series nor (alone)
// a number table, a series field that is not numeric, a null time.
func Convert(frames data.Frames) (Result, error) {
	if len(frames) == 0 {
		return Result{Kind: KindNoData}, nil
	}
	if m := frames[0].Meta; m != nil && m.Type != "" && !m.TypeVersion.IsZero() {
		// Grafana would read these with the dataplane library instead.
		return Result{}, fmt.Errorf("frame %q declares dataplane type %s; this replica covers the frames without one", frames[0].Name, m.Type)
	}
	if len(frames) == 1 {
		frame := frames[0]
		if len(frame.Fields) == 0 {
			return Result{Kind: KindNoData}, nil
		}
		if frame.TimeSeriesSchema().Type == data.TimeSeriesTypeNot && isNumberTable(frame) {
			return Result{Kind: KindNumberSet, Numbers: numberSet(frame)}, nil
		}
	}
	var out Result
	out.Kind = KindSeries
	for _, frame := range frames {
		schema := frame.TimeSeriesSchema()
		if schema.Type != data.TimeSeriesTypeWide {
			// Grafana: "input data must be a wide series but got type %s (input refid)".
			return Result{}, fmt.Errorf("input data must be a wide series but got type %s (frame %q)", schema.Type, frame.Name)
		}
		series, err := WideToMany(frame)
		if err != nil {
			return Result{}, err
		}
		out.Series = append(out.Series, series...)
	}
	return out, nil
}

func isNumberTable(frame *data.Frame) bool {
	numeric, other := 0, 0
	for _, f := range frame.Fields {
		switch t := f.Type(); {
		case t.Numeric():
			numeric++
		case t == data.FieldTypeString || t == data.FieldTypeNullableString:
		default:
			other++
		}
	}
	return numeric == 1 && other == 0
}

// numberSet: one number per row, its string fields as labels.
func numberSet(frame *data.Frame) []Number {
	numIdx := 0
	var strIdx []int
	for i, f := range frame.Fields {
		switch t := f.Type(); {
		case t.Numeric():
			numIdx = i
		case t == data.FieldTypeString || t == data.FieldTypeNullableString:
			strIdx = append(strIdx, i)
		}
	}
	out := make([]Number, frame.Rows())
	for row := range out {
		v, _ := frame.FloatAt(numIdx, row)
		var labels data.Labels
		for _, i := range strIdx {
			if labels == nil {
				labels = data.Labels{}
			}
			s, _ := frame.ConcreteAt(i, row)
			labels[frame.Fields[i].Name], _ = s.(string)
		}
		out[row] = Number{Name: frame.Fields[numIdx].Name, Labels: labels, Value: &v}
	}
	return out
}

// WideToMany makes one Series of each value field of a wide frame.
func WideToMany(frame *data.Frame) ([]Series, error) {
	schema := frame.TimeSeriesSchema()
	if schema.Type != data.TimeSeriesTypeWide {
		return nil, fmt.Errorf("input data must be a wide series but got type %s", schema.Type)
	}
	var out []Series
	for _, vi := range schema.ValueIndices {
		s, err := seriesFromFields(frame.Name, frame.Fields[schema.TimeIndex], frame.Fields[vi])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// seriesFromFields is mathexp.SeriesFromFrame on a two-field frame: the time
// may be nullable but never null; the value must be a float or convertible
// to one row by row (Grafana's NullableFloatAt).
func seriesFromFields(frameName string, timeField, valueField *data.Field) (Series, error) {
	if !timeField.Type().Time() {
		return Series{}, fmt.Errorf("no time column found in frame %v", frameName)
	}
	s := Series{Name: valueField.Name, Times: make([]time.Time, timeField.Len()), Values: make([]*float64, valueField.Len())}
	if valueField.Labels != nil {
		s.Labels = valueField.Labels.Copy()
	}
	for i := 0; i < timeField.Len(); i++ {
		switch v := timeField.At(i).(type) {
		case time.Time:
			s.Times[i] = v
		case *time.Time:
			if v == nil {
				return Series{}, fmt.Errorf("time series with null time stamps are not supported")
			}
			s.Times[i] = *v
		}
	}
	switch valueField.Type() {
	case data.FieldTypeFloat64:
		for i := range s.Values {
			f := valueField.At(i).(float64)
			s.Values[i] = &f
		}
	case data.FieldTypeNullableFloat64:
		for i := range s.Values {
			s.Values[i] = valueField.At(i).(*float64)
		}
	default:
		for i := range s.Values {
			f, err := valueField.NullableFloatAt(i)
			if err != nil {
				return Series{}, fmt.Errorf("no float64 value column found in frame %v (field %s: %v)", frameName, valueField.Name, err)
			}
			s.Values[i] = f
		}
	}
	return s, nil
}

// Reduce turns each series into a number, as the Reduce expression refID
// does (Grafana's mathexp Series.Reduce): each number is named refID and
// keeps its series' labels. reducer: last, max, min, mean, sum, count.
// mode: "" (strict: a null or NaN in the series gives NaN, except for last
// and count), "dropNN" (nulls, NaNs and infinities dropped first; a NaN
// result, such as that of a series left empty, is null: no data) or
// "replaceNN" (each of them replaced by replaceWith, as is a NaN result).
func Reduce(refID string, series []Series, reducer, mode string, replaceWith float64) ([]Number, error) {
	out := make([]Number, 0, len(series))
	nonNumber := func(v *float64) bool { return v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) }
	for _, s := range series {
		values := s.Values
		switch mode {
		case "", "strict":
		case "dropNN":
			values = nil
			for _, v := range s.Values {
				if !nonNumber(v) {
					values = append(values, v)
				}
			}
		case "replaceNN":
			values = make([]*float64, len(s.Values))
			for i, v := range s.Values {
				if nonNumber(v) {
					r := replaceWith
					v = &r
				}
				values[i] = v
			}
		default:
			return nil, fmt.Errorf("reduce mode %q not replicated", mode)
		}
		v, err := reduce(values, reducer)
		if err != nil {
			return nil, err
		}
		value := &v
		switch {
		case mode == "dropNN" && math.IsNaN(v):
			value = nil
		case mode == "replaceNN" && math.IsNaN(v):
			value = &replaceWith
		}
		out = append(out, Number{Name: refID, Labels: s.Labels, Value: value})
	}
	return out, nil
}

func reduce(values []*float64, reducer string) (float64, error) {
	nan := math.NaN()
	if reducer == "count" {
		return float64(len(values)), nil
	}
	if len(values) == 0 {
		return nan, nil
	}
	if reducer == "last" {
		if v := values[len(values)-1]; v != nil {
			return *v, nil
		}
		return nan, nil
	}
	var acc float64
	for i, v := range values {
		if v == nil || math.IsNaN(*v) {
			return nan, nil
		}
		switch reducer {
		case "sum", "mean":
			acc += *v
		case "max":
			if i == 0 || *v > acc {
				acc = *v
			}
		case "min":
			if i == 0 || *v < acc {
				acc = *v
			}
		default:
			return 0, fmt.Errorf("reducer %q not replicated", reducer)
		}
	}
	if reducer == "mean" {
		acc /= float64(len(values))
	}
	return acc, nil
}

// Threshold is the Threshold expression on numbers: 1 where the condition
// holds, 0 where it does not (NaN compares false).
func Threshold(numbers []Number, kind string, params []float64) ([]Number, error) {
	need := map[string]int{"gt": 1, "lt": 1, "within_range": 2, "outside_range": 2}
	if n, ok := need[kind]; !ok || len(params) < n {
		return nil, fmt.Errorf("threshold %s with %d parameters is not replicated", kind, len(params))
	}
	out := make([]Number, len(numbers))
	for i, n := range numbers {
		var hit bool
		if n.Value != nil {
			v := *n.Value
			switch kind {
			case "gt":
				hit = v > params[0]
			case "lt":
				hit = v < params[0]
			case "within_range":
				hit = v > params[0] && v < params[1]
			case "outside_range":
				hit = v < params[0] || v > params[1]
			}
		}
		f := 0.0
		if hit {
			f = 1
		}
		out[i] = Number{Name: n.Name, Labels: n.Labels, Value: &f}
	}
	return out, nil
}

// Instance is one alert instance of a rule's condition.
type Instance struct {
	Labels data.Labels
	State  string // Alerting, Normal or NoData
}

// Instances reads a condition's numbers as Grafana alerting does: one
// instance per label set (duplicates are an error Grafana reports as "frame
// cannot uniquely be identified by its labels"), firing when non-zero.
func Instances(condition []Number) ([]Instance, error) {
	seen := map[string]bool{}
	var out []Instance
	for _, n := range condition {
		key := n.Labels.String()
		if seen[key] {
			return nil, fmt.Errorf("frame cannot uniquely be identified by its labels: has duplicate results with labels %s", key)
		}
		seen[key] = true
		state := "Normal"
		switch {
		case n.Value == nil || math.IsNaN(*n.Value):
			state = "NoData"
		case *n.Value != 0:
			state = "Alerting"
		}
		out = append(out, Instance{Labels: n.Labels, State: state})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels.String() < out[j].Labels.String() })
	return out, nil
}

// Describe prints a result for test failures.
func (r Result) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", r.Kind)
	for _, s := range r.Series {
		fmt.Fprintf(&b, " %s%s(%d points)", s.Name, s.Labels, len(s.Values))
	}
	for _, n := range r.Numbers {
		fmt.Fprintf(&b, " %s%s", n.Name, n.Labels)
	}
	return b.String()
}
