import React from 'react';
import { render, screen, within } from '@testing-library/react';
import { buildViewModel, ReadyViewModel } from '../data/viewModel';
import { goldenFrames } from '../testing/goldens';
import { DEFAULT_OPTIONS } from '../types';
import { MinuteTooltip } from './MinuteTooltip';

const options = {
  timeZone: 'utc',
  tableQuantiles: DEFAULT_OPTIONS.tableQuantiles,
  prometheusDatasourceUid: DEFAULT_OPTIONS.prometheusDatasourceUid,
};

function goldenHour(): ReadyViewModel {
  const vm = buildViewModel(goldenFrames('hour'), options);
  if (vm.status !== 'ok') {
    throw new Error(`expected a ready view model, got ${vm.status}`);
  }
  return vm;
}

/** The text of the row's cell under the column headed `fleet`. */
function cellUnder(rowHeader: string, fleet: 'baseline' | 'canary'): string {
  const table = screen.getByRole('table');
  const headers = within(table)
    .getAllByRole('columnheader')
    .map((h) => h.textContent);
  const column = headers.indexOf(fleet);
  expect(column).toBeGreaterThan(0);
  const row = within(table).getByRole('rowheader', { name: rowHeader }).closest('tr') as HTMLElement;
  // Column 0 is the row's header; the data cells follow it.
  const cells = within(row).getAllByRole('cell');
  return cells[column - 1].textContent ?? '';
}

describe('MinuteTooltip', () => {
  it("shows each fleet's values under its own heading", () => {
    // 13:46 of the golden hour: the canary's p99 is 1.3 times the baseline's (0.26 s vs 0.2 s), and it
    // takes a twentieth of the traffic.
    const vm = goldenHour();
    const minute = vm.minutes.find((m) => m.timeLabel === '13:46')!;
    render(<MinuteTooltip minute={minute} meta={vm.meta} formatLatency={vm.formatLatency} pinned={false} />);

    expect(cellUnder('p99', 'baseline')).toBe('200 ms');
    expect(cellUnder('p99', 'canary')).toBe('260 ms');
    expect(cellUnder('p50', 'baseline')).toBe('30.1 ms');
    expect(cellUnder('p50', 'canary')).toBe('39.2 ms');
    expect(cellUnder('p99 95% bounds', 'baseline')).toBe('190 ms – 210 ms');
    expect(cellUnder('p99 95% bounds', 'canary')).toBe('230 ms – 310 ms');
    expect(cellUnder('rate', 'baseline')).toBe('400.0 req/s');
    expect(cellUnder('rate', 'canary')).toBe('20.0 req/s');
    expect(cellUnder('observations', 'baseline')).toBe('24,000');
    expect(cellUnder('observations', 'canary')).toBe('1,200');
    expect(cellUnder('pods: median (min – max)', 'baseline')).toBe('200 ms (150 ms – 260 ms)');
    expect(cellUnder('pods: median (min – max)', 'canary')).toBe('200 ms (150 ms – 340 ms)');
    expect(cellUnder('worst pod', 'baseline')).toBe('checkout-baseline-7d9f-a');
    expect(cellUnder('worst pod', 'canary')).toBe('checkout-canary-7d9f-a');
  });
});
