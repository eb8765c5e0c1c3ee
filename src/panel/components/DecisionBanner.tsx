import React from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Icon, useStyles2, useTheme2 } from '@grafana/ui';
import { DecisionView, VerdictCounts } from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { decisionColor } from './verdictStyle';

interface Props {
  decision: DecisionView | null;
  /** Counts of the minutes frame, shown when there is no decision frame. */
  minuteCounts: VerdictCounts;
  compact: boolean;
}

const DECISION_ICON = { promote: 'check-circle', hold: 'pause', rollback: 'exclamation-triangle' } as const;

export function DecisionBanner({ decision, minuteCounts, compact }: Props) {
  const styles = useStyles2(getStyles);
  const theme = useTheme2();

  if (!decision) {
    return (
      <div className={styles.banner} data-testid={panelTestIds.banner} role="status">
        <span className={styles.headline} data-testid={panelTestIds.bannerHeadline}>
          No decision: add a Pairwise query of type Decision (or a Minutes query from this version of the data source)
          to see PROMOTE / HOLD / ROLLBACK.
        </span>
        <span className={styles.detail}>{countsText(minuteCounts)}</span>
      </div>
    );
  }

  const color = decisionColor(theme, decision.decision);
  return (
    <div
      className={cx(styles.banner, compact && styles.compact)}
      style={{ borderLeftColor: color }}
      data-testid={panelTestIds.banner}
      role="status"
      aria-label={`Canary decision: ${decision.headline}`}
    >
      <div className={styles.line}>
        <Icon name={DECISION_ICON[decision.decision]} size={compact ? 'md' : 'lg'} style={{ color }} aria-hidden />
        <span
          className={cx(styles.headline, compact && styles.clamp)}
          data-testid={panelTestIds.bannerHeadline}
          title={compact ? decision.headline : undefined}
        >
          {decision.headline}
        </span>
      </div>
      <div className={styles.line}>
        {decision.rule && <span className={styles.detail}>{decision.rule}</span>}
        {decision.thresholds && <span className={styles.detail}>{decision.thresholds}</span>}
        {decision.worst && <span className={styles.detail}>{decision.worst}</span>}
        {!compact && <span className={styles.detail}>{countsText(decision.counts)}</span>}
        {!compact && !decision.fromDecisionFrame && (
          <span className={styles.detail}>
            from the last minute; add a Decision query for the worst minute and warnings
          </span>
        )}
      </div>
      {!compact && decision.byPod && (
        <div className={styles.line}>
          <span className={styles.detail} data-testid={panelTestIds.bannerByPod}>
            By pod: {decision.byPod}
          </span>
        </div>
      )}
      {decision.flags.length > 0 && (
        <ul className={styles.flags} data-testid={panelTestIds.bannerFlags} aria-label="Warnings">
          {decision.flags.map((flag) => (
            <li key={flag.code} className={styles.flag} title={flag.text}>
              <Icon name="exclamation-triangle" size="sm" aria-hidden />
              <span>{compact ? `Warning: ${flag.code}` : flag.text}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function countsText(c: VerdictCounts): string {
  const parts = [`${c.good} good`, `${c.neutral} neutral`, `${c.bad} bad`];
  if (c.insufficient > 0) {
    parts.push(`${c.insufficient} insufficient`);
  }
  if (c.noData > 0) {
    parts.push(`${c.noData} no data`);
  }
  if (c.partial > 0) {
    parts.push(`${c.partial} partial`);
  }
  if (c.warmup > 0) {
    parts.push(`${c.warmup} warm-up`);
  }
  return parts.join(' · ');
}

const getStyles = (theme: GrafanaTheme2) => ({
  banner: css({
    display: 'flex',
    flexDirection: 'column',
    gap: theme.spacing(0.5),
    padding: theme.spacing(1, 1.5),
    background: theme.colors.background.secondary,
    borderLeft: `${theme.spacing(0.75)} solid ${theme.colors.border.strong}`,
    borderRadius: theme.shape.radius.default,
    flexShrink: 0,
  }),
  compact: css({
    padding: theme.spacing(0.5, 1),
    gap: theme.spacing(0.25),
    '& > div:first-child > span': {
      fontSize: theme.typography.body.fontSize,
    },
  }),
  line: css({
    display: 'flex',
    flexWrap: 'wrap',
    '&:first-child': { flexWrap: 'nowrap' },
    alignItems: 'center',
    columnGap: theme.spacing(1.5),
    rowGap: theme.spacing(0.25),
  }),
  // The backend's reason can be long: two lines in a compact panel, the rest in the title.
  clamp: css({
    display: '-webkit-box',
    WebkitLineClamp: 2,
    WebkitBoxOrient: 'vertical',
    overflow: 'hidden',
  }),
  headline: css({
    fontSize: theme.typography.h5.fontSize,
    fontWeight: theme.typography.fontWeightBold,
    color: theme.colors.text.primary,
  }),
  detail: css({
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  flags: css({
    listStyle: 'none',
    margin: 0,
    padding: 0,
    display: 'flex',
    flexDirection: 'column',
    gap: theme.spacing(0.25),
  }),
  flag: css({
    display: 'flex',
    gap: theme.spacing(0.5),
    alignItems: 'center',
    color: theme.colors.warning.text,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
});
