// Package prom fetches fleet-merged histograms, one wall-clock minute per
// step, from the Prometheus HTTP API (or Mimir, Thanos and Cortex, which speak
// the same API). It issues one range query per fleet, never one per quantile:
// every quantile, count and bound is computed from the merged histogram.
package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/histogram"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// Kind says which histogram representation to query.
type Kind string

// Histogram kinds. Auto prefers native histograms and falls back to classic.
const (
	Auto    Kind = "auto"
	Native  Kind = "native"
	Classic Kind = "classic"
)

// ParseKind accepts auto, native or classic (empty means auto).
func ParseKind(s string) (Kind, error) {
	switch Kind(s) {
	case "", Auto:
		return Auto, nil
	case Native, Classic:
		return Kind(s), nil
	}
	return "", fmt.Errorf("histogram kind %q is not one of auto, native, classic", s)
}

// Errors callers map to statuses: the judge to messages, the plugin to HTTP codes.
var (
	ErrUnavailable = errors.New("prometheus is unreachable")
	ErrTimeout     = errors.New("prometheus did not answer in time")
	ErrBadQuery    = errors.New("prometheus rejected the query")
	ErrAuth        = errors.New("prometheus refused the credentials")
	ErrNotProm     = errors.New("the address does not serve the Prometheus HTTP API")
	ErrNotFound    = errors.New("no histogram found")

	// ErrServer: Prometheus (or a proxy before it) answered, with a server
	// error (HTTP 5xx): it is reachable, the URL is right, the query failed
	// there. It wraps ErrUnavailable, so callers that only know the older
	// errors still treat it as a failure of the backend.
	ErrServer error = &subError{"prometheus answered with a server error", ErrUnavailable}
	// ErrOverloaded: Prometheus asked to be retried later (HTTP 429, or 503
	// with Retry-After) and the wait did not fit within the query's deadline,
	// or the retries ran out. It wraps ErrUnavailable.
	ErrOverloaded error = &subError{"prometheus asked to retry later", ErrUnavailable}
	// ErrRetryPastDeadline: the wait Prometheus asked for did not fit
	// within the query's deadline (a longer timeout would have waited). It
	// wraps ErrOverloaded.
	ErrRetryPastDeadline error = &subError{"prometheus asked to retry later", ErrOverloaded}
	// ErrMethodRefused: the server refused the request's method (HTTP 405),
	// as a proxy that lets only GET through refuses the POSTs every query
	// is. It wraps ErrNotProm.
	ErrMethodRefused error = &subError{"the server refused the request's method", ErrNotProm}
)

// subError is a sentinel that is also its parent for errors.Is.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// Client is a small Prometheus HTTP API client. HTTP carries authentication
// (the plugin passes the SDK's configured client) unless Credentials are set
// (the CLI); Timeout bounds each query, its retries included.
type Client struct {
	// BaseURL never holds credentials: New moves a URL's user:password
	// into Credentials.
	BaseURL string
	HTTP    *http.Client
	Timeout time.Duration
	// Credentials, when set, authenticate every request that does not
	// already carry an Authorization header.
	Credentials Credentials
	// Tenant, when set, is sent as X-Scope-OrgID on every request: the
	// tenant of a multi-tenant Mimir or Cortex.
	Tenant string
}

