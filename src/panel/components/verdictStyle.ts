import { GrafanaTheme2 } from '@grafana/data';
import { Decision, Verdict } from '../data/viewModel';

/** Theme colours of each verdict. Colour is never the only cue: see VERDICT_SYMBOL. */
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
