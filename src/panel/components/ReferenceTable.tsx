import React, { useMemo, useState } from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2, locationUtil } from '@grafana/data';
import { Icon, useStyles2, useTheme2 } from '@grafana/ui';
import { sortMinutes, SortKey, SortState, sortStateFromOrder } from '../data/sort';
import { formatRatio, MinuteView, shownTime, VERDICT_SYMBOL, VERDICT_TEXT } from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { SortOrder } from '../types';

interface Props {
  minutes: MinuteView[];
  /** The initial order; the parent re-mounts the table (key) when the option changes. */
  quantiles: string[];
  sortOrder: SortOrder;
  height: number;
  formatLatency: (seconds: number | null) => string;
  /** The zone of every minute, for the header; empty when they differ, and each row says its own. */
  zoneLabel: string;
}

interface Column {
  key: SortKey;
  label: string;
  render: (m: MinuteView) => React.ReactNode;
}

const OVERSCAN_ROWS = 10;

/** Which slice of rows to render for a scroll position: 1,440 minutes stay responsive. */
export function visibleRange(scrollTop: number, viewport: number, rowHeight: number, total: number) {
  const start = Math.max(0, Math.floor(scrollTop / rowHeight) - OVERSCAN_ROWS);
  const end = Math.min(total, Math.ceil((scrollTop + viewport) / rowHeight) + OVERSCAN_ROWS);
  return { start, end };
}

