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

// Durations as Go and Prometheus write them, for --window, --range and the
// gate's window=.
func TestParseDuration(t *testing.T) {
	for _, tt := range []struct {
		text string
		want time.Duration
	}{
		{"60m", time.Hour}, {"1h30m", 90 * time.Minute}, {" 168h ", 168 * time.Hour},
		{"7d", 7 * 24 * time.Hour}, {"1w", 7 * 24 * time.Hour}, {"1d12h", 36 * time.Hour},
		{"-5m", -5 * time.Minute}, // Go's form; the callers' ranges refuse it
	} {
		if got, err := ParseDuration(tt.text); err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.text, got, err, tt.want)
		}
	}
	for _, text := range []string{"", "7", "seven days", "1.5d", "d"} {
		if got, err := ParseDuration(text); err == nil || !strings.Contains(err.Error(), "not a duration such as") {
			t.Errorf("ParseDuration(%q) = %v, %v; want an error", text, got, err)
		}
	}
}
