import React from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2, locationUtil } from '@grafana/data';
import { Icon, useStyles2 } from '@grafana/ui';
import {
  Bounds,
  DECISION_SYMBOL,
  formatRatio,
  MinuteView,
  PairwiseMeta,
  pooledFromStart,
  VERDICT_SYMBOL,
  VERDICT_TEXT,
} from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { formatCount, getTooltipStyles } from './cellParts';

interface Props {
  minute: MinuteView;
  meta: PairwiseMeta;
  formatLatency: (seconds: number | null) => string;
  pinned: boolean;
}

function formatRps(n: number | null): string {
  return n === null ? '—' : `${n.toFixed(1)} req/s`;
}

export function MinuteTooltip({ minute, meta, formatLatency, pinned }: Props) {
  const styles = useStyles2(getStyles);
  const bounds = (b: Bounds) =>
    b.lower === null && b.upper === null ? '—' : `${formatLatency(b.lower)} – ${formatLatency(b.upper)}`;

  return (
    <div className={cx(styles.tooltip, styles.width)} data-testid={panelTestIds.tooltip}>
      <div className={styles.title}>
        {minute.fullTimeLabel}: {VERDICT_SYMBOL[minute.verdict]} {VERDICT_TEXT[minute.verdict]}
        {minute.warmup ? ' (warm-up, not counted)' : ''}, ratio {formatRatio(minute.ratio)}
      </div>
      {minute.windowDecision && (
        <div className={styles.secondary}>
          {`${pooledFromStart(minute.windowDecision, meta) ? "Decision on the evidence since the deployment's start" : 'Window ending here'}: `}
          {DECISION_SYMBOL[minute.windowDecision.decision]} {minute.windowDecision.decision}
        </div>
      )}
      <table className={styles.table}>
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">baseline</th>
            <th scope="col">canary</th>
          </tr>
        </thead>
        <tbody>
          {meta.quantiles.map((label) => (
            <tr key={label} className={label === meta.verdictQuantile ? styles.verdictRow : undefined}>
              <th scope="row">{label}</th>
              <td>{formatLatency(minute.quantiles[label]?.baseline ?? null)}</td>
              <td>{formatLatency(minute.quantiles[label]?.canary ?? null)}</td>
            </tr>
          ))}
          <tr>
            <th scope="row">
              {meta.verdictQuantile} {meta.confidence !== null ? `${Math.round(meta.confidence * 100)}% ` : ''}bounds
            </th>
            <td>{bounds(minute.baselineBounds)}</td>
            <td>{bounds(minute.canaryBounds)}</td>
          </tr>
          <tr>
            <th scope="row">rate</th>
            <td>{formatRps(minute.rps.baseline)}</td>
            <td>{formatRps(minute.rps.canary)}</td>
          </tr>
          <tr>
            <th scope="row">observations</th>
            <td>{formatCount(minute.counts.baseline)}</td>
            <td>{formatCount(minute.counts.canary)}</td>
          </tr>
          {minute.pods.length > 0 && (
            <>
              <tr>
                <th scope="row">pods: median (min – max)</th>
                {(['baseline', 'canary'] as const).map((fleet) => {
                  const spread = minute.pods.find((p) => p.fleet === fleet);
                  return (
                    <td key={fleet}>
                      {spread
                        ? `${formatLatency(spread.median)} (${formatLatency(spread.min)} – ${formatLatency(spread.max)})`
                        : '—'}
                    </td>
                  );
                })}
              </tr>
              <tr>
                <th scope="row">worst pod</th>
                {(['baseline', 'canary'] as const).map((fleet) => (
                  <td key={fleet}>{minute.pods.find((p) => p.fleet === fleet)?.worstPod || '—'}</td>
                ))}
              </tr>
            </>
          )}
        </tbody>
      </table>
      {minute.reason && <div className={styles.reason}>{minute.reason}</div>}
      {pinned && minute.exploreUrl ? (
        <a className={styles.link} href={locationUtil.assureBaseUrl(minute.exploreUrl)}>
          <Icon name="compass" size="sm" aria-hidden /> Open this minute in Explore
        </a>
      ) : (
        <div className={styles.secondary}>Click or press Enter to pin; Esc closes.</div>
      )}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  ...getTooltipStyles(theme),
  width: css({
    maxWidth: theme.spacing(90),
  }),
  verdictRow: css({
    fontWeight: theme.typography.fontWeightBold,
  }),
  link: css({
    color: theme.colors.text.link,
    '&:hover': { textDecoration: 'underline' },
  }),
});
