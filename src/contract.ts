import contractJson from './contract.json';

/**
 * The front end's contract with the backend, generated from pkg/verdict (verdict.Contract) into
 * contract.json by a Go test that fails when the two drift: query fields with their defaults and
 * limits, the window rules, and the names, codes and texts of verdicts, decisions and flags.
 * Nothing here is written a second time in TypeScript.
 */

/** The range pkg/verdict's Validate accepts for one number (verdict.Limit). */
export interface Limit {
  min?: number;
  minOpen?: boolean;
  max?: number;
  maxOpen?: boolean;
  /** A value accepted outside the range that turns the setting off. */
  off?: number;
  whole?: boolean;
  /** The field the value must be above, or below. */
  above?: string;
  below?: string;
  /** Under this rule the value must also be at most windowMinutes. */
  atMostWindowUnder?: string;
  /** The value must divide this number (a scrape interval divides a minute). */
  divides?: number;
}

export interface Named {
  name: string;
  code: number;
  text: string;
}

export interface Contract {
  fields: string[];
  defaults: Record<string, unknown>;
  limits: Record<string, Limit>;
  rules: string[];
  verdicts: Named[];
  decisions: Named[];
  flags: Named[];
  /** How many quantiles a query may list. */
  maxQuantiles: number;
}

export const CONTRACT = contractJson as Contract;

/** Whether the limit of `field` accepts `value`, the other fields taken from `values`, as Validate does. */
export function withinLimit(field: string, value: number, values: Record<string, unknown>): boolean {
  const limit = CONTRACT.limits[field];
  if (!limit) {
    return true;
  }
  if (limit.off !== undefined && value === limit.off) {
    return true;
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return false;
  }
  const other = (name: string) => Number(values[name]);
  return (
    !(limit.whole && !Number.isInteger(value)) &&
    (limit.min === undefined || value > limit.min || (!limit.minOpen && value === limit.min)) &&
    (limit.max === undefined || value < limit.max || (!limit.maxOpen && value === limit.max)) &&
    (limit.above === undefined || value > other(limit.above)) &&
    (limit.below === undefined || value < other(limit.below)) &&
    (limit.atMostWindowUnder === undefined ||
      values.rule !== limit.atMostWindowUnder ||
      value <= other('windowMinutes')) &&
    (limit.divides === undefined || (value !== 0 && limit.divides % value === 0))
  );
}

const byName = (list: Named[]) => Object.fromEntries(list.map((n) => [n.name, n.text]));

/** Plain sentences of the window flags under the default limits; frames carry their query's in meta.flagTexts. */
export const CONTRACT_FLAG_TEXT: Record<string, string> = byName(CONTRACT.flags);
