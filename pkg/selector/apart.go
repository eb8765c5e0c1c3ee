package selector

import (
	"fmt"
	"regexp"
	"slices"
)

// Covers reports whether a selects every series b selects, as far as the
// matchers tell: each matcher of a is one of b's, or b fixes its label to a
// value it accepts (b's track="baseline" meets a's track=~"canary|baseline").
// A selector covers itself. Overlaps that depend on values b leaves open
// (two regular expressions that share a value) are not found.
func (a Selector) Covers(b Selector) bool {
	for _, m := range a {
		if !slices.ContainsFunc(b, func(n Matcher) bool { return n.implies(m) }) {
			return false
		}
	}
	return true
}

// implies reports whether every series n matches is matched by m.
func (n Matcher) implies(m Matcher) bool {
	if n == m {
		return true
	}
	if n.Name != m.Name || n.Op != Equal {
		return false
	}
	return m.accepts(n.Value)
}

// accepts reports whether m matches a series whose label has value v (""
// when it has no such label).
func (m Matcher) accepts(v string) bool {
	switch m.Op {
	case Equal:
		return v == m.Value
	case NotEqual:
		return v != m.Value
	}
	re, err := m.regexp()
	if err != nil {
		return false // Parse refuses such a selector; unknown: not implied
	}
	return re.MatchString(v) == (m.Op == Regex)
}

// regexp is a regular-expression matcher's value anchored at both ends, as
// Prometheus matches it.
func (m Matcher) regexp() (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + m.Value + ")$")
}

// Apart is an error when one fleet's selector covers the other's: then one
// fleet holds every series of the other, and comparing them compares a
// fleet with itself in part, which shows little difference however slow the
// canary is.
func Apart(baseline, canary Selector) error {
	switch b, c := baseline.Covers(canary), canary.Covers(baseline); {
	case b && c:
		return fmt.Errorf("the baseline and canary selectors are the same, %s: both fleets would be the same series; give each fleet the matcher that tells it apart, such as track=\"baseline\" and track=\"canary\"", canary)
	case c:
		return fmt.Errorf("the canary selector %s also selects every series of the baseline selector %s: the canary fleet would hold the baseline's pods; add the matcher only the canary's series match, such as track=\"canary\"", canary, baseline)
	case b:
		return fmt.Errorf("the baseline selector %s also selects every series of the canary selector %s: the baseline fleet would hold the canary's pods and count its requests; add a matcher the canary's series do not match, such as track!=\"canary\"", baseline, canary)
	}
	return nil
}

// Disjoint reports whether no series can match both selectors, as the
// matchers tell: one fixes a label to a value the other's matcher of that
// label rejects (track="baseline" beside track="canary" or track!="baseline"),
// or one's regex matcher is the other's negated (pod=~"checkout-primary-.+"
// beside pod!~"checkout-primary-.+").
func Disjoint(a, b Selector) bool {
	rejects := func(fixed, other Selector) bool {
		for _, n := range fixed {
			for _, m := range other {
				if m.Name != n.Name {
					continue
				}
				if n.Op == Equal && !m.accepts(n.Value) || n.Op == Regex && m.Op == NotRegexp && m.Value == n.Value {
					return true
				}
			}
		}
		return false
	}
	return rejects(a, b) || rejects(b, a)
}
