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
import { CONTRACT, CONTRACT_FLAG_TEXT } from '../../contract';
import { buildExploreUrl, ExploreQueries, readExploreQueries } from './explore';

export type Verdict = 'good' | 'neutral' | 'bad' | 'insufficient' | 'no-data' | 'partial';
export type Decision = 'promote' | 'hold' | 'rollback';
export type WindowRule = 'evidence' | 'reference';

const inCodeOrder = <T extends string>(list: Array<{ name: string; code: number }>): T[] =>
  [...list].sort((a, b) => a.code - b.code).map((n) => n.name as T);
/** Order of the backend's verdict_code (pkg/verdict, through src/contract.json). */
export const VERDICTS: Verdict[] = inCodeOrder<Verdict>(CONTRACT.verdicts);
/** Order of the backend's decision_code. */
export const DECISIONS: Decision[] = inCodeOrder<Decision>(CONTRACT.decisions);

/** The non-colour cue of each window decision. */
export const DECISION_SYMBOL: Record<Decision, string> = {
  promote: '▲',
  hold: '■',
  rollback: '▼',
};

/** The non-colour cue of each verdict. */
export const VERDICT_SYMBOL: Record<Verdict, string> = {
  good: '✓',
  neutral: '–',
  bad: '✕',
  insufficient: '?',
  'no-data': '∅',
  partial: '◐',
};

/** How the panel names each verdict, as pkg/verdict's Verdict.Text writes it. */
export const VERDICT_TEXT = Object.fromEntries(CONTRACT.verdicts.map((v) => [v.name, v.text])) as Record<
  Verdict,
  string
>;

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
  /** Confidence of the per-minute quantile bounds (0.95), or null. */
  confidence: number | null;
  /** Each fleet's PromQL of the verdict quantile, as the data source wrote it; null without one. */
  exploreQueries: ExploreQueries | null;
  /** The data source's sentence for each flag it raised (verdict.FlagText). */
  flagTexts: Record<string, string>;
  /** The window rule that decided ("evidence" unless the backend says otherwise). */
  rule: WindowRule;
  /** Deployment start (epoch ms) the analysis was anchored at, or null. */
  since: number | null;
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

/**
 * The evidence rule's reading of the window ending at a minute, as the backend wrote it
 * (null where a number is absent). Under the reference rule it is shown, not deciding.
 */
export interface WindowEvidenceView {
  statistic: number | null;
  rollbackBoundary: number | null;
  promoteStatistic: number | null;
  /** Negative: the window promotes at promoteStatistic <= promoteBoundary. */
  promoteBoundary: number | null;
  /** Minutes of the window that carry evidence. */
  minutes: number | null;
  canaryTail: number | null;
  expectedCanaryTail: number | null;
  /** The recent run of minutes the rule also reads; null when none. */
  recentMinutes: number | null;
  recentStatistic: number | null;
  recentBoundary: number | null;
  recentCanaryTail: number | null;
  recentExpectedCanaryTail: number | null;
}

/** The decision of the window ending at a minute. */
export interface MinuteDecisionView {
  decision: Decision;
  /** The backend's sentence for this window's decision. */
  reason: string;
  evidence: WindowEvidenceView;
  /**
   * The evidence rule pooled this window from the deployment's start (the minutes frame's anchored
   * column); null when the frame has no such column.
   */
  anchored: boolean | null;
}

export interface MinuteView {
  index: number;
  /** The minute's end, epoch ms: the window is (time - 60 s, time]. */
  time: number;
  /** "14:07" */
  timeLabel: string;
  /** "2026-11-21 14:07 UTC" */
  fullTimeLabel: string;
  /** "2026-11-21" when the minutes shown span more than one date (then "14:07" alone is ambiguous), else empty. */
  dayLabel: string;
  /** The zone's abbreviation at this minute ("UTC", "CET", "CEST"), or empty when it has none. */
  zoneLabel: string;
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
  /** The decision of the window ending at this minute; null when the frame carries none. */
  windowDecision: MinuteDecisionView | null;
}

