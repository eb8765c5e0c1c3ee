import { SortOrder } from '../types';
import { MinuteView, Verdict } from './viewModel';

export type SortKey =
  'time' | 'ratio' | 'verdict' | 'baselineRps' | 'canaryRps' | `baseline:${string}` | `canary:${string}`;

export interface SortState {
  key: SortKey | 'worst';
  direction: 'asc' | 'desc';
}

/** Severity for "worst first": bad, then insufficient and neutral, good last; no-data after. */
const SEVERITY: Record<Verdict, number> = { bad: 4, neutral: 2, insufficient: 3, good: 1, partial: 0, 'no-data': 0 };

export function sortStateFromOrder(order: SortOrder): SortState {
  switch (order) {
    case 'time-desc':
      return { key: 'time', direction: 'desc' };
    case 'worst-first':
      return { key: 'worst', direction: 'desc' };
    default:
      return { key: 'time', direction: 'asc' };
  }
}

function valueOf(minute: MinuteView, key: SortKey): number | string | null {
  if (key === 'time') {
    return minute.time;
  }
  if (key === 'ratio') {
    return minute.ratio;
  }
  if (key === 'verdict') {
    return SEVERITY[minute.verdict];
  }
  if (key === 'baselineRps') {
    return minute.rps.baseline;
  }
  if (key === 'canaryRps') {
    return minute.rps.canary;
  }
  const [fleet, label] = key.split(':') as ['baseline' | 'canary', string];
  return minute.quantiles[label]?.[fleet] ?? null;
}

/** Returns a new array; nulls always sort last, ties keep time order. */
export function sortMinutes(minutes: MinuteView[], state: SortState): MinuteView[] {
  const sign = state.direction === 'asc' ? 1 : -1;
  const compareValues = (a: number | string | null, b: number | string | null): number => {
    if (a === null && b === null) {
      return 0;
    }
    if (a === null) {
      return 1;
    }
    if (b === null) {
      return -1;
    }
    return a < b ? -sign : a > b ? sign : 0;
  };
  return [...minutes].sort((a, b) => {
    if (state.key === 'worst') {
      // Worst first: verdict severity, then the highest ratio, then time.
      const bySeverity = SEVERITY[b.verdict] - SEVERITY[a.verdict];
      if (bySeverity !== 0) {
        return bySeverity;
      }
      const byRatio = compareValues(a.ratio, b.ratio);
      return byRatio !== 0 ? byRatio : a.time - b.time;
    }
    const result = compareValues(valueOf(a, state.key), valueOf(b, state.key));
    return result !== 0 ? result : a.time - b.time;
  });
}
