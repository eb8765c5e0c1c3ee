import React, { useId } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { AnnotationMark } from '../data/annotations';
import { DecisionFiring, firingText, formatRatio, MinuteView, PairwiseMeta } from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { decisionColor, fleetColors, verdictColors } from './verdictStyle';

interface Props {
  minutes: MinuteView[];
  meta: PairwiseMeta;
  /** Where rollback or promote first fires: marked on both charts. */
  firings: DecisionFiring[];
  /** The panel's annotations (an alert rule's state changes): marked on both charts. */
  annotations?: AnnotationMark[];
  width: number;
  height: number;
  formatLatency: (seconds: number | null) => string;
}

type Point = [number, number];

/** SVG path through the points, broken where a value is missing. */
export function linePath(points: Array<Point | null>): string {
  let d = '';
  let open = false;
  for (const p of points) {
    if (!p) {
      open = false;
      continue;
    }
    d += `${open ? 'L' : 'M'}${p[0].toFixed(1)},${p[1].toFixed(1)}`;
    open = true;
  }
  return d;
}

/** Closed area paths between lower and upper, one per run of minutes where both are finite. */
export function bandPaths(lower: Array<Point | null>, upper: Array<Point | null>): string[] {
  const paths: string[] = [];
  let run: number[] = [];
  const flush = () => {
    if (run.length > 0) {
      const top = run.map((i) => upper[i] as Point);
      const bottom = run.map((i) => lower[i] as Point).reverse();
      paths.push(`${linePath(top)}${linePath(bottom).replace(/^M/, 'L')}Z`);
    }
    run = [];
  };
  for (let i = 0; i < lower.length; i++) {
    if (lower[i] && upper[i]) {
      run.push(i);
    } else {
      flush();
    }
  }
  flush();
  return paths;
}

function niceTicks(min: number, max: number, count: number): number[] {
  if (!(max > min)) {
    return [min];
  }
  const rawStep = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(rawStep));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rawStep) ?? rawStep;
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) {
    ticks.push(Number(v.toPrecision(12)));
  }
  return ticks;
}

const finite = (v: number | null): v is number => v !== null && Number.isFinite(v);

export function PairedCharts({ minutes, meta, firings, annotations = [], width, height, formatLatency }: Props) {
  const styles = useStyles2(getStyles);
  const sideBySide = width >= 900;
  const chartWidth = sideBySide ? (width - 16) / 2 : width;
  const chartHeight = sideBySide ? height : (height - 8) / 2;
  return (
    <div className={styles.charts} style={{ flexDirection: sideBySide ? 'row' : 'column', height }}>
      <LatencyChart
        minutes={minutes}
        meta={meta}
        firings={firings}
        annotations={annotations}
        width={chartWidth}
        height={chartHeight}
        formatLatency={formatLatency}
      />
      <RatioChart
        minutes={minutes}
        meta={meta}
        firings={firings}
        annotations={annotations}
        width={chartWidth}
        height={chartHeight}
      />
    </div>
  );
}

interface ChartProps {
  minutes: MinuteView[];
  meta: PairwiseMeta;
  firings: DecisionFiring[];
  annotations: AnnotationMark[];
  width: number;
  height: number;
}

function useFrame(minutes: MinuteView[], width: number, height: number, gridSize: number, rightMargin = gridSize * 2) {
  const margin = { left: gridSize * 8, right: rightMargin, top: gridSize * 3, bottom: gridSize * 2.5 };
  const innerWidth = Math.max(1, width - margin.left - margin.right);
  const innerHeight = Math.max(1, height - margin.top - margin.bottom);
  const t0 = minutes[0]?.time ?? 0;
  const t1 = minutes[minutes.length - 1]?.time ?? t0 + 60_000;
  const x = (t: number) => margin.left + (t1 > t0 ? ((t - t0) / (t1 - t0)) * innerWidth : innerWidth / 2);
  const xTicks =
    minutes.length > 1 ? [0, 0.25, 0.5, 0.75, 1].map((f) => minutes[Math.round(f * (minutes.length - 1))]) : minutes;
  return { margin, innerWidth, innerHeight, x, xTicks };
}

