import { CONTRACT, withinLimit } from '../contract';
import { PairwiseQuery, VerdictFields } from './types';

/**
 * Checks that a selector looks like a PromQL label selector: `{label="value", other=~"re.*"}`.
 * Returns a sentence describing the first problem, or undefined when it looks fine.
 * Template variables inside values ($var, ${var}) are allowed; the backend validates again.
 */
export function validateSelector(selector: string, narrowing = false): string | undefined {
  return readSelector(selector, narrowing).error;
}

/**
 * Reads a selector's matchers, each as the JSON of [name, op, value] (value unquoted), or the sentence
 * describing its first problem. As pkg/selector's Parse, it refuses a selector whose every matcher also matches
 * series without the label; narrowing (the failed requests' matchers, ParseNarrowing) allows one.
 */
function readSelector(selector: string, narrowing = false): { error?: string; matchers: string[] } {
  const fail = (error: string) => ({ error, matchers: [] });
  const text = selector.trim();
  if (text === '') {
    return fail('Enter a label selector such as {app="api",track="canary"}.');
  }
  if (!text.startsWith('{') || !text.endsWith('}')) {
    return fail('A selector is wrapped in braces: {label="value",...}.');
  }
  const body = text.slice(1, -1);
  let pos = 0;
  const matchers: string[] = [];
  const skipSpace = () => {
    // Go's space characters only, as pkg/selector skips them (not a no-break space).
    while (pos < body.length && ' \t\r\n'.includes(body[pos])) {
      pos++;
    }
  };
  // The escape that made the last readQuoted fail, if one did.
  let badEscape = '';
  // Reads a quoted string as pkg/selector does (Go's escapes: \n, \xHH, \uHHHH, \ooo, ...; none in backquotes).
  const readQuoted = (): string | undefined => {
    const quote = body[pos];
    badEscape = '';
    if (quote !== '"' && quote !== "'" && quote !== '`') {
      return undefined;
    }
    pos++;
    let value = '';
    while (pos < body.length && body[pos] !== quote) {
      if (body[pos] !== '\\' || quote === '`') {
        value += body[pos];
        pos++;
        continue;
      }
      const escaped = unescapeAt(body, pos + 1, quote);
      if (escaped === undefined) {
        badEscape = body.slice(pos, pos + 2);
        return undefined;
      }
      value += escaped.text;
      pos = escaped.end;
    }
    if (pos >= body.length) {
      return undefined;
    }
    pos++;
    return value;
  };

  let allMatchEmpty = true;
  skipSpace();
  while (pos < body.length) {
    // Label name: letters, digits and _, not starting with a digit, or a quoted UTF-8 name (Prometheus 3:
    // {"service.name"="x"}), as pkg/selector reads it.
    let name: string;
    if (body[pos] === '"' || body[pos] === "'" || body[pos] === '`') {
      const start = pos;
      const quoted = readQuoted();
      if (badEscape) {
        return fail(`Bad escape ${badEscape} in the label name at "${body.slice(start, start + 20)}".`);
      }
      if (quoted === undefined || !isLabelName(quoted)) {
        return fail(
          `The quoted label name at "${body.slice(start, start + 20)}" is not one Pairwise reads: use letters, digits and _ : . - / (such as "service.name"), starting with a letter or _.`
        );
      }
      name = quoted;
    } else {
      const ident = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(body.slice(pos));
      if (!ident) {
        return fail(`Expected a label name at "${body.slice(pos, pos + 12)}".`);
      }
      name = ident[0];
      pos += name.length;
    }
    if (name === '__name__') {
      return fail('__name__ is set by the metric, not by a fleet selector: remove this matcher.');
    }
    skipSpace();
    const op = /^(=~|!~|!=|=)/.exec(body.slice(pos));
    if (!op) {
      return fail(`Expected =, !=, =~ or !~ after "${name}".`);
    }
    pos += op[0].length;
    skipSpace();
    const value = readQuoted();
    if (badEscape) {
      return fail(`Bad escape ${badEscape} in the value of "${name}".`);
    }
    if (value === undefined) {
      return fail(`The value of "${name}" must be in double quotes, e.g. ${name}${op[0]}"value".`);
    }
    if ((op[0] === '=~' || op[0] === '!~') && anchoredRegExp(value) === null) {
      return fail(`The regular expression of "${name}" does not compile.`);
    }
    if (!matchesEmpty(op[0], value)) {
      allMatchEmpty = false;
    }
    matchers.push(JSON.stringify([name, op[0], value]));
    skipSpace();
    if (pos < body.length) {
      if (body[pos] !== ',') {
        return fail(`Separate matchers with commas (after "${name}").`);
      }
      pos++;
      skipSpace();
    }
  }
  if (matchers.length === 0) {
    return fail('An empty selector matches every series: name at least one label, e.g. {track="canary"}.');
  }
  if (allMatchEmpty && !narrowing) {
    return fail(
      'Every matcher also matches series without the label: add one that must match, such as track="canary".'
    );
  }
  return { matchers };
}

