export type SortOrder = 'time-asc' | 'time-desc' | 'worst-first';
export type TableQuantiles = 'tail' | 'all';

export interface PairwisePanelOptions {
  showBanner: boolean;
  showStrip: boolean;
  /** The decision of the window ending at each minute, under the strip. */
  showTrack: boolean;
  showChart: boolean;
  showTable: boolean;
  /** tail: the quantiles between p50 and p99.99 (p99, p99.9); all: every quantile in the frame. */
  tableQuantiles: TableQuantiles;
  sortOrder: SortOrder;
  /** Banner and strip only, whatever the panel size. */
  compact: boolean;
  /** UID of the Prometheus data source that Explore links open; empty: the default Prometheus data source. */
  prometheusDatasourceUid: string;
}

/** The one place panel defaults live: module.ts and the tests read them from here. */
export const DEFAULT_OPTIONS: PairwisePanelOptions = {
  showBanner: true,
  showStrip: true,
  showTrack: true,
  showChart: true,
  showTable: true,
  tableQuantiles: 'tail',
  sortOrder: 'time-asc',
  compact: false,
  // Empty: Grafana's default Prometheus data source (defaultPrometheusUid), or no links when there is none.
  prometheusDatasourceUid: '',
};

/** Display unit of latencies when the field config sets none. Frame values are always seconds. */
export const DEFAULT_UNIT = 's';
