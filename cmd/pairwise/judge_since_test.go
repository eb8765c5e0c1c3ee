package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A pipeline that calls the judge right after deploying gets hold (exit 1),
// as the gate and the data source answer, not an error: none of the
// deployment's minutes is whole yet, so nothing is read (nothing listens on
// the URL). A deployment start after the clock is an error (exit 3).
func TestJudgeYoungDeploymentHolds(t *testing.T) {
	url := "http://127.0.0.1:1"
	now := time.Now()
	for _, format := range []string{"table", "json"} {
		code, out, errOut := runJudge(append(fleetArgs(url), "--since", now.Add(-40*time.Second).UTC().Format(time.RFC3339), "--output", format)...)
		if code != 1 || !strings.Contains(out, "nothing to judge yet") {
			t.Fatalf("%s: a deployment 40 s old: exit %d, stdout %q, stderr %q", format, code, out, errOut)
		}
	}
	// Unix milliseconds, as a dashboard link gives them, read as the data source reads them.
	if code, out, errOut := runJudge(append(fleetArgs(url), "--since", strconv.FormatInt(now.Add(-10*time.Second).UnixMilli(), 10))...); code != 1 {
		t.Fatalf("--since in Unix milliseconds: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut := runJudge(append(fleetArgs(url), "--since", now.Add(2*time.Minute).UTC().Format(time.RFC3339))...)
	if code != exitError || !strings.Contains(errOut, "has not started") {
		t.Fatalf("a deployment after the clock: exit %d, stderr %q", code, errOut)
	}
}