/** Where the window decision first is rollback or promote among the minutes shown. */
export interface DecisionFiring {
  decision: Decision;
  /** Index in the minutes. */
  index: number;
  /** False when the first minute shown already has it: it may have fired before the range. */
  fired: boolean;
  /** Label line of its marker: 1 when another firing's label is too close to share a line. */
  line: number;
}

/** The per-minute window decisions, for the decision track. */
export interface DecisionTrackView {
  rule: WindowRule;
  windowMinutes: number | null;
  counts: Record<Decision, number>;
  /** First rollback and first promote among the minutes shown, in time order. */
  firings: DecisionFiring[];
  /** Lines the firing labels take (0 without firings). */
  markerLines: number;
  /** Minutes whose decision pooled the evidence since the deployment's start (pooledFromStart). */
  pooled: number;
}

/** Firings closer than this share of the range get their labels on separate lines. */
const MARKER_CLEARANCE = 0.3;

export interface VerdictCounts {
  good: number;
  neutral: number;
  bad: number;
  insufficient: number;
  noData: number;
  /** A serving fleet member did not report: neither good nor bad nor evidence. */
  partial: number;
  warmup: number;
}

export interface DecisionView {
  decision: Decision;
  /** "ROLLBACK: " and the backend's reason for the decision. */
  headline: string;
  /** "evidence rule, 60-minute window, since 11:45 UTC" */
  rule: string;
  /** "good ≤ 0.95×, bad ≥ 1.10×" */
  thresholds: string;
  counts: VerdictCounts;
  /** "Worst minute 14:07 UTC, ratio 1.23×", or empty when none. */
  worst: string;
  reason: string;
  /** For a rollback, which of the canary's pods hold its tail, in the backend's words; empty otherwise. */
  byPod: string;
  flags: Array<{ code: string; text: string }>;
  /** False when the decision comes from the last minute of the minutes frame (no decision frame). */
  fromDecisionFrame: boolean;
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
  /** The window decision of every minute; null when the minutes frame carries none. */
  track: DecisionTrackView | null;
  /** Counts of the minutes frame itself, for the strip legend. */
  minuteCounts: VerdictCounts;
  /** Quantile labels shown in the reference table, verdict quantile always included. */
  tableQuantiles: string[];
  formatLatency: (seconds: number | null) => string;
  /** The zone's abbreviation when every minute shares it; empty when they differ (a daylight-saving change) or it has none. */
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

export function latencyFormatter(unit: string | undefined, decimals?: number): (seconds: number | null) => string {
  // Own keys only: a unit named "__proto__" or "toString" is not a time unit.
  const displayUnit = unit && Object.hasOwn(SECONDS_TO_UNIT, unit) ? unit : DEFAULT_UNIT;
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
    confidence: num('confidence'),
    exploreQueries: readExploreQueries(custom.exploreQueries),
    flagTexts: readFlagTexts(custom.flagTexts),
    rule: str('rule') === 'reference' ? 'reference' : 'evidence',
    since: str('since') && !Number.isNaN(Date.parse(str('since'))) ? Date.parse(str('since')) : null,
  };
}

/** The meta's flag sentences: only its own entries whose text is a string. */
function readFlagTexts(raw: unknown): Record<string, string> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    return {};
  }
  // Object.fromEntries defines each key as an own property, "__proto__" too: it sets no prototype.
  return Object.fromEntries(Object.entries(raw).filter(([, text]) => typeof text === 'string'));
}

/**
 * The text a table gives a code, only from its own properties and only when it is a string: a
 * flag named "__proto__" or "toString" must not read Object.prototype's.
 */
function ownText(table: Record<string, unknown>, code: string): string | undefined {
  const text = Object.hasOwn(table, code) ? table[code] : undefined;
  return typeof text === 'string' ? text : undefined;
}

