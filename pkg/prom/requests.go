package prom

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// PartLabel tells RequestsQuery's two series apart: "requests" and
// "errors".
const PartLabel = "pairwise_part"

// DefaultFailed selects the failed requests of a request counter when none
// are named: a status code label of 5xx, as Prometheus's client libraries
// and most proxies write it.
const DefaultFailed = `{code=~"5.."}`

// ParseFailed reads the matchers that select a request counter's failed
// requests, DefaultFailed when text is blank.
func ParseFailed(text string) (selector.Selector, error) {
	return selector.ParseNarrowing(cmp.Or(strings.TrimSpace(text), DefaultFailed))
}

// Requests are a fleet's requests and failed requests in one minute.
type Requests struct{ Requests, Errors float64 }

// RequestsQuery is a fleet's requests and failed requests in each whole
// minute, read off a request counter (http_requests_total) or a histogram's
// count (a native histogram's, or a classic one's _count series) as the
// fleet's histogram is read (minuteSum): every series of the fleet, and
// those of them that failed selects (a status label, {code=~"5.."}). The two
// sums are told apart by the label pairwise_part. Each is read once: a
// counter's minute is a float, a native histogram's a histogram, whose
// count is its requests (FleetRequests; the rule pack's readers take
// histogram_count of the recorded minute).
func RequestsQuery(metric string, sel, failed selector.Selector, scrape time.Duration) string {
	part := func(name string, s selector.Selector) string {
		return `label_replace(` + minuteSum("", s.With(metric), scrape) + `, "` + PartLabel + `", "` + name + `", "", "")`
	}
	return part("requests", sel) + " or " + part("errors", append(slices.Clone(sel), failed...))
}

// FleetRequests is RequestsQuery's answer for every minute of r (Unix
// seconds of the minute's end): a minute without requests is absent, and
// one without a failed request has Errors 0. A histogram's count is read as
// its requests.
func (c *Client) FleetRequests(ctx context.Context, metric string, sel, failed selector.Selector, r Range) (map[int64]Requests, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	if len(failed) == 0 {
		return nil, fmt.Errorf("no matcher selects the failed requests, such as {code=~\"5..\"}")
	}
	query := RequestsQuery(metric, sel, failed, r.Scrape)
	res, err := c.rangeQuery(ctx, query, r)
	if err != nil {
		return nil, err
	}
	counts := map[string]map[int64]float64{}
	for _, s := range res.Result {
		part := s.Metric[PartLabel]
		if part != "requests" && part != "errors" || counts[part] != nil {
			return nil, fmt.Errorf("%w: the request count query returned a series %v, not one of requests and one of errors (query %s)", ErrNotProm, s.Metric, query)
		}
		counts[part] = map[int64]float64{}
		for _, v := range s.Values {
			counts[part][unixSeconds(v.T)] = v.V
		}
		for _, h := range s.Histograms {
			counts[part][unixSeconds(h.T)] = h.Count
		}
	}
	out := map[int64]Requests{}
	for t, n := range counts["requests"] {
		e := counts["errors"][t] // 0 where none failed
		if math.IsNaN(n) || math.IsNaN(e) {
			continue
		}
		out[t] = Requests{Requests: n, Errors: e}
	}
	return out, nil
}

// ValidHistogramName checks the name of a latency histogram as the judge,
// the gate, the data source and the rule pack take it: a metric name
// without the classic series' _bucket suffix, which Pairwise adds itself.
func ValidHistogramName(metric string) error {
	if err := selector.ValidMetricName(metric); err != nil {
		return err
	}
	if base, ok := strings.CutSuffix(metric, "_bucket"); ok {
		return fmt.Errorf("give the histogram name without _bucket (%s), not %q", base, metric)
	}
	return nil
}

// ValidCounterName checks the name of a request counter: a metric name,
// not a classic histogram's _bucket series (each request would count once
// per bucket at or above its latency; its _count series is the counter).
func ValidCounterName(metric string) error {
	if err := selector.ValidMetricName(metric); err != nil {
		return err
	}
	if strings.HasSuffix(metric, "_bucket") {
		return fmt.Errorf("%s counts each request once per bucket at or above its latency: give a request counter, or the histogram's %s_count", metric, strings.TrimSuffix(metric, "_bucket"))
	}
	return nil
}

// CheckFailed refuses failed-request matchers on a label the fleets'
// selectors set: the fleets would then differ by it, not by their failures.
func CheckFailed(failed selector.Selector, fleets ...selector.Selector) error {
	for _, m := range failed {
		for _, sel := range fleets {
			for _, f := range sel {
				if f.Name == m.Name {
					return fmt.Errorf("the failed requests' matcher on %s names a label the fleets' selectors set (%s): select the failed requests by their status, such as {code=~\"5..\"}", m.Name, sel)
				}
			}
		}
	}
	return nil
}