export function ReferenceTable({ minutes, quantiles, sortOrder, height, formatLatency, zoneLabel }: Props) {
  const theme = useTheme2();
  const styles = useStyles2(getStyles);
  const rowHeight = theme.spacing.gridSize * 3.5;
  const [sort, setSort] = useState<SortState>(() => sortStateFromOrder(sortOrder));
  const [scrollTop, setScrollTop] = useState(0);

  const rows = useMemo(() => sortMinutes(minutes, sort), [minutes, sort]);

  const rps = (v: number | null) => (v === null ? '—' : v.toFixed(1));
  const columns: Column[] = [
    {
      key: 'time',
      label: `minute${zoneLabel ? ` (${zoneLabel})` : ''}`,
      // Across a daylight-saving change the header names no zone: each minute names its own.
      render: (m) => (zoneLabel || !m.zoneLabel ? shownTime(m) : `${shownTime(m)} ${m.zoneLabel}`),
    },
    { key: 'baselineRps', label: 'rps baseline', render: (m) => rps(m.rps.baseline) },
    { key: 'canaryRps', label: 'rps canary', render: (m) => rps(m.rps.canary) },
    ...quantiles.flatMap((label): Column[] => [
      {
        key: `baseline:${label}`,
        label: `${label} baseline`,
        render: (m) => formatLatency(m.quantiles[label]?.baseline ?? null),
      },
      {
        key: `canary:${label}`,
        label: `${label} canary`,
        render: (m) => formatLatency(m.quantiles[label]?.canary ?? null),
      },
    ]),
    { key: 'ratio', label: 'ratio', render: (m) => formatRatio(m.ratio) },
    {
      key: 'verdict',
      label: 'verdict',
      render: (m) => (
        <span className={cx(styles.verdict, m.verdict === 'bad' && styles.badText)}>
          {VERDICT_SYMBOL[m.verdict]} {VERDICT_TEXT[m.verdict]}
          {m.warmup ? ' (warm-up)' : ''}
        </span>
      ),
    },
  ];

  const onSort = (key: SortKey) =>
    setSort((current) =>
      current.key === key
        ? { key, direction: current.direction === 'asc' ? 'desc' : 'asc' }
        : { key, direction: key === 'time' ? 'asc' : 'desc' }
    );
  const ariaSort = (key: SortKey): 'ascending' | 'descending' | 'none' =>
    sort.key === key ? (sort.direction === 'asc' ? 'ascending' : 'descending') : 'none';

  const viewport = Math.max(rowHeight, height - rowHeight);
  const { start, end } = visibleRange(scrollTop, viewport, rowHeight, rows.length);

  return (
    <div className={styles.container} style={{ height }} onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}>
      <table className={styles.table} data-testid={panelTestIds.table} aria-rowcount={rows.length + 1}>
        <caption className={styles.caption}>
          Per-minute reference, {rows.length} minutes{sort.key === 'worst' ? ', worst first' : ''}
        </caption>
        <thead>
          <tr>
            {columns.map((col) => (
              <th key={col.key} scope="col" aria-sort={ariaSort(col.key)} className={styles.th}>
                <button type="button" className={styles.sortButton} onClick={() => onSort(col.key)}>
                  {col.label}
                  {sort.key === col.key && (
                    <Icon name={sort.direction === 'asc' ? 'arrow-up' : 'arrow-down'} size="xs" aria-hidden />
                  )}
                </button>
              </th>
            ))}
            <th scope="col" className={styles.th}>
              <span className={styles.sortButton}>Explore</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {start > 0 && <tr aria-hidden style={{ height: start * rowHeight }} />}
          {rows.slice(start, end).map((m, i) => (
            <tr
              key={m.time}
              aria-rowindex={start + i + 2}
              data-testid={panelTestIds.tableRow}
              data-time={m.time}
              data-verdict={m.verdict}
              className={cx(styles.row, m.verdict === 'bad' && styles.badRow, m.warmup && styles.warmupRow)}
              style={{ height: rowHeight }}
            >
              {columns.map((col) => (
                <td key={col.key} className={styles.td}>
                  {col.render(m)}
                </td>
              ))}
              <td className={styles.td}>
                {m.exploreUrl ? (
                  <a
                    className={styles.link}
                    href={locationUtil.assureBaseUrl(m.exploreUrl)}
                    aria-label={`Open ${shownTime(m)} in Explore`}
                  >
                    PromQL
                  </a>
                ) : (
                  '—'
                )}
              </td>
            </tr>
          ))}
          {end < rows.length && <tr aria-hidden style={{ height: (rows.length - end) * rowHeight }} />}
        </tbody>
      </table>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  container: css({
    overflow: 'auto',
    flex: '1 1 auto',
    minHeight: 0,
    border: `1px solid ${theme.colors.border.weak}`,
    borderRadius: theme.shape.radius.default,
  }),
  table: css({
    width: '100%',
    borderCollapse: 'collapse',
    fontSize: theme.typography.bodySmall.fontSize,
    fontVariantNumeric: 'tabular-nums',
  }),
  caption: css({
    position: 'absolute',
    width: 1,
    height: 1,
    overflow: 'hidden',
    clip: 'rect(0 0 0 0)',
  }),
  th: css({
    position: 'sticky',
    top: 0,
    zIndex: 1,
    background: theme.colors.background.secondary,
    borderBottom: `1px solid ${theme.colors.border.medium}`,
    padding: 0,
    textAlign: 'right',
    whiteSpace: 'nowrap',
    '&:first-child': { textAlign: 'left' },
  }),
  sortButton: css({
    all: 'unset',
    cursor: 'pointer',
    display: 'inline-flex',
    alignItems: 'center',
    gap: theme.spacing(0.25),
    padding: theme.spacing(0.5, 1),
    color: theme.colors.text.secondary,
    fontWeight: theme.typography.fontWeightMedium,
    '&:focus-visible': {
      outline: `2px solid ${theme.colors.primary.main}`,
    },
  }),
  row: css({
    borderBottom: `1px solid ${theme.colors.border.weak}`,
  }),
  badRow: css({
    background: theme.colors.error.transparent,
    fontWeight: theme.typography.fontWeightMedium,
  }),
  warmupRow: css({
    color: theme.colors.text.secondary,
  }),
  td: css({
    padding: theme.spacing(0, 1),
    textAlign: 'right',
    whiteSpace: 'nowrap',
    '&:first-child': { textAlign: 'left' },
  }),
  link: css({
    color: theme.colors.text.link,
    '&:hover': { textDecoration: 'underline' },
  }),
  verdict: css({
    whiteSpace: 'nowrap',
  }),
  badText: css({
    color: theme.colors.error.text,
    fontWeight: theme.typography.fontWeightBold,
  }),
});
