import { CoreApp, DataSourceInstanceSettings, ScopedVars } from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';
import { DEFAULT_QUERY, MetricInfo, NEW_QUERY, PairwiseOptions, PairwiseQuery } from './types';

export class DataSource extends DataSourceWithBackend<PairwiseQuery, PairwiseOptions> {
  /** The data source's scrape interval, the default of new queries (unset: pkg/verdict's). */
  private readonly scrapeIntervalSeconds?: number;

  constructor(instanceSettings: DataSourceInstanceSettings<PairwiseOptions>) {
    super(instanceSettings);
    this.scrapeIntervalSeconds = instanceSettings.jsonData?.scrapeIntervalSeconds || undefined;
  }

  /**
   * What Grafana saves in a new query: the fields the backend needs to run one (NEW_QUERY), none of the
   * verdict settings, so later data source settings and defaults still reach the query. A new alert
   * rule query asks for the alerting format, which the editor then offers the numeric fields of.
   */
  getDefaultQuery(app: CoreApp): Partial<PairwiseQuery> {
    return app === CoreApp.UnifiedAlerting ? { ...NEW_QUERY, format: 'alerting' } : { ...NEW_QUERY };
  }

  /**
   * The values the editor shows for unset fields (as placeholders) and validates with: pkg/verdict's
   * defaults and the data source's scrape interval. Never written into a query.
   */
  getEditorDefaults(): Omit<PairwiseQuery, 'refId'> {
    return this.scrapeIntervalSeconds
      ? { ...DEFAULT_QUERY, scrapeIntervalSeconds: this.scrapeIntervalSeconds }
      : DEFAULT_QUERY;
  }

  /**
   * Interpolates dashboard variables in the string fields that may hold them. In the selectors a
   * variable's value is escaped for the double-quoted PromQL string it lands in, and a multi-value or
   * All variable becomes its values as one regular expression, `(a|b)`, for a `=~` matcher
   * (selectorFormat). Explore and the query inspector get the same through the inherited
   * interpolateVariablesInQueries, which calls this for every query.
   */
  applyTemplateVariables(query: PairwiseQuery, scopedVars: ScopedVars): PairwiseQuery {
    const templateSrv = getTemplateSrv();
    // The metric and the deployment start take one value: a multi-value variable there becomes
    // Grafana's glob {a,b}, which the backend refuses by name (not a metric name, not a time).
    const plain = (text: string | undefined) => templateSrv.replace(text ?? '', scopedVars);
    const selector = (text: string | undefined) => templateSrv.replace(text ?? '', scopedVars, selectorFormat);
    return {
      ...query,
      metric: plain(query.metric),
      baselineSelector: selector(query.baselineSelector),
      canarySelector: selector(query.canarySelector),
      lbMetric: plain(query.lbMetric),
      lbBaselineSelector: selector(query.lbBaselineSelector),
      lbCanarySelector: selector(query.lbCanarySelector),
      errorsMetric: plain(query.errorsMetric),
      errorsSelector: selector(query.errorsSelector),
      since: plain(query.since),
    };
  }

  filterQuery(query: PairwiseQuery): boolean {
    return !query.hide && Boolean(query.metric);
  }

  /** Histogram metrics known to Prometheus, from the backend's `metrics` resource. */
  async getMetrics(): Promise<MetricInfo[]> {
    const result = await this.getResource<MetricInfo[]>('metrics');
    return Array.isArray(result) ? result : [];
  }
}

/** Escapes text for a double-quoted PromQL string: backslashes, double quotes and line breaks. */
export function escapePromString(text: string): string {
  return text.replace(/[\\"]/g, '\\$&').replace(/\n/g, '\\n');
}

/** Escapes the metacharacters of a regular expression (RE2, as Prometheus reads `=~`). */
export function escapeRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

/**
 * The format of a variable inside a selector, as Grafana's Prometheus data source formats it for
 * `=~`: a single value escaped for the double-quoted string it stands in; a multi-value or All
 * variable (an array of values) its values regex-escaped, then string-escaped, as `(a|b)`.
 */
export function selectorFormat(value: unknown): string {
  if (Array.isArray(value)) {
    const values = value.map((v) => escapePromString(escapeRegex(String(v))));
    return values.length === 1 ? values[0] : values.length === 0 ? '' : `(${values.join('|')})`;
  }
  return escapePromString(String(value ?? ''));
}
