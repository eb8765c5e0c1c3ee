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
			err := Apart(mustParse(t, tc.baseline), mustParse(t, tc.canary))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused fleets that are apart: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestDisjoint: selectors that fix a label apart select no series in
// common; others may.
func TestDisjoint(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`{service="checkout",track="baseline"}`, `{service="checkout",track="canary"}`, true},
		{`{track="baseline"}`, `{track!="baseline",service="checkout"}`, true},
		{`{track=~"base.*"}`, `{track="canary"}`, true},
		{`{track="baseline"}`, `{track=~"canary|baseline"}`, false},
		{`{service="checkout",track="baseline"}`, `{service="checkout",pod=~"checkout-.+"}`, false},
		{`{track=~"a|b"}`, `{track=~"c"}`, false}, // disjoint, but only the values tell
		{`{service="checkout"}`, `{service="checkout"}`, false},
		// Flagger's fleets by pod name (rules/README.md).
		{`{pod=~"checkout-primary-.+"}`, `{pod=~"checkout-.+",pod!~"checkout-primary-.+"}`, true},
		{`{pod=~"checkout-primary-.+"}`, `{app="checkout",pod!~"checkout-primary-.*"}`, false}, // another regex: only the values tell
		{`{pod=~"checkout-primary-.+"}`, `{app="checkout",node!~"checkout-primary-.+"}`, false},
	} {
		a, b := mustParse(t, tc.a), mustParse(t, tc.b)
		if got := Disjoint(a, b); got != tc.want || Disjoint(b, a) != tc.want {
			t.Errorf("Disjoint(%s, %s) = %v, want %v (both ways)", tc.a, tc.b, got, tc.want)
		}
	}
}

func mustParse(t *testing.T, text string) Selector {
	t.Helper()
	s, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
