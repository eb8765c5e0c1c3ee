import React from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2, VizTooltipContainer } from '@grafana/ui';
import { MinuteView, PairwiseMeta, Verdict, VERDICT_SYMBOL, VERDICT_TEXT, VerdictCounts } from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { MinuteTooltip } from './MinuteTooltip';
import { useCellNavigation } from './useCellNavigation';
import { verdictColors } from './verdictStyle';

interface Props {
  minutes: MinuteView[];
  meta: PairwiseMeta;
  counts: VerdictCounts;
  width: number;
  /** Height the strip may take before it scrolls. */
  maxHeight: number;
  formatLatency: (seconds: number | null) => string;
  showLegend: boolean;
}

/**
 * Cell geometry: the largest cells (up to a cap) whose wrapped rows fit in the width and height
 * available, so an hour gets big labelled cells and a day gets narrow ones.
 */
export function stripLayout(count: number, width: number, maxHeight: number, gridSize: number) {
  const minPitch = gridSize * 0.75;
  const maxPitch = gridSize * 3.5;
  const gap = 1;
  const n = Math.max(count, 1);
  const cellHeightFor = (pitch: number) => Math.max(gridSize * 1.25, Math.min(gridSize * 3, pitch));
  const oneRow = Math.floor(width / n);
  let pitch = minPitch;
  if (oneRow >= gridSize * 2.5) {
    pitch = Math.min(oneRow, maxPitch);
  } else {
    for (let p = Math.floor(maxPitch); p >= minPitch; p--) {
      const rows = Math.ceil(n / Math.max(1, Math.floor(width / p)));
      if (rows * (cellHeightFor(p) + gap) <= maxHeight) {
        pitch = p;
        break;
      }
    }
  }
  const perRow = Math.max(1, Math.floor(width / pitch));
  return { perRow, cellHeight: cellHeightFor(pitch), showSymbols: pitch >= gridSize * 1.75 };
}

const LEGEND: Array<{ verdict: Verdict; key: keyof VerdictCounts }> = [
  { verdict: 'good', key: 'good' },
  { verdict: 'neutral', key: 'neutral' },
  { verdict: 'bad', key: 'bad' },
  { verdict: 'insufficient', key: 'insufficient' },
  { verdict: 'no-data', key: 'noData' },
  { verdict: 'partial', key: 'partial' },
];

