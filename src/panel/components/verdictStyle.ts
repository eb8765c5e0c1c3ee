import { GrafanaTheme2 } from '@grafana/data';
import { Decision, Verdict } from '../data/viewModel';

/**
 * Theme colours of each verdict. Colour is not the only cue: cells wide enough show VERDICT_SYMBOL,
 * and narrower ones the patterns of verdictPatterns (bad, insufficient, no data and partial; good
 * and neutral stay plain, green against grey).
 */
export function verdictColors(theme: GrafanaTheme2): Record<Verdict, string> {
  const byName = (name: string) => theme.visualization.getColorByName(name);
  return {
    good: byName('green'),
    neutral: theme.colors.text.disabled,
    bad: byName('red'),
    insufficient: byName('yellow'),
    'no-data': 'transparent',
    partial: byName('purple'),
  };
}

export function decisionColor(theme: GrafanaTheme2, decision: Decision): string {
  switch (decision) {
    case 'promote':
      return theme.colors.success.main;
    case 'rollback':
      return theme.colors.error.main;
    default:
      return theme.colors.warning.main;
  }
}

export function fleetColors(theme: GrafanaTheme2): { baseline: string; canary: string } {
  return {
    baseline: theme.visualization.getColorByName('blue'),
    canary: theme.visualization.getColorByName('orange'),
  };
}

/** Ink of the lines and shades drawn over a cell's colour: dark, it reads on every fill of both themes. */
const INK = 'rgba(0, 0, 0, 0.35)';
/** Ink of the promote dots, light: the success colour is dark in both themes. */
const LIGHT_INK = 'rgba(255, 255, 255, 0.75)';

const lines = (angle: number, ink: string, pitch: string) =>
  `repeating-linear-gradient(${angle}deg, ${ink} 0, ${ink} 1px, transparent 1px, transparent ${pitch})`;

type Pattern = { backgroundImage: string; backgroundSize?: string; backgroundPosition?: string; boxShadow?: string };
export type PatternedVerdict = Extract<Verdict, 'bad' | 'insufficient' | 'no-data' | 'partial'>;
export type PatternedDecision = Extract<Decision, 'rollback' | 'promote'>;

/**
 * The pattern of each verdict that has one, for cells too small for their symbol (and the legend's
 * swatches): each echoes its symbol. Bad ✕ is a cross-hatch, insufficient ? dots, no data ∅ a
 * single hatch on no fill, partial ◐ a shaded left half. Good and neutral are plain.
 */
export function verdictPatterns(theme: GrafanaTheme2): Record<PatternedVerdict, Pattern> {
  return {
    bad: { backgroundImage: `${lines(45, INK, '4px')}, ${lines(135, INK, '4px')}` },
    insufficient: {
      backgroundImage: `radial-gradient(${theme.colors.background.primary} 20%, transparent 21%)`,
      backgroundSize: `${theme.spacing(0.75)} ${theme.spacing(0.75)}`,
    },
    'no-data': {
      backgroundImage: lines(135, theme.colors.border.strong, theme.spacing(0.5)),
      boxShadow: `inset 0 0 0 1px ${theme.colors.border.medium}`,
    },
    partial: { backgroundImage: `linear-gradient(90deg, ${INK} 50%, transparent 50%)` },
  };
}

/**
 * The pattern of each window decision that has one, in the decision track: rollback ▼ a dark
 * hatch, promote ▲ a row of light dots through the middle (one dot per cell's slice, so it stays a
 * line even in a day's timeline of cells a pixel wide). Hold is plain.
 */
export function decisionPatterns(): Record<PatternedDecision, Pattern> {
  return {
    rollback: { backgroundImage: lines(135, INK, '4px') },
    promote: {
      backgroundImage: `radial-gradient(circle, ${LIGHT_INK} 0, ${LIGHT_INK} 1px, transparent 1.5px)`,
      backgroundSize: '4px 100%',
      backgroundPosition: 'center',
    },
  };
}
