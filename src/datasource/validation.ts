import { PairwiseQuery } from './types';

/**
 * Checks that a selector looks like a PromQL label selector: `{label="value", other=~"re.*"}`.
 * Returns a sentence describing the first problem, or undefined when it looks fine.
 * Template variables inside values ($var, ${var}) are allowed; the backend validates again.
 */
export function validateSelector(selector: string): string | undefined {
  const text = selector.trim();
  if (text === '') {
    return 'Enter a label selector such as {app="api",track="canary"}.';
  }
  if (!text.startsWith('{') || !text.endsWith('}')) {
    return 'A selector is wrapped in braces: {label="value",...}.';
  }
  const body = text.slice(1, -1);
  let pos = 0;
  let matchers = 0;
  const skipSpace = () => {
    while (pos < body.length && /\s/.test(body[pos])) {
      pos++;
    }
  };
  const readQuoted = (): string | undefined => {
    const quote = body[pos];
    if (quote !== '"' && quote !== "'" && quote !== '`') {
      return undefined;
    }
    pos++;
    let value = '';
    while (pos < body.length && body[pos] !== quote) {
      if (body[pos] === '\\' && quote !== '`') {
        pos++;
      }
      value += body[pos] ?? '';
      pos++;
    }
    if (pos >= body.length) {
      return undefined;
    }
    pos++;
    return value;
  };

  skipSpace();
  while (pos < body.length) {
    // Label name: identifier, or a quoted name (Prometheus 3 UTF-8 names).
    let name: string | undefined;
    const ident = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(body.slice(pos));
    if (ident) {
      name = ident[0];
      pos += name.length;
    } else {
      name = readQuoted();
    }
    if (!name) {
      return `Expected a label name at "${body.slice(pos, pos + 12)}".`;
    }
    skipSpace();
    const op = /^(=~|!~|!=|=)/.exec(body.slice(pos));
    if (!op) {
      return `Expected =, !=, =~ or !~ after "${name}".`;
    }
    pos += op[0].length;
    skipSpace();
    const value = readQuoted();
    if (value === undefined) {
      return `The value of "${name}" must be in double quotes, e.g. ${name}${op[0]}"value".`;
    }
    matchers++;
    skipSpace();
    if (pos < body.length) {
      if (body[pos] !== ',') {
        return `Separate matchers with commas (after "${name}").`;
      }
      pos++;
      skipSpace();
    }
  }
  if (matchers === 0) {
    return 'An empty selector matches every series: name at least one label, e.g. {track="canary"}.';
  }
  return undefined;
}

/** Checks that a metric name is a Prometheus metric name without selector. */
export function validateMetric(metric: string): string | undefined {
  const text = metric.trim();
  if (text === '') {
    return 'Enter the histogram metric, e.g. http_request_duration_seconds.';
  }
  if (text.startsWith('$')) {
    return undefined;
  }
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(text)) {
    return 'A metric name has letters, digits, _ and : only; put labels in the selectors.';
  }
  if (text.endsWith('_bucket')) {
    return 'Leave out the _bucket suffix: Pairwise adds it for classic histograms.';
  }
  return undefined;
}

export type QueryErrors = Partial<Record<keyof PairwiseQuery, string>>;

