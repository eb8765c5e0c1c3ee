package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
)

// panelRow is the render time of one frames file.
type panelRow struct {
	File            string
	Minutes         int
	Cells           int
	RenderMs, Load  float64 // medians
	RenderMsSamples []float64
}

// benchPanel drives the harness page that tests/harness builds (it is not
// ours: we only load its built page) from cmd/pairwise-bench/panel/bench.mjs.
// The frames are the harness's own 60- and 1,440-minute sample files.
func benchPanel(e *env, p plan, r *report) {
	build := filepath.Join(e.root, "tests", "harness", "build")
	files := []string{filepath.Join(build, "sample-frames.json"), filepath.Join(build, "sample-frames-day.json")}
	for _, f := range append(files, filepath.Join(build, "index.html"), filepath.Join(build, "host.js"), "/usr/bin/chromium") {
		if _, err := os.Stat(f); err != nil {
			r.PanelNote = fmt.Sprintf("not measured: %s is missing (the harness in tests/harness is built by its own build step, which is not part of this benchmark)", f)
			return
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		r.PanelNote = "not measured: node is not installed"
		return
	}
	e.logf("panel: %d reps in headless Chromium", p.Reps)
	cmd := exec.Command("node", append([]string{filepath.Join(e.root, "cmd", "pairwise-bench", "panel", "bench.mjs"), "--reps", strconv.Itoa(p.Reps)}, files...)...)
	cmd.Dir = e.root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		r.PanelNote = fmt.Sprintf("not measured: the panel benchmark failed after %.0fs: %v: %s", time.Since(t0).Seconds(), err, procs.TailLines(errb.String(), 5))
		return
	}
	var res struct {
		Results []struct {
			File     string    `json:"file"`
			RenderMs []float64 `json:"renderMs"`
			LoadMs   []float64 `json:"loadMs"`
			Cells    int       `json:"cells"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		r.PanelNote = fmt.Sprintf("not measured: unreadable output %q: %v", out.String(), err)
		return
	}
	for i, x := range res.Results {
		r.Panel = append(r.Panel, panelRow{File: x.File, Minutes: framesMinutes(files[i]), Cells: x.Cells,
			RenderMs: median(x.RenderMs), Load: median(x.LoadMs), RenderMsSamples: x.RenderMs})
	}
}

// framesMinutes counts the rows of the "minutes" frame of a DataFrameJSON file.
func framesMinutes(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var frames []struct {
		Schema struct {
			Name string `json:"name"`
		} `json:"schema"`
		Data struct {
			Values [][]json.RawMessage `json:"values"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &frames) != nil {
		return 0
	}
	for _, f := range frames {
		if f.Schema.Name == "minutes" && len(f.Data.Values) > 0 {
			return len(f.Data.Values[0])
		}
	}
	return 0
}
