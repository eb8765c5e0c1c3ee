import { DEFAULT_OPTIONS } from '../types';
import { panelLayout, stripLayout } from './layout';

describe('panelLayout', () => {
  it('shows banner and strip only in a 4x3 grid panel', () => {
    const layout = panelLayout(300, 200, DEFAULT_OPTIONS, 8);
    expect(layout).toMatchObject({
      compact: true,
      showBanner: true,
      showStrip: true,
      showCharts: false,
      showTable: false,
    });
  });

  it('shows everything at full width', () => {
    const layout = panelLayout(1400, 800, DEFAULT_OPTIONS, 8);
    expect(layout).toMatchObject({ compact: false, showCharts: true, showTable: true });
    expect(layout.tableHeight).toBeGreaterThan(200);
  });

  it('makes room for the decision track only when there is one to draw', () => {
    const withTrack = panelLayout(1400, 800, DEFAULT_OPTIONS, 8);
    const without = panelLayout(1400, 800, DEFAULT_OPTIONS, 8, null);
    const twoLines = panelLayout(1400, 800, DEFAULT_OPTIONS, 8, 2);
    expect(twoLines.tableHeight).toBeLessThan(withTrack.tableHeight);
    expect(withTrack.showTrack).toBe(true);
    expect(without.showTrack).toBe(false);
    expect(without.tableHeight).toBeGreaterThan(withTrack.tableHeight);
    expect(panelLayout(1400, 800, { ...DEFAULT_OPTIONS, showTrack: false }, 8).showTrack).toBe(false);
  });

  it('honours the compact option and switched-off parts', () => {
    expect(panelLayout(1400, 800, { ...DEFAULT_OPTIONS, compact: true }, 8)).toMatchObject({
      showCharts: false,
      showTable: false,
    });
    expect(panelLayout(1400, 800, { ...DEFAULT_OPTIONS, showChart: false }, 8)).toMatchObject({
      showCharts: false,
      showTable: true,
    });
  });
});

describe('stripLayout', () => {
  it('gives an hour one row of labelled cells at full width', () => {
    expect(stripLayout(60, 1384, 144, 8).showSymbols).toBe(true);
    expect(stripLayout(60, 1384, 144, 8).perRow).toBeGreaterThanOrEqual(60);
  });

  it('wraps an hour into labelled rows in a small panel', () => {
    const layout = stripLayout(60, 384, 200, 8);
    expect(layout.showSymbols).toBe(true);
    expect(Math.ceil(60 / layout.perRow) * (layout.cellHeight + 1)).toBeLessThanOrEqual(200);
  });

  it('fits a day into narrow rows without symbols', () => {
    const layout = stripLayout(1440, 1384, 144, 8);
    expect(layout.showSymbols).toBe(false);
    expect(Math.ceil(1440 / layout.perRow) * (layout.cellHeight + 1)).toBeLessThanOrEqual(144);
  });
});
