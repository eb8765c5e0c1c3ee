package grafana

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/pairwise-canary/pairwise/internal/testenv"
)

// Plugin is a backend plugin executable started and spoken to as Grafana
// does it (pkg/plugins/backendplugin/grpcplugin): hashicorp go-plugin over
// gRPC, protocol version 2, the magic cookie grafana_plugin_type=datasource,
// the v2 plugin set (diagnostics, resource, data, stream), and an
// environment holding nothing of the host's but the proxy variables Grafana
// lets through. Requests and answers cross the wire as pluginv2 protobufs,
// converted with the SDK's ToProto/FromProto as Grafana converts them.
type Plugin struct {
	client      *goplugin.Client
	diagnostics grpcplugin.DiagnosticsClient
	resource    grpcplugin.ResourceClient
	data        grpcplugin.DataClient
	log         *testenv.SyncBuffer
}

// Start runs the executable until the test ends.
func Start(t testing.TB, executable string) *Plugin {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	cmd := exec.Command(executable)
	cmd.Env = []string{} // Grafana passes only HTTP(S)_PROXY and NO_PROXY, when set
	client := goplugin.NewClient(&goplugin.ClientConfig{
		Cmd: cmd,
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{
			grpcplugin.ProtocolVersion: {
				"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
				"resource":    &grpcplugin.ResourceGRPCPlugin{},
				"data":        &grpcplugin.DataGRPCPlugin{},
				"stream":      &grpcplugin.StreamGRPCPlugin{},
			},
		},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logs, Level: hclog.Info}),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start %s as Grafana does: %v\n%s", executable, err, logs.String())
	}
	p := &Plugin{client: client, log: logs}
	dispense := func(name string) any {
		raw, err := rpc.Dispense(name)
		if err != nil {
			t.Fatalf("dispense %s: %v", name, err)
		}
		return raw
	}
	var ok bool
	if p.diagnostics, ok = dispense("diagnostics").(grpcplugin.DiagnosticsClient); !ok {
		t.Fatal("the plugin serves no diagnostics client")
	}
	if p.resource, ok = dispense("resource").(grpcplugin.ResourceClient); !ok {
		t.Fatal("the plugin serves no resource client")
	}
	if p.data, ok = dispense("data").(grpcplugin.DataClient); !ok {
		t.Fatal("the plugin serves no data client")
	}
	return p
}

// Exited tells whether the plugin process has stopped.
func (p *Plugin) Exited() bool { return p.client.Exited() }

// Log is what the plugin wrote to its log (go-plugin relays stderr).
func (p *Plugin) Log() string { return p.log.String() }

// NegotiatedVersion is the protocol version the handshake agreed on.
func (p *Plugin) NegotiatedVersion() int { return p.client.NegotiatedVersion() }

// CheckHealth asks the plugin for the data source's health, as the "Save &
// test" button does.
func (p *Plugin) CheckHealth(ctx context.Context, pc backend.PluginContext) (*backend.CheckHealthResult, error) {
	resp, err := p.diagnostics.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: backend.ToProto().PluginContext(pc)})
	if err != nil {
		return nil, err
	}
	return backend.FromProto().CheckHealthResponse(resp), nil
}

// QueryData runs queries, as a panel, Explore or an alert rule does.
func (p *Plugin) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp, err := p.data.QueryData(ctx, backend.ToProto().QueryDataRequest(req))
	if err != nil {
		return nil, err
	}
	return backend.FromProto().QueryDataResponse(resp)
}

// CallResource calls a resource route and collects the streamed answers.
func (p *Plugin) CallResource(ctx context.Context, req *backend.CallResourceRequest) ([]*backend.CallResourceResponse, error) {
	stream, err := p.resource.CallResource(ctx, backend.ToProto().CallResourceRequest(req))
	if err != nil {
		return nil, err
	}
	var out []*backend.CallResourceResponse
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, backend.FromProto().CallResourceResponse(msg))
	}
}

// PluginContext is what Grafana sends with every request to a data source
// instance: the org, the plugin, and the instance's settings with its
// secrets decrypted.
func PluginContext(pluginID string, settings backend.DataSourceInstanceSettings) backend.PluginContext {
	s := settings
	return backend.PluginContext{
		OrgID:                      1,
		PluginID:                   pluginID,
		PluginVersion:              "1.0.0",
		User:                       &backend.User{Login: "admin", Role: "Admin"},
		DataSourceInstanceSettings: &s,
		GrafanaConfig:              backend.NewGrafanaCfg(map[string]string{}),
		UserAgent:                  nil,
	}
}

// Describe prints a data response for test failures.
func Describe(dr backend.DataResponse) string {
	if dr.Error != nil {
		return fmt.Sprintf("error %q (status %d, source %q)", dr.Error, dr.Status, dr.ErrorSource)
	}
	var parts []string
	for _, f := range dr.Frames {
		parts = append(parts, fmt.Sprintf("frame %q: %d fields, %d rows", f.Name, len(f.Fields), f.Rows()))
	}
	return strings.Join(parts, "; ")
}
