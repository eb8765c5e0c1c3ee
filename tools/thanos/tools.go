//go:build tools

package tools

import _ "github.com/thanos-io/thanos/cmd/thanos"
