import { buildExploreUrl, buildFleetQuantileQuery } from './promql';

describe('buildFleetQuantileQuery', () => {
  it('sums the native histogram of the fleet before taking the quantile', () => {
    expect(
      buildFleetQuantileQuery({
        metric: 'http_request_duration_seconds',
        selector: '{app="api",track="canary"}',
        histogramKind: 'native',
        quantile: 0.99,
      })
    ).toBe('histogram_quantile(0.99, sum(increase(http_request_duration_seconds{app="api",track="canary"}[1m])))');
  });

  it('sums classic buckets by le', () => {
    expect(
      buildFleetQuantileQuery({
        metric: 'http_request_duration_seconds',
        selector: '{track="baseline"}',
        histogramKind: 'classic',
        quantile: 0.999,
      })
    ).toBe(
      'histogram_quantile(0.999, sum by (le) (increase(http_request_duration_seconds_bucket{track="baseline"}[1m])))'
    );
  });

  it('drops an empty selector', () => {
    expect(buildFleetQuantileQuery({ metric: 'm', selector: ' { } ', histogramKind: 'native', quantile: 0.5 })).toBe(
      'histogram_quantile(0.5, sum(increase(m[1m])))'
    );
  });
});

describe('buildExploreUrl', () => {
  const minuteEnd = Date.UTC(2026, 10, 21, 14, 7);
  const url = buildExploreUrl({
    prometheusUid: 'pairwise-prometheus',
    metric: 'http_request_duration_seconds',
    baselineSelector: '{track="baseline"}',
    canarySelector: '{track="canary"}',
    histogramKind: 'native',
    quantile: 0.99,
    minuteEndMs: minuteEnd,
  });
  const panes = JSON.parse(decodeURIComponent(url.split('panes=')[1]));
  const pane = panes.pairwise;

  it('opens Explore on the Prometheus data source with both fleets as instant queries', () => {
    expect(url.startsWith('/explore?schemaVersion=1&panes=')).toBe(true);
    expect(pane.datasource).toBe('pairwise-prometheus');
    expect(pane.queries.map((q: { refId: string }) => q.refId)).toEqual(['baseline', 'canary']);
    for (const q of pane.queries) {
      expect(q).toMatchObject({
        instant: true,
        range: false,
        datasource: { type: 'prometheus', uid: 'pairwise-prometheus' },
      });
    }
    expect(pane.queries[1].expr).toBe(
      'histogram_quantile(0.99, sum(increase(http_request_duration_seconds{track="canary"}[1m])))'
    );
  });

  it('evaluates at the minute end, the window being the minute before it', () => {
    expect(pane.range).toEqual({ from: String(minuteEnd - 60_000), to: String(minuteEnd) });
  });
});