/**
 * A regular expression anchored as Prometheus matches it; null when it does not compile, undefined when the
 * editor cannot tell (a dashboard variable, or RE2 syntax JavaScript does not read, such as (?i)): the backend
 * compiles it again with Go's RE2.
 */
function anchoredRegExp(value: string): RegExp | null | undefined {
  if (value.includes('$') || value.includes('(?')) {
    return undefined;
  }
  try {
    return new RegExp(`^(?:${value})$`);
  } catch {
    return null;
  }
}

/** Whether a matcher surely also matches series without its label (the value ""); false when unknown. */
function matchesEmpty(op: string, value: string): boolean {
  if (value.includes('$')) {
    return false; // a dashboard variable: the backend checks the value it becomes
  }
  switch (op) {
    case '=':
      return value === '';
    case '!=':
      return value !== '';
  }
  const re = anchoredRegExp(value);
  return re ? re.test('') === (op === '=~') : false;
}

/** Go's one-character escapes, as strconv.Unquote reads them in pkg/selector. */
const SIMPLE_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
};

/**
 * Reads the escape whose character after the backslash is at text[at], inside a string quoted with quote, as
 * Go's strconv.Unquote does: undefined for one it refuses (\q, \' inside double quotes, a short \x, \u or
 * octal escape, a code point that is not one).
 */
function unescapeAt(text: string, at: number, quote: string): { text: string; end: number } | undefined {
  const c = text[at];
  if (c === undefined) {
    return undefined;
  }
  if (c in SIMPLE_ESCAPES) {
    return { text: SIMPLE_ESCAPES[c], end: at + 1 };
  }
  if (c === quote) {
    return { text: c, end: at + 1 };
  }
  const digits = (n: number, re: RegExp, base: number) => {
    const run = text.slice(at + 1, at + 1 + n);
    return run.length === n && re.test(run) ? parseInt(run, base) : undefined;
  };
  let code: number | undefined;
  let end = at;
  if (c === 'x' || c === 'u' || c === 'U') {
    const n = { x: 2, u: 4, U: 8 }[c];
    code = digits(n, /^[0-9a-fA-F]+$/, 16);
    end = at + 1 + n;
  } else if (/[0-7]/.test(c)) {
    const run = text.slice(at, at + 3);
    code = run.length === 3 && /^[0-7]{3}$/.test(run) ? parseInt(run, 8) : undefined;
    end = at + 3;
  }
  // A byte escape above 0x7f is half of a UTF-8 sequence in Go; refused here rather than read as a character.
  const byte = c === 'x' || /[0-7]/.test(c);
  if (code === undefined || code > 0x10ffff || (byte && code > 0x7f) || (code >= 0xd800 && code <= 0xdfff)) {
    return undefined;
  }
  return { text: String.fromCodePoint(code), end };
}

