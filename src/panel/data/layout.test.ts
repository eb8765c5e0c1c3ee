import { DEFAULT_OPTIONS } from '../types';
import { panelLayout } from './layout';

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
