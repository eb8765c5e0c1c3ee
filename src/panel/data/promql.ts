export type PromHistogramKind = 'native' | 'classic';

export interface FleetQueryInput {
  metric: string;
  /** A label selector such as {app="api",track="canary"}; empty or "{}" selects the metric alone. */
  selector: string;
  histogramKind: PromHistogramKind;
  /** Quantile as a fraction, 0.99 for p99. */
  quantile: number;
}

function normaliseSelector(selector: string): string {
  const trimmed = selector.trim();
  return trimmed === '' || /^\{\s*\}$/.test(trimmed) ? '' : trimmed;
}

/**
 * The PromQL that gives one fleet's quantile for the minute ending at the evaluation time,
 * from the fleet's merged histogram (never an average of per-pod quantiles).
 */
export function buildFleetQuantileQuery({ metric, selector, histogramKind, quantile }: FleetQueryInput): string {
  const sel = normaliseSelector(selector);
  if (histogramKind === 'classic') {
    return `histogram_quantile(${quantile}, sum by (le) (increase(${metric}_bucket${sel}[1m])))`;
  }
  return `histogram_quantile(${quantile}, sum(increase(${metric}${sel}[1m])))`;
}

export interface ExploreLinkInput {
  prometheusUid: string;
  metric: string;
  baselineSelector: string;
  canarySelector: string;
  histogramKind: PromHistogramKind;
  quantile: number;
  /** The minute's end (the instant the queries are evaluated at), epoch milliseconds. */
  minuteEndMs: number;
}

/**
 * A Grafana Explore URL (relative, without app sub-path) with two instant queries, baseline and
 * canary, evaluated at the minute's end time.
 */
export function buildExploreUrl(input: ExploreLinkInput): string {
  const datasource = { type: 'prometheus', uid: input.prometheusUid };
  const query = (refId: string, selector: string) => ({
    refId,
    datasource,
    expr: buildFleetQuantileQuery({
      metric: input.metric,
      selector,
      histogramKind: input.histogramKind,
      quantile: input.quantile,
    }),
    instant: true,
    range: false,
    legendFormat: refId,
  });
  const panes = {
    pairwise: {
      datasource: input.prometheusUid,
      queries: [query('baseline', input.baselineSelector), query('canary', input.canarySelector)],
      range: { from: String(input.minuteEndMs - 60_000), to: String(input.minuteEndMs) },
    },
  };
  return `/explore?schemaVersion=1&panes=${encodeURIComponent(JSON.stringify(panes))}`;
}
