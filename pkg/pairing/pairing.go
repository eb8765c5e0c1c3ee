// Package pairing lays both fleets on the same wall-clock minutes. Minute T
// is the window (T-60s, T] for T on a whole UTC minute; minute T of the canary
// is only ever compared with minute T of the baseline.
package pairing

import (
	"fmt"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

// Window is the set of whole minutes judged together: minute ends First,
// First+1m, ..., Last.
type Window struct {
	First, Last time.Time
}

// Minutes is the number of minutes in the window.
func (w Window) Minutes() int { return int(w.Last.Sub(w.First)/time.Minute) + 1 }

// Times lists the minute ends in order.
func (w Window) Times() []time.Time {
	out := make([]time.Time, 0, w.Minutes())
	for t := w.First; !t.After(w.Last); t = t.Add(time.Minute) {
		out = append(out, t)
	}
	return out
}

// Ending returns the window of n minutes whose last minute is the last one
// complete at `at`: minute T is complete once T <= at - settle, where settle
// leaves time for the final scrape of the minute to arrive. The current,
// unfinished minute is never part of a window.
func Ending(at time.Time, n int, settle time.Duration) (Window, error) {
	if n < 1 {
		return Window{}, fmt.Errorf("a window needs at least one minute, got %d", n)
	}
	last := at.Add(-settle).UTC().Truncate(time.Minute)
	return Window{First: last.Add(-time.Duration(n-1) * time.Minute), Last: last}, nil
}

// Between returns the whole minutes ending in (from, to]: the minutes of a
// dashboard time range, with the unfinished minute at `to` excluded unless
// `to` is itself on a whole minute.
func Between(from, to time.Time) (Window, error) {
	first := from.UTC().Truncate(time.Minute).Add(time.Minute)
	last := to.UTC().Truncate(time.Minute)
	if last.Before(first) {
		return Window{}, fmt.Errorf("the time range %s to %s holds no whole minute", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	return Window{First: first, Last: last}, nil
}

// Pair is one minute with each fleet's merged histogram; nil means that fleet
// has no data in the minute, which is shown as such and never judged.
type Pair struct {
	Time     time.Time
	Baseline *histogram.Histogram
	Canary   *histogram.Histogram
}

// Pairs lines up both fleets on every minute of w, by minute end in Unix seconds.
// A histogram with zero observations counts as absent.
func Pairs(w Window, baseline, canary map[int64]*histogram.Histogram) []Pair {
	times, b, c := w.Times(), Fleet(w, baseline), Fleet(w, canary)
	out := make([]Pair, len(times))
	for i, t := range times {
		out[i] = Pair{Time: t, Baseline: b[i], Canary: c[i]}
	}
	return out
}

// Fleet is one fleet's side of Pairs: its histogram on every minute of w,
// nil where it has none or one with zero observations.
func Fleet(w Window, fleet map[int64]*histogram.Histogram) []*histogram.Histogram {
	times := w.Times()
	out := make([]*histogram.Histogram, len(times))
	for i, t := range times {
		out[i] = present(fleet[t.Unix()])
	}
	return out
}

func present(h *histogram.Histogram) *histogram.Histogram {
	if h == nil || !(h.Count > 0) {
		return nil
	}
	return h
}
