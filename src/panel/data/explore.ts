import { getDataSourceSrv } from '@grafana/runtime';

/**
 * The Prometheus data source Explore links open when the panel names none: the one marked default, else
 * the only one there is; '' when there is none (or several, none of them default): no links then.
 */
export function defaultPrometheusUid(): string {
  try {
    const list = getDataSourceSrv().getList({ type: 'prometheus' });
    return (list.find((ds) => ds.isDefault) ?? (list.length === 1 ? list[0] : undefined))?.uid ?? '';
  } catch {
    // No data source service (outside Grafana): no links.
    return '';
  }
}

/**
 * Each fleet's PromQL for the verdict quantile of the minute ending at the evaluation time, as the
 * data source wrote it in the frame's meta.exploreQueries (pkg/frames.ExploreQueries, built by
 * prom.NativeQuery and prom.ClassicQuery): the panel never writes PromQL itself.
 */
export interface ExploreQueries {
  baseline: string;
  canary: string;
}

/** Reads meta.exploreQueries; null when the frame carries none. */
export function readExploreQueries(value: unknown): ExploreQueries | null {
  const v = value as Partial<ExploreQueries> | undefined;
  return v && typeof v.baseline === 'string' && typeof v.canary === 'string'
    ? { baseline: v.baseline, canary: v.canary }
    : null;
}

export interface ExploreLinkInput {
  prometheusUid: string;
  queries: ExploreQueries;
  /** The minute's end (the instant the queries are evaluated at), epoch milliseconds. */
  minuteEndMs: number;
}

/**
 * A Grafana Explore URL (relative, without app sub-path) with two instant queries, baseline and
 * canary, evaluated at the minute's end time.
 */
export function buildExploreUrl({ prometheusUid, queries, minuteEndMs }: ExploreLinkInput): string {
  const datasource = { type: 'prometheus', uid: prometheusUid };
  const query = (refId: keyof ExploreQueries) => ({
    refId,
    datasource,
    expr: queries[refId],
    instant: true,
    range: false,
    legendFormat: refId,
  });
  const panes = {
    pairwise: {
      datasource: prometheusUid,
      queries: [query('baseline'), query('canary')],
      range: { from: String(minuteEndMs - 60_000), to: String(minuteEndMs) },
    },
  };
  return `/explore?schemaVersion=1&panes=${encodeURIComponent(JSON.stringify(panes))}`;
}
