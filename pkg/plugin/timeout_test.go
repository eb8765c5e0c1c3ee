package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// TestTimeoutSetting: the data source's timeout reaches the client when it
// is sane, and a timeout too long to mean anything (or so long it would
// overflow into no timeout at all) is refused with a sentence that says
// what to fix, never silently dropped.
func TestTimeoutSetting(t *testing.T) {
	for _, tt := range []struct {
		name     string
		jsonData string
		want     time.Duration
		wantErr  string
	}{
		{name: "default", jsonData: `{}`, want: DefaultTimeout},
		{name: "above the SDK's old 30 s", jsonData: `{"timeout":120}`, want: 2 * time.Minute},
		{name: "the longest allowed", jsonData: `{"timeout":600}`, want: MaxTimeout},
		{name: "a second too long", jsonData: `{"timeout":601}`, wantErr: "at most 600 seconds"},
		{name: "so long it would overflow", jsonData: `{"timeout":1e12}`, wantErr: "at most 600 seconds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := settingsInstance(t, tt.jsonData, tt.wantErr)
			if ds == nil {
				return
			}
			if ds.configErr != "" || ds.client == nil || ds.client.Timeout != tt.want {
				t.Fatalf("config error %q, timeout %v, want %v", ds.configErr, ds.client.Timeout, tt.want)
			}
		})
	}
}

// TestScrapeIntervalSetting: the data source's scrape interval is the
// default of every query that does not set its own; one that does not
// divide a minute is refused with a sentence that says what to fix.
func TestScrapeIntervalSetting(t *testing.T) {
	const query = `{"metric":"h","baselineSelector":"{track=\"baseline\"}","canarySelector":"{track=\"canary\"}"%s}`
	to := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, jsonData, queryField string
		want                       int
		wantErr                    string
	}{
		{name: "default", jsonData: `{}`, want: 15},
		{name: "the data source's", jsonData: `{"scrapeIntervalSeconds":30}`, want: 30},
		{name: "the query's own wins", jsonData: `{"scrapeIntervalSeconds":30}`, queryField: `,"scrapeIntervalSeconds":60`, want: 60},
		{name: "not dividing a minute", jsonData: `{"scrapeIntervalSeconds":25}`, wantErr: "divides a minute"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := settingsInstance(t, tt.jsonData, tt.wantErr)
			if ds == nil {
				return
			}
			q, err := parseQuery(json.RawMessage(fmt.Sprintf(query, tt.queryField)), "", to.Add(-time.Hour), to, ds.defaults)
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Request.Config.ScrapeIntervalSeconds; got != tt.want {
				t.Fatalf("scrape interval %d s, want %d s", got, tt.want)
			}
		})
	}
}

// settingsInstance builds a data source instance from jsonData. With
// wantErr, its health check must fail saying so, and it returns nil.
func settingsInstance(t *testing.T, jsonData, wantErr string) *Datasource {
	t.Helper()
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{
		UID: "pw", Name: "Pairwise", URL: "http://127.0.0.1:1", JSONData: []byte(jsonData)})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*Datasource)
	t.Cleanup(ds.Dispose)
	if wantErr == "" {
		return ds
	}
	health, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil || health.Status == backend.HealthStatusOk || !strings.Contains(health.Message, wantErr) {
		t.Fatalf("health %v %q (%v), want an error saying %q", health.Status, health.Message, err, wantErr)
	}
	return nil
}
