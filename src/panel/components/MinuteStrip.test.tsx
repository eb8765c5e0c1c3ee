import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import { buildViewModel, ReadyViewModel, Verdict, VERDICTS } from '../data/viewModel';
import { stripLayout } from '../data/layout';
import { backgroundImagesOf } from '../testing/css';
import { minutesFrame, sampleWindow } from '../testing/sampleFrames';
import { panelTestIds } from '../testIds';
import { DEFAULT_OPTIONS } from '../types';
import { MinuteStrip } from './MinuteStrip';

const START = Date.UTC(2026, 10, 21, 14, 0);
const options = {
  timeZone: 'utc',
  tableQuantiles: DEFAULT_OPTIONS.tableQuantiles,
  prometheusDatasourceUid: DEFAULT_OPTIONS.prometheusDatasourceUid,
};

function viewModel(start = START, minutes = 60): ReadyViewModel {
  const vm = buildViewModel(sampleWindow(start, minutes), options);
  if (vm.status !== 'ok') {
    throw new Error(`expected a ready view model, got ${vm.status}`);
  }
  return vm;
}

function strip(vm: ReadyViewModel, size: { width: number; maxHeight: number } = { width: 1400, maxHeight: 144 }) {
  return (
    <MinuteStrip
      minutes={vm.minutes}
      meta={vm.meta}
      counts={vm.minuteCounts}
      width={size.width}
      maxHeight={size.maxHeight}
      formatLatency={vm.formatLatency}
      showLegend
    />
  );
}

/** Cells laid out 10 px apart, so a tooltip's place tells which cell it is anchored to. */
function layOutCells() {
  return jest.spyOn(HTMLElement.prototype, 'getBoundingClientRect').mockImplementation(function (this: HTMLElement) {
    const index = Number(this.dataset.index ?? 0);
    return {
      left: index * 10,
      right: index * 10 + 9,
      top: 0,
      bottom: 20,
      width: 9,
      height: 20,
      x: index * 10,
      y: 0,
    } as DOMRect;
  });
}

describe('MinuteStrip', () => {
  it('keeps the pinned minute when an auto-refresh shifts a rolling range, and lets go when it leaves', () => {
    const rects = layOutCells();
    try {
      const { rerender } = render(strip(viewModel()));
      const listbox = screen.getByRole('listbox');
      const activeCell = () => {
        const id = listbox.getAttribute('aria-activedescendant');
        return id ? document.getElementById(id) : null;
      };
      const tooltipBox = () => screen.getByTestId(panelTestIds.tooltip).closest('[aria-live]') as HTMLElement;
      fireEvent.click(screen.getAllByTestId(panelTestIds.stripCell)[10]);
      expect(screen.getByTestId(panelTestIds.tooltip)).toHaveTextContent('2026-11-21 14:10 UTC');
      expect(activeCell()).toHaveAccessibleName(/^14:10 UTC/);
      expect(tooltipBox().style.transform).toMatch(/^translate\(100px, /);

      // A minute later the range starts at 14:01: 14:10 is the tenth cell, and stays pinned.
      rerender(strip(viewModel(START + 60_000)));
      fireEvent.mouseLeave(listbox);
      expect(screen.getByTestId(panelTestIds.tooltip)).toHaveTextContent('2026-11-21 14:10 UTC');
      expect(activeCell()).toHaveAccessibleName(/^14:10 UTC/);
      expect(activeCell()).toHaveAttribute('data-index', '9');
      expect(activeCell()).toHaveAttribute('aria-selected', 'true');
      expect(tooltipBox().style.transform).toMatch(/^translate\(90px, /);

      // Once 14:10 has left the range nothing is active or pinned: hover shows, leaving hides.
      rerender(strip(viewModel(START + 30 * 60_000)));
      expect(screen.queryByTestId(panelTestIds.tooltip)).not.toBeInTheDocument();
      expect(listbox).not.toHaveAttribute('aria-activedescendant');
      expect(screen.queryAllByRole('option', { selected: true })).toHaveLength(0);
      fireEvent.mouseOver(screen.getAllByTestId(panelTestIds.stripCell)[3]);
      expect(screen.getByTestId(panelTestIds.tooltip)).toHaveTextContent('14:33 UTC');
      fireEvent.mouseLeave(listbox);
      expect(screen.queryByTestId(panelTestIds.tooltip)).not.toBeInTheDocument();
    } finally {
      rects.mockRestore();
    }
  });

  it('tells the verdicts apart by pattern, not colour alone, when a day of minutes hides the symbols', () => {
    // A day with every verdict, in a panel of ordinary size: the cells are too small for symbols.
    const rows = Array.from({ length: 1440 }, (_, i) => {
      const verdict = VERDICTS[i % VERDICTS.length];
      return { ratio: verdict === 'no-data' ? null : 1, verdict };
    });
    const vm = buildViewModel([minutesFrame(START, rows)], options) as ReadyViewModel;
    expect(stripLayout(1440, 1400, 144, 8).showSymbols).toBe(false);
    render(strip(vm));
    const cells = screen.getAllByTestId(panelTestIds.stripCell);
    expect(cells.every((c) => c.textContent === '')).toBe(true);
    const patternOf = (verdict: Verdict) =>
      backgroundImagesOf(cells.find((c) => c.getAttribute('data-verdict') === verdict)!).join(', ');

    // Bad is the verdict that matters most; partial, insufficient and no data each have their own.
    const patterned: Verdict[] = ['bad', 'partial', 'insufficient', 'no-data'];
    for (const verdict of patterned) {
      expect(patternOf(verdict)).not.toBe('');
    }
    expect(new Set(patterned.map(patternOf)).size).toBe(patterned.length);
    expect(patternOf('good')).toBe('');
    expect(patternOf('neutral')).toBe('');
    // Every cell of a verdict has its pattern.
    for (const cell of cells.filter((c) => c.getAttribute('data-verdict') === 'bad')) {
      expect(backgroundImagesOf(cell).join(', ')).toBe(patternOf('bad'));
    }
    // The legend shows the same patterns beside the symbols.
    const swatch = (symbol: string) => screen.getByText(symbol, { selector: 'span' });
    expect(backgroundImagesOf(swatch('✕')).join(', ')).toBe(patternOf('bad'));
    expect(backgroundImagesOf(swatch('◐')).join(', ')).toBe(patternOf('partial'));
  });

  it('draws no patterns over cells large enough for their symbols, but no data', () => {
    render(strip(viewModel()));
    const cells = screen.getAllByTestId(panelTestIds.stripCell);
    const bad = cells.find((c) => c.getAttribute('data-verdict') === 'bad')!;
    expect(bad).toHaveTextContent('✕');
    expect(backgroundImagesOf(bad)).toEqual([]);
    expect(backgroundImagesOf(cells.find((c) => c.getAttribute('data-verdict') === 'no-data')!)).not.toEqual([]);
  });
});
