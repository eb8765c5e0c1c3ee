package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
)

// scaleRow is one (pods, window) of the scale table.
type scaleRow struct {
	Pods, Minutes int
	Engine, Raw   float64 // medians, seconds; Engine is timed inside the child (its second analysis)
	// RawAll is the median of all the engine's own requests (histograms,
	// then health) sent again as section 2's raw; 0 in runs before it.
	RawAll     float64
	EngineCold float64 // median of the child's first analysis
	HWMKiB     int64   // peak RSS of the analysing child (max over repetitions)
	Reps       int
	Series     string
	GenSeconds float64
}

func (r scaleRow) ratio() float64    { return r.Engine / r.Raw }
func (r scaleRow) ratioAll() float64 { return r.Engine / r.RawAll }

func benchScale(ctx context.Context, e *env, p plan, r *report, self string) error {
	longest := 0
	for _, w := range p.ScaleWindows {
		longest = max(longest, w)
	}
	for _, pods := range p.ScalePods {
		// The 1 h, 6 h and 24 h windows all end at benchEnd inside one data set
		// of the longest window (+1 minute: the first minute has one sample).
		// Fewer classic buckets than the default: the engine reads the native
		// histogram, and classic series would only slow generation down.
		ds, err := e.generate("--scenario", "clean", "--pods", strconv.Itoa(pods), "--minutes", strconv.Itoa(longest+1),
			"--end", benchEnd.Format(time.RFC3339), "--seed", "7", "--buckets", p.ClassicScale, "--truth-pod-p99=false")
		if err != nil {
			return err
		}
		r.Datasets = append(r.Datasets, dsNote{Purpose: fmt.Sprintf("scale, %d pods", pods), DS: ds})
		srv, err := e.serve(ds)
		if err != nil {
			return err
		}
		err = func() error {
			defer srv.Stop()
			for _, minutes := range p.ScaleWindows {
				req, err := analysisRequest(benchEnd, minutes, prom.Native)
				if err != nil {
					return err
				}
				reps := p.ScaleReps
				if pods*minutes >= 1000*1440 {
					reps = min(reps, p.BigScaleReps)
				}
				e.logf("scale: %d pods, %d minutes, %d reps", pods, minutes, reps)
				var hwm int64
				var colds []float64
				eq := engineQueries(prom.Native)
				rec, err := recordEngine(ctx, srv.URL, req)
				if err != nil {
					return err
				}
				ts, err := alternate(reps,
					func() (time.Duration, error) {
						c, err := analyzeInChild(ctx, self, srv.URL, minutes)
						if err != nil {
							return 0, err
						}
						hwm = max(hwm, c.HWMKiB)
						colds = append(colds, c.ColdSeconds)
						return time.Duration(c.Seconds * float64(time.Second)), nil
					},
					func() (time.Duration, error) { return runAll(ctx, srv.URL, eq, req.Window, true, false) },
					func() (time.Duration, error) { return rec.replay(ctx, srv.URL) },
				)
				if err != nil {
					return err
				}
				r.Scale = append(r.Scale, scaleRow{Pods: pods, Minutes: minutes, Engine: ts[0].median(), Raw: ts[1].median(), RawAll: ts[2].median(), EngineCold: median(colds),
					HWMKiB: hwm, Reps: reps, Series: seriesOf(ds.Summary), GenSeconds: ds.GenSeconds})
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// analyzeInChild re-executes this binary with the hidden analyze subcommand.
func analyzeInChild(ctx context.Context, self, url string, minutes int) (childResult, error) {
	cmd := exec.CommandContext(ctx, self, "analyze", "--url", url, "--minutes", strconv.Itoa(minutes), "--end", benchEnd.Format(time.RFC3339))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var c childResult
	if err := cmd.Run(); err != nil {
		return c, fmt.Errorf("child analyze: %v: %s", err, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		return c, fmt.Errorf("child analyze output %q: %w", out.String(), err)
	}
	if c.Minutes != minutes {
		return c, fmt.Errorf("child analysed %d minutes, want %d", c.Minutes, minutes)
	}
	return c, nil
}

// vmHWM reads this process's peak resident set size (KiB) from /proc.
func vmHWM() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// seriesOf picks "N series" out of pairwise-gen's summary line.
func seriesOf(summary string) string {
	f := strings.Fields(summary)
	for i := 1; i < len(f); i++ {
		if strings.TrimSuffix(f[i], ",") == "series" {
			return f[i-1]
		}
	}
	return "?"
}
