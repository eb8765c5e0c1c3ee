package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// GetResource asks h for its resource path with a GET, as Grafana's
// CallResource does, and decodes the JSON of its 200 answer into out.
func GetResource(t *testing.T, h backend.CallResourceHandler, path string, out any) {
	t.Helper()
	sender := backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		if r.Status != http.StatusOK {
			return fmt.Errorf("status %d: %s", r.Status, r.Body)
		}
		return json.Unmarshal(r.Body, out)
	})
	if err := h.CallResource(context.Background(), &backend.CallResourceRequest{Path: path, Method: http.MethodGet}, sender); err != nil {
		t.Fatalf("resource %s: %v", path, err)
	}
}
