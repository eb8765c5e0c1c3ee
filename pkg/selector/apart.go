package selector

import "fmt"

// Covers reports whether a selects every series b selects, as far as the
// matchers alone tell: every matcher of a is also one of b's, so b only
// narrows a. A selector covers itself. Selectors that overlap only through
// their values (two regular expressions that share a value) are not found.
func (a Selector) Covers(b Selector) bool {
	for _, m := range a {
		found := false
		for _, n := range b {
			if m == n {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
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