// New returns a client for baseURL with a default HTTP client. A user and
// password in the URL (http://user:pass@host) become basic-auth Credentials
// and are removed from BaseURL; errors name the URL with the password
// redacted.
func New(baseURL string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q must be an absolute http(s) URL", RedactURL(baseURL))
	}
	if strings.Contains(u.Path+u.RawQuery+u.Fragment, "@") {
		// Most likely a password holding '/', '?' or '#' unencoded, read
		// as part of the path: the URL is not repeated.
		return nil, errors.New("the prometheus URL has an '@' after its host: if it holds a user and password, percent-encode '/', '?' and '#' in the password (%2F, %3F, %23), or give the credentials separately")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(baseURL, "#") {
		// The API's paths are appended to the URL: after a query string
		// they would be part of it. Nothing after '?' is repeated: it may
		// hold a key.
		return nil, fmt.Errorf("prometheus URL %s must not have a query string or a fragment ('?' or '#' after the path): the API's paths are appended to it; give a key as a bearer token or a header instead", (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String())
	}
	if timeout < 0 {
		return nil, fmt.Errorf("prometheus timeout %s is negative", timeout)
	}
	var creds Credentials
	if u.User != nil {
		creds.Username = u.User.Username()
		creds.Password, _ = u.User.Password()
		u.User = nil
		baseURL = u.String()
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{}, Timeout: timeout, Credentials: creds}, nil
}

// Series is the fleet histogram per minute end (Unix seconds) for one fleet.
type Series map[int64]*histogram.Histogram

// Range is a whole-minute range: minute ends Start, Start+1m, ..., End.
// Scrape is the fleets' scrape interval (0: DefaultScrapeInterval): each
// minute is read over a minute and one interval (MinuteRange).
type Range struct {
	Start, End time.Time
	Scrape     time.Duration
}

// Minutes counts the minutes in the range.
func (r Range) Minutes() int { return int(r.End.Sub(r.Start)/time.Minute) + 1 }

// DefaultScrapeInterval is the scrape interval a Range without one assumes,
// verdict.Default()'s ScrapeIntervalSeconds.
const DefaultScrapeInterval = 15 * time.Second

// MinuteRange is the range selector's duration that reads a whole minute of
// a counter scraped every scrape: a minute and one interval, so that the
// range holds the last sample before the minute and every sample in it.
// increase() over it reads every observation since the previous minute's
// last sample: consecutive minutes tile the counter, with no interval left out
// and none counted twice. "75s" at 15 s.
func MinuteRange(scrape time.Duration) string {
	if scrape <= 0 {
		scrape = DefaultScrapeInterval
	}
	return strconv.FormatInt(int64((time.Minute+scrape)/time.Second), 10) + "s"
}

// NativeQuery and ClassicQuery render the fleet-merged histogram of one
// minute, from a parsed selector and a validated metric name only: the
// increase() over a minute and one scrape interval (MinuteRange), read per
// minute (PerMinute), which at that interval holds exactly the minute's
// observations (verdict.Config.ScrapeScale).
func NativeQuery(metric string, sel selector.Selector, scrape time.Duration) string {
	return minuteSum("", sel.With(metric), scrape)
}

// minuteSum is the sum, by the grouping clause (" by (le) ", or empty), of
// series' increase over a minute and one scrape interval, read per minute.
func minuteSum(grouping, series string, scrape time.Duration) string {
	return "sum" + grouping + "(increase(" + series + "[" + MinuteRange(scrape) + "])) * " + PerMinute(scrape)
}

// ClassicQuery is NativeQuery for classic `le` buckets.
func ClassicQuery(metric string, sel selector.Selector, scrape time.Duration) string {
	return minuteSum(" by (le) ", sel.With(metric+"_bucket"), scrape)
}

// PerMinute is the factor that turns an increase() over MinuteRange into a
// minute's worth: 60 over its seconds, "0.8" at 15 s. increase()
// extrapolates a whole minute's samples to the range (x 1.25 at 15 s), so
// at the scrape interval the product is the minute's count to the bit.
func PerMinute(scrape time.Duration) string {
	if scrape <= 0 {
		scrape = DefaultScrapeInterval
	}
	return strconv.FormatFloat(float64(time.Minute)/float64(time.Minute+scrape), 'g', -1, 64)
}

// countedSeries selects one series per fleet member and label set: the
// native histogram itself, or a classic histogram's +Inf bucket.
func countedSeries(metric string, sel selector.Selector, kind Kind) string {
	if kind != Classic {
		return sel.With(metric)
	}
	inf := append(append(selector.Selector(nil), sel...), selector.Matcher{Name: "le", Op: selector.Equal, Value: "+Inf"})
	return inf.With(metric + "_bucket")
}

// PodsNativeQuery and PodsClassicQuery keep one histogram per pod label value.
func PodsNativeQuery(metric, podLabel string, sel selector.Selector, scrape time.Duration) string {
	return minuteSum(grouping([]string{podLabel}), sel.With(metric), scrape)
}

// PodsClassicQuery is PodsNativeQuery for classic `le` buckets.
func PodsClassicQuery(metric, podLabel string, sel selector.Selector, scrape time.Duration) string {
	return minuteSum(grouping([]string{podLabel, "le"}), sel.With(metric+"_bucket"), scrape)
}

// FleetHistograms fetches one fleet's merged histogram for every minute of r.
// With Auto it tries native first and falls back to classic; it returns the
// kind it used so the other fleet can be queried the same way.
func (c *Client) FleetHistograms(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (Series, Kind, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, kind, err
	}
	if kind == Auto || kind == Native {
		res, err := c.rangeQuery(ctx, NativeQuery(metric, sel, r.Scrape), r)
		if err != nil {
			return nil, kind, err
		}
		series, err := nativeSeries(res, "")
		if err != nil {
			return nil, kind, err
		}
		if len(series) > 0 || kind == Native {
			return series[""], Native, nil
		}
	}
	res, err := c.rangeQuery(ctx, ClassicQuery(metric, sel, r.Scrape), r)
	if err != nil {
		return nil, kind, err
	}
	series, err := classicSeries(res, "")
	if err != nil {
		return nil, kind, err
	}
	return series[""], Classic, nil
}

// PodHistograms is FleetHistograms keeping pods apart: pod -> minute -> histogram.
func (c *Client) PodHistograms(ctx context.Context, metric, podLabel string, sel selector.Selector, kind Kind, r Range) (map[string]Series, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	if err := CheckPodLabel(podLabel); err != nil {
		return nil, err
	}
	if kind == Native {
		res, err := c.rangeQuery(ctx, PodsNativeQuery(metric, podLabel, sel, r.Scrape), r)
		if err != nil {
			return nil, err
		}
		return nativeSeries(res, podLabel)
	}
	res, err := c.rangeQuery(ctx, PodsClassicQuery(metric, podLabel, sel, r.Scrape), r)
	if err != nil {
		return nil, err
	}
	return classicSeries(res, podLabel)
}

// ValidLabel tells whether s is a label name Pairwise accepts in a by
// clause (selector.ValidLabelName: quoted there when outside the classic
// syntax).
func ValidLabel(s string) bool { return selector.ValidLabelName(s) == nil }

// CheckPodLabel is nil for a label that can tell a fleet's pods apart: a
// label name other than le (every classic bucket would read as a pod) and
// __name__ (the metric's).
func CheckPodLabel(name string) error {
	switch {
	case !ValidLabel(name):
		return fmt.Errorf("%q is not a label name: letters, digits and _, or a UTF-8 name of letters, digits and _ : . - / (such as k8s.pod.name), starting with a letter or _", name)
	case name == "le":
		return fmt.Errorf("le is the bucket bound of classic histograms, not a pod label: each bucket would read as a pod")
	case name == "__name__":
		return fmt.Errorf("__name__ is the metric's name, not a pod label")
	}
	return nil
}

// apiResponse is the envelope of every Prometheus API answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

func (c *Client) rangeQuery(ctx context.Context, query string, r Range) (*matrixData, error) {
	return c.rangeQueryStep(ctx, query, r.Start, r.End, time.Minute)
}

// rangeQueryStep is a range query from start to end every step.
func (c *Client) rangeQueryStep(ctx context.Context, query string, start, end time.Time, step time.Duration) (*matrixData, error) {
	form := url.Values{
		"query": {query},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatInt(int64(step/time.Second), 10)},
	}
	c.setTimeout(form)
	var data matrixData
	if err := c.post(ctx, "/api/v1/query_range", form, &data); err != nil {
		return nil, fmt.Errorf("%w (query %s)", err, query)
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("%w: range query returned %q, not a matrix", ErrNotProm, data.ResultType)
	}
	return &data, nil
}

