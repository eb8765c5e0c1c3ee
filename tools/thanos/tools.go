//go:build tools

// Package tools pins Thanos 0.42.4 for the tests in internal/thanos. Its
// go.mod copies Thanos's own replace directives (`go install ...@v0.42.4`
// refuses a module that has them); tools/install.sh builds the binary from
// here with Thanos's release tags, netgo and slicelabels. Never compiled into
// Pairwise itself.
package tools

import _ "github.com/thanos-io/thanos/cmd/thanos"
