import { DataFrame, dateTimeFormat, formattedValueToString, getTimeZoneInfo, getValueFormat } from '@grafana/data';
import { TimeZone } from '@grafana/schema';
import { DEFAULT_UNIT, TableQuantiles } from '../types';
import {
  boolAt,
  fieldByName,
  finiteAt,
  findFrames,
  missingFields,
  numberAt,
  REQUIRED_FIELDS,
  stringAt,
  timeAt,
} from './frames';
import { buildExploreUrl, PromHistogramKind } from './promql';

export type Verdict = 'good' | 'neutral' | 'bad' | 'insufficient' | 'no-data';
export type Decision = 'promote' | 'hold' | 'rollback';

/** Order of the backend's verdict_code. */
export const VERDICTS: Verdict[] = ['good', 'neutral', 'bad', 'insufficient', 'no-data'];
const DECISIONS: Decision[] = ['promote', 'hold', 'rollback'];

/** The non-colour cue of each verdict. */
export const VERDICT_SYMBOL: Record<Verdict, string> = {
  good: '✓',
  neutral: '–',
  bad: '✕',
  insufficient: '?',
  'no-data': '∅',
};

export const VERDICT_TEXT: Record<Verdict, string> = {
  good: 'good',
  neutral: 'neutral',
  bad: 'bad',
  insufficient: 'insufficient data',
  'no-data': 'no data',
};

/** Plain sentences for the backend's known warning flags; unknown flags are shown as they come. */
export const FLAG_TEXT: Record<string, string> = {
  'traffic-parity':
    'Traffic parity: the fleets do not see the same share of requests or the same error ratio, so the comparison may not be fair.',
  'suspicious-win':
    'Suspicious win: the canary is far faster than the baseline; check for a change in traffic mix before promoting.',
  'measurement-divergence':
    'Measurement divergence: application and load-balancer histograms disagree by more than 20%.',
};

export interface PairwiseMeta {
  quantiles: string[];
  quantileValues: number[];
  verdictQuantile: string;
  verdictQuantileValue: number;
  promoteThreshold: number | null;
  rollbackThreshold: number | null;
  goodNeeded: number | null;
  badLimit: number | null;
  windowMinutes: number | null;
  warmupMinutes: number | null;
  minTailObservations: number | null;
  metric: string;
  histogramKind: PromHistogramKind;
  baselineSelector: string;
  canarySelector: string;
}

export interface FleetPair {
  baseline: number | null;
  canary: number | null;
}

export interface Bounds {
  lower: number | null;
  upper: number | null;
}

export interface PodSpread {
  fleet: string;
  min: number | null;
  median: number | null;
  max: number | null;
  worstPod: string;
  pods: number | null;
}

export interface MinuteView {
  index: number;
  /** The minute's end, epoch ms: the window is (time - 60 s, time]. */
  time: number;
  /** "14:07" */
  timeLabel: string;
  /** "2026-11-21 14:07 UTC" */
  fullTimeLabel: string;
  rps: FleetPair;
  /** Seconds, per quantile label. */
  quantiles: Record<string, FleetPair>;
  ratio: number | null;
  verdict: Verdict;
  warmup: boolean;
  counts: FleetPair;
  baselineBounds: Bounds;
  canaryBounds: Bounds;
  reason: string;
  pods: PodSpread[];
  /** "14:07 UTC, bad, ratio 1.23" */
  accessibleName: string;
  exploreUrl: string | null;
}

export interface VerdictCounts {
  good: number;
  neutral: number;
  bad: number;
  insufficient: number;
  noData: number;
  warmup: number;
}

export interface DecisionView {
  decision: Decision;
  /** "ROLLBACK: 8 bad minutes of 60, limit 5" */
  headline: string;
  /** "good ≤ 0.95×, bad ≥ 1.10×" */
  thresholds: string;
  counts: VerdictCounts;
  /** "Worst minute 14:07 UTC, ratio 1.23×", or empty when none. */
  worst: string;
  reason: string;
  flags: Array<{ code: string; text: string }>;
}

