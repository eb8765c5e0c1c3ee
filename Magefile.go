//go:build mage

package main

import (
	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
)

// Default builds the data source's backend for every platform Grafana runs on.
var Default = build.BuildAll
