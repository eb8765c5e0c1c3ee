import React from 'react';
import { render, screen } from '@testing-library/react';
import { buildViewModel, ReadyViewModel } from '../data/viewModel';
import { minutesFrame, SAMPLE_META } from '../testing/sampleFrames';
import { panelTestIds } from '../testIds';
import { DEFAULT_OPTIONS } from '../types';
import { PairedCharts } from './PairedCharts';

const START = Date.UTC(2026, 10, 21, 14, 0);
const options = {
  timeZone: 'utc',
  tableQuantiles: DEFAULT_OPTIONS.tableQuantiles,
  prometheusDatasourceUid: DEFAULT_OPTIONS.prometheusDatasourceUid,
};

function viewModel(...args: Parameters<typeof minutesFrame>): ReadyViewModel {
  const vm = buildViewModel([minutesFrame(...args)], options);
  if (vm.status !== 'ok') {
    throw new Error(`expected a ready view model, got ${vm.status}`);
  }
  return vm;
}

function renderCharts(vm: ReadyViewModel) {
  return render(
    <PairedCharts
      minutes={vm.minutes}
      meta={vm.meta}
      firings={[]}
      width={1400}
      height={240}
      formatLatency={vm.formatLatency}
    />
  );
}

/** Every number the charts' SVG elements were given, attribute by attribute. */
function svgNumbers(chart: HTMLElement): string[] {
  return Array.from(chart.querySelectorAll('*')).flatMap((el) =>
    Array.from(el.attributes)
      .filter((a) => /^(d|x|y|x1|x2|y1|y2|width|height|points)$/.test(a.name))
      .map((a) => `${el.tagName} ${a.name}=${a.value}`)
  );
}

describe('PairedCharts', () => {
  it('draws minutes whose verdict quantile is 0 throughout on a positive range, without NaN', () => {
    const vm = viewModel(
      START,
      Array.from({ length: 10 }, () => ({ ratio: 1, verdict: 'neutral' as const, baselineP99: 0 }))
    );
    expect(vm.minutes.every((m) => m.quantiles.p99.baseline === 0 && m.quantiles.p99.canary === 0)).toBe(true);
    renderCharts(vm);
    const chart = screen.getByTestId(panelTestIds.chart);
    const numbers = svgNumbers(chart);
    expect(numbers.filter((n) => /NaN|Infinity/.test(n))).toEqual([]);
    // The lines lie on the bottom of the plot, and the axis has ticks above 0.
    const lines = Array.from(chart.querySelectorAll('path[fill="none"]'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((p) => /^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+)+$/.test(p.getAttribute('d') ?? ''))).toBe(true);
    expect(chart).toHaveTextContent('0 s');
    expect(Array.from(chart.querySelectorAll('text')).length).toBeGreaterThan(3);
  });

  it('keeps the ratio chart on a positive range when the ratios and thresholds leave none', () => {
    // Nonsense thresholds and ratios: the range of the ratio axis comes to 0 wide.
    const vm = viewModel(START, [{ ratio: -0.02, verdict: 'neutral' as const }], {
      ...SAMPLE_META,
      promoteThreshold: -2,
      rollbackThreshold: -1,
    });
    renderCharts(vm);
    const numbers = svgNumbers(screen.getByTestId(panelTestIds.ratioChart));
    expect(numbers.length).toBeGreaterThan(0);
    expect(numbers.filter((n) => /NaN|Infinity/.test(n))).toEqual([]);
  });
});
