package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

// recordingLogger keeps every log line so the test can look for secrets.
type recordingLogger struct {
	mu    *sync.Mutex
	lines *[]string
	args  []any
}

func newRecordingLogger() recordingLogger {
	return recordingLogger{mu: &sync.Mutex{}, lines: &[]string{}}
}

func (l recordingLogger) add(level, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.lines = append(*l.lines, fmt.Sprint(level, msg, l.args, args))
}
func (l recordingLogger) Debug(msg string, args ...any) { l.add("debug", msg, args...) }
func (l recordingLogger) Info(msg string, args ...any)  { l.add("info", msg, args...) }
func (l recordingLogger) Warn(msg string, args ...any)  { l.add("warn", msg, args...) }
func (l recordingLogger) Error(msg string, args ...any) { l.add("error", msg, args...) }
func (l recordingLogger) Level() log.Level              { return log.Debug }
func (l recordingLogger) With(args ...any) log.Logger {
	return recordingLogger{mu: l.mu, lines: l.lines, args: append(append([]any{}, l.args...), args...)}
}
func (l recordingLogger) FromContext(context.Context) log.Logger { return l }
func (l recordingLogger) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(*l.lines, "\n")
}

// authProxy stands in for the authenticating proxy that usually fronts
// Prometheus: it wants a bearer token and answers buildinfo and the health
// check's query.
func authProxy(t *testing.T, token, basicPassword string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, basic := r.BasicAuth()
		if r.Header.Get("Authorization") != "Bearer "+token && !(basic && user == "sre" && pass == basicPassword) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/api/v1/status/buildinfo":
			w.Write([]byte(`{"status":"success","data":{"version":"3.13.5"}}`))
		case "/api/v1/query_range":
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"nothing here"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSecretsStaySecret(t *testing.T) {
	const token, password = "tok-3f9a7c1e-never-show", "pw-51d0e2b8-never-show"
	logs := newRecordingLogger()
	saved := log.DefaultLogger
	log.DefaultLogger = logs
	t.Cleanup(func() { log.DefaultLogger = saved })

	srv := authProxy(t, token, password)
	for _, tt := range []struct {
		name          string
		token         string
		basicPassword string
		wantOK        bool
		want          string
		basicAuth     bool
		legacy        bool
	}{
		{name: "right token", token: token, wantOK: true, want: "Prometheus 3.13.5 is reachable."},
		{name: "wrong token", token: "nope-" + token[:3], want: "refused the credentials"},
		{name: "basic auth, Grafana's standard settings", basicAuth: true, basicPassword: password, wantOK: true, want: "Prometheus 3.13.5 is reachable."},
		{name: "wrong basic auth password", basicAuth: true, basicPassword: "wrong", want: "refused the credentials"},
		// Basic auth wins over a bearer token left behind.
		{name: "basic auth and a stale token", basicAuth: true, token: "stale", basicPassword: password, wantOK: true, want: "reachable"},
		// Settings written by Pairwise's first settings page keep working,
		// and the health check says how to move them.
		{name: "legacy jsonData.basicAuthUser", legacy: true, basicPassword: password, wantOK: true, want: "old jsonData keys prometheusUrl, timeoutSeconds, basicAuthUser"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			settings := backend.DataSourceInstanceSettings{
				UID: "pw", Name: "Pairwise", URL: srv.URL,
				BasicAuthEnabled: tt.basicAuth, BasicAuthUser: "sre",
				JSONData:                []byte(`{"timeout":5}`),
				DecryptedSecureJSONData: map[string]string{"bearerToken": tt.token, "basicAuthPassword": tt.basicPassword},
			}
			if !tt.basicAuth {
				settings.BasicAuthUser = ""
			}
			if tt.legacy {
				settings.URL = ""
				settings.JSONData = []byte(fmt.Sprintf(`{"prometheusUrl":%q,"timeoutSeconds":5,"basicAuthUser":"sre"}`, srv.URL))
			}
			inst, err := NewDatasource(context.Background(), settings)
			if err != nil {
				t.Fatal(err)
			}
			ds := inst.(*Datasource)
			health, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if (health.Status == backend.HealthStatusOk) != tt.wantOK || !strings.Contains(health.Message, tt.want) {
				t.Fatalf("health %v %q", health.Status, health.Message)
			}
			q := backend.DataQuery{RefID: "A", TimeRange: backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()},
				JSON: json.RawMessage(`{"metric":"m","baselineSelector":"{a=\"b\"}","canarySelector":"{a=\"c\"}","histogramKind":"native"}`)}
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil {
				t.Fatal(err)
			}
			everything := health.Message + resp.Responses["A"].Error.Error() + logs.all()
			for _, secret := range []string{token, password} {
				if strings.Contains(everything, secret) {
					t.Fatalf("a secret reached a message or the log: %s", everything)
				}
			}
		})
	}
	// jsonData has no field a secret could be written to.
	b, _ := json.Marshal(Settings{LegacyPrometheusURL: "http://x", Timeout: 1})
	if strings.Contains(strings.ToLower(string(b)), "token") || strings.Contains(strings.ToLower(string(b)), "password") {
		t.Fatalf("jsonData carries a secret field: %s", b)
	}
}