// QueryProbe sends the smallest query the way every analysis sends its
// queries (a POST to /api/v1/query_range): a server can answer BuildInfo's
// GET and still refuse the queries. CheckHealth uses it.
func (c *Client) QueryProbe(ctx context.Context) error {
	now := time.Now().Truncate(time.Minute)
	_, err := c.rangeQueryStep(ctx, "vector(1)", now, now, time.Minute)
	return err
}

// BuildInfo asks Prometheus for its version; CheckHealth uses it.
func (c *Client) BuildInfo(ctx context.Context) (version string, err error) {
	var info struct {
		Version string `json:"version"`
	}
	if err := c.get(ctx, "/api/v1/status/buildinfo", nil, &info); err != nil {
		return "", err
	}
	return info.Version, nil
}

// HistogramMetrics lists metric names that have native histograms or classic
// _bucket series, for the query editor's autocomplete.
func (c *Client) HistogramMetrics(ctx context.Context) (native, classic []string, err error) {
	var meta map[string][]struct {
		Type string `json:"type"`
	}
	if err := c.get(ctx, "/api/v1/metadata", nil, &meta); err != nil {
		return nil, nil, err
	}
	var names []string
	if err := c.get(ctx, "/api/v1/label/__name__/values", nil, &names); err != nil {
		return nil, nil, err
	}
	exists := map[string]bool{}
	for _, n := range names {
		exists[n] = true
	}
	for name, entries := range meta {
		for _, e := range entries {
			if e.Type != "histogram" {
				continue
			}
			if exists[name] {
				native = append(native, name)
			}
			if exists[name+"_bucket"] {
				classic = append(classic, name)
			}
			break
		}
	}
	return native, classic, nil
}