function LatencyChart({
  minutes,
  meta,
  firings,
  annotations,
  width,
  height,
  formatLatency,
}: ChartProps & { formatLatency: Props['formatLatency'] }) {
  const theme = useTheme2();
  const clipId = `${useId().replace(/:/g, '')}-latency`;
  const colors = fleetColors(theme);
  const { margin, innerHeight, innerWidth, x, xTicks } = useFrame(minutes, width, height, theme.spacing.gridSize);
  const vq = meta.verdictQuantile;
  const values = minutes
    .flatMap((m) => [m.quantiles[vq]?.baseline ?? null, m.quantiles[vq]?.canary ?? null])
    .filter(finite);
  // A positive range even when every value is 0 (or none is known): y() divides by it.
  const top = values.length ? Math.max(...values) : 0;
  const yMax = top > 0 ? top * 1.25 : 1;
  const y = (v: number) => margin.top + innerHeight - (Math.min(v, yMax) / yMax) * innerHeight;
  const series = (pick: (m: MinuteView) => number | null) =>
    minutes.map((m) => {
      const v = pick(m);
      return finite(v) ? ([x(m.time), y(v)] as Point) : null;
    });
  const ticks = niceTicks(0, yMax, 4);

  return (
    <ChartSvg
      testId={panelTestIds.chart}
      label={`${vq} of baseline and canary per minute, with ${meta.confidence !== null ? `${Math.round(meta.confidence * 100)}% ` : ''}confidence bands${annotationSummary(annotations, minutes)}`}
      title={`${vq} per minute`}
      width={width}
      height={height}
      margin={margin}
      innerWidth={innerWidth}
      innerHeight={innerHeight}
      clipId={clipId}
    >
      <Legend
        x={margin.left + innerWidth}
        y={theme.spacing.gridSize * 1.75}
        items={[
          { label: 'baseline', color: colors.baseline, dashed: false },
          { label: 'canary', color: colors.canary, dashed: true },
        ]}
      />
      <YGrid ticks={ticks} y={y} left={margin.left} width={innerWidth} format={formatLatency} />
      <XAxis ticks={xTicks} x={x} y={margin.top + innerHeight} />
      <FiringMarks firings={firings} minutes={minutes} x={x} top={margin.top} bottom={margin.top + innerHeight} />
      <AnnotationMarks
        annotations={annotations}
        minutes={minutes}
        x={x}
        top={margin.top}
        bottom={margin.top + innerHeight}
      />
      <g clipPath={`url(#${clipId})`}>
        <BoundsBand
          lower={series((m) => m.baselineBounds.lower)}
          upper={series((m) => m.baselineBounds.upper)}
          color={colors.baseline}
        />
        <BoundsBand
          lower={series((m) => m.canaryBounds.lower)}
          upper={series((m) => m.canaryBounds.upper)}
          color={colors.canary}
        />
        <path
          d={linePath(series((m) => m.quantiles[vq]?.baseline ?? null))}
          fill="none"
          stroke={colors.baseline}
          strokeWidth={1.5}
        />
        <path
          d={linePath(series((m) => m.quantiles[vq]?.canary ?? null))}
          fill="none"
          stroke={colors.canary}
          strokeWidth={1.5}
          strokeDasharray="5 3"
        />
      </g>
    </ChartSvg>
  );
}

interface ChartSvgProps {
  testId: string;
  label: string;
  title: string;
  width: number;
  height: number;
  margin: { left: number; top: number };
  innerWidth: number;
  innerHeight: number;
  /** Id of the clip path of the plot area, for what must not spill over the axes. */
  clipId: string;
  children: React.ReactNode;
}

/** A chart's figure: the SVG with its accessible name, the plot area's clip path and the title. */
function ChartSvg({
  testId,
  label,
  title,
  width,
  height,
  margin,
  innerWidth,
  innerHeight,
  clipId,
  children,
}: ChartSvgProps) {
  const theme = useTheme2();
  const styles = useStyles2(getStyles);
  return (
    <figure className={styles.figure} data-testid={testId}>
      <svg width={width} height={height} role="img" aria-label={label}>
        <defs>
          <clipPath id={clipId}>
            <rect x={margin.left} y={margin.top} width={innerWidth} height={innerHeight} />
          </clipPath>
        </defs>
        <text x={margin.left} y={theme.spacing.gridSize * 1.75} className={styles.title}>
          {title}
        </text>
        {children}
      </svg>
    </figure>
  );
}

