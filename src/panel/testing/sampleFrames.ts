import { DataFrame, FieldType, toDataFrame } from '@grafana/data';

/**
 * Builds frames shaped like the Pairwise data source's output, for tests and the harness sample.
 * The verdicts follow the documented rule from the ratios it makes up; it is sample data, not a
 * second implementation of the backend.
 */
export interface SampleMinute {
  ratio: number | null;
  verdict: 'good' | 'neutral' | 'bad' | 'insufficient' | 'no-data';
  warmup?: boolean;
  baselineP99?: number | null;
}

export const SAMPLE_QUANTILES = ['p50', 'p99', 'p99.9', 'p99.99'];
export const SAMPLE_QUANTILE_VALUES = [0.5, 0.99, 0.999, 0.9999];
const VERDICT_CODES = { good: 0, neutral: 1, bad: 2, insufficient: 3, 'no-data': 4 } as const;
const DECISION_CODES = { promote: 0, hold: 1, rollback: 2 } as const;

export const SAMPLE_META = {
  quantiles: SAMPLE_QUANTILES,
  quantileValues: SAMPLE_QUANTILE_VALUES,
  verdictQuantile: 'p99',
  promoteThreshold: 0.95,
  rollbackThreshold: 1.1,
  goodNeeded: 45,
  badLimit: 5,
  windowMinutes: 60,
  warmupMinutes: 0,
  minTailObservations: 10,
  metric: 'http_request_duration_seconds',
  histogramKind: 'native',
  baselineSelector: '{app="checkout",track="baseline"}',
  canarySelector: '{app="checkout",track="canary"}',
};

/** A verdict for a ratio by the default thresholds (sample data only). */
export function sampleVerdict(ratio: number): SampleMinute['verdict'] {
  return ratio <= 0.95 ? 'good' : ratio >= 1.1 ? 'bad' : 'neutral';
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
        : `p99 ratio ${row.ratio?.toFixed(2)} is ${row.verdict === 'good' ? 'at or below 0.95' : row.verdict === 'bad' ? 'at or above 1.10' : 'between the thresholds'}.`
    );
  });
  const numberField = (name: string) => ({ name, type: FieldType.number, values: cols[name] });
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
    ],
  });
}

export interface SampleDecision {
  decision: 'promote' | 'hold' | 'rollback';
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
      n('good', d.good),
      n('neutral', d.neutral),
      n('bad', d.bad),
      n('insufficient', d.insufficient),
      n('no_data', d.noData),
      n('warmup', d.warmup),
      n('window_minutes', d.windowMinutes ?? 60),
      n('good_needed', 45),
      n('bad_limit', 5),
      n('promote_threshold', 0.95),
      n('rollback_threshold', 1.1),
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
 * A whole sample window: mostly neutral/good minutes with a few bad ones, a warm-up minute, an
 * insufficient and a no-data minute, and a decision frame whose counts match the minutes.
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
    const ratio = Math.round((0.86 + random() * 0.2 + (i % 19 === 7 ? 0.3 : 0)) * 1000) / 1000;
    rows.push({ ratio, verdict: sampleVerdict(ratio) });
  }
  const counted = rows.filter((r) => !r.warmup);
  const count = (v: SampleMinute['verdict']) => counted.filter((r) => r.verdict === v).length;
  let worstIndex = -1;
  counted.forEach((r) => {
    const i = rows.indexOf(r);
    if (r.ratio !== null && (worstIndex < 0 || r.ratio > (rows[worstIndex].ratio ?? 0))) {
      worstIndex = i;
    }
  });
  const bad = count('bad');
  const good = count('good');
  const decision = bad >= 5 ? 'rollback' : good >= 45 ? 'promote' : 'hold';
  return [
    minutesFrame(startMs, rows),
    decisionFrame(startMs + (minutes - 1) * 60_000, {
      decision,
      good,
      neutral: count('neutral'),
      bad,
      insufficient: count('insufficient'),
      noData: count('no-data'),
      warmup: rows.length - counted.length,
      windowMinutes: minutes,
      worstMinute: worstIndex >= 0 ? startMs + worstIndex * 60_000 : null,
      worstRatio: worstIndex >= 0 ? rows[worstIndex].ratio : null,
      reason:
        decision === 'rollback'
          ? `${bad} minutes had a canary p99 at least 1.10× the baseline's.`
          : decision === 'promote'
            ? `${good} minutes had a canary p99 at most 0.95× the baseline's.`
            : `Neither ${45} good minutes nor ${5} bad minutes yet.`,
      flags: 'traffic-parity',
    }),
    podsFrame(startMs, minutes),
  ];
}
