import { DataSourceInstanceSettings } from '@grafana/data';
import { DataSource } from './datasource';
import { DEFAULT_QUERY, PairwiseOptions, PairwiseQuery } from './types';

jest.mock('@grafana/runtime', () => {
  const actual = jest.requireActual('@grafana/runtime');
  return {
    ...actual,
    getTemplateSrv: () => ({
      replace: (text: string) => text.replace('$fleet', 'checkout').replace('$metric', 'http_request_duration_seconds'),
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

  it('skips hidden queries and queries without a metric', () => {
    expect(ds.filterQuery(query)).toBe(true);
    expect(ds.filterQuery({ ...query, hide: true })).toBe(false);
    expect(ds.filterQuery({ ...query, metric: '' })).toBe(false);
  });

  it('offers the documented defaults', () => {
    expect(ds.getDefaultQuery('explore' as never)).toMatchObject({
      quantiles: [0.5, 0.99, 0.999, 0.9999],
      verdictQuantile: 0.99,
      promoteThreshold: 0.95,
      rollbackThreshold: 1.1,
      windowMinutes: 60,
      goodNeeded: 45,
      badLimit: 5,
      warmupMinutes: 0,
      minTailObservations: 10,
      windowMode: 'range',
      histogramKind: 'auto',
    });
  });
});
