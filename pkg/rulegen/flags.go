package rulegen

import (
	"strconv"

	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// flagLabel names the flag a series of the flags recording stands for.
const flagLabel = "flag"

// flagExprs are the per-minute figures the window flags are read from.
type flagExprs struct{ share, missing, partial expr }

// flagMinutes are a minute's figures for the window flags. Warm-up minutes
// are left out of every flag, as verdict does.
func (r resolved) flagMinutes(m minuteExprs) flagExprs {
	cb, cc := m.base.count, m.canary.count
	served := func(f fleetExprs) expr { return op(f.count, ">", leaf("0")) }
	one := func(e expr) expr { return op(leaf("vector(1)"), "and on()", e) }
	return flagExprs{
		share:   m.warm(op(op(op(cc, "/", op(cb, "+", cc)), ">", leaf("0")), "<", leaf("1"))),
		missing: one(m.warm(op(op(served(m.base), "unless", served(m.canary)), "or", op(served(m.canary), "unless", served(m.base))))),
		partial: one(m.warm(m.partial)),
	}
}

// windowFlags is verdict's window flags over the window's recorded minutes,
// one series valued 1 per raised flag (label flag, verdict's Flag* names),
// nothing when none is: a flagged window never promotes, under either rule.
// The flags verdict raises from other sources (a load-balancer histogram, a
// partial response) have no counterpart here.
func (r resolved) windowFlags() expr {
	var out expr
	for _, f := range r.flagConditions() {
		raised := labelled(op(leaf("vector(1)"), "and on()", f.cond), flagLabel, f.name)
		if out == nil {
			out = raised
		} else {
			out = op(out, "or", raised)
		}
	}
	return out
}

// flagCondition is one window flag and the condition that raises it.
type flagCondition struct {
	name string
	cond expr
}

// flagConditions are the flags windowFlags can raise for the canary.
func (r resolved) flagConditions() []flagCondition {
	c := r.config
	n := r.minuteNames()

	// A win too large to believe: the median ratio of the counted minutes.
	suspicious := op(fn("quantile_over_time", leaf("0.5"), r.overWindow(n.countedRatio, 0)), "<=", num(c.SuspiciousWin))

	// Traffic parity: the canary's share of requests in the window's last
	// ShareMinutes where both fleets served. A share further than
	// MaxShareDrift (relative) from the median is above median*(1+drift) or
	// below median*(1-drift).
	shares := r.overWindow(n.share, c.ShareMinutes())
	median := fn("quantile_over_time", leaf("0.5"), shares)
	var parity expr = op(
		op(fn("max_over_time", shares), ">", op(median, "*", num(1+c.MaxShareDrift))),
		"or", op(fn("min_over_time", shares), "<", op(median, "*", num(1-c.MaxShareDrift))))
	if e := c.ExpectedCanaryShare; e > 0 {
		parity = op(parity, "or", op(fn("abs", op(op(median, "/", num(e)), "-", leaf("1"))), ">", num(c.MaxShareDeviation)))
	}
	if r.failed != nil {
		// Or failed requests: the strongest of the recent runs and the
		// window (verdict's errorRuns.strongest), divided by the window's
		// dispersion (errorRuns.dispersion), reaches ErrorBoundary.
		parity = op(parity, "or", r.errorRuns())
	}
	seen := func(name string) expr { return op(fn("count_over_time", r.overWindow(name, 0)), ">", leaf("0")) }

	out := []flagCondition{
		{verdict.FlagSuspiciousWin, suspicious},
		{verdict.FlagTrafficParity, parity},
		// One fleet served while the other had none.
		{verdict.FlagFleetMissing, seen(n.missing)},
		// A fleet was incomplete.
		{verdict.FlagPartialFleet, seen(n.partial)},
	}
	if r.mayShare() {
		// Some series were in both fleets.
		out = append(out, flagCondition{verdict.FlagSharedSeries, seen(r.sharedName())})
	}
	return out
}

// labelled sets label to value on every series of e.
func labelled(e expr, label, value string) expr {
	return fn("label_replace", e, leaf(strconv.Quote(label)), leaf(strconv.Quote(value)), leaf(`""`), leaf(`""`))
}

// flagNames are the names of flagConditions.
func (r resolved) flagNames() []string {
	var out []string
	for _, f := range r.flagConditions() {
		out = append(out, f.name)
	}
	return out
}