export interface ViewModelOptions {
  timeZone?: TimeZone;
  /** Display unit of latencies (frame values are seconds): s, ms, µs or ns. */
  unit?: string;
  decimals?: number;
  tableQuantiles: TableQuantiles;
  prometheusDatasourceUid: string;
}

export interface ReadyViewModel {
  status: 'ok';
  meta: PairwiseMeta;
  minutes: MinuteView[];
  decision: DecisionView | null;
  /** Counts of the minutes frame itself, for the strip legend. */
  minuteCounts: VerdictCounts;
  /** Quantile labels shown in the reference table, verdict quantile always included. */
  tableQuantiles: string[];
  formatLatency: (seconds: number | null) => string;
  zoneLabel: string;
}

export type ViewModel = ReadyViewModel | { status: 'empty'; message: string } | { status: 'invalid'; message: string };

export const NO_DATA_MESSAGE =
  "Pairwise needs a minutes frame from the Pairwise data source: check the query's metric and selectors.";

const SECONDS_TO_UNIT: Record<string, number> = { s: 1, ms: 1e3, µs: 1e6, us: 1e6, ns: 1e9 };

export function formatRatio(ratio: number | null): string {
  if (ratio === null || !Number.isFinite(ratio)) {
    return 'n/a';
  }
  return `${ratio.toFixed(2)}×`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function latencyFormatter(unit: string | undefined, decimals?: number): (seconds: number | null) => string {
  const displayUnit = unit && SECONDS_TO_UNIT[unit] !== undefined ? unit : DEFAULT_UNIT;
  const scale = SECONDS_TO_UNIT[displayUnit];
  const format = getValueFormat(displayUnit === 'us' ? 'µs' : displayUnit);
  return (seconds) => {
    if (seconds === null) {
      return '—';
    }
    if (seconds === Infinity) {
      return '+∞';
    }
    return formattedValueToString(format(seconds * scale, decimals));
  };
}

function readMeta(minutes: DataFrame): PairwiseMeta {
  const custom = (minutes.meta?.custom ?? {}) as Record<string, unknown>;
  const num = (key: string): number | null => (typeof custom[key] === 'number' ? (custom[key] as number) : null);
  const str = (key: string): string => (typeof custom[key] === 'string' ? (custom[key] as string) : '');

  let quantiles = Array.isArray(custom.quantiles) ? (custom.quantiles as unknown[]).map(String) : [];
  if (quantiles.length === 0) {
    // No meta: take the quantile labels from the field names.
    quantiles = minutes.fields
      .map((f) => /^baseline_(p[\d.]+)$/.exec(f.name)?.[1])
      .filter((l): l is string => Boolean(l));
  }
  const quantileValues = Array.isArray(custom.quantileValues)
    ? (custom.quantileValues as unknown[]).map(Number)
    : quantiles.map((l) => Number(l.slice(1)) / 100);
  const verdictQuantile = str('verdictQuantile') || (quantiles.includes('p99') ? 'p99' : (quantiles[0] ?? 'p99'));
  const vqIndex = quantiles.indexOf(verdictQuantile);
  const verdictQuantileValue =
    vqIndex >= 0 && Number.isFinite(quantileValues[vqIndex])
      ? quantileValues[vqIndex]
      : Number(verdictQuantile.slice(1)) / 100;

  return {
    quantiles,
    quantileValues,
    verdictQuantile,
    verdictQuantileValue,
    promoteThreshold: num('promoteThreshold'),
    rollbackThreshold: num('rollbackThreshold'),
    goodNeeded: num('goodNeeded'),
    badLimit: num('badLimit'),
    windowMinutes: num('windowMinutes'),
    warmupMinutes: num('warmupMinutes'),
    minTailObservations: num('minTailObservations'),
    metric: str('metric'),
    histogramKind: str('histogramKind') === 'classic' ? 'classic' : 'native',
    baselineSelector: str('baselineSelector'),
    canarySelector: str('canarySelector'),
  };
}

function verdictOf(text: string, code: number | null): Verdict {
  if ((VERDICTS as string[]).includes(text)) {
    return text as Verdict;
  }
  if (code !== null && VERDICTS[code]) {
    return VERDICTS[code];
  }
  return 'no-data';
}

function emptyCounts(): VerdictCounts {
  return { good: 0, neutral: 0, bad: 0, insufficient: 0, noData: 0, warmup: 0 };
}

function countMinutes(minutes: MinuteView[]): VerdictCounts {
  const counts = emptyCounts();
  for (const m of minutes) {
    if (m.warmup) {
      counts.warmup++;
      continue;
    }
    if (m.verdict === 'no-data') {
      counts.noData++;
    } else {
      counts[m.verdict]++;
    }
  }
  return counts;
}

function readPods(frame: DataFrame | undefined): Map<number, PodSpread[]> {
  const byTime = new Map<number, PodSpread[]>();
  if (!frame || missingFields(frame, REQUIRED_FIELDS.pods).length > 0) {
    return byTime;
  }
  const f = (name: string) => fieldByName(frame, name);
  for (let row = 0; row < frame.length; row++) {
    const time = timeAt(f('time'), row);
    if (time === null) {
      continue;
    }
    const list = byTime.get(time) ?? [];
    list.push({
      fleet: stringAt(f('fleet'), row),
      min: finiteAt(f('min'), row),
      median: finiteAt(f('median'), row),
      max: finiteAt(f('max'), row),
      worstPod: stringAt(f('worst_pod'), row),
      pods: finiteAt(f('pods'), row),
    });
    byTime.set(time, list);
  }
  return byTime;
}

/** Builds the whole panel's view model from the frames, once. Computes no verdicts. */
export function buildViewModel(series: DataFrame[] | undefined, options: ViewModelOptions): ViewModel {
  const frames = findFrames(series ?? []);
  const minutesFrame = frames.minutes;
  if (!minutesFrame || minutesFrame.length === 0) {
    return { status: 'empty', message: NO_DATA_MESSAGE };
  }

  const meta = readMeta(minutesFrame);
  const vq = meta.verdictQuantile;
  const missing = missingFields(minutesFrame, [...REQUIRED_FIELDS.minutes, `baseline_${vq}`, `canary_${vq}`]);
  if (missing.length > 0) {
    return {
      status: 'invalid',
      message: `The minutes frame is missing the field${missing.length === 1 ? '' : 's'} ${missing.join(', ')}. Pairwise expects the frames of the Pairwise data source.`,
    };
  }

  const timeZone = options.timeZone ?? 'utc';
  const zoneLabel =
    timeZone === 'utc' ? 'UTC' : (getTimeZoneInfo(timeZone, Date.now())?.abbreviation ?? '').trim() || '';
  const withZone = (text: string) => (zoneLabel ? `${text} ${zoneLabel}` : text);
  const formatLatency = latencyFormatter(options.unit, options.decimals);
  const pods = readPods(frames.pods);

  const f = (name: string) => fieldByName(minutesFrame, name);
  const timeField = f('time');
  const minutes: MinuteView[] = [];
  for (let row = 0; row < minutesFrame.length; row++) {
    const time = timeAt(timeField, row);
    if (time === null) {
      continue;
    }
    const timeLabel = dateTimeFormat(time, { format: 'HH:mm', timeZone });
    const quantiles: Record<string, FleetPair> = {};
    for (const label of meta.quantiles) {
      quantiles[label] = {
        baseline: finiteAt(f(`baseline_${label}`), row),
        canary: finiteAt(f(`canary_${label}`), row),
      };
    }
    const ratio = finiteAt(f('ratio'), row);
    const verdict = verdictOf(stringAt(f('verdict'), row), finiteAt(f('verdict_code'), row));
    const warmup = boolAt(f('warmup'), row);
    const explore =
      meta.metric && options.prometheusDatasourceUid
        ? buildExploreUrl({
            prometheusUid: options.prometheusDatasourceUid,
            metric: meta.metric,
            baselineSelector: meta.baselineSelector,
            canarySelector: meta.canarySelector,
            histogramKind: meta.histogramKind,
            quantile: meta.verdictQuantileValue,
            minuteEndMs: time,
          })
        : null;
    minutes.push({
      index: minutes.length,
      time,
      timeLabel,
      fullTimeLabel: withZone(dateTimeFormat(time, { format: 'YYYY-MM-DD HH:mm', timeZone })),
      rps: { baseline: finiteAt(f('baseline_rps'), row), canary: finiteAt(f('canary_rps'), row) },
      quantiles,
      ratio,
      verdict,
      warmup,
      counts: { baseline: finiteAt(f('baseline_count'), row), canary: finiteAt(f('canary_count'), row) },
      baselineBounds: { lower: numberAt(f('baseline_lower'), row), upper: numberAt(f('baseline_upper'), row) },
      canaryBounds: { lower: numberAt(f('canary_lower'), row), upper: numberAt(f('canary_upper'), row) },
      reason: stringAt(f('reason'), row),
      pods: pods.get(time) ?? [],
      accessibleName: `${withZone(timeLabel)}, ${VERDICT_TEXT[verdict]}, ratio ${ratio === null ? 'n/a' : ratio.toFixed(2)}${warmup ? ', warm-up' : ''}`,
      exploreUrl: explore,
    });
  }

  const tableQuantiles =
    options.tableQuantiles === 'all'
      ? meta.quantiles
      : meta.quantiles.filter((l) => l === vq || (l !== 'p50' && l !== 'p99.99'));

  return {
    status: 'ok',
    meta,
    minutes,
    decision: buildDecision(frames.decision, meta, withZone, timeZone),
    minuteCounts: countMinutes(minutes),
    tableQuantiles,
    formatLatency,
    zoneLabel,
  };
}

function buildDecision(
  frame: DataFrame | undefined,
  meta: PairwiseMeta,
  withZone: (text: string) => string,
  timeZone: TimeZone
): DecisionView | null {
  if (!frame || frame.length === 0 || missingFields(frame, REQUIRED_FIELDS.decision).length > 0) {
    return null;
  }
  const row = frame.length - 1;
  const f = (name: string) => fieldByName(frame, name);
  const count = (name: string) => finiteAt(f(name), row) ?? 0;
  const text = stringAt(f('decision'), row).toLowerCase();
  const code = finiteAt(f('decision_code'), row);
  const decision: Decision = (DECISIONS as string[]).includes(text)
    ? (text as Decision)
    : code !== null && DECISIONS[code]
      ? DECISIONS[code]
      : 'hold';

  const good = count('good');
  const bad = count('bad');
  const windowMinutes = count('window_minutes');
  const goodNeeded = count('good_needed');
  const badLimit = count('bad_limit');
  let headline: string;
  if (decision === 'rollback') {
    headline = `ROLLBACK: ${plural(bad, 'bad minute')} of ${windowMinutes}, limit ${badLimit}`;
  } else if (decision === 'promote') {
    headline = `PROMOTE: ${plural(good, 'good minute')} of ${windowMinutes}, needed ${goodNeeded}`;
  } else {
    headline = `HOLD: ${good} good (needed ${goodNeeded}), ${bad} bad (limit ${badLimit})`;
  }

  const promote = finiteAt(f('promote_threshold'), row) ?? meta.promoteThreshold;
  const rollback = finiteAt(f('rollback_threshold'), row) ?? meta.rollbackThreshold;
  const thresholds =
    promote !== null && rollback !== null ? `good ≤ ${promote.toFixed(2)}×, bad ≥ ${rollback.toFixed(2)}×` : '';

  const worstTime = timeAt(f('worst_minute'), row);
  const worstRatio = finiteAt(f('worst_ratio'), row);
  const worst =
    worstTime !== null
      ? `Worst minute ${withZone(dateTimeFormat(worstTime, { format: 'HH:mm', timeZone }))}, ratio ${formatRatio(worstRatio)}`
      : '';

  const flags = stringAt(f('flags'), row)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((code) => ({ code, text: FLAG_TEXT[code] ?? code }));

  return {
    decision,
    headline,
    thresholds,
    counts: {
      good,
      neutral: count('neutral'),
      bad,
      insufficient: count('insufficient'),
      noData: count('no_data'),
      warmup: count('warmup'),
    },
    worst,
    reason: stringAt(f('reason'), row),
    flags,
  };
}
