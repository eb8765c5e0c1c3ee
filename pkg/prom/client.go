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
	"io"
	"net"
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
)

// Client is a small Prometheus HTTP API client. HTTP carries authentication
// (the plugin passes the SDK's configured client); Timeout bounds each query.
type Client struct {
	BaseURL string
	HTTP    *http.Client
	Timeout time.Duration
}

// New returns a client for baseURL with a default HTTP client.
func New(baseURL string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q must be an absolute http(s) URL", baseURL)
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{}, Timeout: timeout}, nil
}

// Series is the fleet histogram per minute end (Unix seconds) for one fleet.
type Series map[int64]*histogram.Histogram

// Range is a whole-minute range: minute ends Start, Start+1m, ..., End.
type Range struct{ Start, End time.Time }

// Minutes counts the minutes in the range.
func (r Range) Minutes() int { return int(r.End.Sub(r.Start)/time.Minute) + 1 }

// NativeQuery and ClassicQuery render the fleet-merged histogram over one
// minute, from a parsed selector and a validated metric name only.
func NativeQuery(metric string, sel selector.Selector) string {
	return "sum(increase(" + sel.With(metric) + "[1m]))"
}

// ClassicQuery is NativeQuery for classic `le` buckets.
func ClassicQuery(metric string, sel selector.Selector) string {
	return "sum by (le) (increase(" + sel.With(metric+"_bucket") + "[1m]))"
}

// SamplesQuery is the mean number of samples each series of a fleet has in a
// minute: a one-minute increase() over series scraped n times a minute reads
// n/(n-1) of the observations they counted (verdict.ScrapeScale). Native
// series are counted as they are; classic series by their +Inf bucket.
func SamplesQuery(metric string, sel selector.Selector, kind Kind) string {
	series := sel.With(metric)
	if kind == Classic {
		inf := append(append(selector.Selector(nil), sel...), selector.Matcher{Name: "le", Op: selector.Equal, Value: "+Inf"})
		series = inf.With(metric + "_bucket")
	}
	return "sum(count_over_time(" + series + "[1m])) / count(count_over_time(" + series + "[1m]))"
}

// PodsNativeQuery and PodsClassicQuery keep one histogram per pod label value.
func PodsNativeQuery(metric, podLabel string, sel selector.Selector) string {
	return "sum by (" + podLabel + ") (increase(" + sel.With(metric) + "[1m]))"
}

// PodsClassicQuery is PodsNativeQuery for classic `le` buckets.
func PodsClassicQuery(metric, podLabel string, sel selector.Selector) string {
	return "sum by (" + podLabel + ", le) (increase(" + sel.With(metric+"_bucket") + "[1m]))"
}

// FleetHistograms fetches one fleet's merged histogram for every minute of r.
// With Auto it tries native first and falls back to classic; it returns the
// kind it used so the other fleet can be queried the same way.
func (c *Client) FleetHistograms(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (Series, Kind, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, kind, err
	}
	if kind == Auto || kind == Native {
		res, err := c.rangeQuery(ctx, NativeQuery(metric, sel), r)
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
	res, err := c.rangeQuery(ctx, ClassicQuery(metric, sel), r)
	if err != nil {
		return nil, kind, err
	}
	series, err := classicSeries(res, "")
	if err != nil {
		return nil, kind, err
	}
	return series[""], Classic, nil
}

// SamplesPerSeries is SamplesQuery for every minute of r, by minute end in
// Unix seconds; minutes without samples are absent. kind is Native or Classic.
func (c *Client) SamplesPerSeries(ctx context.Context, metric string, sel selector.Selector, kind Kind, r Range) (map[int64]float64, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	res, err := c.rangeQuery(ctx, SamplesQuery(metric, sel, kind), r)
	if err != nil {
		return nil, err
	}
	out := map[int64]float64{}
	for _, s := range res.Result {
		for _, pair := range s.Values {
			ts, err := parseTime(pair[0])
			if err != nil {
				return nil, err
			}
			v, err := parseQuoted(pair[1])
			if err != nil {
				return nil, err
			}
			out[ts] = v
		}
	}
	return out, nil
}

// PodHistograms is FleetHistograms keeping pods apart: pod -> minute -> histogram.
func (c *Client) PodHistograms(ctx context.Context, metric, podLabel string, sel selector.Selector, kind Kind, r Range) (map[string]Series, error) {
	if err := selector.ValidMetricName(metric); err != nil {
		return nil, err
	}
	if !validLabel(podLabel) {
		return nil, fmt.Errorf("invalid pod label name %q", podLabel)
	}
	if kind == Native {
		res, err := c.rangeQuery(ctx, PodsNativeQuery(metric, podLabel, sel), r)
		if err != nil {
			return nil, err
		}
		return nativeSeries(res, podLabel)
	}
	res, err := c.rangeQuery(ctx, PodsClassicQuery(metric, podLabel, sel), r)
	if err != nil {
		return nil, err
	}
	return classicSeries(res, podLabel)
}

func validLabel(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || i > 0 && b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}

// apiResponse is the envelope of every Prometheus API answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type matrixData struct {
	ResultType string         `json:"resultType"`
	Result     []matrixSeries `json:"result"`
}