/**
 * A UTF-8 name beyond the classic syntax, as pkg/selector accepts it (and quotes it in PromQL): letters and
 * digits of any script and _ : . - /, starting with a letter or _ (an OpenTelemetry name such as
 * http.server.request.duration or service.name).
 */
const UTF8_NAME = /^[\p{L}_][\p{L}\p{Nd}_:.\-/]*$/u;

/** A label name: the classic syntax or a UTF-8 name. */
function isLabelName(name: string): boolean {
  return /^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name) || UTF8_NAME.test(name);
}

/** Whether text is a metric name: classic, or a Prometheus 3 UTF-8 name. */
function isMetricName(text: string): boolean {
  return /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(text) || UTF8_NAME.test(text);
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
  if (!isMetricName(text)) {
    return 'A metric name has letters, digits, _ and : (or, as Prometheus 3 allows, . - / too, such as http.server.request.duration); put labels in the selectors.';
  }
  if (text.endsWith('_bucket')) {
    return 'Leave out the _bucket suffix: Pairwise adds it for classic histograms.';
  }
  return undefined;
}

/** Checks a request counter's name as the backend's prom.ValidCounterName does. */
export function validateCounter(metric: string): string | undefined {
  const text = metric.trim();
  if (text.startsWith('$')) {
    return undefined;
  }
  if (!isMetricName(text)) {
    return 'A request counter is a metric name, such as http_requests_total; put labels in the failed requests.';
  }
  if (text.endsWith('_bucket')) {
    return `A _bucket series counts each request once per bucket: give a request counter, or ${text.slice(0, -'_bucket'.length)}_count.`;
  }
  return undefined;
}

/** Checks the pod label as the backend's prom.CheckPodLabel does; empty: "pod". */
export function validateLabelName(name: string): string | undefined {
  if (name === 'le') {
    return 'le is the bucket bound of classic histograms, not a pod label: each bucket would read as a pod.';
  }
  if (name === '__name__') {
    return "__name__ is the metric's name, not a pod label.";
  }
  if (name === '' || isLabelName(name)) {
    return undefined;
  }
  return 'A label name has letters, digits and _ (or, as Prometheus 3 allows, : . - / too), and starts with a letter or _: e.g. pod, kubernetes_pod_name or k8s.pod.name.';
}

export type QueryErrors = Partial<Record<keyof PairwiseQuery, string>>;

/** The verdict fields that are numbers (quantiles: each listed one). */
type NumberField = Exclude<keyof VerdictFields, 'rule'>;

const limit = (field: string) => CONTRACT.limits[field];

/** The editor's sentence for a number outside its limit; the numbers in it are the contract's. */
const NUMBER_MESSAGES: Record<NumberField, string> = {
  quantiles: 'Quantiles are fractions between 0 and 1 (0.99 is p99).',
  verdictQuantile: 'The verdict quantile is a fraction between 0 and 1 (0.99 is p99).',
  promoteThreshold: 'The promote threshold is a positive ratio, e.g. 0.95.',
  rollbackThreshold:
    'The rollback threshold is a ratio above 1 (a heavier tail) and above the promote threshold, e.g. 1.10.',
  windowMinutes: `The window is a whole number of minutes from ${limit('windowMinutes').min} to ${limit('windowMinutes').max}.`,
  goodNeeded: 'Good minutes needed must be between 1 and the window length.',
  badLimit: 'The bad-minute limit must be between 1 and the window length.',
  warmupMinutes: 'Warm-up minutes must be 0 or more and shorter than the window.',
  minTailObservations: 'Minimum tail observations is a number, 0 or more.',
  significance: `Significance is ${limit('significance').off} (off) or a confidence from ${limit('significance').min} to below ${limit('significance').max}, e.g. 0.99.`,
  expectedCanaryShare: 'The expected canary share is 0 (unknown) or a fraction below 1, e.g. 0.05.',
  falseRollback: `A budget is a probability above 0 and at most ${limit('falseRollback').max}, e.g. 0.001.`,
  falsePromote: `A budget is a probability above 0 and at most ${limit('falsePromote').max}, e.g. 0.01.`,
  maxShareDrift: 'The share drift is a relative change above 0, e.g. 0.5 for 50%.',
  scrapeIntervalSeconds:
    'The scrape interval is a whole number of seconds that divides a minute: 10, 15, 20, 30 or 60.',
  minRollbackMinutes: `The fewest minutes a rollback rests on is a whole number from ${limit('minRollbackMinutes').min} to ${limit('minRollbackMinutes').max}.`,
};