export function MinuteStrip({ minutes, meta, counts, width, maxHeight, formatLatency, showLegend }: Props) {
  const theme = useTheme2();
  const styles = useStyles2(getStyles);
  const colors = verdictColors(theme);
  const { perRow, cellHeight, showSymbols } = stripLayout(minutes.length, width, maxHeight, theme.spacing.gridSize);
  const { active, visible, pinned, anchor, cellId, containerProps } = useCellNavigation({
    count: minutes.length,
    rowStep: perRow,
  });

  const activeMinute = active !== null ? minutes[active] : undefined;

  return (
    <div className={styles.wrapper}>
      <div
        className={styles.strip}
        style={{ gridTemplateColumns: `repeat(${perRow}, minmax(0, 1fr))`, maxHeight }}
        data-testid={panelTestIds.strip}
        role="listbox"
        aria-label={`Minute verdicts, ${minutes.length} minutes. Arrow keys move, Enter pins the details.`}
        aria-orientation="horizontal"
        {...containerProps}
      >
        {minutes.map((minute) => {
          const isActive = minute.index === active;
          return (
            <div
              key={minute.time}
              id={cellId(minute.index)}
              data-index={minute.index}
              data-verdict={minute.verdict}
              data-testid={panelTestIds.stripCell}
              role="option"
              aria-selected={isActive}
              aria-label={minute.accessibleName}
              className={cx(
                styles.cell,
                minute.verdict === 'no-data' && styles.noData,
                minute.verdict === 'insufficient' && !showSymbols && styles.insufficient,
                minute.warmup && styles.warmup,
                isActive && styles.active
              )}
              style={{
                height: cellHeight,
                backgroundColor: minute.verdict === 'no-data' ? undefined : colors[minute.verdict],
                color:
                  minute.verdict === 'no-data'
                    ? theme.colors.text.secondary
                    : theme.colors.getContrastText(
                        colors[minute.verdict] === 'transparent'
                          ? theme.colors.background.primary
                          : colors[minute.verdict]
                      ),
              }}
            >
              {showSymbols ? VERDICT_SYMBOL[minute.verdict] : null}
            </div>
          );
        })}
      </div>
      {showLegend && (
        <div className={styles.legend} aria-hidden>
          {minutes.length > 0 && (
            <span className={styles.range}>
              {minutes[0].timeLabel}–{minutes[minutes.length - 1].timeLabel}
            </span>
          )}
          {LEGEND.filter(({ verdict, key }) => verdict !== 'partial' || counts[key] > 0).map(({ verdict, key }) => (
            <span key={verdict} className={styles.legendItem}>
              <span
                className={cx(
                  styles.swatch,
                  verdict === 'no-data' && styles.noData,
                  verdict === 'insufficient' && styles.insufficient
                )}
                style={{
                  backgroundColor: verdict === 'no-data' ? undefined : colors[verdict],
                  color: theme.colors.getContrastText(
                    colors[verdict] === 'transparent' ? theme.colors.background.primary : colors[verdict]
                  ),
                }}
              >
                {VERDICT_SYMBOL[verdict]}
              </span>
              {VERDICT_TEXT[verdict]} {counts[key]}
            </span>
          ))}
          {counts.warmup > 0 && (
            <span className={styles.legendItem}>
              <span className={cx(styles.swatch, styles.warmup)} style={{ backgroundColor: colors.bad }} />
              faded: warm-up (not counted) {counts.warmup}
            </span>
          )}
        </div>
      )}
      {visible && activeMinute && anchor && (
        <VizTooltipContainer
          position={anchor}
          offset={{ x: 0, y: theme.spacing.gridSize }}
          allowPointerEvents={pinned}
          className={styles.tooltipBox}
        >
          <MinuteTooltip minute={activeMinute} meta={meta} formatLatency={formatLatency} pinned={pinned} />
        </VizTooltipContainer>
      )}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => {
  const hatch = `repeating-linear-gradient(135deg, ${theme.colors.border.strong} 0, ${theme.colors.border.strong} 1px, transparent 1px, transparent ${theme.spacing(0.5)})`;
  return {
    wrapper: css({
      display: 'flex',
      flexDirection: 'column',
      gap: theme.spacing(0.5),
      // In a small panel the strip takes what the banner leaves and scrolls inside it.
      flexShrink: 1,
      minHeight: 0,
    }),
    strip: css({
      display: 'grid',
      alignContent: 'start',
      minHeight: 0,
      gap: theme.spacing(0.125),
      overflowY: 'auto',
      borderRadius: theme.shape.radius.default,
      '&:focus-visible': {
        outline: `2px solid ${theme.colors.primary.main}`,
        outlineOffset: theme.spacing(0.25),
      },
    }),
    cell: css({
      display: 'flex',
      alignItems: 'center',
      justifyContent: 'center',
      fontSize: theme.typography.bodySmall.fontSize,
      lineHeight: 1,
      borderRadius: theme.shape.radius.default,
      cursor: 'pointer',
      userSelect: 'none',
      overflow: 'hidden',
    }),
    noData: css({
      backgroundImage: hatch,
      boxShadow: `inset 0 0 0 1px ${theme.colors.border.medium}`,
    }),
    insufficient: css({
      backgroundImage: `radial-gradient(${theme.colors.background.primary} 20%, transparent 21%)`,
      backgroundSize: `${theme.spacing(0.75)} ${theme.spacing(0.75)}`,
    }),
    warmup: css({
      opacity: 0.4,
    }),
    active: css({
      outline: `2px solid ${theme.colors.text.primary}`,
      outlineOffset: '-1px',
      opacity: 1,
      zIndex: 1,
    }),
    legend: css({
      display: 'flex',
      flexWrap: 'wrap',
      columnGap: theme.spacing(1.5),
      rowGap: theme.spacing(0.25),
      color: theme.colors.text.secondary,
      fontSize: theme.typography.bodySmall.fontSize,
    }),
    range: css({
      color: theme.colors.text.primary,
    }),
    legendItem: css({
      display: 'inline-flex',
      alignItems: 'center',
      gap: theme.spacing(0.5),
    }),
    swatch: css({
      display: 'inline-flex',
      alignItems: 'center',
      justifyContent: 'center',
      width: theme.spacing(1.75),
      height: theme.spacing(1.75),
      borderRadius: theme.shape.radius.default,
      fontSize: theme.typography.bodySmall.fontSize,
      lineHeight: 1,
    }),
    tooltipBox: css({
      padding: theme.spacing(1),
    }),
  };
};
