import React, { useMemo } from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import {
  DECISION_SYMBOL,
  DECISION_TEXT,
  DecisionTrackView,
  DECISIONS,
  firingText,
  MinuteView,
  nextChange,
  PairwiseMeta,
} from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { DecisionTooltip } from './DecisionTooltip';
import { CellTooltip, getLegendStyles } from './cellParts';
import { useCellNavigation } from './useCellNavigation';
import { decisionColor, decisionPatterns } from './verdictStyle';

interface Props {
  minutes: MinuteView[];
  track: DecisionTrackView;
  meta: PairwiseMeta;
  /**
   * Grid columns: the minute strip's columns when it is one row, so each decision sits under its
   * minute; 0 lays the minutes out edge to edge over the whole width, a timeline.
   */
  stripColumns: number;
  /** Markers without labels and no legend. */
  compact: boolean;
}

/**
 * The decision track: for every minute shown, the decision of the window ending at it, in a thin
 * strip under the minute strip, with the minute where rollback (and promote) first fires marked.
 */
export function DecisionTrack({ minutes, track, meta, stripColumns, compact }: Props) {
  const theme = useTheme2();
  const styles = useStyles2(getStyles);
  const aligned = stripColumns >= minutes.length && stripColumns > 0;
  const columns = aligned ? stripColumns : Math.max(1, minutes.length);
  const keys = useMemo(() => minutes.map((m) => m.time), [minutes]);
  const { active, visible, pinned, anchor, cellId, containerProps } = useCellNavigation({
    keys,
    rowStep: 60,
    jump: (key, current) =>
      key === 'n' ? nextChange(minutes, current, 1) : key === 'p' ? nextChange(minutes, current, -1) : null,
  });
  const firingAt = new Map(track.firings.map((f) => [f.index, f]));
  const window = track.windowMinutes ? `${track.windowMinutes}-minute window` : 'window';
  const activeMinute = active !== null ? minutes[active] : undefined;

  return (
    <div className={styles.wrapper} data-testid={panelTestIds.track}>
      <div
        className={cx(styles.grid, aligned && styles.alignedGrid)}
        style={{ gridTemplateColumns: `repeat(${columns}, minmax(0, 1fr))` }}
      >
        <div
          className={styles.cells}
          style={{ gridColumn: `1 / span ${minutes.length}` }}
          role="listbox"
          aria-label={`${trackMeaning(track, window)} ${firingSummary(track, minutes)}Arrow keys move, N and P jump to the next or previous change, Enter pins the details.`}
          aria-orientation="horizontal"
          data-testid={panelTestIds.trackCells}
          {...containerProps}
        >
          {minutes.map((minute) => {
            const decision = minute.windowDecision?.decision ?? 'hold';
            const firing = firingAt.get(minute.index);
            return (
              <div
                key={minute.time}
                id={cellId(minute.index)}
                data-index={minute.index}
                data-decision={decision}
                data-fires={firing ? firing.decision : undefined}
                data-testid={panelTestIds.trackCell}
                role="option"
                aria-selected={minute.index === active}
                aria-label={`${minute.fullTimeLabel}, window decision ${DECISION_TEXT[decision]}${firing ? `, ${firingText(firing, minute)}` : ''}`}
                className={cx(
                  styles.cell,
                  aligned && styles.alignedCell,
                  decision === 'rollback' && styles.rollback,
                  decision === 'promote' && styles.promote,
                  minute.index === active && styles.active
                )}
                style={{ backgroundColor: decisionColor(theme, decision) }}
              />
            );
          })}
        </div>
        {track.firings.map((firing) => {
          const minute = minutes[firing.index];
          const rightHalf = firing.index > minutes.length / 2;
          return (
            <div
              key={firing.decision}
              className={styles.markerCell}
              style={{
                gridColumn: `${firing.index + 1} / span 1`,
                height: theme.spacing(2 * (firing.line + 1)),
              }}
              data-testid={panelTestIds.trackMarker}
              data-decision={firing.decision}
              aria-hidden
            >
              <span
                className={cx(styles.marker, rightHalf && styles.markerLeft)}
                style={{ color: decisionColor(theme, firing.decision), top: theme.spacing(2 * firing.line) }}
              >
                {rightHalf && !compact ? <span className={styles.markerText}>{firingText(firing, minute)}</span> : null}
                <span className={styles.markerArrow}>▲</span>
                {!rightHalf && !compact ? (
                  <span className={styles.markerText}>{firingText(firing, minute)}</span>
                ) : null}
              </span>
            </div>
          );
        })}
      </div>
      {!compact && (
        <div className={styles.legend} aria-hidden>
          <span className={styles.legendTitle}>{legendTitle(track, minutes.length)}</span>
          {DECISIONS.map((decision) => (
            <span key={decision} className={styles.legendItem}>
              <span
                className={cx(
                  styles.swatch,
                  decision === 'rollback' && styles.rollback,
                  decision === 'promote' && styles.promote
                )}
                style={{ backgroundColor: decisionColor(theme, decision) }}
              />
              {DECISION_SYMBOL[decision]} {DECISION_TEXT[decision]} {track.counts[decision]}
            </span>
          ))}
        </div>
      )}
      {visible && activeMinute?.windowDecision && anchor && (
        <CellTooltip anchor={anchor} pinned={pinned}>
          <DecisionTooltip
            minute={activeMinute}
            decision={activeMinute.windowDecision}
            meta={meta}
            windowMinutes={track.windowMinutes}
            firing={firingAt.get(activeMinute.index)}
            pinned={pinned}
          />
        </CellTooltip>
      )}
    </div>
  );
}

