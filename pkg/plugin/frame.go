package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/pairwise-canary/pairwise/pkg/frames"
)

type dataFrame = data.Frame

// toFrame copies a frames.Table into a Grafana data frame (frames.DataFrame).
func toFrame(t frames.Table, refID string, numeric bool) (*data.Frame, error) {
	return frames.DataFrame(t, refID, numeric)
}
