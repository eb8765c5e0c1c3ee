package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// EarliestTime is the earliest time a user may name (a deployment start, a
// window's end): anything earlier is a typo.
var EarliestTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// unixMillisFrom: numbers at or above it are Unix milliseconds (Grafana's
// ${__from} and ${__to}); below, Unix seconds. 1e11 seconds is the year 5138.
const unixMillisFrom = 1e11

// ParseTime reads a time as the judge, the gate and the data source all
// take one: RFC 3339, Unix seconds, or Unix milliseconds (a number at or
// above 1e11, as Grafana's ${__from} gives it), between EarliestTime and
// latest.
func ParseTime(text string, latest time.Time) (time.Time, error) {
	text = strings.TrimSpace(text)
	outside := func() error {
		return fmt.Errorf("%q is not a time between %s and %s", text, EarliestTime.Format(time.RFC3339), latest.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	var t time.Time
	if parsed, err := time.Parse(time.RFC3339Nano, text); err == nil {
		t = parsed
	} else if n, err := strconv.ParseInt(text, 10, 64); err == nil && n > -unixMillisFrom*1000 && n < unixMillisFrom*1000 {
		// Whole numbers exactly: a float would move milliseconds.
		if n >= unixMillisFrom || n <= -unixMillisFrom {
			t = time.UnixMilli(n)
		} else {
			t = time.Unix(n, 0)
		}
	} else if n, err := strconv.ParseFloat(text, 64); err == nil && !math.IsNaN(n) && !math.IsInf(n, 0) {
		if math.Abs(n) >= unixMillisFrom {
			n /= 1000
		}
		if math.Abs(n) >= unixMillisFrom {
			return time.Time{}, outside()
		}
		whole, frac := math.Modf(n)
		t = time.Unix(int64(whole), int64(math.Round(frac*1e9)))
	} else {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-11-21T14:00:00Z), Unix seconds nor Unix milliseconds", text)
	}
	if t.Before(EarliestTime) || t.After(latest) {
		return time.Time{}, outside()
	}
	return t.UTC(), nil
}

// CheckStarted refuses a deployment start after now: a deployment that has
// not started cannot be judged (one that started less than a minute ago
// holds, TooEarly).
func CheckStarted(since, now time.Time) error {
	if since.After(now) {
		return fmt.Errorf("%s is after the clock (%s): a deployment that has not started cannot be judged", since.UTC().Format(time.RFC3339), now.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	return nil
}

// ParseDuration reads a duration as Go writes it (90m, 1h30m) or as
// Prometheus does (7d, 1w, 1d12h): users of both type either.
func ParseDuration(text string) (time.Duration, error) {
	text = strings.TrimSpace(text)
	if d, err := time.ParseDuration(text); err == nil {
		return d, nil
	}
	d, err := model.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 60m, 90m, 24h or 7d", text)
	}
	return time.Duration(d), nil
}
