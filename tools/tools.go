//go:build tools

// Package tools pins the Prometheus release (3.13.5, module v0.313.5) that the
// tests and the demo run. It is never compiled into Pairwise itself.
// Alertmanager is installed by version (see install.sh): Prometheus's module
// graph would otherwise lift it to a release whose UI assets are missing.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
