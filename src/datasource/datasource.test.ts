import { DataSourceInstanceSettings } from '@grafana/data';
import { DataSource } from './datasource';
import { DEFAULT_QUERY, PairwiseOptions, PairwiseQuery } from './types';
import { CONTRACT } from '../contract';

jest.mock('@grafana/runtime', () => {
  const actual = jest.requireActual('@grafana/runtime');
  return {
    ...actual,
    getTemplateSrv: () => ({
      replace: (text: string) =>
        text
          .replace('$fleet', 'checkout')
          .replace('$metric', 'http_request_duration_seconds')
          .replace('$since', '2026-06-01T11:00:00Z'),
    }),
  };
});

const settings = {
  id: 1,
  uid: 'pw',
  type: 'pairwise-canary-datasource',
  name: 'Pairwise',
  jsonData: {},
} as unknown as DataSourceInstanceSettings<PairwiseOptions>;

describe('DataSource', () => {
  const ds = new DataSource(settings);
  const query: PairwiseQuery = {
    ...DEFAULT_QUERY,
    refId: 'A',
    metric: '$metric',
    baselineSelector: '{app="$fleet",track="baseline"}',
    canarySelector: '{app="$fleet",track="canary"}',
  };

  it('interpolates metric and both selectors', () => {
    const out = ds.applyTemplateVariables(query, {});
    expect(out.metric).toBe('http_request_duration_seconds');
    expect(out.baselineSelector).toBe('{app="checkout",track="baseline"}');
    expect(out.canarySelector).toBe('{app="checkout",track="canary"}');
    expect(out.quantiles).toEqual(DEFAULT_QUERY.quantiles);
  });

  it('interpolates the deployment start and keeps the rule', () => {
    const out = ds.applyTemplateVariables({ ...query, since: '$since', rule: 'reference' }, {});
    expect(out.since).toBe('2026-06-01T11:00:00Z');
    expect(out.rule).toBe('reference');
    expect(ds.applyTemplateVariables({ ...query, since: undefined }, {}).since).toBe('');
  });

  it('skips hidden queries and queries without a metric', () => {
    expect(ds.filterQuery(query)).toBe(true);
    expect(ds.filterQuery({ ...query, hide: true })).toBe(false);
    expect(ds.filterQuery({ ...query, metric: '' })).toBe(false);
  });

  it("starts new queries at the data source's scrape interval", () => {
    const thirty = new DataSource({ ...settings, jsonData: { scrapeIntervalSeconds: 30 } });
    expect(thirty.getDefaultQuery('explore' as never).scrapeIntervalSeconds).toBe(30);
    expect(ds.getDefaultQuery('explore' as never).scrapeIntervalSeconds).toBe(CONTRACT.defaults.scrapeIntervalSeconds);
  });

  it('offers the defaults of pkg/verdict, through the generated contract.json', () => {
    expect(CONTRACT.defaults.rule).toBe('evidence');
    expect(Object.keys(CONTRACT.defaults).sort()).toEqual([...CONTRACT.fields].sort());
    expect(ds.getDefaultQuery('explore' as never)).toMatchObject({
      ...CONTRACT.defaults,
      since: '',
      windowMode: 'range',
      histogramKind: 'auto',
    });
  });
});