function decisionOf(text: string, code: number | null): Decision | null {
  const lower = text.toLowerCase();
  if ((DECISIONS as string[]).includes(lower)) {
    return lower as Decision;
  }
  return code !== null && DECISIONS[code] ? DECISIONS[code] : null;
}

/** Fields of the window evidence, in the minutes and the decision frame alike. */
const EVIDENCE_FIELDS: Record<keyof WindowEvidenceView, string> = {
  statistic: 'evidence_statistic',
  rollbackBoundary: 'rollback_boundary',
  promoteStatistic: 'promote_statistic',
  promoteBoundary: 'promote_boundary',
  minutes: 'evidence_minutes',
  canaryTail: 'canary_tail',
  expectedCanaryTail: 'expected_canary_tail',
  recentMinutes: 'recent_minutes',
  recentStatistic: 'recent_statistic',
  recentBoundary: 'recent_boundary',
  recentCanaryTail: 'recent_canary_tail',
  recentExpectedCanaryTail: 'recent_expected_canary_tail',
};

function readEvidence(frame: DataFrame, row: number): WindowEvidenceView {
  const out = {} as WindowEvidenceView;
  for (const [key, name] of Object.entries(EVIDENCE_FIELDS) as Array<[keyof WindowEvidenceView, string]>) {
    out[key] = finiteAt(fieldByName(frame, name), row);
  }
  return out;
}

/** The decision of the window ending at a row of the minutes frame, if the frame has one. */
function readMinuteDecision(frame: DataFrame, row: number): MinuteDecisionView | null {
  const decision = decisionOf(
    stringAt(fieldByName(frame, 'decision'), row),
    finiteAt(fieldByName(frame, 'decision_code'), row)
  );
  if (!decision) {
    return null;
  }
  const anchored = fieldByName(frame, 'anchored');
  return {
    decision,
    reason: stringAt(fieldByName(frame, 'decision_reason'), row),
    evidence: readEvidence(frame, row),
    anchored: anchored ? boolAt(anchored, row) : null,
  };
}

/** How the panel names each decision (src/contract.json). */
export const DECISION_TEXT = Object.fromEntries(CONTRACT.decisions.map((d) => [d.name, d.text])) as Record<
  Decision,
  string
>;

/** A minute's time as the panel writes it: "14:07", with its date when the minutes span more than one. */
export function shownTime(minute: MinuteView): string {
  return minute.dayLabel ? `${minute.dayLabel} ${minute.timeLabel}` : minute.timeLabel;
}

/** "rollback fires 11:50" or, when the first minute shown already has it, "rollback at 11:01 (start of the range)". */
export function firingText(firing: DecisionFiring, minute: MinuteView): string {
  return firing.fired
    ? `${DECISION_TEXT[firing.decision]} fires ${shownTime(minute)}`
    : `${DECISION_TEXT[firing.decision]} at ${shownTime(minute)} (start of the range)`;
}

/** The next (direction 1) or previous (-1) minute whose window decision differs from the one before it. */
export function nextChange(minutes: MinuteView[], from: number, direction: 1 | -1): number | null {
  const decisionAt = (i: number) => minutes[i]?.windowDecision?.decision;
  for (let i = from + direction; i >= 0 && i < minutes.length; i += direction) {
    if (decisionAt(i) !== decisionAt(i - 1)) {
      return i;
    }
  }
  return null;
}

/**
 * Whether a minute's decision pooled the evidence since the deployment's start, as the backend's
 * anchored column says; frames without it (an older data source) pooled whenever a start was set.
 */
export function pooledFromStart(decision: MinuteDecisionView | null | undefined, meta: PairwiseMeta): boolean {
  return meta.rule === 'evidence' && (decision?.anchored ?? meta.since !== null);
}

