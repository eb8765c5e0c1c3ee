import React, { ReactNode } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2, VizTooltipContainer } from '@grafana/ui';

/**
 * What the minute strip and the decision track share: the tooltip box anchored at the active cell,
 * the layout of their tooltips, and their legends.
 */

/** The tooltip of the active cell of a strip, at the anchor useCellNavigation keeps. */
export function CellTooltip({
  anchor,
  pinned,
  children,
}: {
  anchor: { x: number; y: number };
  pinned: boolean;
  children: ReactNode;
}) {
  const theme = useTheme2();
  const styles = useStyles2(getBoxStyles);
  return (
    <VizTooltipContainer
      position={anchor}
      offset={{ x: 0, y: theme.spacing.gridSize }}
      allowPointerEvents={pinned}
      className={styles.box}
    >
      {children}
    </VizTooltipContainer>
  );
}

const getBoxStyles = (theme: GrafanaTheme2) => ({
  box: css({
    padding: theme.spacing(1),
  }),
});

/** A count of observations: "12,345", or "—" when unknown. */
export function formatCount(n: number | null): string {
  return n === null ? '—' : Math.round(n).toLocaleString('en-US');
}

/** The layout both tooltips share: a column of title, notes, a table of numbers and the reason. */
export const getTooltipStyles = (theme: GrafanaTheme2) => ({
  tooltip: css({
    display: 'flex',
    flexDirection: 'column',
    gap: theme.spacing(0.75),
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  title: css({
    fontWeight: theme.typography.fontWeightMedium,
  }),
  secondary: css({
    color: theme.colors.text.secondary,
  }),
  reason: css({
    color: theme.colors.text.primary,
  }),
  table: css({
    borderCollapse: 'collapse',
    'th, td': {
      padding: theme.spacing(0.125, 1, 0.125, 0),
      textAlign: 'right',
      fontVariantNumeric: 'tabular-nums',
      whiteSpace: 'nowrap',
    },
    'th[scope=row]': {
      textAlign: 'left',
      color: theme.colors.text.secondary,
      fontWeight: theme.typography.fontWeightRegular,
    },
  }),
});

/** The legend under a strip: wrapped items of a swatch and a count. */
export const getLegendStyles = (theme: GrafanaTheme2) => ({
  legend: css({
    display: 'flex',
    flexWrap: 'wrap',
    columnGap: theme.spacing(1.5),
    rowGap: theme.spacing(0.25),
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  legendItem: css({
    display: 'inline-flex',
    alignItems: 'center',
    gap: theme.spacing(0.5),
  }),
});
