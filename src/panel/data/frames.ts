import { DataFrame, Field } from '@grafana/data';

export type FrameKind = 'minutes' | 'decision' | 'pods';

/** Fields whose absence makes a frame unusable, per kind. Quantile fields are checked separately. */
export const REQUIRED_FIELDS: Record<FrameKind, string[]> = {
  minutes: ['time', 'verdict', 'ratio'],
  decision: ['decision', 'good', 'bad', 'window_minutes', 'good_needed', 'bad_limit'],
  pods: ['time', 'fleet', 'min', 'median', 'max'],
};

/** Field names that identify a frame's kind when its name is missing or different. */
const SHAPE_HINTS: Record<FrameKind, string[]> = {
  minutes: ['verdict', 'canary_rps'],
  // The minutes frame also has decision and decision_code (each minute's window decision).
  decision: ['decision_code', 'good_needed'],
  pods: ['fleet', 'worst_pod'],
};

export function fieldByName(frame: DataFrame, name: string): Field | undefined {
  return frame.fields.find((f) => f.name === name);
}

function hasFields(frame: DataFrame, names: string[]): boolean {
  return names.every((n) => fieldByName(frame, n) !== undefined);
}

/** Finds each kind of frame by name first, then by field shape. */
export function findFrames(series: DataFrame[]): Partial<Record<FrameKind, DataFrame>> {
  const found: Partial<Record<FrameKind, DataFrame>> = {};
  const kinds: FrameKind[] = ['minutes', 'decision', 'pods'];
  for (const kind of kinds) {
    found[kind] = series.find((f) => f.name === kind) ?? series.find((f) => hasFields(f, SHAPE_HINTS[kind]));
  }
  return found;
}

export function missingFields(frame: DataFrame, names: string[]): string[] {
  return names.filter((n) => fieldByName(frame, n) === undefined);
}

/** A numeric cell: NaN and missing become null; ±Infinity stays (confidence bounds may be +Inf). */
export function numberAt(field: Field | undefined, row: number): number | null {
  if (!field) {
    return null;
  }
  const value = field.values[row];
  if (value === null || value === undefined || value === '') {
    return null;
  }
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isNaN(n) ? null : n;
}

export function finiteAt(field: Field | undefined, row: number): number | null {
  const n = numberAt(field, row);
  return n !== null && Number.isFinite(n) ? n : null;
}

export function stringAt(field: Field | undefined, row: number): string {
  if (!field) {
    return '';
  }
  const value = field.values[row];
  return value === null || value === undefined ? '' : String(value);
}

export function boolAt(field: Field | undefined, row: number): boolean {
  if (!field) {
    return false;
  }
  const value = field.values[row];
  return value === true || value === 'true' || value === 1;
}

/** Time cells may arrive as epoch ms numbers, ISO strings or Date objects. */
export function timeAt(field: Field | undefined, row: number): number | null {
  if (!field) {
    return null;
  }
  const value = field.values[row];
  if (value === null || value === undefined) {
    return null;
  }
  if (typeof value === 'number') {
    return Number.isFinite(value) ? value : null;
  }
  if (value instanceof Date) {
    const t = value.getTime();
    return Number.isNaN(t) ? null : t;
  }
  const parsed = Date.parse(String(value));
  return Number.isNaN(parsed) ? null : parsed;
}
