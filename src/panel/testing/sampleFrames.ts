import { DataFrame, FieldType, toDataFrame } from '@grafana/data';
import { CONTRACT } from '../../contract';

/**
 * Builds frames shaped like the Pairwise data source's output, for the harness sample, the 1,440-minute
 * tests and frames of odd shapes. The verdicts follow the documented rule from the ratios it makes up,
 * with pkg/verdict's default thresholds (src/contract.json); it is sample data, not a second
 * implementation of the backend. Tests of what the backend writes read the golden frames of
 * pkg/frames instead (./goldens).
 */
export interface SampleMinute {
  ratio: number | null;
  verdict: 'good' | 'neutral' | 'bad' | 'insufficient' | 'no-data' | 'partial';
  warmup?: boolean;
  baselineP99?: number | null;
  /** The decision of the window ending at the minute; minutes without one make a frame without decision fields. */
  window?: SampleWindowDecision;
}

export interface SampleWindowDecision {
  decision: 'promote' | 'hold' | 'rollback';
  reason: string;
  statistic: number;
  rollbackBoundary: number;
  promoteStatistic: number;
  promoteBoundary: number;
  minutes: number;
  canaryTail: number;
  expectedCanaryTail: number;
  recentMinutes?: number;
  recentStatistic?: number;
  recentBoundary?: number;
  /** The window pools from the deployment's start (the backend's anchored column); default false. */
  anchored?: boolean;
}

export const SAMPLE_QUANTILES = ['p50', 'p99', 'p99.9', 'p99.99'];
export const SAMPLE_QUANTILE_VALUES = [0.5, 0.99, 0.999, 0.9999];
const codes = (list: Array<{ name: string; code: number }>) => Object.fromEntries(list.map((n) => [n.name, n.code]));
const VERDICT_CODES = codes(CONTRACT.verdicts);
const DECISION_CODES = codes(CONTRACT.decisions);
const DEFAULTS = CONTRACT.defaults as {
  promoteThreshold: number;
  rollbackThreshold: number;
  goodNeeded: number;
  badLimit: number;
  windowMinutes: number;
  warmupMinutes: number;
  minTailObservations: number;
};

export const SAMPLE_META = {
  quantiles: SAMPLE_QUANTILES,
  quantileValues: SAMPLE_QUANTILE_VALUES,
  verdictQuantile: 'p99',
  promoteThreshold: DEFAULTS.promoteThreshold,
  rollbackThreshold: DEFAULTS.rollbackThreshold,
  goodNeeded: DEFAULTS.goodNeeded,
  badLimit: DEFAULTS.badLimit,
  windowMinutes: DEFAULTS.windowMinutes,
  warmupMinutes: DEFAULTS.warmupMinutes,
  minTailObservations: DEFAULTS.minTailObservations,
  rule: 'evidence',
  since: '',
  metric: 'http_request_duration_seconds',
  histogramKind: 'native',
  baselineSelector: '{app="checkout",track="baseline"}',
  canarySelector: '{app="checkout",track="canary"}',
};

/** A verdict for a ratio by the default thresholds (sample data only). */
export function sampleVerdict(ratio: number): SampleMinute['verdict'] {
  return ratio <= DEFAULTS.promoteThreshold ? 'good' : ratio >= DEFAULTS.rollbackThreshold ? 'bad' : 'neutral';
}

