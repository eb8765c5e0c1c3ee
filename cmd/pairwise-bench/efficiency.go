package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/sim"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

func newClient(u string) (*prom.Client, error) { return prom.New(u, 10*time.Minute) }

// effRow is one (data set, kind) of the efficiency and overhead comparison.
type effRow struct {
	Pods                      int
	Kind                      prom.Kind
	Queries                   int // dashboard queries
	Engine, DashSeq, DashConc float64
	Raw                       float64 // the engine's own requests (histograms, then health), raw HTTP
	EngineMin, EngineMax      float64
	Reps                      int
	GenSeconds                float64
}

func (r effRow) ratioSeq() float64  { return r.DashSeq / r.Engine }
func (r effRow) ratioConc() float64 { return r.DashConc / r.Engine }
func (r effRow) overhead() float64  { return r.Engine / r.Raw }

// accRow is the accuracy of one (data set, kind, quantile).
type accRow struct {
	Pods     int
	Kind     prom.Kind
	Quantile float64
	N        int
	// Relative errors |estimate - truth| / truth.
	ErrMedian, ErrP95, ErrMax float64
	WithinBound               int // minutes whose error is within that minute's bound
	BoundMax                  float64
	BoundNote                 string
}

// avgRow is the error of averaging per-pod p99s (from the truth file).
type avgRow struct {
	Pods                            int
	N                               int
	SignedMedian, AbsP95, AbsMax    float64
	Understated                     int // minutes where the average is below the fleet p99
	UnderMedianFactor, UnderMaxFact float64
}