export function buildTrack(minutes: MinuteView[], meta: PairwiseMeta): DecisionTrackView | null {
  if (minutes.length === 0 || minutes.some((m) => m.windowDecision === null)) {
    return null;
  }
  const counts: Record<Decision, number> = { promote: 0, hold: 0, rollback: 0 };
  const firings: DecisionFiring[] = [];
  minutes.forEach((m, i) => {
    const d = m.windowDecision!.decision;
    counts[d]++;
    if (d !== 'hold' && !firings.some((f) => f.decision === d)) {
      const close = firings.some((f) => Math.abs(f.index - i) < MARKER_CLEARANCE * minutes.length);
      firings.push({
        decision: d,
        index: i,
        fired: i > 0 && minutes[i - 1].windowDecision!.decision !== d,
        line: close ? 1 : 0,
      });
    }
  });
  const markerLines = firings.length === 0 ? 0 : Math.max(...firings.map((f) => f.line)) + 1;
  const pooled = minutes.filter((m) => pooledFromStart(m.windowDecision, meta)).length;
  return { rule: meta.rule, windowMinutes: meta.windowMinutes, counts, firings, markerLines, pooled };
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
  return { good: 0, neutral: 0, bad: 0, insufficient: 0, noData: 0, partial: 0, warmup: 0 };
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

/** A time in the panel's zone: date, "HH:mm", its seconds "ss" and the zone's abbreviation at that time. */
interface LocalTime {
  date: string;
  time: string;
  seconds: string;
  zone: string;
}

/**
 * Formats times in a zone, each with the zone's abbreviation at its own instant (a minute in
 * January reads CET, one in July CEST). One format per time; the abbreviation is looked up once
 * per distinct UTC offset, so a day of minutes costs two look-ups at most.
 */
function localTimeFormatter(timeZone: TimeZone): (time: number) => LocalTime {
  const zoneByOffset = new Map<string, string>();
  return (time) => {
    const [date = '', hhmmss = '', offset = ''] = dateTimeFormat(time, {
      format: 'YYYY-MM-DD HH:mm:ss Z',
      timeZone,
    }).split(' ');
    let zone = zoneByOffset.get(offset);
    if (zone === undefined) {
      zone = timeZone === 'utc' ? 'UTC' : (getTimeZoneInfo(timeZone, time)?.abbreviation ?? '').trim();
      zoneByOffset.set(offset, zone);
    }
    return { date, time: hhmmss.slice(0, 5), seconds: hhmmss.slice(6), zone };
  };
}

/** "14:07 CET", or the text alone in a zone without an abbreviation. */
const withZone = (text: string, zone: string) => (zone ? `${text} ${zone}` : text);

/** "2026-11-21 14:07 UTC", with seconds ("14:07:30") when asked for and not zero. */
type FullTime = (time: number, seconds?: boolean) => string;

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

/** What makes frames one analysis's: the panel's queries are edited one by one, and frames of queries that differ in these must not be shown as one canary. */
const SAME_ANALYSIS: Array<[key: string, label: string]> = [
  ['metric', 'metric'],
  ['baselineSelector', 'baseline selector'],
  ['canarySelector', 'canary selector'],
  ['since', 'deployment start'],
  ['settings', 'verdict settings'],
];

/** Says how the decision or pods frame's query differs from the minutes frame's, or null when they are one analysis's. */
export function queriesDisagree(
  minutes: DataFrame,
  others: Partial<Record<'decision' | 'pods', DataFrame>>
): string | null {
  const custom = (frame: DataFrame) => (frame.meta?.custom ?? {}) as Record<string, unknown>;
  const ours = custom(minutes);
  for (const kind of ['decision', 'pods'] as const) {
    const frame = others[kind];
    if (!frame) {
      continue;
    }
    const theirs = custom(frame);
    const differ = SAME_ANALYSIS.filter(
      ([key]) => key in theirs && key in ours && JSON.stringify(theirs[key]) !== JSON.stringify(ours[key])
    ).map(([, label]) => label);
    if (differ.length > 0) {
      return `The ${kind} query and the minutes query differ in their ${differ.join(', ')}: the panel would show two analyses as one. Give the panel's queries the same settings; only their query type differs.`;
    }
  }
  return null;
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
  const disagreement = queriesDisagree(minutesFrame, frames);
  if (disagreement) {
    return { status: 'invalid', message: disagreement };
  }

  const timeZone = options.timeZone ?? 'utc';
  const local = localTimeFormatter(timeZone);
  const fullTime: FullTime = (time, seconds = false) => {
    const t = local(time);
    return withZone(`${t.date} ${t.time}${seconds && t.seconds !== '00' ? `:${t.seconds}` : ''}`, t.zone);
  };
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
    const { date, time: timeLabel, zone } = local(time);
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
      meta.exploreQueries && options.prometheusDatasourceUid
        ? buildExploreUrl({
            prometheusUid: options.prometheusDatasourceUid,
            queries: meta.exploreQueries,
            minuteEndMs: time,
          })
        : null;
    minutes.push({
      index: minutes.length,
      time,
      timeLabel,
      fullTimeLabel: withZone(`${date} ${timeLabel}`, zone),
      dayLabel: date,
      zoneLabel: zone,
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
      accessibleName: `${VERDICT_TEXT[verdict]}, ratio ${ratio === null ? 'n/a' : ratio.toFixed(2)}${warmup ? ', warm-up' : ''}`,
      exploreUrl: explore,
      windowDecision: readMinuteDecision(minutesFrame, row),
    });
  }

  const tableQuantiles =
    options.tableQuantiles === 'all'
      ? meta.quantiles
      : meta.quantiles.filter((l) => l === vq || (l !== 'p50' && l !== 'p99.99'));

  // A minute's date is named only when the minutes span more than one; its accessible name leads with its time.
  const spansDays = new Set(minutes.map((m) => m.dayLabel)).size > 1;
  for (const m of minutes) {
    m.dayLabel = spansDays ? m.dayLabel : '';
    m.accessibleName = `${withZone(shownTime(m), m.zoneLabel)}, ${m.accessibleName}`;
  }

  const minuteCounts = countMinutes(minutes);
  const fromMinutes = () => lastMinuteDecision(minutes, meta, minuteCounts, fullTime);
  // One zone for the table's header only when every minute has it.
  const zones = new Set(minutes.map((m) => m.zoneLabel));
  const zoneLabel = zones.size === 1 ? [...zones][0] : '';
  return {
    status: 'ok',
    meta,
    minutes,
    decision:
      buildDecision(frames.decision, minutes[minutes.length - 1]?.windowDecision ?? null, meta, local, fullTime) ??
      fromMinutes(),
    track: buildTrack(minutes, meta),
    minuteCounts,
    tableQuantiles,
    formatLatency,
    zoneLabel,
  };
}

