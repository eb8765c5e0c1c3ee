package selector

import (
	"strings"
	"testing"
)

// TestApart: fleets whose selectors are the same, or where one only narrows
// the other, are refused with the fleet that holds the other named; fleets
// told apart by any matcher pass.
func TestApart(t *testing.T) {
	for _, tc := range []struct {
		name, baseline, canary string
		want                   string // substring of the error; empty: apart
	}{
		{"told apart by a label", `{service="checkout",track="baseline"}`, `{service="checkout",track="canary"}`, ""},
		{"told apart by a negative matcher", `{service="checkout",track!="canary"}`, `{service="checkout",track="canary"}`, ""},
		{"different services", `{service="a"}`, `{service="b"}`, ""},
		{"same matchers in another order", `{track="canary",service="checkout"}`, `{service="checkout",track="canary"}`, "selectors are the same"},
		{"canary without its label", `{service="checkout",track="baseline"}`, `{service="checkout"}`, `canary selector {service="checkout"} also selects every series of the baseline`},
		{"baseline is the whole service", `{service="checkout"}`, `{service="checkout",track="canary"}`, `baseline selector {service="checkout"} also selects every series of the canary`},
		{"a repeated matcher changes nothing", `{service="checkout",service="checkout"}`, `{service="checkout"}`, "selectors are the same"},
		{"a canary regex that takes the baseline's value", `{service="checkout",track="baseline"}`, `{service="checkout",track=~"canary|baseline"}`, "canary selector"},
		{"a baseline that only excludes another value", `{service="checkout",track!="stable"}`, `{service="checkout",track="canary"}`, "baseline selector"},
		{"a baseline regex that takes the canary's value", `{track=~"base.*|canary"}`, `{track="canary"}`, "baseline selector"},
		{"a negative regex that excludes the canary", `{service="checkout",track!~"canary"}`, `{service="checkout",track="canary"}`, ""},
		{"the same series written otherwise: one reads as holding the other", `{track=~"canary"}`, `{track="canary"}`, "baseline selector"},
		{"regexes that share a value are not found: their values are open", `{track=~"a|b"}`, `{track=~"b|c"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Parse(tc.baseline)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(tc.canary)
			if err != nil {
				t.Fatal(err)
			}
			err = Apart(b, c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused fleets that are apart: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