/** What each minute's decision is: pooled since the deployment's start, of the window ending at it, or first one then the other. */
function trackMeaning(track: DecisionTrackView, window: string): string {
  if (track.pooled === 0) {
    return `Window decisions: each minute's is the decision of the ${window} ending at it.`;
  }
  return `Decisions: each minute's is the decision on the evidence since the deployment's start, pooled for its first day${
    track.pooled < track.counts.promote + track.counts.hold + track.counts.rollback
      ? `, then of the ${window} ending at it`
      : ''
  }.`;
}

/** The legend's title: which rule, and whether the decisions pooled since the deployment's start. */
function legendTitle(track: DecisionTrackView, minutes: number): string {
  const rule = track.rule === 'reference' ? 'reference rule' : 'evidence rule';
  const window = track.windowMinutes ? `${track.windowMinutes} min` : '';
  if (track.pooled === 0) {
    return `Window decision (${rule}${window ? `, ${window}` : ''})`;
  }
  const then = `, then ${track.windowMinutes ? `${track.windowMinutes}-min ` : ''}windows`;
  return `Decision (${rule}, pooled since the deployment${track.pooled < minutes ? then : ''})`;
}

function firingSummary(track: DecisionTrackView, minutes: MinuteView[]): string {
  if (track.firings.length === 0) {
    return `No rollback or promote in the ${minutes.length} minutes shown. `;
  }
  return `${track.firings.map((f) => firingText(f, minutes[f.index])).join('; ')}. `;
}

const getStyles = (theme: GrafanaTheme2) => {
  // Colour is not the only cue: promote and rollback have their patterns, hold none.
  const patterns = decisionPatterns();
  return {
    ...getLegendStyles(theme),
    wrapper: css({
      display: 'flex',
      flexDirection: 'column',
      gap: theme.spacing(0.25),
      flexShrink: 0,
    }),
    grid: css({
      display: 'grid',
      gridTemplateRows: `${theme.spacing(1.25)} auto`,
      rowGap: theme.spacing(0.25),
    }),
    // Same gaps as the minute strip, so each decision sits under its minute.
    alignedGrid: css({
      columnGap: theme.spacing(0.125),
    }),
    cells: css({
      display: 'grid',
      gridTemplateColumns: 'subgrid',
      gridRow: 1,
      columnGap: 'inherit',
      borderRadius: theme.shape.radius.default,
      '&:focus-visible': {
        outline: `2px solid ${theme.colors.primary.main}`,
        outlineOffset: theme.spacing(0.25),
      },
    }),
    cell: css({
      height: '100%',
      cursor: 'pointer',
      minWidth: 0,
    }),
    alignedCell: css({
      borderRadius: theme.shape.radius.default,
    }),
    rollback: css(patterns.rollback),
    promote: css(patterns.promote),
    active: css({
      outline: `2px solid ${theme.colors.text.primary}`,
      outlineOffset: '-1px',
      zIndex: 1,
    }),
    markerCell: css({
      gridRow: 2,
      position: 'relative',
      minWidth: 0,
    }),
    marker: css({
      position: 'absolute',
      left: '50%',
      top: 0,
      display: 'inline-flex',
      alignItems: 'center',
      gap: theme.spacing(0.5),
      transform: 'translateX(-0.5em)',
      whiteSpace: 'nowrap',
      fontSize: theme.typography.bodySmall.fontSize,
      fontWeight: theme.typography.fontWeightMedium,
      lineHeight: 1.2,
    }),
    markerLeft: css({
      left: 'auto',
      right: '50%',
      transform: 'translateX(0.5em)',
    }),
    markerArrow: css({
      width: '1em',
      textAlign: 'center',
    }),
    markerText: css({
      color: theme.colors.text.primary,
    }),
    legendTitle: css({
      color: theme.colors.text.primary,
    }),
    swatch: css({
      display: 'inline-block',
      width: theme.spacing(2.5),
      height: theme.spacing(1.25),
      borderRadius: theme.shape.radius.default,
    }),
  };
};