/** Horizontal grid lines at the y ticks, labelled left of the plot. */
function YGrid(props: {
  ticks: number[];
  y: (v: number) => number;
  left: number;
  width: number;
  format: (v: number) => string;
}) {
  const { ticks, y, left, width, format } = props;
  const styles = useStyles2(getStyles);
  return (
    <>
      {ticks.map((t) => (
        <g key={t}>
          <line x1={left} x2={left + width} y1={y(t)} y2={y(t)} className={styles.grid} />
          <text x={left - 4} y={y(t)} className={styles.axisLabel} textAnchor="end" dominantBaseline="middle">
            {format(t)}
          </text>
        </g>
      ))}
    </>
  );
}

/** A fleet's confidence band: one filled area per run of minutes where both bounds are known. */
function BoundsBand({
  lower,
  upper,
  color,
}: {
  lower: Array<Point | null>;
  upper: Array<Point | null>;
  color: string;
}) {
  return (
    <>
      {bandPaths(lower, upper).map((d, i) => (
        <path key={i} d={d} fill={color} fillOpacity={0.18} stroke="none" />
      ))}
    </>
  );
}

/** A threshold of the ratio chart: the band from its line to the chart's edge, and the dashed line. */
function ThresholdBand(props: { left: number; width: number; at: number; edge: number; color: string }) {
  const { left, width, at, edge, color } = props;
  return (
    <>
      <rect
        x={left}
        width={width}
        y={Math.min(at, edge)}
        height={Math.abs(edge - at)}
        fill={color}
        fillOpacity={0.12}
      />
      <line x1={left} x2={left + width} y1={at} y2={at} stroke={color} strokeDasharray="4 3" />
    </>
  );
}

function RatioChart({ minutes, meta, firings, annotations, width, height }: ChartProps) {
  const theme = useTheme2();
  const styles = useStyles2(getStyles);
  const clipId = `${useId().replace(/:/g, '')}-ratio`;
  const vColors = verdictColors(theme);
  // Room on the right for the threshold labels.
  const { margin, innerHeight, innerWidth, x, xTicks } = useFrame(
    minutes,
    width,
    height,
    theme.spacing.gridSize,
    theme.spacing.gridSize * 11
  );
  const promote = meta.promoteThreshold;
  const rollback = meta.rollbackThreshold;
  const ratios = minutes.map((m) => m.ratio).filter(finite);
  // Keep both thresholds in view and cap the top so one wild minute does not flatten the rest.
  const low = Math.max(0, Math.min(...ratios, (promote ?? 1) * 0.9) - 0.02);
  const high = Math.min(Math.max(...ratios, (rollback ?? 1) * 1.1) + 0.02, Math.max(3, (rollback ?? 1) * 1.5));
  // y() divides by yMax - yMin: thresholds and ratios that leave no range (nonsense ones, such as a
  // rollback threshold below zero) still get one.
  const yMin = Number.isFinite(low) ? low : 0;
  const yMax = Number.isFinite(high) && high > yMin ? high : yMin + 1;
  const y = (v: number) =>
    margin.top + innerHeight - ((Math.min(Math.max(v, yMin), yMax) - yMin) / (yMax - yMin)) * innerHeight;
  const points = minutes.map((m) => (finite(m.ratio) ? ([x(m.time), y(m.ratio)] as Point) : null));
  const ticks = niceTicks(yMin, yMax, 4);
  const lineColor = theme.colors.text.primary;
  // The promote band lies below its threshold, the rollback band above its own.
  const thresholds = [
    { value: promote, edge: margin.top + innerHeight, color: vColors.good, label: 'good ≤' },
    { value: rollback, edge: margin.top, color: vColors.bad, label: 'bad ≥' },
  ].filter((t): t is { value: number; edge: number; color: string; label: string } => t.value !== null);

  return (
    <ChartSvg
      testId={panelTestIds.ratioChart}
      label={`Canary / baseline ${meta.verdictQuantile} ratio per minute with promote and rollback bands${annotationSummary(annotations, minutes)}`}
      title={`canary / baseline ${meta.verdictQuantile}`}
      width={width}
      height={height}
      margin={margin}
      innerWidth={innerWidth}
      innerHeight={innerHeight}
      clipId={clipId}
    >
      <YGrid ticks={ticks} y={y} left={margin.left} width={innerWidth} format={(t) => `${t.toFixed(2)}×`} />
      <g clipPath={`url(#${clipId})`}>
        {thresholds.map((t) => (
          <ThresholdBand
            key={t.label}
            left={margin.left}
            width={innerWidth}
            at={y(t.value)}
            edge={t.edge}
            color={t.color}
          />
        ))}
        <path d={linePath(points)} fill="none" stroke={lineColor} strokeWidth={1.25} />
        {minutes.map((m) =>
          m.verdict === 'bad' && finite(m.ratio) ? (
            <text
              key={m.time}
              x={x(m.time)}
              y={y(m.ratio)}
              className={styles.badMark}
              fill={vColors.bad}
              textAnchor="middle"
              dominantBaseline="central"
            >
              ✕
            </text>
          ) : null
        )}
      </g>
      {thresholds.map((t) => (
        <text
          key={t.label}
          x={margin.left + innerWidth + 4}
          y={y(t.value)}
          className={styles.axisLabel}
          dominantBaseline="middle"
        >
          {t.label} {formatRatio(t.value)}
        </text>
      ))}
      <XAxis ticks={xTicks} x={x} y={margin.top + innerHeight} />
      <FiringMarks firings={firings} minutes={minutes} x={x} top={margin.top} bottom={margin.top + innerHeight} />
      <AnnotationMarks
        annotations={annotations}
        minutes={minutes}
        x={x}
        top={margin.top}
        bottom={margin.top + innerHeight}
      />
    </ChartSvg>
  );
}

