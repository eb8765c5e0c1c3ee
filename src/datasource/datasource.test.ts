import { CoreApp, DataSourceInstanceSettings } from '@grafana/data';
import { DataSource } from './datasource';
import { DEFAULT_QUERY, PairwiseOptions, PairwiseQuery } from './types';
import { CONTRACT } from '../contract';
import { validateMetric, validateSelector } from './validation';

/**
 * Dashboard variables: a string is a single value, an array a multi-value or All selection (Grafana
 * hands a format function the array).
 */
const mockVariables: Record<string, string | string[]> = {
  fleet: 'checkout',
  metric: 'http_request_duration_seconds',
  since: '2026-06-01T11:00:00Z',
  pods: ['checkout-1', 'checkout.2'],
  one: ['checkout-1'],
  quoted: 'x",track!="baseline',
  slash: 'a\\b',
};

jest.mock('@grafana/runtime', () => {
  const actual = jest.requireActual('@grafana/runtime');
  return {
    ...actual,
    // TemplateSrv.replace as Grafana runs it for $name and ${name}: a format function is called with the
    // value (a string, or an array of values) and the variable; without one a multi-value variable
    // becomes Grafana's default glob format, {a,b}.
    getTemplateSrv: () => ({
      replace: (text: string, _scopedVars?: unknown, format?: unknown) =>
        text.replace(/\$\{(\w+)\}|\$(\w+)/g, (match: string, braced?: string, bare?: string) => {
          const name = braced ?? bare ?? '';
          const value = mockVariables[name];
          if (value === undefined) {
            return match;
          }
          if (typeof format === 'function') {
            return format(value, { name, multi: Array.isArray(value), includeAll: false });
          }
          return Array.isArray(value) ? `{${value.join(',')}}` : value;
        }),
    }),
  };
});

/** The value of a double-quoted PromQL string as Prometheus reads it (its escapes are JSON's here). */
const unquote = (quoted: string): string => JSON.parse(quoted);

