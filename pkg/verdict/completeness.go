package verdict

import "fmt"

// FleetHealth is what Prometheus says of a fleet's members in one minute.
type FleetHealth struct {
	// Reporting is the number of the fleet's series with a sample in the
	// minute: those whose minute is read.
	Reporting float64
	// Down is the number of the fleet's scrape targets with up == 0 at some
	// point in the minute or the scrape interval before it (prom.DownQuery);
	// 0 also when the fleet's labels are not on `up`.
	Down float64
	// SamplesPerSeries is the mean number of samples the fleet's series
	// have in the minute (0: unknown).
	SamplesPerSeries float64
}

// ScrapedTooOften is the number of samples per series a minute from which a
// fleet is scraped more often than Config.ScrapeIntervalSeconds says: half
// a sample more than the interval gives. Its minutes would then be read
// over more than a minute, each counting part of the one before twice, and
// the counts would spread more than the false-rollback budget allows for.
// Fewer samples (a missed scrape, a slower interval) only read less.
func (c Config) ScrapedTooOften() float64 { return c.ScrapesPerMinute() + 0.5 }

// StableMinutes is how long a fleet must stay smaller before its new size
// is accepted: Prometheus itself stops returning a series 5 minutes after
// its last sample (the default lookback delta), so a member gone that long
// is gone, while one whose scrapes fail for a minute or two is missing.
const StableMinutes = 5

// Completeness tells, for each minute of health (consecutive minutes, in
// order), why the fleet is incomplete, or "" when it is complete. A minute
// is incomplete when its series are scraped more often than c says
// (ScrapedTooOften), when one of the fleet's targets is down (up == 0), or when
// fewer series report than did in any of the StableMinutes minutes before
// it: a member that was serving stopped. A fleet that stays smaller for
// StableMinutes minutes has shrunk on purpose (a pod deleted, a target
// gone) and is complete again at its new size; accepted says when that
// happened, so that it can be said. Minutes before the first are unknown,
// so the first minutes are judged on what there is.
func Completeness(c Config, health []FleetHealth) (incomplete []string, accepted []string) {
	incomplete = make([]string, len(health))
	for i, h := range health {
		if h.SamplesPerSeries >= c.ScrapedTooOften() {
			incomplete[i] = fmt.Sprintf("its series have %.1f samples in the minute, more than the %.0f of a %d s scrape interval (scrapeIntervalSeconds): set it to the fleet's scrape interval", h.SamplesPerSeries, c.ScrapesPerMinute(), c.ScrapeIntervalSeconds)
			continue
		}
		if h.Down > 0 {
			incomplete[i] = fmt.Sprintf("%.0f of its scrape targets down (up == 0)", h.Down)
			continue
		}
		before := 0.0
		for j := max(0, i-StableMinutes); j < i; j++ {
			before = max(before, health[j].Reporting)
		}
		if h.Reporting < before {
			incomplete[i] = fmt.Sprintf("%.0f of its series reported, %.0f did in the %d minutes before", h.Reporting, before, StableMinutes)
			continue
		}
		// The fleet is complete at a size smaller than StableMinutes+1 minutes ago: it shrank and stayed so.
		if j := i - StableMinutes - 1; j >= 0 && health[j].Reporting > h.Reporting && i > 0 && incomplete[i-1] != "" {
			accepted = append(accepted, fmt.Sprintf("the fleet shrank from %.0f to %.0f series and stayed so for %d minutes: accepted as its new size", health[j].Reporting, h.Reporting, StableMinutes))
		}
	}
	return incomplete, accepted
}