/** A dashed line where rollback (or promote) first fires, labelled at the top of the plot. */
function FiringMarks({
  firings,
  minutes,
  x,
  top,
  bottom,
}: {
  firings: DecisionFiring[];
  minutes: MinuteView[];
  x: (t: number) => number;
  top: number;
  bottom: number;
}) {
  const theme = useTheme2();
  const styles = useStyles2(getStyles);
  return (
    <g>
      {firings
        .filter((f) => f.fired)
        .map((f, i) => {
          const minute = minutes[f.index];
          const color = decisionColor(theme, f.decision);
          const px = x(minute.time);
          const rightHalf = f.index > minutes.length / 2;
          return (
            <g key={f.decision} data-testid={panelTestIds.chartFiring} data-decision={f.decision}>
              <line x1={px} x2={px} y1={top} y2={bottom} stroke={color} strokeWidth={1.5} strokeDasharray="2 3" />
              <text
                x={px + (rightHalf ? -4 : 4)}
                // A second firing's label goes on a line of its own.
                y={top + 10 + i * 14}
                className={styles.firingLabel}
                fill={color}
                textAnchor={rightHalf ? 'end' : 'start'}
              >
                {firingText(f, minute)}
              </text>
            </g>
          );
        })}
    </g>
  );
}

/** The annotations within the charted minutes (each minute's time is its end), each with its words and times. */
function chartedAnnotations(annotations: AnnotationMark[], minutes: MinuteView[]) {
  const first = minutes[0]?.time ?? 0;
  const last = minutes[minutes.length - 1]?.time ?? first;
  // The minute an instant falls in: the first whose end is at or after it.
  const at = (t: number) => (minutes.find((m) => m.time >= t) ?? minutes[minutes.length - 1])?.timeLabel ?? '';
  return annotations
    .filter((a) => a.time <= last && (a.timeEnd ?? a.time) > first - 60_000)
    .map((a) => ({
      ...a,
      start: Math.max(a.time, first),
      end: Math.min(a.timeEnd ?? a.time, last),
      label: a.timeEnd === undefined ? `${a.text}, ${at(a.time)}` : `${a.text}, ${at(a.time)} to ${at(a.timeEnd)}`,
    }));
}

