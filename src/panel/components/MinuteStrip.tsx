import React, { useMemo } from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { MinuteView, PairwiseMeta, Verdict, VERDICT_SYMBOL, VERDICT_TEXT, VerdictCounts } from '../data/viewModel';
import { stripLayout } from '../data/layout';
import { panelTestIds } from '../testIds';
import { MinuteTooltip } from './MinuteTooltip';
import { CellTooltip, getLegendStyles } from './cellParts';
import { useCellNavigation } from './useCellNavigation';
import { PatternedVerdict, verdictColors, verdictPatterns } from './verdictStyle';

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
  const keys = useMemo(() => minutes.map((m) => m.time), [minutes]);
  const { active, visible, pinned, anchor, cellId, containerProps } = useCellNavigation({ keys, rowStep: perRow });

  const activeMinute = active !== null ? minutes[active] : undefined;
  const patternOf = (verdict: Verdict) =>
    verdict in styles.patterns ? styles.patterns[verdict as PatternedVerdict] : undefined;

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
                // Without their symbols the cells are told apart by pattern; no data always has its own.
                (!showSymbols || minute.verdict === 'no-data') && patternOf(minute.verdict),
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
                className={cx(styles.swatch, patternOf(verdict))}
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
        <CellTooltip anchor={anchor} pinned={pinned}>
          <MinuteTooltip minute={activeMinute} meta={meta} formatLatency={formatLatency} pinned={pinned} />
        </CellTooltip>
      )}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => {
  const patterns = verdictPatterns(theme);
  return {
    ...getLegendStyles(theme),
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
    patterns: {
      bad: css(patterns.bad),
      insufficient: css(patterns.insufficient),
      'no-data': css(patterns['no-data']),
      partial: css(patterns.partial),
    } satisfies Record<PatternedVerdict, string>,
    warmup: css({
      opacity: 0.4,
    }),
    active: css({
      outline: `2px solid ${theme.colors.text.primary}`,
      outlineOffset: '-1px',
      opacity: 1,
      zIndex: 1,
    }),
    range: css({
      color: theme.colors.text.primary,
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
  };
};
