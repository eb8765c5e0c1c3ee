package engine

import (
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
)

func TestMissingRuns(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	r := prom.Range{Start: at(0), End: at(9)}
	tests := []struct {
		name    string
		present []int
		want    [][2]int
	}{
		{name: "all recorded", present: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "none recorded", want: [][2]int{{0, 9}}},
		{name: "before the rules, a gap, the newest minute", present: []int{3, 4, 5, 7, 8}, want: [][2]int{{0, 2}, {6, 6}, {9, 9}}},
		{name: "more runs than allowed become one", present: []int{1, 3, 5, 7}, want: [][2]int{{0, 9}}},
		{name: "runs up to the limit stay apart", present: []int{1, 2, 3, 5, 6, 7}, want: [][2]int{{0, 0}, {4, 4}, {8, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			has := map[int64]bool{}
			for _, m := range tt.present {
				has[at(m).Unix()] = true
			}
			got := missingRuns(r, func(ts int64) bool { return has[ts] })
			if len(got) != len(tt.want) {
				t.Fatalf("runs %v, want %v", got, tt.want)
			}
			for i, w := range tt.want {
				if !got[i].Start.Equal(at(w[0])) || !got[i].End.Equal(at(w[1])) {
					t.Errorf("run %d: %s..%s, want minutes %d..%d", i, got[i].Start.Format(time.TimeOnly), got[i].End.Format(time.TimeOnly), w[0], w[1])
				}
			}
		})
	}
}

func TestParseReading(t *testing.T) {
	for in, want := range map[string]Reading{"": ReadRaw, "raw": ReadRaw, "auto": ReadAuto, "recorded": ReadRecorded} {
		if got, err := ParseReading(in); err != nil || got != want {
			t.Errorf("ParseReading(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseReading("cache"); err == nil {
		t.Error("ParseReading(cache) accepted")
	}
}