/** The charts' annotations in words, for the chart's accessible name. */
function annotationSummary(annotations: AnnotationMark[], minutes: MinuteView[]): string {
  const labels = chartedAnnotations(annotations, minutes).map((a) => a.label);
  return labels.length ? `; annotations: ${labels.join('; ')}` : '';
}

/** A thin line at each annotation (a faint band over a region), named by a title that is its tooltip. */
function AnnotationMarks(props: {
  annotations: AnnotationMark[];
  minutes: MinuteView[];
  x: (t: number) => number;
  top: number;
  bottom: number;
}) {
  const { annotations, minutes, x, top, bottom } = props;
  const theme = useTheme2();
  return (
    <g>
      {chartedAnnotations(annotations, minutes).map((a, i) => {
        const color = a.color ? theme.visualization.getColorByName(a.color) : theme.colors.info.main;
        const [x0, x1] = [x(a.start), x(Math.max(a.start, a.end))];
        return (
          <g key={`${a.time}-${i}`} data-testid={panelTestIds.chartAnnotation}>
            <title>{a.label}</title>
            {x1 > x0 ? (
              <rect x={x0} y={top} width={x1 - x0} height={bottom - top} fill={color} fillOpacity={0.1} />
            ) : null}
            {[...new Set([x0, x1])].map((px) => (
              <line key={px} x1={px} x2={px} y1={top} y2={bottom} stroke={color} strokeWidth={1} />
            ))}
            {/* A wider, invisible line: a target for the pointer, so the title shows. */}
            <line x1={x0} x2={x0} y1={top} y2={bottom} stroke="transparent" strokeWidth={8} />
          </g>
        );
      })}
    </g>
  );
}

function XAxis({ ticks, x, y }: { ticks: MinuteView[]; x: (t: number) => number; y: number }) {
  const styles = useStyles2(getStyles);
  return (
    <g>
      {ticks.map((m, i) => (
        <text
          key={`${m.time}-${i}`}
          x={x(m.time)}
          y={y + 14}
          className={styles.axisLabel}
          textAnchor={i === 0 ? 'start' : i === ticks.length - 1 ? 'end' : 'middle'}
        >
          {m.timeLabel}
        </text>
      ))}
    </g>
  );
}

function Legend({
  x,
  y,
  items,
}: {
  x: number;
  y: number;
  items: Array<{ label: string; color: string; dashed: boolean }>;
}) {
  const styles = useStyles2(getStyles);
  const itemWidth = 84;
  return (
    <g>
      {items.map((item, i) => {
        const left = x - (items.length - i) * itemWidth;
        return (
          <g key={item.label}>
            <line
              x1={left}
              x2={left + 20}
              y1={y - 4}
              y2={y - 4}
              stroke={item.color}
              strokeWidth={2}
              strokeDasharray={item.dashed ? '5 3' : undefined}
            />
            <text x={left + 24} y={y} className={styles.axisLabel}>
              {item.label}
            </text>
          </g>
        );
      })}
    </g>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  charts: css({
    display: 'flex',
    gap: theme.spacing(1),
    flexShrink: 0,
  }),
  figure: css({
    margin: 0,
  }),
  title: css({
    fill: theme.colors.text.primary,
    fontSize: theme.typography.bodySmall.fontSize,
    fontWeight: theme.typography.fontWeightMedium,
  }),
  axisLabel: css({
    fill: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
    fontVariantNumeric: 'tabular-nums',
  }),
  grid: css({
    stroke: theme.colors.border.weak,
  }),
  firingLabel: css({
    fontSize: theme.typography.bodySmall.fontSize,
    fontWeight: theme.typography.fontWeightMedium,
    // A halo in the panel's background keeps the label legible over the lines and marks it crosses.
    stroke: theme.colors.background.primary,
    strokeWidth: 3,
    strokeLinejoin: 'round',
    paintOrder: 'stroke',
  }),
  badMark: css({
    fontSize: theme.typography.bodySmall.fontSize,
    fontWeight: theme.typography.fontWeightBold,
  }),
});
