// Command gpx_pairwise is the backend of the pairwise-canary-datasource.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/pairwise-canary/pairwise/pkg/plugin"
)

func main() {
	if err := datasource.Manage("pairwise-canary-datasource", plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error("pairwise data source stopped", "error", err.Error())
		os.Exit(1)
	}
}
