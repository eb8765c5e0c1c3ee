import { CoreApp, DataSourceInstanceSettings, ScopedVars } from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';
import { DEFAULT_QUERY, MetricInfo, PairwiseOptions, PairwiseQuery } from './types';

export class DataSource extends DataSourceWithBackend<PairwiseQuery, PairwiseOptions> {
  /** The data source's scrape interval, the default of new queries (unset: pkg/verdict's). */
  private readonly scrapeIntervalSeconds?: number;

  constructor(instanceSettings: DataSourceInstanceSettings<PairwiseOptions>) {
    super(instanceSettings);
    this.scrapeIntervalSeconds = instanceSettings.jsonData?.scrapeIntervalSeconds || undefined;
  }

  getDefaultQuery(_app: CoreApp): Partial<PairwiseQuery> {
    return this.scrapeIntervalSeconds
      ? { ...DEFAULT_QUERY, scrapeIntervalSeconds: this.scrapeIntervalSeconds }
      : DEFAULT_QUERY;
  }

  /** Interpolates dashboard variables in the string fields that may hold them. */
  applyTemplateVariables(query: PairwiseQuery, scopedVars: ScopedVars): PairwiseQuery {
    const templateSrv = getTemplateSrv();
    return {
      ...query,
      metric: templateSrv.replace(query.metric ?? '', scopedVars),
      baselineSelector: templateSrv.replace(query.baselineSelector ?? '', scopedVars),
      canarySelector: templateSrv.replace(query.canarySelector ?? '', scopedVars),
      lbMetric: templateSrv.replace(query.lbMetric ?? '', scopedVars),
      lbBaselineSelector: templateSrv.replace(query.lbBaselineSelector ?? '', scopedVars),
      lbCanarySelector: templateSrv.replace(query.lbCanarySelector ?? '', scopedVars),
      since: templateSrv.replace(query.since ?? '', scopedVars),
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