/** Checks a scrape interval as pkg/verdict does: whole seconds that divide a minute. */
export function validateScrapeInterval(seconds: number): string | undefined {
  return withinLimit('scrapeIntervalSeconds', seconds, {}) ? undefined : NUMBER_MESSAGES.scrapeIntervalSeconds;
}

/** Every inline validation message of the query editor, keyed by field. */
export function validateQuery(query: PairwiseQuery): QueryErrors {
  const errors: QueryErrors = {};
  const values: Record<string, unknown> = { ...CONTRACT.defaults, ...definedFields(query) };
  const set = (key: keyof PairwiseQuery, message: string | undefined) => {
    if (message) {
      errors[key] = message;
    }
  };
  set('metric', validateMetric(query.metric ?? ''));
  const baselineRead = readSelector(query.baselineSelector ?? '');
  const canaryRead = readSelector(query.canarySelector ?? '');
  set('baselineSelector', baselineRead.error);
  set('canarySelector', canaryRead.error);
  if (!errors.baselineSelector && !errors.canarySelector) {
    // One fleet holds the other when every matcher of its selector is one of the other's: the
    // plain case of what the backend refuses (selector.Apart also reads the values a matcher
    // accepts).
    const baseline = baselineRead.matchers;
    const canary = canaryRead.matchers;
    const covers = (a: string[], b: string[]) => a.every((m) => b.includes(m));
    if (covers(baseline, canary) && covers(canary, baseline)) {
      errors.canarySelector = 'Baseline and canary selectors are identical: the canary would be compared with itself.';
    } else if (covers(canary, baseline)) {
      errors.canarySelector =
        'The canary selector also selects every baseline series: add the matcher only the canary\'s series match, such as track="canary".';
    } else if (covers(baseline, canary)) {
      errors.baselineSelector =
        'The baseline selector also selects every canary series: add a matcher the canary\'s series do not match, such as track!="canary".';
    }
  }
  const quantiles = query.quantiles ?? [];
  if (quantiles.length === 0) {
    errors.quantiles = 'List at least one quantile, e.g. 0.5, 0.99, 0.999.';
  } else if (quantiles.some((q) => !withinLimit('quantiles', q, values))) {
    errors.quantiles = NUMBER_MESSAGES.quantiles;
  } else if (shownQuantiles(quantiles, values.verdictQuantile) > CONTRACT.maxQuantiles) {
    // pkg/verdict shows the verdict quantile too, and counts it, when it is not listed.
    errors.quantiles =
      quantiles.length > CONTRACT.maxQuantiles
        ? `List at most ${CONTRACT.maxQuantiles} quantiles.`
        : `List at most ${CONTRACT.maxQuantiles - 1} quantiles besides the verdict quantile (${quantileLabel(
            values.verdictQuantile as number
          )}), which is shown too, or list it.`;
  } else if (new Set(quantiles).size < quantiles.length) {
    errors.quantiles = 'Each quantile is listed once.';
  }
  // The verdict quantile need not be listed: pkg/verdict computes it apart from the quantiles shown.
  if (!CONTRACT.rules.includes(values.rule as string)) {
    errors.rule = `The rule is ${CONTRACT.rules.join(' or ')}.`;
  }
  // The limits are pkg/verdict's (src/contract.json); an unset field has its default.
  for (const field of Object.keys(NUMBER_MESSAGES) as NumberField[]) {
    if (field !== 'quantiles' && !errors[field] && !withinLimit(field, Number(values[field]), values)) {
      errors[field] = NUMBER_MESSAGES[field];
    }
  }
  set('since', validateSince(query.since ?? ''));
  set('podLabel', validateLabelName(query.podLabel ?? ''));
  if (query.lbMetric) {
    set('lbMetric', validateMetric(query.lbMetric));
    if (query.lbBaselineSelector) {
      set('lbBaselineSelector', validateSelector(query.lbBaselineSelector));
    }
    if (query.lbCanarySelector) {
      set('lbCanarySelector', validateSelector(query.lbCanarySelector));
    }
  }
  if (query.errorsMetric) {
    set('errorsMetric', validateCounter(query.errorsMetric));
    if (query.errorsSelector) {
      set('errorsSelector', validateSelector(query.errorsSelector, true));
    }
  }
  return errors;
}