/** Whether a `=~` matcher's value (as Prometheus reads it, anchored) matches a label value. */
const regexMatches = (quotedRegex: string, label: string) => new RegExp(`^(?:${unquote(quotedRegex)})$`).test(label);

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

  it('turns a multi-value variable under =~ into one escaped regular expression', () => {
    const out = ds.applyTemplateVariables({ ...query, canarySelector: '{pod=~"$pods",track="canary"}' }, {});
    expect(out.canarySelector).toBe(String.raw`{pod=~"(checkout-1|checkout\\.2)",track="canary"}`);
    const value = /pod=~("[^,]*")/.exec(out.canarySelector)?.[1] ?? '';
    expect(regexMatches(value, 'checkout-1')).toBe(true);
    expect(regexMatches(value, 'checkout.2')).toBe(true);
    // The dot is escaped: it matches itself only, and no value selects a third pod.
    expect(regexMatches(value, 'checkoutX2')).toBe(false);
    expect(regexMatches(value, 'checkout-3')).toBe(false);
    expect(validateSelector(out.canarySelector)).toBeUndefined();
    // One value chosen of a multi-value variable: the value alone, still regex-escaped.
    expect(ds.applyTemplateVariables({ ...query, baselineSelector: '{pod=~"${one}"}' }, {}).baselineSelector).toBe(
      '{pod=~"checkout-1"}'
    );
  });

  it('escapes quotes and backslashes in a value, so a value cannot add matchers', () => {
    const out = ds.applyTemplateVariables(
      { ...query, baselineSelector: '{app="$quoted",track="canary"}', canarySelector: '{path="$slash"}' },
      {}
    );
    expect(out.baselineSelector).toBe(String.raw`{app="x\",track!=\"baseline",track="canary"}`);
    expect(unquote(/app=(".*?[^\\]")/.exec(out.baselineSelector)?.[1] ?? '')).toBe('x",track!="baseline');
    expect(out.canarySelector).toBe(String.raw`{path="a\\b"}`);
    expect(unquote(/path=(".*")/.exec(out.canarySelector)?.[1] ?? '')).toBe('a\\b');
  });

  it("interpolates the request counter and its failed-request matchers as the fleets' metric and selectors", () => {
    const out = ds.applyTemplateVariables(
      { ...query, errorsMetric: '$metric', errorsSelector: '{app="$quoted",code=~"5.."}' },
      {}
    );
    expect(out.errorsMetric).toBe('http_request_duration_seconds');
    expect(out.errorsSelector).toBe(String.raw`{app="x\",track!=\"baseline",code=~"5.."}`);
  });

  it("interpolates the load-balancer selectors as the fleets' selectors", () => {
    const out = ds.applyTemplateVariables(
      {
        ...query,
        lbMetric: '$metric',
        lbBaselineSelector: '{app="$quoted",pod=~"$pods"}',
        lbCanarySelector: '{app="$fleet",pod=~"$pods",track="canary"}',
      },
      {}
    );
    expect(out.lbMetric).toBe('http_request_duration_seconds');
    expect(out.lbBaselineSelector).toBe(String.raw`{app="x\",track!=\"baseline",pod=~"(checkout-1|checkout\\.2)"}`);
    expect(out.lbCanarySelector).toBe(String.raw`{app="checkout",pod=~"(checkout-1|checkout\\.2)",track="canary"}`);
  });

  it('leaves a multi-value metric or deployment start to the backend, which refuses {a,b} by name', () => {
    const out = ds.applyTemplateVariables({ ...query, metric: '$pods', since: '$pods' }, {});
    expect(out.metric).toBe('{checkout-1,checkout.2}');
    expect(validateMetric(out.metric)).toMatch(/letters, digits/);
    expect(out.since).toBe('{checkout-1,checkout.2}');
  });

  it('interpolates the queries Explore and the query inspector show', () => {
    const [out] = ds.interpolateVariablesInQueries(
      [{ ...query, canarySelector: '{pod=~"$pods"}', lbMetric: '$metric', lbCanarySelector: '{app="$quoted"}' }],
      {}
    );
    expect(out.metric).toBe('http_request_duration_seconds');
    expect(out.baselineSelector).toBe('{app="checkout",track="baseline"}');
    expect(out.canarySelector).toBe(String.raw`{pod=~"(checkout-1|checkout\\.2)"}`);
    expect(out.lbCanarySelector).toBe(String.raw`{app="x\",track!=\"baseline"}`);
  });

  it('skips hidden queries and queries without a metric', () => {
    expect(ds.filterQuery(query)).toBe(true);
    expect(ds.filterQuery({ ...query, hide: true })).toBe(false);
    expect(ds.filterQuery({ ...query, metric: '' })).toBe(false);
  });

  it("shows the data source's scrape interval as the editor's default", () => {
    const thirty = new DataSource({ ...settings, jsonData: { scrapeIntervalSeconds: 30 } });
    expect(thirty.getEditorDefaults().scrapeIntervalSeconds).toBe(30);
    expect(ds.getEditorDefaults().scrapeIntervalSeconds).toBe(CONTRACT.defaults.scrapeIntervalSeconds);
  });

  it('offers the defaults of pkg/verdict, through the generated contract.json', () => {
    expect(CONTRACT.defaults.rule).toBe('evidence');
    expect(Object.keys(CONTRACT.defaults).sort()).toEqual([...CONTRACT.fields].sort());
    expect(ds.getEditorDefaults()).toMatchObject({
      ...CONTRACT.defaults,
      since: '',
      windowMode: 'range',
      histogramKind: 'auto',
    });
  });

  it('saves no verdict default in a new query, so later data source settings and defaults reach it', () => {
    // Grafana's newQuery: { ...getDefaultQuery(app), datasource }, saved with the dashboard.
    const saved = { ...ds.getDefaultQuery(CoreApp.PanelEditor), refId: 'A' } as PairwiseQuery;
    expect(saved).toEqual({
      refId: 'A',
      queryType: 'minutes',
      metric: '',
      baselineSelector: '',
      canarySelector: '',
      histogramKind: 'auto',
      windowMode: 'range',
    });
    for (const field of CONTRACT.fields) {
      expect(saved).not.toHaveProperty(field);
    }
    // Not even the data source's own scrape interval: the backend reads it when the query runs.
    const thirty = new DataSource({ ...settings, jsonData: { scrapeIntervalSeconds: 30 } });
    expect(thirty.getDefaultQuery(CoreApp.PanelEditor)).not.toHaveProperty('scrapeIntervalSeconds');
    expect(thirty.applyTemplateVariables(saved, {})).not.toHaveProperty('scrapeIntervalSeconds');
  });

  it('starts an alert rule query in the alerting format, other queries in the default one', () => {
    expect(ds.getDefaultQuery(CoreApp.UnifiedAlerting).format).toBe('alerting');
    expect(ds.getDefaultQuery(CoreApp.Dashboard)).not.toHaveProperty('format');
  });
});