/**
 * "evidence rule, 60-minute window", and with a deployment start whether the decision pooled the
 * evidence since it ("pooled since the deployment at ...") or judged a sliding window.
 */
function ruleText(
  rule: WindowRule,
  windowMinutes: number | null,
  since: number | null,
  pooled: boolean,
  fullTime: FullTime
): string {
  const parts = [rule === 'reference' ? 'reference rule (minute counts)' : 'evidence rule'];
  const window = windowMinutes !== null && windowMinutes > 0 ? `${windowMinutes}-minute` : '';
  // A start within a minute shows its seconds: its first whole minute is the next but one.
  const deployed = since !== null ? fullTime(since, true) : '';
  if (pooled && since !== null) {
    parts.push(`pooled since the deployment at ${deployed}`);
    if (window) {
      parts.push(`flags over a ${window} window`);
    }
    return parts.join(', ');
  }
  if (window) {
    parts.push(rule === 'evidence' && since !== null ? `${window} sliding window` : `${window} window`);
  }
  if (since !== null) {
    parts.push(`deployed ${deployed}`);
  }
  return parts.join(', ');
}

function thresholdsText(promote: number | null, rollback: number | null): string {
  return promote !== null && rollback !== null ? `good ≤ ${promote.toFixed(2)}×, bad ≥ ${rollback.toFixed(2)}×` : '';
}

