// Package plugin is the Grafana glue of the pairwise-canary-datasource: it
// decodes queries, calls the engine and returns frames. It holds no analysis
// logic; that lives in pkg/engine and the packages it calls.
package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/frames"
	"github.com/pairwise-canary/pairwise/pkg/prom"
)

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// Settings is the data source's jsonData. Secrets (basicAuthPassword,
// bearerToken) live only in secureJsonData and are read decrypted, never
// stored here and never logged.
// TLS options and custom headers use Grafana's standard jsonData names
// (tlsSkipVerify, tlsAuthWithCACert, httpHeaderName1, ...), read by the SDK.
type Settings struct {
	PrometheusURL  string  `json:"prometheusUrl"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
	BasicAuthUser  string  `json:"basicAuthUser"`
}

// Datasource is one configured instance.
type Datasource struct {
	client *prom.Client
	logger log.Logger
}

// NewDatasource builds an instance from its settings.
func NewDatasource(ctx context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	var settings Settings
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &settings); err != nil {
			return nil, fmt.Errorf("read data source settings: %w", err)
		}
	}
	url := strings.TrimSpace(settings.PrometheusURL)
	if url == "" {
		url = strings.TrimSpace(s.URL)
	}
	timeout := 30 * time.Second
	if settings.TimeoutSeconds > 0 {
		timeout = time.Duration(settings.TimeoutSeconds * float64(time.Second))
	}
	opts, err := s.HTTPClientOptions(ctx)
	if err != nil {
		return nil, fmt.Errorf("read HTTP client settings: %w", err)
	}
	if settings.BasicAuthUser != "" {
		opts.BasicAuth = &httpclient.BasicAuthOptions{User: settings.BasicAuthUser, Password: s.DecryptedSecureJSONData["basicAuthPassword"]}
	}
	if token := s.DecryptedSecureJSONData["bearerToken"]; token != "" {
		if opts.Header == nil {
			opts.Header = http.Header{}
		}
		opts.Header.Set("Authorization", "Bearer "+token)
	}
	httpClient, err := httpclient.New(opts)
	if err != nil {
		return nil, fmt.Errorf("create HTTP client: %w", err)
	}
	ds := &Datasource{logger: log.DefaultLogger.With("datasource", s.UID)}
	if url != "" {
		client, err := prom.New(url, timeout)
		if err != nil {
			return nil, err
		}
		client.HTTP = httpClient
		ds.client = client
	}
	return ds, nil
}

// Dispose is called when the settings change: idle connections to the old
// Prometheus are closed so nothing outlives the instance.
func (d *Datasource) Dispose() {
	if d.client != nil && d.client.HTTP != nil {
		d.client.HTTP.CloseIdleConnections()
	}
}

// QueryData answers every query; one failing query does not fail the others.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = d.query(ctx, q)
	}
	return resp, nil
}

func (d *Datasource) query(ctx context.Context, q backend.DataQuery) (dr backend.DataResponse) {
	defer func() {
		if r := recover(); r != nil {
			d.logger.Error("query panicked", "refId", q.RefID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			dr = backend.ErrDataResponse(backend.StatusInternal, "Pairwise hit an internal error on this query; the plugin log has the details")
		}
	}()
	if d.client == nil {
		return backend.ErrDataResponse(backend.StatusBadRequest, "the data source has no Prometheus URL: set it on the data source's settings page")
	}
	pq, err := parseQuery(q.JSON, q.QueryType, q.TimeRange.From, q.TimeRange.To)
	if err != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	res, err := engine.Analyze(ctx, d.client, pq.Request)
	if err != nil {
		return errorResponse(err)
	}
	var table frames.Table
	switch pq.Type {
	case QueryDecision:
		table = frames.Decision(res)
	case QueryPods:
		spread, err := engine.PodSpread(ctx, d.client, pq.Request, pq.PodLabel, res.BaselineKind)
		if err != nil {
			return errorResponse(err)
		}
		table = frames.Pods(res, spread)
	default:
		table = frames.Minutes(res)
	}
	frame, err := toFrame(table, q.RefID)
	if err != nil {
		d.logger.Error("build frame", "refId", q.RefID, "error", err)
		return backend.ErrDataResponse(backend.StatusInternal, "Pairwise could not build the result frame; the plugin log has the details")
	}
	return backend.DataResponse{Frames: []*dataFrame{frame}}
}

// errorResponse gives Prometheus trouble an honest status and a sentence.
func errorResponse(err error) backend.DataResponse {
	var fe *fieldError
	switch {
	case errors.As(err, &fe):
		return backend.ErrDataResponse(backend.StatusBadRequest, err.Error())
	case errors.Is(err, prom.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return backend.ErrDataResponseWithSource(backend.StatusTimeout, backend.ErrorSourceDownstream, "Prometheus did not answer in time: shorten the range or raise the data source timeout ("+err.Error()+")")
	case errors.Is(err, prom.ErrAuth):
		return backend.ErrDataResponseWithSource(backend.StatusBadGateway, backend.ErrorSourceDownstream, "Prometheus refused the credentials: check authentication on the data source's settings page ("+err.Error()+")")
	case errors.Is(err, prom.ErrUnavailable), errors.Is(err, prom.ErrNotProm):
		return backend.ErrDataResponseWithSource(backend.StatusBadGateway, backend.ErrorSourceDownstream, "cannot query Prometheus: "+err.Error())
	case errors.Is(err, prom.ErrBadQuery), errors.Is(err, prom.ErrNotFound):
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	case errors.Is(err, engine.ErrSinceAfterWindow):
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, "since: "+err.Error()+"; move the dashboard range to include the deployment, or correct its start")
	case errors.Is(err, engine.ErrNoData):
		return backend.ErrDataResponseWithSource(backend.StatusNotFound, backend.ErrorSourceDownstream, err.Error())
	case errors.Is(err, context.Canceled):
		return backend.ErrDataResponseWithSource(backend.StatusTimeout, backend.ErrorSourceDownstream, "the query was cancelled")
	}
	return backend.ErrDataResponse(backend.StatusBadRequest, err.Error())
}

// CheckHealth reaches Prometheus and reports its version.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	if d.client == nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: "Set the Prometheus URL (Prometheus, Mimir or Thanos query endpoint)."}, nil
	}
	version, err := d.client.BuildInfo(ctx)
	if err != nil {
		var msg string
		switch {
		case errors.Is(err, prom.ErrAuth):
			msg = "Prometheus refused the credentials (401/403): check basic auth, the bearer token or the headers."
		case errors.Is(err, prom.ErrNotProm):
			msg = "The URL answers, but not with the Prometheus HTTP API: point it at the query endpoint (for Mimir, the /prometheus prefix)."
		case errors.Is(err, prom.ErrTimeout):
			msg = "Prometheus did not answer in time: check the URL and the network, or raise the timeout."
		default:
			msg = "Cannot reach Prometheus: check the URL and that the server is up."
		}
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: msg + " (" + err.Error() + ")"}, nil
	}
	if version == "" {
		version = "unknown version"
	}
	return &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: "Prometheus " + version + " is reachable."}, nil
}

// CallResource serves GET metrics: the histogram metrics Prometheus knows,
// for the query editor's autocomplete.
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	reply := func(status int, body any) error {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		return sender.Send(&backend.CallResourceResponse{Status: status, Headers: map[string][]string{"Content-Type": {"application/json"}}, Body: b})
	}
	if req.Path != "metrics" || req.Method != http.MethodGet {
		return reply(http.StatusNotFound, map[string]string{"error": "unknown resource " + req.Path})
	}
	if d.client == nil {
		return reply(http.StatusBadRequest, map[string]string{"error": "the data source has no Prometheus URL"})
	}
	native, classic, err := d.client.HistogramMetrics(ctx)
	if err != nil {
		return reply(http.StatusBadGateway, map[string]string{"error": err.Error()})
	}
	type metric struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
	}
	var out []metric
	for _, n := range native {
		out = append(out, metric{n, string(prom.Native)})
	}
	for _, n := range classic {
		out = append(out, metric{n, string(prom.Classic)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Kind < out[j].Kind
	})
	if out == nil {
		out = []metric{}
	}
	return reply(http.StatusOK, out)
}