type matrixSeries struct {
	Metric     map[string]string    `json:"metric"`
	Values     [][2]json.RawMessage `json:"values"`
	Histograms [][2]json.RawMessage `json:"histograms"`
}

func (c *Client) rangeQuery(ctx context.Context, query string, r Range) (*matrixData, error) {
	form := url.Values{
		"query": {query},
		"start": {strconv.FormatInt(r.Start.Unix(), 10)},
		"end":   {strconv.FormatInt(r.End.Unix(), 10)},
		"step":  {"60"},
	}
	if c.Timeout > 0 {
		form.Set("timeout", strconv.FormatFloat(c.Timeout.Seconds(), 'f', -1, 64)+"s")
	}
	var data matrixData
	if err := c.post(ctx, "/api/v1/query_range", form, &data); err != nil {
		return nil, fmt.Errorf("%w (query %s)", err, query)
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("%w: range query returned %q, not a matrix", ErrNotProm, data.ResultType)
	}
	return &data, nil
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

func (c *Client) get(ctx context.Context, path string, q url.Values, into any) error {
	u := c.BaseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return c.do(req, into)
}

func (c *Client) post(ctx context.Context, path string, form url.Values, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req, into)
}

func (c *Client) do(req *http.Request, into any) error {
	if c.Timeout > 0 {
		ctx, cancel := context.WithTimeout(req.Context(), c.Timeout)
		defer cancel()
		req = req.WithContext(ctx)
	}
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return classifyTransport(req, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return classifyTransport(req, err)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %d", ErrAuth, req.URL.Host, resp.StatusCode)
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if strings.Contains(string(body), "timeout") || resp.StatusCode == http.StatusGatewayTimeout {
			return fmt.Errorf("%w: %s", ErrTimeout, apiError(body))
		}
	}
	var env apiResponse
	if err := json.Unmarshal(body, &env); err != nil || env.Status == "" {
		return fmt.Errorf("%w: %s answered %d with no Prometheus API response", ErrNotProm, req.URL.Host, resp.StatusCode)
	}
	if env.Status != "success" {
		switch env.ErrorType {
		case "timeout", "canceled":
			return fmt.Errorf("%w: %s", ErrTimeout, env.Error)
		case "bad_data", "execution":
			return fmt.Errorf("%w: %s", ErrBadQuery, env.Error)
		}
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, env.ErrorType, env.Error)
	}
	if err := json.Unmarshal(env.Data, into); err != nil {
		return fmt.Errorf("%w: cannot read the response: %v", ErrNotProm, err)
	}
	return nil
}

func apiError(body []byte) string {
	var env apiResponse
	if json.Unmarshal(body, &env) == nil && env.Error != "" {
		return env.Error
	}
	return strings.TrimSpace(string(body))
}

func classifyTransport(req *http.Request, err error) error {
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("query to %s canceled: %w", req.URL.Host, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %s", ErrTimeout, req.URL.Host)
	}
	return fmt.Errorf("%w at %s: %v", ErrUnavailable, req.URL.Host, err)
}
