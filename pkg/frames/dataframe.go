package frames

import (
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// DataFrame copies a Table into a Grafana data frame, column by column,
// without knowing what the columns mean. A numeric table (Numeric) is
// marked for graphs, not tables. The data source sends these frames; the
// golden frames in testdata are them as the SDK writes them.
func DataFrame(t Table, refID string, numeric bool) (*data.Frame, error) {
	frame := data.NewFrame(t.Name)
	frame.RefID = refID
	for _, c := range t.Columns {
		var field *data.Field
		switch v := c.Values.(type) {
		case []time.Time:
			field = data.NewField(c.Name, nil, v)
		case []*time.Time:
			field = data.NewField(c.Name, nil, v)
		case []*float64:
			field = data.NewField(c.Name, nil, v)
		case []string:
			field = data.NewField(c.Name, nil, v)
		case []bool:
			field = data.NewField(c.Name, nil, v)
		default:
			return nil, fmt.Errorf("column %s has unsupported type %T", c.Name, c.Values)
		}
		if len(c.Labels) > 0 {
			field.Labels = data.Labels(c.Labels)
		}
		if c.Unit != "" {
			field.Config = &data.FieldConfig{Unit: c.Unit}
		}
		frame.Fields = append(frame.Fields, field)
	}
	meta := &data.FrameMeta{Custom: t.Meta, PreferredVisualization: data.VisTypeTable}
	if numeric {
		meta.PreferredVisualization = data.VisTypeGraph
	}
	for _, w := range t.Warnings {
		meta.Notices = append(meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: w})
	}
	frame.Meta = meta
	if _, err := frame.RowLen(); err != nil {
		return nil, err
	}
	return frame, nil
}