export function minutesFrame(startMs: number, rows: SampleMinute[], meta: object = SAMPLE_META): DataFrame {
  const time: number[] = [];
  const cols: Record<string, Array<number | null>> = {};
  const push = (name: string, value: number | null) => (cols[name] = cols[name] ?? []).push(value);
  const verdicts: string[] = [];
  const codes: number[] = [];
  const warmups: boolean[] = [];
  const reasons: string[] = [];
  rows.forEach((row, i) => {
    time.push(startMs + i * 60_000);
    const noData = row.verdict === 'no-data';
    const base = noData ? null : (row.baselineP99 ?? 0.2 + 0.01 * Math.sin(i / 5));
    const canary = base !== null && row.ratio !== null ? base * row.ratio : null;
    const scale = [0.25, 1, 1.8, 3.1];
    push('baseline_rps', noData ? null : 240 + 10 * Math.sin(i / 7));
    push('canary_rps', noData ? null : 24 + Math.sin(i / 7));
    SAMPLE_QUANTILES.forEach((label, q) => {
      push(`baseline_${label}`, base === null ? null : base * scale[q]);
      push(`canary_${label}`, canary === null ? null : canary * scale[q]);
    });
    push('ratio', row.ratio);
    verdicts.push(row.verdict);
    codes.push(VERDICT_CODES[row.verdict]);
    warmups.push(Boolean(row.warmup));
    push('baseline_count', noData ? 0 : 14_400);
    push('canary_count', noData ? 0 : 1_440);
    push('baseline_lower', base === null ? null : base * 0.97);
    push('baseline_upper', base === null ? null : base * 1.03);
    push('canary_lower', canary === null ? null : canary * 0.9);
    push('canary_upper', canary === null ? null : row.verdict === 'insufficient' ? Infinity : canary * 1.12);
    reasons.push(
      noData
        ? 'No canary observations in this minute.'
        : `p99 ratio ${row.ratio?.toFixed(2)} is ${row.verdict === 'good' ? `at or below ${DEFAULTS.promoteThreshold}` : row.verdict === 'bad' ? `at or above ${DEFAULTS.rollbackThreshold}` : 'between the thresholds'}.`
    );
  });
  const numberField = (name: string) => ({ name, type: FieldType.number, values: cols[name] });
  const windows = rows.every((r) => r.window) ? rows.map((r) => r.window!) : null;
  const windowFields = windows
    ? [
        { name: 'decision', type: FieldType.string, values: windows.map((w) => w.decision) },
        { name: 'decision_code', type: FieldType.number, values: windows.map((w) => DECISION_CODES[w.decision]) },
        { name: 'decision_reason', type: FieldType.string, values: windows.map((w) => w.reason) },
        ...(
          [
            ['evidence_statistic', (w) => w.statistic],
            ['rollback_boundary', (w) => w.rollbackBoundary],
            ['promote_statistic', (w) => w.promoteStatistic],
            ['promote_boundary', (w) => w.promoteBoundary],
            ['evidence_minutes', (w) => w.minutes],
            ['canary_tail', (w) => w.canaryTail],
            ['expected_canary_tail', (w) => w.expectedCanaryTail],
            ['recent_minutes', (w) => w.recentMinutes ?? null],
            ['recent_statistic', (w) => w.recentStatistic ?? null],
            ['recent_boundary', (w) => w.recentBoundary ?? null],
          ] as Array<[string, (w: SampleWindowDecision) => number | null]>
        ).map(([name, pick]) => ({ name, type: FieldType.number, values: windows.map(pick) })),
        { name: 'anchored', type: FieldType.boolean, values: windows.map((w) => Boolean(w.anchored)) },
      ]
    : [];
  return toDataFrame({
    name: 'minutes',
    refId: 'A',
    meta: { custom: meta },
    fields: [
      { name: 'time', type: FieldType.time, values: time },
      numberField('baseline_rps'),
      numberField('canary_rps'),
      ...SAMPLE_QUANTILES.flatMap((l) => [numberField(`baseline_${l}`), numberField(`canary_${l}`)]),
      numberField('ratio'),
      { name: 'verdict', type: FieldType.string, values: verdicts },
      { name: 'verdict_code', type: FieldType.number, values: codes },
      { name: 'warmup', type: FieldType.boolean, values: warmups },
      numberField('baseline_count'),
      numberField('canary_count'),
      numberField('baseline_lower'),
      numberField('baseline_upper'),
      numberField('canary_lower'),
      numberField('canary_upper'),
      { name: 'reason', type: FieldType.string, values: reasons },
      ...windowFields,
    ],
  });
}

/**
 * Made-up window decisions for sample minutes: a score per minute (a bad minute counts for, a good
 * or neutral one against) summed over the window and over the last 4 minutes, against fixed
 * boundaries. Sample data only, shaped like the backend's; it is not the evidence rule.
 */
