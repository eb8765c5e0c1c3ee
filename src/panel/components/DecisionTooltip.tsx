import React from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import {
  DECISION_SYMBOL,
  DecisionFiring,
  MinuteDecisionView,
  MinuteView,
  PairwiseMeta,
  pooledFromStart,
} from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { formatCount, getTooltipStyles } from './cellParts';
import { decisionColor } from './verdictStyle';

interface Props {
  minute: MinuteView;
  decision: MinuteDecisionView;
  meta: PairwiseMeta;
  windowMinutes: number | null;
  /** Set when rollback or promote first fires at this minute. */
  firing?: DecisionFiring;
  pinned: boolean;
}

const fixed = (n: number | null, digits = 1) => (n === null ? '—' : n.toFixed(digits));

/** "reached" when the statistic is at or past its boundary (above for rollback, below for promote). */
function against(statistic: number | null, boundary: number | null, upward: boolean): string {
  if (statistic === null || boundary === null) {
    return '';
  }
  return (upward ? statistic >= boundary : statistic <= boundary) ? 'reached' : 'not reached';
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * What the minute's decision read: the evidence since the deployment's start when the backend pooled it
 * from there (for its first day), else the window ending at the minute, and with a deployment start why
 * that window was judged sliding.
 */
function windowText(
  minute: MinuteView,
  decision: MinuteDecisionView,
  meta: PairwiseMeta,
  windowMinutes: number | null
) {
  const span = `${windowMinutes ? `${windowMinutes}-minute ` : ''}window`;
  if (meta.rule !== 'evidence') {
    return `Decision of the ${span} ending at this minute (reference rule).`;
  }
  if (pooledFromStart(decision, meta)) {
    return `Decision at this minute on the evidence since the deployment's start, pooled for its first day (evidence rule); the flags read the ${span} ending here.`;
  }
  if (meta.since === null) {
    return `Decision of the ${span} ending at this minute (evidence rule).`;
  }
  const why =
    minute.time - meta.since > DAY_MS
      ? 'the deployment started more than a day before this minute, and its evidence pools from its start for its first day only'
      : 'the range asked for ends more than a day after the deployment started, so each of its windows is judged sliding; a range ending within a day of the start pools from it';
  return `Decision of the ${span} ending at this minute, judged as a sliding window (evidence rule): ${why}.`;
}

/** The decision of the window ending at a minute: the backend's reason and the evidence against its boundaries. */
export function DecisionTooltip({ minute, decision, meta, windowMinutes, firing, pinned }: Props) {
  const styles = useStyles2(getStyles);
  const theme = useTheme2();
  const e = decision.evidence;
  const label = meta.verdictQuantile;
  const rows: Array<{ what: string; value: string; boundary: string; state: string }> = [
    {
      what: `${pooledFromStart(decision, meta) ? 'since the start' : 'whole window'}${e.minutes !== null ? ` (${e.minutes} min with evidence)` : ''}`,
      value: fixed(e.statistic),
      boundary: `rollback at ${fixed(e.rollbackBoundary)}`,
      state: against(e.statistic, e.rollbackBoundary, true),
    },
  ];
  if (e.recentMinutes !== null) {
    rows.push({
      what: `last ${e.recentMinutes} min`,
      value: fixed(e.recentStatistic),
      boundary: `rollback at ${fixed(e.recentBoundary)}`,
      state: against(e.recentStatistic, e.recentBoundary, true),
    });
  }
  rows.push({
    what: 'promote',
    value: fixed(e.promoteStatistic),
    boundary: `promote at ${fixed(e.promoteBoundary)}`,
    state: against(e.promoteStatistic, e.promoteBoundary, false),
  });
  const evidenceRule = meta.rule === 'evidence';

  return (
    <div className={cx(styles.tooltip, styles.width)} data-testid={panelTestIds.trackTooltip}>
      <div className={styles.title}>
        <span style={{ color: decisionColor(theme, decision.decision) }}>{DECISION_SYMBOL[decision.decision]}</span>{' '}
        {minute.fullTimeLabel}: {decision.decision.toUpperCase()}
      </div>
      <div className={styles.secondary}>{windowText(minute, decision, meta, windowMinutes)}</div>
      {firing && (
        <div className={styles.firing}>
          {firing.fired
            ? `${firing.decision === 'rollback' ? 'Rollback' : 'Promote'} first fires at this minute.`
            : `The first minute shown is already ${firing.decision}: it may have fired earlier.`}
        </div>
      )}
      {decision.reason && <div className={styles.reason}>{decision.reason}</div>}
      {evidenceRule ? (
        <table className={styles.table}>
          <thead>
            <tr>
              <th scope="col">evidence</th>
              <th scope="col">statistic</th>
              <th scope="col">boundary</th>
              <th scope="col" />
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.what}>
                <th scope="row">{r.what}</th>
                <td>{r.value}</td>
                <td>{r.boundary}</td>
                <td className={styles.state}>{r.state}</td>
              </tr>
            ))}
            <tr>
              <th scope="row">canary {label} exceedances</th>
              <td>{formatCount(e.canaryTail)}</td>
              <td>expected {fixed(e.expectedCanaryTail)}</td>
              <td />
            </tr>
          </tbody>
        </table>
      ) : null}
      {!pinned && <div className={styles.secondary}>Click or press Enter to pin; N and P jump between changes.</div>}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  ...getTooltipStyles(theme),
  width: css({
    maxWidth: theme.spacing(80),
  }),
  firing: css({
    fontWeight: theme.typography.fontWeightMedium,
  }),
  state: css({
    color: theme.colors.text.secondary,
  }),
});
