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

// Truth, Minute and Restart are the truth file's types, defined once in
// pkg/sim so that the tests and benchmarks read what this writes.
type (
	Truth  = sim.Truth
	Minute = sim.TruthMinute
)

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
		Coverage:       sim.TruthCoverage,
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