export function sampleWindows(rows: SampleMinute[], windowMinutes = DEFAULTS.windowMinutes): SampleWindowDecision[] {
  const score = (r: SampleMinute) =>
    r.warmup || r.verdict === 'no-data' || r.verdict === 'insufficient'
      ? 0
      : r.verdict === 'bad'
        ? 9
        : r.verdict === 'good'
          ? -2
          : -0.8;
  const carries = (r: SampleMinute) =>
    !r.warmup && (r.verdict === 'good' || r.verdict === 'neutral' || r.verdict === 'bad');
  const rollbackBoundary = 14.2;
  const recentBoundary = 14.2;
  const promoteBoundary = -11.9;
  return rows.map((_, i) => {
    const window = rows.slice(Math.max(0, i - windowMinutes + 1), i + 1);
    const recent = rows.slice(Math.max(0, i - 3), i + 1);
    const statistic = window.reduce((sum, r) => sum + score(r), 0);
    const recentStatistic = recent.reduce((sum, r) => sum + score(r), 0);
    const minutes = window.filter(carries).length;
    const promoteStatistic = statistic - minutes * 0.4;
    const expected = minutes * 11;
    const canary = Math.round(expected + statistic * 1.5);
    const tail = `canary p99 exceedances ${canary} vs ${expected.toFixed(1)} expected over ${minutes} minutes`;
    let decision: SampleWindowDecision['decision'] = 'hold';
    let reason = `${tail}: evidence ${statistic.toFixed(1)}, rollback at ${rollbackBoundary}; promote evidence ${promoteStatistic.toFixed(1)}, promote at ${promoteBoundary}`;
    if (statistic >= rollbackBoundary) {
      decision = 'rollback';
      reason = `${tail}: evidence ${statistic.toFixed(1)} reached the rollback boundary ${rollbackBoundary} (the canary's tail is heavier than the baseline's)`;
    } else if (recent.length < window.length && recentStatistic >= recentBoundary) {
      decision = 'rollback';
      reason = `canary p99 exceedances over the last ${recent.length} minutes: evidence ${recentStatistic.toFixed(1)} reached the rollback boundary ${recentBoundary} (the canary's tail has become heavier than the baseline's)`;
    } else if (promoteStatistic <= promoteBoundary && minutes >= windowMinutes / 2) {
      decision = 'promote';
      reason = `${tail}: evidence ${promoteStatistic.toFixed(1)} reached the promote boundary ${promoteBoundary}`;
    }
    return {
      decision,
      reason,
      statistic,
      rollbackBoundary,
      promoteStatistic,
      promoteBoundary,
      minutes,
      canaryTail: canary,
      expectedCanaryTail: expected,
      ...(recent.length < window.length ? { recentMinutes: recent.length, recentStatistic, recentBoundary } : {}),
    };
  });
}

export interface SampleDecision {
  decision: 'promote' | 'hold' | 'rollback';
  rule?: 'evidence' | 'reference';
  evidence?: SampleWindowDecision;
  good: number;
  neutral: number;
  bad: number;
  insufficient: number;
  noData: number;
  warmup: number;
  windowMinutes?: number;
  worstMinute: number | null;
  worstRatio: number | null;
  reason: string;
  flags?: string;
}

export function decisionFrame(endMs: number, d: SampleDecision): DataFrame {
  const n = (name: string, value: number | null) => ({ name, type: FieldType.number, values: [value] });
  return toDataFrame({
    name: 'decision',
    refId: 'B',
    fields: [
      { name: 'time', type: FieldType.time, values: [endMs] },
      { name: 'decision', type: FieldType.string, values: [d.decision] },
      n('decision_code', DECISION_CODES[d.decision]),
      { name: 'rule', type: FieldType.string, values: [d.rule ?? 'evidence'] },
      n('evidence_statistic', d.evidence?.statistic ?? null),
      n('rollback_boundary', d.evidence?.rollbackBoundary ?? null),
      n('promote_statistic', d.evidence?.promoteStatistic ?? null),
      n('promote_boundary', d.evidence?.promoteBoundary ?? null),
      n('evidence_minutes', d.evidence?.minutes ?? null),
      n('canary_tail', d.evidence?.canaryTail ?? null),
      n('expected_canary_tail', d.evidence?.expectedCanaryTail ?? null),
      n('good', d.good),
      n('neutral', d.neutral),
      n('bad', d.bad),
      n('insufficient', d.insufficient),
      n('no_data', d.noData),
      n('warmup', d.warmup),
      n('window_minutes', d.windowMinutes ?? DEFAULTS.windowMinutes),
      n('good_needed', DEFAULTS.goodNeeded),
      n('bad_limit', DEFAULTS.badLimit),
      n('promote_threshold', DEFAULTS.promoteThreshold),
      n('rollback_threshold', DEFAULTS.rollbackThreshold),
      { name: 'worst_minute', type: FieldType.time, values: [d.worstMinute] },
      n('worst_ratio', d.worstRatio),
      { name: 'reason', type: FieldType.string, values: [d.reason] },
      { name: 'flags', type: FieldType.string, values: [d.flags ?? ''] },
    ],
  });
}