/** Every inline validation message of the query editor, keyed by field. */
export function validateQuery(query: PairwiseQuery): QueryErrors {
  const errors: QueryErrors = {};
  const set = (key: keyof PairwiseQuery, message: string | undefined) => {
    if (message) {
      errors[key] = message;
    }
  };
  set('metric', validateMetric(query.metric ?? ''));
  set('baselineSelector', validateSelector(query.baselineSelector ?? ''));
  set('canarySelector', validateSelector(query.canarySelector ?? ''));
  if (!errors.baselineSelector && !errors.canarySelector) {
    const norm = (s: string) => s.replace(/\s+/g, '');
    if (norm(query.baselineSelector) === norm(query.canarySelector)) {
      errors.canarySelector = 'Baseline and canary selectors are identical: the canary would be compared with itself.';
    }
  }
  const quantiles = query.quantiles ?? [];
  if (quantiles.length === 0) {
    errors.quantiles = 'List at least one quantile, e.g. 0.5, 0.99, 0.999.';
  } else if (quantiles.some((q) => !(q > 0 && q < 1))) {
    errors.quantiles = 'Quantiles are fractions between 0 and 1 (0.99 is p99).';
  }
  if (!quantiles.includes(query.verdictQuantile)) {
    errors.verdictQuantile = 'The verdict quantile must be one of the listed quantiles.';
  }
  if (!(query.promoteThreshold > 0)) {
    errors.promoteThreshold = 'The promote threshold is a positive ratio, e.g. 0.95.';
  }
  if (!(query.rollbackThreshold > query.promoteThreshold)) {
    errors.rollbackThreshold = 'The rollback threshold must be above the promote threshold.';
  }
  if (!(Number.isInteger(query.windowMinutes) && query.windowMinutes >= 1 && query.windowMinutes <= 1440)) {
    errors.windowMinutes = 'The window is a whole number of minutes from 1 to 1440.';
  }
  const rule = query.rule ?? 'evidence';
  if (rule !== 'evidence' && rule !== 'reference') {
    errors.rule = 'The rule is evidence or reference.';
  }
  // Under the evidence rule the minute counts do not decide; the backend caps them at the window.
  const countsDecide = rule === 'reference';
  const countLimit = countsDecide ? query.windowMinutes : Infinity;
  if (!(Number.isInteger(query.goodNeeded) && query.goodNeeded >= 1 && query.goodNeeded <= countLimit)) {
    errors.goodNeeded = 'Good minutes needed must be between 1 and the window length.';
  }
  if (!(Number.isInteger(query.badLimit) && query.badLimit >= 1 && query.badLimit <= countLimit)) {
    errors.badLimit = 'The bad-minute limit must be between 1 and the window length.';
  }
  for (const key of ['falseRollback', 'falsePromote'] as const) {
    const value = query[key];
    if (value !== undefined && !(value > 0 && value <= 0.5)) {
      errors[key] = 'A budget is a probability above 0 and at most 0.5, e.g. 0.001.';
    }
  }
  set('since', validateSince(query.since ?? ''));
  if (!(
    Number.isInteger(query.warmupMinutes) &&
    query.warmupMinutes >= 0 &&
    query.warmupMinutes < query.windowMinutes
  )) {
    errors.warmupMinutes = 'Warm-up minutes must be 0 or more and shorter than the window.';
  }
  if (query.lbMetric) {
    set('lbMetric', validateMetric(query.lbMetric));
    if (query.lbBaselineSelector) {
      set('lbBaselineSelector', validateSelector(query.lbBaselineSelector));
    }
    if (query.lbCanarySelector) {
      set('lbCanarySelector', validateSelector(query.lbCanarySelector));
    }
  }
  const significance = query.significance ?? 0;
  if (!(significance === 0 || (significance >= 0.5 && significance < 1))) {
    errors.significance = 'Significance is 0 (off) or a confidence from 0.5 to below 1, e.g. 0.99.';
  }
  const share = query.expectedCanaryShare ?? 0;
  if (!(share >= 0 && share < 1)) {
    errors.expectedCanaryShare = 'The expected canary share is 0 (unknown) or a fraction below 1, e.g. 0.05.';
  }
  if (!(Number.isInteger(query.minTailObservations) && query.minTailObservations >= 0)) {
    errors.minTailObservations = 'Minimum tail observations is a whole number, 0 or more.';
  }
  return errors;
}

/**
 * Checks a deployment start: empty, a dashboard variable ($since, ${__from}), RFC 3339 with a zone,
 * or Unix seconds or milliseconds. The backend parses it again.
 */
export function validateSince(since: string): string | undefined {
  const text = since.trim();
  if (text === '' || text.includes('$')) {
    return undefined;
  }
  if (/^\d+(\.\d+)?$/.test(text)) {
    return Number(text) > 0 ? undefined : 'A Unix time is after 1970.';
  }
  const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
  if (!rfc3339.test(text) || Number.isNaN(Date.parse(text))) {
    return 'Write the deployment start as RFC 3339 (2026-06-01T11:00:00Z), Unix seconds, or a variable such as $since.';
  }
  return undefined;
}

/** Parses "0.5, 0.99, p99.9" into fractions; undefined when any entry is not a number. */
export function parseQuantiles(text: string): number[] | undefined {
  const parts = text
    .split(/[\s,]+/)
    .map((p) => p.trim())
    .filter(Boolean);
  // toPrecision drops the float noise of the division (p99.9 -> 0.999, not 0.9990000000000001).
  const values = parts.map((p) => (/^p/i.test(p) ? Number((Number(p.slice(1)) / 100).toPrecision(12)) : Number(p)));
  return values.every((v) => Number.isFinite(v)) ? values : undefined;
}

/** 0.999 -> "p99.9" */
export function quantileLabel(q: number): string {
  return `p${Number((q * 100).toFixed(6))}`;
}
