package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/sim"
)

// Truth is the ground-truth file (--truth). Minutes are ordered by time, then
// fleet (baseline, canary).
//
// Coverage: for a whole UTC minute T the window is (T-60s, T]. Prometheus's
// increase(x[1m]) at T takes the first and the last sample inside the window,
// so it covers exactly the observations made between those two scrapes
// (extrapolation only scales the result, which leaves quantiles unchanged).
// With a 15 s scrape interval (offset 0) the samples are T-45s, T-30s, T-15s
// and T: 45 s of the minute, the observations of the ticks [T-45s, T).
// Count, Errors and Quantiles are over exactly those observations, after
// counter resets (a restarted pod's lost observations are not included).
type Truth struct {
	Scenario       string    `json:"scenario"`
	Start          string    `json:"start"`
	End            string    `json:"end"`
	ScrapeInterval string    `json:"scrape_interval"`
	ScrapeOffset   string    `json:"scrape_offset"`
	Metric         string    `json:"metric"`
	Service        string    `json:"service"`
	Job            string    `json:"job"`
	Schema         int32     `json:"schema"`
	ClassicBuckets []float64 `json:"classic_buckets"`
	Coverage       string    `json:"coverage"`
	Facts          sim.Facts `json:"facts"`
	Restarts       []Restart `json:"restarts"`
	Minutes        []Minute  `json:"minutes"`
}

// Minute is one fleet's truth for the minute ending at Time.
type Minute struct {
	Time      string             `json:"time"`
	Fleet     string             `json:"fleet"`
	Count     int                `json:"count"`
	Errors    int                `json:"errors"`
	Quantiles map[string]float64 `json:"quantiles"`         // empty when Count is 0
	PodP99    map[string]float64 `json:"pod_p99,omitempty"` // pods with at least one observation
}

const coverage = "count, errors and quantiles of minute T cover the observations between the first and the last scrape " +
	"sample in (T-60s, T], which is what increase(...[1m]) at T covers (with a 15s interval: [T-45s, T)); " +
	"quantile q is the smallest observation x with at least q*count observations <= x"

func (g *generator) writeTruth() error {
	f, err := os.Create(g.o.TruthFile)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	head := Truth{
		Scenario:       g.o.Sim.Scenario,
		Start:          g.start.Format(time.RFC3339),
		End:            g.end.Format(time.RFC3339),
		ScrapeInterval: g.o.ScrapeInterval.String(),
		ScrapeOffset:   g.o.ScrapeOffset.String(),
		Metric:         g.o.Metric,
		Service:        g.o.Service,
		Job:            g.o.Job,
		Schema:         g.o.Schema,
		ClassicBuckets: g.o.ClassicBuckets,
		Coverage:       coverage,
		Facts:          g.s.Facts(g.start, g.end),
		Restarts:       g.o.Restarts,
	}
	if head.Restarts == nil {
		head.Restarts = []Restart{}
	}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	// Stream the minutes: replace the trailing `null}` of "minutes".
	b = b[:len(b)-len("null}")]
	w.Write(b)
	w.WriteString("[\n")
	first := true
	n := g.o.Sim.PodsPerFleet
	for m := 0; m < g.o.Minutes; m++ {
		T := g.start.Add(time.Duration(m+1) * time.Minute).Format(time.RFC3339)
		for fi, fleet := range sim.Fleets {
			vals := g.fleetVals[fi][m]
			slices.Sort(vals)
			if !first {
				w.WriteString(",\n")
			}
			first = false
			fmt.Fprintf(w, `{"time":%q,"fleet":%q,"count":%d,"errors":%d,"quantiles":{`, T, fleet, len(vals), g.fleetErrs[fi][m])
			if len(vals) > 0 {
				for qi, q := range Quantiles {
					if qi > 0 {
						w.WriteByte(',')
					}
					fmt.Fprintf(w, `"%s":%s`, formatQ(q), jsonFloat(sim.Quantile(vals, q)))
				}
			}
			w.WriteByte('}')
			if g.o.TruthPodP99 {
				w.WriteString(`,"pod_p99":{`)
				firstPod := true
				for i := 0; i < n; i++ {
					v := g.podP99[fi][m*n+i]
					if math.IsNaN(v) {
						continue
					}
					if !firstPod {
						w.WriteByte(',')
					}
					firstPod = false
					fmt.Fprintf(w, `%q:%s`, sim.PodName(g.o.Service, fleet, i), jsonFloat(v))
				}
				w.WriteByte('}')
			}
			w.WriteByte('}')
			g.fleetVals[fi][m] = nil // free as we go
		}
	}
	w.WriteString("\n]}\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func jsonFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
