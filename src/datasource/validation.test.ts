import { CONTRACT } from '../contract';
import { DEFAULT_QUERY, PairwiseQuery } from './types';
import {
  parseQuantiles,
  quantileLabel,
  validateMetric,
  validateQuery,
  validateSelector,
  validateSince,
} from './validation';

describe('validateSelector', () => {
  it.each([
    '{app="api",track="canary"}',
    '{ app = "api" , track != "baseline" }',
    '{pod=~"api-canary-.*"}',
    '{track="canary",pod!~"x|y",}',
    '{track="$fleet"}',
    '{track!="$fleet"}',
    '{pod=~"api-(?i)canary.*"}',
    '{msg="quote \\" inside"}',
    // Prometheus 3's quoted UTF-8 label names, as pkg/selector reads them.
    '{"service.name"="checkout","deployment.track"="canary"}',
    '{track="canary",\'k8s.pod.name\'=~"checkout-.*"}',
    '{"größe"="m"}',
    '{"service\\x2ename"="checkout"}',
    '{a="tab\\there \\u00e9 \\101"}',
  ])('accepts %s', (selector) => {
    expect(validateSelector(selector)).toBeUndefined();
  });

  it.each([
    ['', /Enter a label selector/],
    ['app="api"', /wrapped in braces/],
    ['{}', /empty selector/],
    ['{app=api}', /double quotes/],
    ['{app="api" track="x"}', /commas/],
    ['{app=="api"}', /double quotes/],
    ['{app:"api"}', /Expected =/],
    ['{app="api}', /double quotes/],
    ['{1app="x"}', /label name/],
    // pkg/selector refuses these ("expected a label name at offset 1"; "invalid label name"; "__name__ is set
    // by the metric").
    ['{"a b"="checkout"}', /quoted label name at "\"a b\"="checkout"" is not one Pairwise reads/],
    ['{track="canary",\'{{x}}\'="checkout"}', /quoted label name .* is not one Pairwise reads/],
    ['{"1x"="y"}', /quoted label name .* is not one Pairwise reads/],
    ['{"__name__"="http_requests_total",track="canary"}', /__name__ is set by the metric/],
    // Escapes read as Go's strconv reads them: a name escaped into one it refuses, or an escape it refuses.
    ['{"\\u0031x"="y"}', /quoted label name .* is not one Pairwise reads/],
    ['{"a\\u0020b"="x"}', /quoted label name .* is not one Pairwise reads/],
    ['{"a\\.b"="x"}', /Bad escape \\\. in the label name/],
    ['{a="x\\qy"}', /Bad escape \\q in the value of "a"/],
    ['{a="x\\\'y"}', /Bad escape/],
    ['{a="\\xff"}', /Bad escape/],
    ['{__name__="http_requests_total",track="canary"}', /__name__ is set by the metric/],
    // pkg/selector refuses a selector whose every matcher also matches series without the label, a regular
    // expression that does not compile, and a space Go does not skip.
    ['{track!="baseline"}', /Every matcher also matches series without the label/],
    ['{pod!~"x|y",}', /Every matcher also matches series without the label/],
    ['{track="",pod=~".*"}', /Every matcher also matches series without the label/],
    ['{track=~"("}', /regular expression of "track" does not compile/],
    ['{track="canary",\u00a0app="api"}', /Expected a label name/],
  ])('rejects %p', (selector, message) => {
    expect(validateSelector(selector)).toMatch(message);
  });

  it('lets the failed requests match series without the label, as ParseNarrowing does', () => {
    expect(validateSelector('{code!~"2..|3.."}', true)).toBeUndefined();
    const query = {
      ...DEFAULT_QUERY,
      refId: 'A',
      errorsMetric: 'http_requests_total',
      errorsSelector: '{code!~"2.."}',
    };
    expect(validateQuery(query as PairwiseQuery).errorsSelector).toBeUndefined();
  });
});