func benchEfficiency(ctx context.Context, e *env, p plan, r *report, doEff, doAcc bool) error {
	for _, pods := range p.EffPods {
		ds, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(pods), "--minutes", strconv.Itoa(p.EffMinutes),
			"--end", benchEnd.Format(time.RFC3339), "--seed", "7")
		if err != nil {
			return err
		}
		r.Datasets = append(r.Datasets, dsNote{Purpose: fmt.Sprintf("efficiency/accuracy, %d pods", pods), DS: ds})
		srv, err := e.serve(ds)
		if err != nil {
			return err
		}
		err = func() error {
			defer srv.Stop()
			client, err := newClient(srv.URL)
			if err != nil {
				return err
			}
			for _, kind := range []prom.Kind{prom.Native, prom.Classic} {
				req, err := analysisRequest(benchEnd, 60, kind)
				if err != nil {
					return err
				}
				if doEff {
					e.logf("efficiency: %d pods, %s, %d reps", pods, kind, p.EffReps)
					dq := dashboardQueries(kind, req.Config.Quantiles)
					rec, err := recordEngine(ctx, srv.URL, req)
					if err != nil {
						return err
					}
					ts, err := alternate(p.EffReps,
						func() (time.Duration, error) { d, _, err := runEngine(ctx, client, req); return d, err },
						func() (time.Duration, error) { return runAll(ctx, srv.URL, dq, req.Window, false, true) },
						func() (time.Duration, error) { return runAll(ctx, srv.URL, dq, req.Window, true, true) },
						func() (time.Duration, error) { return rec.replay(ctx, srv.URL) },
					)
					if err != nil {
						return err
					}
					r.Eff = append(r.Eff, effRow{Pods: pods, Kind: kind, Queries: len(dq),
						Engine: ts[0].median(), DashSeq: ts[1].median(), DashConc: ts[2].median(), Raw: ts[3].median(), GenSeconds: ds.GenSeconds,
						EngineMin: ts[0].min(), EngineMax: ts[0].max(), Reps: p.EffReps})
				}
				if doAcc {
					_, res, err := runEngine(ctx, client, req)
					if err != nil {
						return err
					}
					rows, avg, err := accuracy(ds, res, pods, kind)
					if err != nil {
						return err
					}
					r.Acc = append(r.Acc, rows...)
					if kind == prom.Native {
						r.Avg = append(r.Avg, avg)
					}
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// nativeBound is the relative width of a native bucket of the schema:
// 2^(2^-schema) - 1. The true quantile and Prometheus's interpolation lie
// in the same bucket, so this bounds the relative error.
func nativeBound(schema int) float64 { return math.Pow(2, math.Pow(2, -float64(schema))) - 1 }

// classicBound is the width of the classic bucket (lower, upper] holding v,
// relative to v; +Inf for the +Inf bucket.
func classicBound(buckets []float64, v float64) float64 {
	lower := 0.0
	for _, ub := range buckets {
		if v <= ub {
			return (ub - lower) / v
		}
		lower = ub
	}
	return math.Inf(1)
}

func accuracy(ds *dataset, res *engine.Result, pods int, kind prom.Kind) ([]accRow, avgRow, error) {
	tr, err := procs.LoadTruth(ds.Truth)
	if err != nil {
		return nil, avgRow{}, err
	}
	byKey := map[string]sim.TruthMinute{}
	for _, m := range tr.Minutes {
		byKey[m.Fleet+"@"+m.Time] = m
	}
	qidx := map[float64]int{}
	for i, q := range res.Request.Config.Quantiles {
		qidx[q] = i
	}
	var rows []accRow
	for _, q := range []float64{0.99, 0.999} {
		row := accRow{Pods: pods, Kind: kind, Quantile: q}
		var errs []float64
		for _, m := range res.Minutes {
			for _, f := range []struct {
				name string
				s    verdict.FleetStats
			}{{"baseline", m.Baseline}, {"canary", m.Canary}} {
				t, ok := byKey[f.name+"@"+m.Time.Format(time.RFC3339)]
				if !ok || t.Count == 0 || !f.s.Present {
					continue
				}
				want := t.Quantile(q)
				got := f.s.Quantiles[qidx[q]]
				if math.IsNaN(want) || math.IsNaN(got) || want <= 0 {
					continue
				}
				rel := math.Abs(got-want) / want
				errs = append(errs, rel)
				bound := nativeBound(int(tr.Schema))
				if kind == prom.Classic {
					bound = classicBound(tr.ClassicBuckets, want)
				}
				if rel <= bound*(1+1e-9) {
					row.WithinBound++
				}
				if math.IsNaN(row.BoundMax) || bound > row.BoundMax {
					row.BoundMax = bound
				}
			}
		}
		if len(errs) == 0 {
			return nil, avgRow{}, fmt.Errorf("accuracy: no minute of %d pods (%s) matched the truth file", pods, kind)
		}
		row.N = len(errs)
		row.ErrMedian, row.ErrP95, row.ErrMax = median(errs), percentile(errs, 0.95), maxOf(errs)
		if kind == prom.Native {
			row.BoundNote = fmt.Sprintf("schema %d: 2^(1/%d)-1 = %.2f%%", tr.Schema, 1<<tr.Schema, nativeBound(int(tr.Schema))*100)
		} else {
			row.BoundNote = "width of the classic bucket holding the true quantile, per minute"
		}
		rows = append(rows, row)
	}

	// The common mistake: average the pods' p99s.
	avg := avgRow{Pods: pods}
	var signed, abs, under []float64
	for _, m := range res.Minutes {
		for _, fleet := range []string{"baseline", "canary"} {
			t, ok := byKey[fleet+"@"+m.Time.Format(time.RFC3339)]
			if !ok || t.Count == 0 || len(t.PodP99) == 0 {
				continue
			}
			sum := 0.0
			for _, v := range t.PodP99 {
				sum += v
			}
			mean := sum / float64(len(t.PodP99))
			want := t.Quantile(0.99)
			if want <= 0 || math.IsNaN(want) {
				continue
			}
			rel := (mean - want) / want
			signed = append(signed, rel)
			abs = append(abs, math.Abs(rel))
			if mean < want {
				avg.Understated++
				under = append(under, want/mean)
			}
		}
	}
	avg.N = len(signed)
	avg.SignedMedian, avg.AbsP95, avg.AbsMax = median(signed), percentile(abs, 0.95), maxOf(abs)
	avg.UnderMedianFactor, avg.UnderMaxFact = median(under), maxOf(under)
	return rows, avg, nil
}