export function podsFrame(startMs: number, minutes: number): DataFrame {
  const time: number[] = [];
  const fleet: string[] = [];
  const min: number[] = [];
  const median: number[] = [];
  const max: number[] = [];
  const worst: string[] = [];
  const pods: number[] = [];
  for (let i = 0; i < minutes; i++) {
    for (const f of ['baseline', 'canary']) {
      time.push(startMs + i * 60_000);
      fleet.push(f);
      min.push(0.15);
      median.push(0.2);
      max.push(f === 'canary' ? 0.34 : 0.26);
      worst.push(`${f === 'canary' ? 'checkout-canary' : 'checkout'}-7d9f-${i % 3}`);
      pods.push(f === 'canary' ? 2 : 20);
    }
  }
  return toDataFrame({
    name: 'pods',
    refId: 'C',
    fields: [
      { name: 'time', type: FieldType.time, values: time },
      { name: 'fleet', type: FieldType.string, values: fleet },
      { name: 'min', type: FieldType.number, values: min },
      { name: 'median', type: FieldType.number, values: median },
      { name: 'max', type: FieldType.number, values: max },
      { name: 'worst_pod', type: FieldType.string, values: worst },
      { name: 'pods', type: FieldType.number, values: pods },
    ],
  });
}

/** Deterministic pseudo-random numbers so samples and tests are repeatable. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * A whole sample window: mostly neutral/good minutes with a few bad ones and a regression over the
 * last 15 minutes, a warm-up minute, an insufficient and a no-data minute, each minute's window
 * decision, and a decision frame whose counts and decision match the minutes.
 */
export function sampleWindow(startMs: number, minutes = 60, seed = 7): DataFrame[] {
  const random = seededRandom(seed);
  const rows: SampleMinute[] = [];
  for (let i = 0; i < minutes; i++) {
    if (i === 0) {
      rows.push({ ratio: 1.4, verdict: 'bad', warmup: true });
      continue;
    }
    if (i % 37 === 11) {
      rows.push({ ratio: null, verdict: 'no-data' });
      continue;
    }
    if (i % 23 === 5) {
      rows.push({ ratio: 1.02, verdict: 'insufficient' });
      continue;
    }
    // A few noisy bad minutes, and a regression over the last 15 minutes.
    const slower = (i % 19 === 7 ? 0.3 : 0) + (i >= minutes - 15 ? 0.25 : 0);
    const ratio = Math.round((0.86 + random() * 0.2 + slower) * 1000) / 1000;
    rows.push({ ratio, verdict: sampleVerdict(ratio) });
  }
  // Counts are those of the last window, as the backend's decision frame has them.
  const counted = rows.slice(-DEFAULTS.windowMinutes).filter((r) => !r.warmup);
  const count = (v: SampleMinute['verdict']) => counted.filter((r) => r.verdict === v).length;
  let worstIndex = -1;
  counted.forEach((r) => {
    const i = rows.indexOf(r);
    if (r.ratio !== null && (worstIndex < 0 || r.ratio > (rows[worstIndex].ratio ?? 0))) {
      worstIndex = i;
    }
  });
  const windows = sampleWindows(rows);
  rows.forEach((r, i) => (r.window = windows[i]));
  const last = windows[windows.length - 1];
  return [
    minutesFrame(startMs, rows),
    decisionFrame(startMs + (minutes - 1) * 60_000, {
      decision: last.decision,
      evidence: last,
      reason: last.reason,
      neutral: count('neutral'),
      bad: count('bad'),
      good: count('good'),
      insufficient: count('insufficient'),
      noData: count('no-data'),
      warmup: rows.slice(-DEFAULTS.windowMinutes).length - counted.length,
      worstMinute: worstIndex >= 0 ? startMs + worstIndex * 60_000 : null,
      worstRatio: worstIndex >= 0 ? rows[worstIndex].ratio : null,
      flags: 'traffic-parity',
    }),
    podsFrame(startMs, minutes),
  ];
}
