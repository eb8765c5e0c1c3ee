package selector

import (
	"slices"
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
		{"the same series written otherwise", `{track=~"canary"}`, `{track="canary"}`, "selectors are the same"},
		{"a canary regex of a few values that takes the baseline's", `{track=~"baseline|stable"}`, `{track=~"canary|baseline|stable"}`, "canary selector"},
		{"a canary regex whose values share a prefix", `{track="canary"}`, `{track=~"canary|canary-v2"}`, "canary selector"},
		{"regexes that share a value: neither holds the other (the series tell)", `{track=~"a|b"}`, `{track=~"b|c"}`, ""},
		{"a case-insensitive regex takes too many values to list", `{track=~"(?i)canary"}`, `{track=~"CANARY|x"}`, ""},
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
		{`{track=~"a|b"}`, `{track=~"c"}`, true},
		{`{track=~"baseline|stable"}`, `{track=~"canary|canary-v2"}`, true},
		{`{pod=~"web-[0-3]"}`, `{pod=~"web-[4-7]"}`, true},
		{`{pod=~"web-[0-4]"}`, `{pod=~"web-[4-7]"}`, false},
		{`{track=~"a|b"}`, `{track=~"b|c"}`, false},
		{`{track=~"(?i)canary"}`, `{track="CANARY"}`, false},
		{`{track=~"canary.*"}`, `{track=~"canary-v2|canary"}`, false},
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

// TestMatcherValues: a matcher's few values are listed exactly (each one
// the matcher accepts, and no other it accepts among the candidates), and
// a matcher of many values lists none.
func TestMatcherValues(t *testing.T) {
	candidates := []string{"", "a", "b", "c", "canary", "canary-v2", "canary-v3", "CANARY", "baseline", "stable", "web-0", "web-3", "web-4", "x"}
	for _, tc := range []struct {
		matcher string
		want    []string // nil: not few
	}{
		{`track="canary"`, []string{"canary"}},
		{`track=~"canary"`, []string{"canary"}},
		{`track=~"canary|baseline|stable"`, []string{"baseline", "canary", "stable"}},
		{`track=~"canary|canary-v2"`, []string{"canary", "canary-v2"}},
		{`track=~"canary(-v2)?"`, []string{"canary", "canary-v2"}},
		{`track=~"canary-v[23]"`, []string{"canary-v2", "canary-v3"}},
		{`track=~"web-[0-3]"`, []string{"web-0", "web-1", "web-2", "web-3"}},
		{`track=~"a|"`, []string{"", "a"}},
		{`track=~"canary.*"`, nil},
		{`track=~"(?i)canary"`, nil},
		{`track=~"[a-z][a-z]"`, nil},
		{`track=~"[^a]"`, nil},
		{`track!="canary"`, nil},
		{`track!~"canary"`, nil},
	} {
		t.Run(tc.matcher, func(t *testing.T) {
			m := mustParse(t, "{"+tc.matcher+`,service="s"}`)[0]
			got, ok := m.values()
			if ok != (tc.want != nil) {
				t.Fatalf("values %q, %v; want %q", got, ok, tc.want)
			}
			if !ok {
				return
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("values %q, want %q", got, tc.want)
			}
			for _, v := range got {
				if !m.accepts(v) {
					t.Errorf("lists %q, which it does not accept", v)
				}
			}
			for _, v := range candidates {
				if m.accepts(v) && !slices.Contains(got, v) {
					t.Errorf("accepts %q, which it does not list", v)
				}
			}
		})
	}
}
