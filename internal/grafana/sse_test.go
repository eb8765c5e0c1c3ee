package grafana

import (
	"math"
	"testing"
)

// TestReduce: the Reduce expression's modes as Grafana's mathexp applies
// them (Series.Reduce with DropNonNumber and ReplaceNonNumberWithValue):
// dropNN and replaceNN treat infinities as nulls and NaNs, and a NaN result
// becomes null (no data) or the replacement; every number is named after
// the expression's refID.
func TestReduce(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	inf, nan := math.Inf(1), math.NaN()
	for _, tt := range []struct {
		name, reducer, mode string
		values              []*float64
		want                *float64 // nil: no data
	}{
		{"strict last", "last", "", []*float64{f(1), f(2)}, f(2)},
		{"strict max with a NaN", "max", "", []*float64{f(1), f(nan)}, f(nan)},
		{"strict max with +Inf", "max", "", []*float64{f(1), f(inf)}, f(inf)},
		{"dropNN max drops +Inf", "max", "dropNN", []*float64{f(1), f(inf), nil}, f(1)},
		{"dropNN last skips a trailing null", "last", "dropNN", []*float64{f(1), nil}, f(1)},
		{"dropNN of nothing but non-numbers is no data", "max", "dropNN", []*float64{nil, f(nan), f(-inf)}, nil},
		{"dropNN count", "count", "dropNN", []*float64{f(1), f(inf), nil}, f(1)},
		{"replaceNN replaces +Inf", "max", "replaceNN", []*float64{f(1), f(inf)}, f(7)},
		{"replaceNN of an empty series", "mean", "replaceNN", nil, f(7)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Reduce("B", []Series{{Name: "decision_code", Values: tt.values}}, tt.reducer, tt.mode, 7)
			if err != nil || len(got) != 1 {
				t.Fatalf("%v %v", got, err)
			}
			n := got[0]
			if n.Name != "B" {
				t.Errorf("named %q, want the refID B", n.Name)
			}
			switch {
			case tt.want == nil && n.Value != nil:
				t.Errorf("got %v, want no data", *n.Value)
			case tt.want != nil && n.Value == nil:
				t.Errorf("got no data, want %v", *tt.want)
			case tt.want != nil && !(*n.Value == *tt.want || math.IsNaN(*n.Value) && math.IsNaN(*tt.want)):
				t.Errorf("got %v, want %v", *n.Value, *tt.want)
			}
		})
	}
}