function headlineOf(decision: Decision, reason: string): string {
  return reason ? `${decision.toUpperCase()}: ${reason}` : decision.toUpperCase();
}

/** Without a decision frame, the last minute's window decision is the decision. */
function lastMinuteDecision(
  minutes: MinuteView[],
  meta: PairwiseMeta,
  counts: VerdictCounts,
  fullTime: FullTime
): DecisionView | null {
  const last = minutes[minutes.length - 1]?.windowDecision;
  if (!last) {
    return null;
  }
  return {
    decision: last.decision,
    headline: headlineOf(last.decision, last.reason),
    rule: ruleText(meta.rule, meta.windowMinutes, meta.since, pooledFromStart(last, meta), fullTime),
    thresholds: thresholdsText(meta.promoteThreshold, meta.rollbackThreshold),
    counts,
    worst: '',
    reason: last.reason,
    byPod: '',
    flags: [],
    fromDecisionFrame: false,
  };
}

function buildDecision(
  frame: DataFrame | undefined,
  /** The last minute's window decision: the decision frame's, with whether it pooled from the start. */
  last: MinuteDecisionView | null,
  meta: PairwiseMeta,
  local: (time: number) => LocalTime,
  fullTime: FullTime
): DecisionView | null {
  if (!frame || frame.length === 0 || missingFields(frame, REQUIRED_FIELDS.decision).length > 0) {
    return null;
  }
  const row = frame.length - 1;
  const f = (name: string) => fieldByName(frame, name);
  const count = (name: string) => finiteAt(f(name), row) ?? 0;
  const decision = decisionOf(stringAt(f('decision'), row), finiteAt(f('decision_code'), row)) ?? 'hold';

  const good = count('good');
  const bad = count('bad');
  // The backend writes why (the decision frame's reason); the panel adds nothing to it.
  const reason = stringAt(f('reason'), row);
  const headline = headlineOf(decision, reason);
  const ruleField = stringAt(f('rule'), row);
  const rule: WindowRule = ruleField === 'reference' || ruleField === 'evidence' ? ruleField : meta.rule;

  const promote = finiteAt(f('promote_threshold'), row) ?? meta.promoteThreshold;
  const rollback = finiteAt(f('rollback_threshold'), row) ?? meta.rollbackThreshold;

  const worstTime = timeAt(f('worst_minute'), row);
  const worstRatio = finiteAt(f('worst_ratio'), row);
  const worstLocal = worstTime !== null ? local(worstTime) : null;
  const worst = worstLocal
    ? `Worst minute ${withZone(worstLocal.time, worstLocal.zone)}, ratio ${formatRatio(worstRatio)}`
    : '';

  // Each flag once: a list naming one twice would show it twice.
  const codes = new Set(
    stringAt(f('flags'), row)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
  );
  const flags = [...codes].map((code) => ({
    code,
    text: ownText(meta.flagTexts, code) ?? ownText(CONTRACT_FLAG_TEXT, code) ?? code,
  }));

  return {
    decision,
    headline,
    rule: ruleText(
      rule,
      finiteAt(f('window_minutes'), row) ?? meta.windowMinutes,
      meta.since,
      pooledFromStart(last, { ...meta, rule }),
      fullTime
    ),
    thresholds: thresholdsText(promote, rollback),
    counts: {
      good,
      neutral: count('neutral'),
      bad,
      insufficient: count('insufficient'),
      noData: count('no_data'),
      partial: count('partial'),
      warmup: count('warmup'),
    },
    worst,
    reason,
    byPod: stringAt(f('by_pod'), row),
    flags,
    fromDecisionFrame: true,
  };
}