function definedFields(query: PairwiseQuery): Record<string, unknown> {
  return Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined));
}

/** 2000-01-01T00:00:00Z, the earliest time the backend accepts (pkg/engine EarliestTime). */
const EARLIEST_UNIX_SECONDS = 946684800;

/** 9999-12-31T00:00:00Z, the latest time a query may name before the clock is read (pkg/plugin farFuture). */
const LATEST_UNIX_SECONDS = 253402214400;

/** Unix seconds from 1e11 on are read as milliseconds, and milliseconds from 1e11 s on are refused (pkg/engine). */
const UNIX_MILLIS_FROM = 1e11;

const SINCE_MESSAGE =
  'Write the deployment start as RFC 3339 (2026-06-01T11:00:00Z), Unix seconds, or a variable such as $since.';

/**
 * Checks a deployment start as pkg/engine's ParseTime reads it: empty, a dashboard variable ($since,
 * ${__from}), RFC 3339 with a zone (a real date and time of day), or Unix seconds or milliseconds, between 2000
 * and 9999. The backend parses it again.
 */
export function validateSince(since: string): string | undefined {
  const text = since.trim();
  if (text === '' || text.includes('$')) {
    return undefined;
  }
  let seconds: number;
  if (/^\d+(\.\d+)?$/.test(text)) {
    const n = Number(text);
    seconds = n >= UNIX_MILLIS_FROM ? n / 1000 : n;
    if (seconds >= UNIX_MILLIS_FROM) {
      return 'A deployment start in Unix milliseconds must be below 100000000000000 (the year 5138).';
    }
  } else {
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.exec(text);
    if (!m) {
      return SINCE_MESSAGE;
    }
    const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
    const utc = Date.UTC(year, month - 1, day, hour, minute, second);
    const back = new Date(utc);
    // Go's time.Parse refuses a day the month does not have, hour 24 and second 60, which Date would roll over.
    if (
      Number.isNaN(utc) ||
      back.getUTCFullYear() !== year ||
      back.getUTCMonth() !== month - 1 ||
      back.getUTCDate() !== day ||
      back.getUTCHours() !== hour ||
      back.getUTCMinutes() !== minute ||
      back.getUTCSeconds() !== second
    ) {
      return SINCE_MESSAGE;
    }
    seconds = Date.parse(text) / 1000;
  }
  if (seconds < EARLIEST_UNIX_SECONDS || seconds > LATEST_UNIX_SECONDS) {
    return 'A deployment start is between 2000 and 9999.';
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

/** How many quantiles pkg/verdict shows: those listed, and the verdict quantile when it is not. */
function shownQuantiles(quantiles: number[], verdictQuantile: unknown): number {
  if (typeof verdictQuantile !== 'number' || !Number.isFinite(verdictQuantile)) {
    return quantiles.length;
  }
  const label = quantileLabel(verdictQuantile);
  return quantiles.some((q) => quantileLabel(q) === label) ? quantiles.length : quantiles.length + 1;
}

/** 0.999 -> "p99.9" */
export function quantileLabel(q: number): string {
  return `p${Number((q * 100).toFixed(6))}`;
}
