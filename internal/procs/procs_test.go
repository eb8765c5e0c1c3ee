package procs

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The servers themselves (Prometheus, Alertmanager, the generator) are
// exercised by internal/testenv's tests; these check the failures a caller
// must be told about.

func TestWaitReadyTellsWhyAProcessEnded(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		addrInUse    bool
		want         string
	}{
		{name: "port taken", script: `echo "listen tcp 127.0.0.1:9090: bind: address already in use"; exit 1`, addrInUse: true, want: "address already in use"},
		{name: "other failure", script: `echo "error loading config"; exit 3`, want: "error loading config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start("server", "/bin/sh", t.TempDir(), "-c", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			err = p.WaitReady("http://127.0.0.1:1/", 10*time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrAddrInUse) != tc.addrInUse {
				t.Fatalf("error %v, want one naming %q (address in use: %v)", err, tc.want, tc.addrInUse)
			}
		})
	}
}

func TestServeStopsWhatDidNotBecomeReady(t *testing.T) {
	_, err := Serve("sleeper", "/bin/sh", t.TempDir(), "/-/ready", 300*time.Millisecond, func(addr string) []string {
		return []string{"-c", "sleep 30"}
	})
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("error %v, want not ready", err)
	}
}

func TestBinaryMissingSaysHowToBuildIt(t *testing.T) {
	t.Setenv(EnvToolsBin, t.TempDir())
	_, err := Binary("prometheus")
	if err == nil || !strings.Contains(err.Error(), "bash tools/install.sh") {
		t.Fatalf("error %v, want instructions", err)
	}
}

func TestQueryErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("query") == "bad(" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
			return
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1,"2.5"]}]}}`))
	}))
	defer srv.Close()
	if _, err := Query(srv.URL, "bad(", time.Time{}); err == nil || !strings.Contains(err.Error(), "parse error") {
		t.Fatalf("error %v, want Prometheus's", err)
	}
	res, err := Query(srv.URL, "x", time.Unix(1, 0))
	if err != nil || len(res) != 1 {
		t.Fatalf("%v %v", res, err)
	}
	if v, err := res[0].Float(); err != nil || v != 2.5 {
		t.Fatalf("value %v %v", v, err)
	}
}
