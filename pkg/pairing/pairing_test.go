package pairing

import (
	"testing"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
)

var base = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestEnding(t *testing.T) {
	tests := []struct {
		name      string
		at        time.Time
		n         int
		settle    time.Duration
		wantFirst time.Time
		wantLast  time.Time
	}{
		{name: "on a whole minute, that minute is complete", at: base, n: 60, wantFirst: base.Add(-59 * time.Minute), wantLast: base},
		{name: "mid-minute, the unfinished minute is left out", at: base.Add(59 * time.Second), n: 3, wantFirst: base.Add(-2 * time.Minute), wantLast: base},
		{name: "settle time pushes a fresh minute out", at: base.Add(10 * time.Second), n: 1, settle: 30 * time.Second, wantFirst: base.Add(-time.Minute), wantLast: base.Add(-time.Minute)},
		{name: "other time zones are read as UTC", at: base.In(time.FixedZone("IST", 19800)).Add(30 * time.Second), n: 1, wantFirst: base, wantLast: base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Ending(tt.at, tt.n, tt.settle)
			if err != nil {
				t.Fatal(err)
			}
			if !w.First.Equal(tt.wantFirst) || !w.Last.Equal(tt.wantLast) || w.Minutes() != tt.n {
				t.Fatalf("got %v..%v (%d minutes), want %v..%v", w.First, w.Last, w.Minutes(), tt.wantFirst, tt.wantLast)
			}
		})
	}
	if _, err := Ending(base, 0, 0); err == nil {
		t.Fatal("a zero-minute window is an error")
	}
}

func TestBetween(t *testing.T) {
	w, err := Between(base.Add(-90*time.Second), base.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// (11:58:30, 12:00:30]: minutes ending 11:59 and 12:00 are whole.
	if !w.First.Equal(base.Add(-time.Minute)) || !w.Last.Equal(base) {
		t.Fatalf("got %v..%v", w.First, w.Last)
	}
	if _, err := Between(base.Add(10*time.Second), base.Add(50*time.Second)); err == nil {
		t.Fatal("a range inside one minute holds no whole minute")
	}
}

func TestPairs(t *testing.T) {
	w := Window{First: base, Last: base.Add(3 * time.Minute)}
	h := &histogram.Histogram{Count: 10}
	empty := &histogram.Histogram{}
	baseline := map[int64]*histogram.Histogram{base.Unix(): h, base.Add(time.Minute).Unix(): h, base.Add(2 * time.Minute).Unix(): h}
	canary := map[int64]*histogram.Histogram{base.Unix(): h, base.Add(2 * time.Minute).Unix(): empty, base.Add(3 * time.Minute).Unix(): h,
		base.Add(4 * time.Minute).Unix(): h} // outside the window: ignored
	got := Pairs(w, baseline, canary)
	want := []struct{ baseline, canary bool }{{true, true}, {true, false}, {true, false}, {false, true}}
	if len(got) != len(want) {
		t.Fatalf("%d pairs, want %d", len(got), len(want))
	}
	for i, p := range got {
		if (p.Baseline != nil) != want[i].baseline || (p.Canary != nil) != want[i].canary {
			t.Errorf("minute %d: baseline %v canary %v, want %+v", i, p.Baseline != nil, p.Canary != nil, want[i])
		}
		if !p.Time.Equal(base.Add(time.Duration(i) * time.Minute)) {
			t.Errorf("minute %d at %v", i, p.Time)
		}
	}
	// Each fleet alone is its side of the pairs.
	for name, fleet := range map[string][]*histogram.Histogram{"baseline": Fleet(w, baseline), "canary": Fleet(w, canary)} {
		if len(fleet) != len(got) {
			t.Fatalf("%s: %d minutes, want %d", name, len(fleet), len(got))
		}
		for i, h := range fleet {
			if want := map[string]*histogram.Histogram{"baseline": got[i].Baseline, "canary": got[i].Canary}[name]; h != want {
				t.Errorf("%s minute %d: %p, its pair has %p", name, i, h, want)
			}
		}
	}
}
