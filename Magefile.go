//go:build mage

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
	"github.com/grafana/grafana-plugin-sdk-go/build/buildinfo"
)

// Default builds the data source's backend for every platform Grafana runs
// on: linux (amd64, arm64, arm), darwin (amd64, arm64) and windows (amd64).
var Default = build.BuildAll

// The backend belongs to the nested data source, so its build info names the
// data source (src/datasource/plugin.json), not the app (src/plugin.json)
// that the SDK would read: `gpx_pairwise_linux_amd64 -buildinfo` prints it.
func init() {
	if err := build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		id, err := jsonString("src/datasource/plugin.json", "id")
		if err != nil {
			return cfg, err
		}
		version, err := jsonString("package.json", "version")
		if err != nil {
			return cfg, err
		}
		flags := map[string]string{}
		buildinfo.Info{Time: time.Now().UnixMilli(), PluginID: id, Version: version}.AppendFlags(flags)
		if cfg.CustomVars == nil {
			cfg.CustomVars = map[string]string{}
		}
		for k, v := range flags {
			cfg.CustomVars[k] = v
		}
		return cfg, nil
	}); err != nil {
		panic(err)
	}
}

func jsonString(path, key string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	s, _ := m[key].(string)
	if s == "" {
		return "", fmt.Errorf("%s has no %s", path, key)
	}
	return s, nil
}