describe('validateMetric', () => {
  it('accepts plain names and variables', () => {
    expect(validateMetric('http_request_duration_seconds')).toBeUndefined();
    expect(validateMetric('$metric')).toBeUndefined();
  });
  it("accepts Prometheus 3's UTF-8 names as pkg/selector does", () => {
    expect(validateMetric('http.server.request.duration')).toBeUndefined();
    expect(validateMetric('rpc/server-duration')).toBeUndefined();
    expect(validateMetric('http latency')).toMatch(/letters, digits/);
    expect(validateMetric('.leading.dot')).toMatch(/letters, digits/);
  });
  it('rejects empty names, selectors and _bucket', () => {
    expect(validateMetric('')).toMatch(/Enter the histogram metric/);
    expect(validateMetric('http{a="b"}')).toMatch(/letters, digits/);
    expect(validateMetric('http_request_duration_seconds_bucket')).toMatch(/_bucket/);
  });
});

describe('validateQuery', () => {
  const valid: PairwiseQuery = {
    ...DEFAULT_QUERY,
    refId: 'A',
    metric: 'http_request_duration_seconds',
    baselineSelector: '{track="baseline"}',
    canarySelector: '{track="canary"}',
  };

  it('finds nothing wrong with the defaults plus metric and selectors', () => {
    expect(validateQuery(valid)).toEqual({});
  });

  it('takes the pod label as a Prometheus label name, empty for "pod"', () => {
    for (const podLabel of ['', 'pod', 'instance', 'kubernetes_pod_name', '_x1', 'k8s.pod.name', 'pod-name']) {
      expect(validateQuery({ ...valid, podLabel })).toEqual({});
    }
    for (const podLabel of ['1pod', 'pod name', '.pod', ' pod', '$label', '"pod"']) {
      expect(validateQuery({ ...valid, podLabel }).podLabel).toMatch(/A label name has letters, digits and _/);
    }
    // As prom.CheckPodLabel: each classic bucket would read as a pod.
    expect(validateQuery({ ...valid, podLabel: 'le' }).podLabel).toMatch(/bucket bound/);
    expect(validateQuery({ ...valid, podLabel: '__name__' }).podLabel).toMatch(/metric's name/);
  });

  it('checks the optional load-balancer metric and its selectors only when set', () => {
    expect(validateQuery({ ...valid, lbBaselineSelector: 'not a selector' })).toEqual({});
    expect(validateQuery({ ...valid, lbMetric: 'envoy_rq_time' })).toEqual({});
    const errors = validateQuery({
      ...valid,
      lbMetric: 'sum(up)',
      lbBaselineSelector: 'not a selector',
      lbCanarySelector: '{a="b"} or up',
    });
    expect(errors.lbMetric).toBeDefined();
    expect(errors.lbBaselineSelector).toBeDefined();
    expect(errors.lbCanarySelector).toBeDefined();
  });

  it('checks the optional request counter and its failed-request matchers only when set', () => {
    expect(validateQuery({ ...valid, errorsSelector: 'not a selector' })).toEqual({});
    expect(validateQuery({ ...valid, errorsMetric: 'http_requests_total' })).toEqual({});
    expect(
      validateQuery({ ...valid, errorsMetric: 'http_requests_total', errorsSelector: '{code!~"2..|3.."}' })
    ).toEqual({});
    const errors = validateQuery({
      ...valid,
      errorsMetric: 'sum(http_requests_total)',
      errorsSelector: '{code="500"} or up',
    });
    expect(errors.errorsMetric).toMatch(/A request counter is a metric name/);
    expect(errors.errorsSelector).toBeDefined();
    expect(validateQuery({ ...valid, errorsMetric: 'http_request_duration_seconds_bucket' }).errorsMetric).toMatch(
      /give a request counter, or http_request_duration_seconds_count/
    );
    expect(validateQuery({ ...valid, errorsMetric: 'http_request_duration_seconds' })).toEqual({});
  });

  it('accepts each quantile once, and as many as pkg/verdict shows', () => {
    expect(validateQuery({ ...valid, quantiles: [0.5, 0.99, 0.99] }).quantiles).toMatch(/listed once/);
    const many = Array.from({ length: CONTRACT.maxQuantiles + 1 }, (_, i) => 0.5 + i / 100);
    expect(validateQuery({ ...valid, quantiles: many, verdictQuantile: 0.5 }).quantiles).toMatch(/at most 16/);
    expect(validateQuery({ ...valid, quantiles: many.slice(1), verdictQuantile: 0.51 })).toEqual({});
    // 16 listed without the verdict quantile: pkg/verdict adds it and refuses 17.
    expect(validateQuery({ ...valid, quantiles: many.slice(1), verdictQuantile: 0.99 }).quantiles).toMatch(
      /at most 15 quantiles besides the verdict quantile \(p99\)/
    );
  });

  it('accepts an expected canary share of 0 or a fraction', () => {
    expect(validateQuery({ ...valid, expectedCanaryShare: 0.05 })).toEqual({});
    expect(validateQuery({ ...valid, expectedCanaryShare: 5 }).expectedCanaryShare).toBeDefined();
  });

  it('accepts a scrape interval that divides a minute, nothing else', () => {
    for (const seconds of [10, 15, 20, 30, 60]) {
      expect(validateQuery({ ...valid, scrapeIntervalSeconds: seconds })).toEqual({});
    }
    for (const seconds of [0, 25, 45, 90, 7.5]) {
      expect(validateQuery({ ...valid, scrapeIntervalSeconds: seconds }).scrapeIntervalSeconds).toBeDefined();
    }
  });

  it('accepts 2 to 4 minutes as the fewest a rollback rests on, nothing else', () => {
    for (const minutes of [2, 3, 4]) {
      expect(validateQuery({ ...valid, minRollbackMinutes: minutes })).toEqual({});
    }
    for (const minutes of [0, 1, 5, 2.5]) {
      expect(validateQuery({ ...valid, minRollbackMinutes: minutes }).minRollbackMinutes).toMatch(/from 2 to 4/);
    }
  });

  it('accepts significance 0 or a confidence, nothing else', () => {
    expect(validateQuery({ ...valid, significance: 0.99 })).toEqual({});
    expect(validateQuery({ ...valid, significance: 1 }).significance).toBeDefined();
    expect(validateQuery({ ...valid, significance: 0.2 }).significance).toBeDefined();
  });

  it('rejects identical fleets', () => {
    expect(validateQuery({ ...valid, canarySelector: '{ track="baseline" }' }).canarySelector).toMatch(/identical/);
    expect(
      validateQuery({
        ...valid,
        baselineSelector: '{service="a",track="b"}',
        canarySelector: '{track=\'b\', service="a"}',
      }).canarySelector
    ).toMatch(/identical/);
  });

  it('rejects a fleet that holds the other, as the backend does', () => {
    const lost = validateQuery({
      ...valid,
      baselineSelector: '{service="a",track="baseline"}',
      canarySelector: '{service="a"}',
    });
    expect(lost.canarySelector).toMatch(/canary selector also selects every baseline series/);
    const whole = validateQuery({
      ...valid,
      baselineSelector: '{service="a"}',
      canarySelector: '{service="a",track="canary"}',
    });
    expect(whole.baselineSelector).toMatch(/baseline selector also selects every canary series/);
    expect(whole.canarySelector).toBeUndefined();
    expect(
      validateQuery({
        ...valid,
        baselineSelector: '{service="a",track!="canary"}',
        canarySelector: '{service="a",track="canary"}',
      })
    ).toEqual({});
  });

  it('checks thresholds, counts and quantiles', () => {
    const errors = validateQuery({
      ...valid,
      rule: 'reference',
      quantiles: [0.5, 1.2],
      verdictQuantile: 1.5,
      promoteThreshold: 1.2,
      rollbackThreshold: 1.1,
      goodNeeded: 61,
      badLimit: 0,
      warmupMinutes: 60,
      minTailObservations: -1,
    });
    expect(Object.keys(errors).sort()).toEqual(
      [
        'badLimit',
        'goodNeeded',
        'minTailObservations',
        'quantiles',
        'rollbackThreshold',
        'verdictQuantile',
        'warmupMinutes',
      ].sort()
    );
  });

  it('accepts a verdict quantile that is not listed, as pkg/verdict does', () => {
    expect(validateQuery({ ...valid, quantiles: [0.5, 0.99], verdictQuantile: 0.95 })).toEqual({});
    expect(validateQuery({ ...valid, verdictQuantile: 1 })).toHaveProperty('verdictQuantile');
  });

  it('checks the minute counts against the window only under the reference rule, which they decide', () => {
    expect(validateQuery({ ...valid, windowMinutes: 20 })).toEqual({});
    expect(Object.keys(validateQuery({ ...valid, windowMinutes: 20, rule: 'reference' }))).toEqual(['goodNeeded']);
    expect(validateQuery({ ...valid, goodNeeded: 0 }).goodNeeded).toBeDefined();
  });

  it('checks the rule and the evidence budgets', () => {
    expect(validateQuery({ ...valid, rule: 'vibes' as never }).rule).toBeDefined();
    expect(validateQuery({ ...valid, falseRollback: 0.0001, falsePromote: 0.5 })).toEqual({});
    expect(validateQuery({ ...valid, falseRollback: 0 }).falseRollback).toBeDefined();
    expect(validateQuery({ ...valid, falsePromote: 0.7 }).falsePromote).toBeDefined();
    expect(validateQuery({ ...valid, falseRollback: NaN }).falseRollback).toBeDefined();
  });

  it('checks the deployment start', () => {
    expect(validateQuery({ ...valid, since: 'last tuesday' }).since).toMatch(/RFC 3339/);
    expect(validateQuery({ ...valid, since: '2026-06-01T11:00:00Z' })).toEqual({});
  });

  it("takes pkg/verdict's limits from the contract: a week-long window, fractional tail counts", () => {
    expect(validateQuery({ ...valid, windowMinutes: 10080 })).toEqual({});
    expect(validateQuery({ ...valid, windowMinutes: 10081 }).windowMinutes).toMatch(/from 1 to 10080/);
    expect(validateQuery({ ...valid, windowMinutes: 60.5 }).windowMinutes).toBeDefined();
    expect(validateQuery({ ...valid, minTailObservations: 2.5 })).toEqual({});
  });

  it('accepts the boundary values', () => {
    expect(
      validateQuery({ ...valid, goodNeeded: 60, badLimit: 60, warmupMinutes: 59, minTailObservations: 0 })
    ).toEqual({});
  });
});

describe('validateSince', () => {
  it.each([
    '',
    '  ',
    '2026-06-01T11:00:00Z',
    '2026-06-01T13:00:00.5+02:00',
    '1780311600',
    '1780311600123',
    '946684800',
    '2024-02-29T10:00:00Z',
    '99999999999999',
    '$since',
    '${__from}',
  ])('accepts %p', (since) => {
    expect(validateSince(since)).toBeUndefined();
  });
  it.each([
    'yesterday',
    '2026-06-01',
    '2026-06-01 11:00:00',
    '2026-06-01T11:00:00',
    '0',
    '-5',
    '0.5',
    '946684799',
    '946684799000',
    // As pkg/engine's ParseTime: before 2000 or after 9999, and days and hours Date would roll over.
    '1999-12-31T00:00:00Z',
    '9999-12-31T00:00:01Z',
    '100000000000000',
    '2026-06-01T24:00:00Z',
    '2026-02-30T10:00:00Z',
    '2026-06-01T23:59:60Z',
  ])('rejects %p', (since) => {
    expect(validateSince(since)).toBeDefined();
  });
});

describe('quantile helpers', () => {
  it('parses fractions and p-labels', () => {
    expect(parseQuantiles('0.5, 0.99 p99.9')).toEqual([0.5, 0.99, 0.999]);
    expect(parseQuantiles('0.5, x')).toBeUndefined();
  });
  it('labels quantiles like the backend', () => {
    expect([0.5, 0.99, 0.999, 0.9999].map(quantileLabel)).toEqual(['p50', 'p99', 'p99.9', 'p99.99']);
  });
});
