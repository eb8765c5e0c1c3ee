package sim

import (
	"math"
	"strconv"
	"time"
)

// Truth is the ground-truth file that tools/cmd/pairwise-gen --truth writes
// and the tests and benchmarks read. Minutes are ordered by time, then fleet
// (baseline, canary).
//
// Coverage: a whole UTC minute T is read as Pairwise reads it, an increase()
// over a minute and one scrape interval (prom.MinuteRange): from the last
// sample at or before T-60s to the last sample at or before T, so it covers
// exactly the observations made between those two scrapes (extrapolation
// only scales the result, which leaves quantiles unchanged). With a 15 s
// scrape interval (offset 0) the samples are T-60s, T-45s, T-30s, T-15s and
// T: the whole minute, the observations of the ticks [T-60s, T).
// Count, Errors and Quantiles are over exactly those observations, after
// counter resets (a restarted pod's lost observations are not included).
// A pod whose scrapes fail (a scrape gap) has no sample in the gap, so what
// it observed since its last sample counts in the minute of its first
// sample after the gap (nowhere when the gap runs to the end). increase()
// over a minute and one scrape interval does not reach back across the gap:
// there Pairwise reads less of that pod than the truth holds.
type Truth struct {
	Scenario       string        `json:"scenario"`
	Start          string        `json:"start"`
	End            string        `json:"end"`
	ScrapeInterval string        `json:"scrape_interval"`
	ScrapeOffset   string        `json:"scrape_offset"`
	Metric         string        `json:"metric"`
	Service        string        `json:"service"`
	Job            string        `json:"job"`
	Schema         int32         `json:"schema"`
	ClassicBuckets []float64     `json:"classic_buckets"`
	Coverage       string        `json:"coverage"`
	Facts          Facts         `json:"facts"`
	Restarts       []Restart     `json:"restarts"`
	Minutes        []TruthMinute `json:"minutes"`
}

// TruthCoverage is the Coverage sentence of every truth file.
const TruthCoverage = "count, errors and quantiles of minute T cover the observations between the last scrape sample at or before T-60s " +
	"and the last at or before T, which is what increase() over a minute and one scrape interval at T covers (with a 15s interval: [T-60s, T)); " +
	"quantile q is the smallest observation x with at least q*count observations <= x"

// Restart resets one pod's counters: the process dies and restarts at Time.
// Observations between the last scrape before Time and Time are lost (never
// scraped); the first scrape after it sees only what happened since Time.
type Restart struct {
	Fleet string    `json:"fleet"`
	Index int       `json:"index"`
	Pod   string    `json:"pod"`
	Time  time.Time `json:"time"`
}

// TruthMinute is one fleet's truth for the minute ending at Time.
type TruthMinute struct {
	Time      string             `json:"time"`
	Fleet     string             `json:"fleet"`
	Count     int                `json:"count"`
	Errors    int                `json:"errors"`
	Quantiles map[string]float64 `json:"quantiles"`         // empty when Count is 0
	PodP99    map[string]float64 `json:"pod_p99,omitempty"` // pods with at least one observation
}

// Quantile returns the exact quantile q (0.5, 0.99, 0.999, 0.9999), NaN if absent.
func (m TruthMinute) Quantile(q float64) float64 {
	v, ok := m.Quantiles[strconv.FormatFloat(q, 'f', -1, 64)]
	if !ok {
		return math.NaN()
	}
	return v
}

// Minute returns the truth row of a fleet at the minute ending at time
// (RFC 3339), or false.
func (tr *Truth) Minute(fleet, time string) (TruthMinute, bool) {
	for _, m := range tr.Minutes {
		if m.Fleet == fleet && m.Time == time {
			return m, true
		}
	}
	return TruthMinute{}, false
}
