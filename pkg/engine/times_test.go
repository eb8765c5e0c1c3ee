package engine

import (
	"strings"
	"testing"
	"time"
)

// One reading of a user's time for the judge, the gate and the data source.
func TestParseTime(t *testing.T) {
	latest := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		text string
		want time.Time
		err  string
	}{
		{text: "2026-11-21T12:30:15+01:00", want: time.Date(2026, 11, 21, 11, 30, 15, 0, time.UTC)},
		{text: "2026-11-21T12:30:15.25Z", want: time.Date(2026, 11, 21, 12, 30, 15, 25e7, time.UTC)},
		{text: " 1795000000 ", want: time.Unix(1795000000, 0).UTC()},
		{text: "1795000000.5", want: time.Unix(1795000000, 5e8).UTC()},
		{text: "1795000000123", want: time.UnixMilli(1795000000123).UTC()}, // Grafana's ${__from}, exactly
		{text: "1e9", want: time.Unix(1e9, 0).UTC()},
		{text: "0.5", err: "not a time between 2000"},
		{text: "-5", err: "not a time between"},
		{text: "1e20", err: "not a time between"},
		{text: "2027-01-01T00:00:00Z", err: "not a time between"}, // after latest
		{text: "now-30m", err: "neither RFC 3339"},
		{text: "NaN", err: "neither RFC 3339"},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.text, latest)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseTime(%q) = %v, %v; want an error with %q", tt.text, got, err, tt.err)
		case tt.err == "" && (err != nil || !got.Equal(tt.want) || got.Location() != time.UTC):
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tt.text, got, err, tt.want)
		}
	}
	if err := CheckStarted(latest.Add(time.Second), latest); err == nil || !strings.Contains(err.Error(), "has not started") {
		t.Errorf("CheckStarted after the clock: %v", err)
	}
	if err := CheckStarted(latest, latest); err != nil {
		t.Errorf("CheckStarted at the clock: %v", err)
	}
}
