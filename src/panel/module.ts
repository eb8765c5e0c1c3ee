import { FieldConfigProperty, PanelPlugin } from '@grafana/data';
import { PairwisePanel } from './components/PairwisePanel';
import { DEFAULT_OPTIONS, DEFAULT_UNIT, PairwisePanelOptions } from './types';

const LAYOUT = ['Layout'];
const TABLE = ['Reference table'];
const LINKS = ['Links'];

export const plugin = new PanelPlugin<PairwisePanelOptions>(PairwisePanel)
  .useFieldConfig({
    // Only the unit (of the latencies: s, ms, µs or ns) and the decimals are read.
    disableStandardOptions: [
      FieldConfigProperty.Min,
      FieldConfigProperty.Max,
      FieldConfigProperty.FieldMinMax,
      FieldConfigProperty.DisplayName,
      FieldConfigProperty.Actions,
      FieldConfigProperty.Filterable,
      FieldConfigProperty.Color,
      FieldConfigProperty.Thresholds,
      FieldConfigProperty.Mappings,
      FieldConfigProperty.Links,
      FieldConfigProperty.NoValue,
    ],
    standardOptions: {
      [FieldConfigProperty.Unit]: { defaultValue: DEFAULT_UNIT },
    },
  })
  .setPanelOptions((builder) =>
    builder
      .addBooleanSwitch({
        path: 'showBanner',
        name: 'Decision banner',
        description: 'PROMOTE / HOLD / ROLLBACK with counts against limits',
        category: LAYOUT,
        defaultValue: DEFAULT_OPTIONS.showBanner,
      })
      .addBooleanSwitch({
        path: 'showStrip',
        name: 'Minute strip',
        description: 'One cell per minute, coloured and marked by verdict',
        category: LAYOUT,
        defaultValue: DEFAULT_OPTIONS.showStrip,
      })
      .addBooleanSwitch({
        path: 'showTrack',
        name: 'Decision track',
        description: "Under the strip: each minute's decision of the window ending at it, and where rollback fires",
        category: LAYOUT,
        defaultValue: DEFAULT_OPTIONS.showTrack,
      })
      .addBooleanSwitch({
        path: 'showChart',
        name: 'Paired charts',
        description: 'Verdict quantile of both fleets and their ratio (when the panel is large enough)',
        category: LAYOUT,
        defaultValue: DEFAULT_OPTIONS.showChart,
      })
      .addBooleanSwitch({
        path: 'compact',
        name: 'Compact',
        description: 'Banner and strip only, whatever the panel size',
        category: LAYOUT,
        defaultValue: DEFAULT_OPTIONS.compact,
      })
      .addBooleanSwitch({
        path: 'showTable',
        name: 'Reference table',
        description: 'Minute, rates, tail percentiles, ratio and verdict per minute',
        category: TABLE,
        defaultValue: DEFAULT_OPTIONS.showTable,
      })
      .addRadio({
        path: 'tableQuantiles',
        name: 'Quantile columns',
        category: TABLE,
        defaultValue: DEFAULT_OPTIONS.tableQuantiles,
        settings: {
          options: [
            { value: 'tail', label: 'Tail (p99, p99.9)' },
            { value: 'all', label: 'All (adds p50, p99.99)' },
          ],
        },
        showIf: (options) => options.showTable,
      })
      .addRadio({
        path: 'sortOrder',
        name: 'Sort order',
        category: TABLE,
        defaultValue: DEFAULT_OPTIONS.sortOrder,
        settings: {
          options: [
            { value: 'time-asc', label: 'Time ↑' },
            { value: 'time-desc', label: 'Time ↓' },
            { value: 'worst-first', label: 'Worst first' },
          ],
        },
        showIf: (options) => options.showTable,
      })
      .addTextInput({
        path: 'prometheusDatasourceUid',
        name: 'Prometheus data source UID',
        description:
          'Explore links open the per-minute PromQL on this data source (a UID or a variable such as ${prometheus}); empty: the default Prometheus data source',
        category: LINKS,
        defaultValue: DEFAULT_OPTIONS.prometheusDatasourceUid,
      })
  );
