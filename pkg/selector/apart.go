package selector

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
)

// Covers reports whether a selects every series b selects, as far as the
// matchers tell: each matcher of a is one of b's, or b takes a few values of
// its label, all of which it accepts (b's track="baseline" or
// track=~"baseline|stable" meets a's track=~"canary|baseline|stable"). A
// selector covers itself. Overlaps that depend on values b leaves open
// (a regular expression of many values) are not found.
func (a Selector) Covers(b Selector) bool {
	for _, m := range a {
		if !slices.ContainsFunc(b, func(n Matcher) bool { return n.implies(m) }) {
			return false
		}
	}
	return true
}

// implies reports whether every series n matches is matched by m: n is m,
// or n takes a few values (track="baseline", track=~"baseline|stable") and
// m accepts each.
func (n Matcher) implies(m Matcher) bool {
	if n == m {
		return true
	}
	if n.Name != m.Name {
		return false
	}
	values, ok := n.values()
	return ok && !slices.ContainsFunc(values, func(v string) bool { return !m.accepts(v) })
}

// values are the label values m accepts ("" for a series without the
// label) when they are few and m names them: an equality matcher's value,
// or a regular expression made of literals, alternatives and small
// character classes (canary|baseline, canary(-v2)?, pod-[0-3]). ok is false
// for anything else, which may take many values.
func (m Matcher) values() (values []string, ok bool) {
	switch m.Op {
	case Equal:
		return []string{m.Value}, true
	case Regex:
		re, err := syntax.Parse(m.Value, syntax.Perl)
		if err != nil {
			return nil, false
		}
		return finite(re.Simplify())
	}
	return nil, false
}

// maxValues bounds the values Matcher.values lists.
const maxValues = 64

// finite lists the strings re matches, when there are at most maxValues.
func finite(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if int(re.Rune[i+1]-re.Rune[i])+1+len(out) > maxValues {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, string(r))
			}
		}
		return out, true
	case syntax.OpCapture:
		return finite(re.Sub[0])
	case syntax.OpQuest:
		vs, ok := finite(re.Sub[0])
		if !ok || len(vs) >= maxValues {
			return nil, false
		}
		return append(vs, ""), true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			vs, ok := finite(sub)
			if !ok || len(out)+len(vs) > maxValues {
				return nil, false
			}
			out = append(out, vs...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			vs, ok := finite(sub)
			if !ok || len(out)*len(vs) > maxValues {
				return nil, false
			}
			var next []string
			for _, a := range out {
				for _, b := range vs {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

// Accepts reports whether m matches a series whose label has value v (""
// when it has no such label).
func (m Matcher) Accepts(v string) bool { return m.accepts(v) }

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
// matchers tell: one takes a few values of a label (Matcher.values), all of
// which the other's matcher of that label rejects (track="baseline" beside
// track="canary", track!="baseline" or track=~"canary|canary-v2"), or one's
// regex matcher is the other's negated (pod=~"checkout-primary-.+" beside
// pod!~"checkout-primary-.+").
func Disjoint(a, b Selector) bool {
	rejects := func(fixed, other Selector) bool {
		for _, n := range fixed {
			values, few := n.values()
			for _, m := range other {
				if m.Name != n.Name {
					continue
				}
				if few && !slices.ContainsFunc(values, m.accepts) || n.Op == Regex && m.Op == NotRegexp && m.Value == n.Value {
					return true
				}
			}
		}
		return false
	}
	return rejects(a, b) || rejects(b, a)
}
