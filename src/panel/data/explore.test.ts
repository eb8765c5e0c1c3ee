import { goldenMeta } from '../testing/goldens';
import { buildExploreUrl, readExploreQueries } from './explore';

describe('readExploreQueries', () => {
  it("reads the data source's queries of both fleets, and nothing else", () => {
    const queries = readExploreQueries(goldenMeta().exploreQueries);
    expect(queries?.canary).toBe(
      'histogram_quantile(0.99, sum by (le) (increase(http_request_duration_seconds_bucket{app="checkout",track="canary"}[75s])) * 0.8)'
    );
    expect(readExploreQueries(undefined)).toBeNull();
    expect(readExploreQueries({ baseline: 'x' })).toBeNull();
  });
});

describe('buildExploreUrl', () => {
  const minuteEnd = Date.UTC(2026, 10, 21, 14, 7);
  const url = buildExploreUrl({
    prometheusUid: 'pairwise-prometheus',
    queries: { baseline: 'baseline_query', canary: 'canary_query' },
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
    expect(pane.queries.map((q: { expr: string }) => q.expr)).toEqual(['baseline_query', 'canary_query']);
  });

  it('evaluates at the minute end, the window being the minute before it', () => {
    expect(pane.range).toEqual({ from: String(minuteEnd - 60_000), to: String(minuteEnd) });
  });
});
