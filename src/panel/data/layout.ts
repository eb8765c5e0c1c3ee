import { PairwisePanelOptions } from '../types';

export interface PanelLayout {
  compact: boolean;
  showBanner: boolean;
  showStrip: boolean;
  showTrack: boolean;
  showLegend: boolean;
  stripMaxHeight: number;
  showCharts: boolean;
  chartHeight: number;
  showTable: boolean;
  tableHeight: number;
}

/**
 * What fits: a 4x3 grid panel (~300x200 px) gets the banner and the strip only; charts and table
 * appear as room allows. Heights are estimates in px; the table scrolls within what is left.
 */
export function panelLayout(
  width: number,
  height: number,
  options: Pick<PairwisePanelOptions, 'compact' | 'showBanner' | 'showStrip' | 'showTrack' | 'showChart' | 'showTable'>,
  gridSize: number,
  /** Label lines of the decision track's markers, or null when the minutes carry no window decisions. */
  trackMarkerLines: number | null = 1
): PanelLayout {
  const small = options.compact || width < 500 || height < 320;
  const gap = gridSize;
  const bannerHeight = options.showBanner ? (small ? gridSize * 8 : gridSize * 13) : 0;
  const legendHeight = small ? 0 : gridSize * 3;
  const showTrack = options.showTrack && trackMarkerLines !== null;
  // Cells, a line per firing marker and, in a large panel, the legend.
  const markerHeight = gridSize * 2 * (trackMarkerLines ?? 0);
  const trackHeight = showTrack ? gridSize * 1.75 + markerHeight + (small ? 0 : gridSize * 3) + gap : 0;
  const stripMaxHeight = Math.max(
    gridSize * 3,
    small ? height - bannerHeight - gap - trackHeight : Math.min(gridSize * 18, height * 0.3)
  );
  const stripHeight = options.showStrip ? Math.min(stripMaxHeight, gridSize * 6) + legendHeight + gap : 0;
  let remaining = height - bannerHeight - gap - stripHeight - trackHeight;

  const sideBySide = width >= 900;
  let chartHeight = 0;
  const showCharts = options.showChart && !small && remaining >= (sideBySide ? 160 : 300);
  if (showCharts) {
    chartHeight = sideBySide
      ? Math.max(140, Math.min(240, remaining * 0.45))
      : Math.max(280, Math.min(380, remaining * 0.55));
    remaining -= chartHeight + gap;
  }
  const showTable = options.showTable && !small && remaining >= gridSize * 14;

  return {
    compact: small,
    showBanner: options.showBanner,
    showStrip: options.showStrip,
    showTrack,
    showLegend: !small,
    stripMaxHeight,
    showCharts,
    chartHeight,
    showTable,
    tableHeight: Math.max(0, remaining),
  };
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
