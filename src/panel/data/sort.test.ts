import { minutesFrame } from '../testing/sampleFrames';
import { sortMinutes, sortStateFromOrder } from './sort';
import { buildViewModel, ReadyViewModel } from './viewModel';

const START = Date.UTC(2026, 10, 21, 14, 0);
const vm = buildViewModel(
  [
    minutesFrame(START, [
      { ratio: 1.0, verdict: 'neutral' },
      { ratio: 1.2, verdict: 'bad' },
      { ratio: null, verdict: 'no-data' },
      { ratio: 0.9, verdict: 'good' },
      { ratio: 1.5, verdict: 'bad' },
      { ratio: 1.05, verdict: 'insufficient' },
    ]),
  ],
  { timeZone: 'utc', tableQuantiles: 'tail', prometheusDatasourceUid: 'x' }
) as ReadyViewModel;
const order = (minutes: ReadyViewModel['minutes']) => minutes.map((m) => m.index);

describe('sortMinutes', () => {
  it('sorts by time both ways', () => {
    expect(order(sortMinutes(vm.minutes, sortStateFromOrder('time-asc')))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(order(sortMinutes(vm.minutes, sortStateFromOrder('time-desc')))).toEqual([5, 4, 3, 2, 1, 0]);
  });

  it('puts the worst first: bad by ratio, then insufficient, neutral, good, no data', () => {
    expect(order(sortMinutes(vm.minutes, sortStateFromOrder('worst-first')))).toEqual([4, 1, 5, 0, 3, 2]);
  });

  it('keeps missing values last in either direction', () => {
    expect(order(sortMinutes(vm.minutes, { key: 'ratio', direction: 'asc' })).at(-1)).toBe(2);
    expect(order(sortMinutes(vm.minutes, { key: 'ratio', direction: 'desc' })).at(-1)).toBe(2);
    expect(order(sortMinutes(vm.minutes, { key: 'canary:p99', direction: 'desc' }))[0]).toBe(4);
  });

  it('does not mutate its input', () => {
    const before = order(vm.minutes);
    sortMinutes(vm.minutes, { key: 'ratio', direction: 'desc' });
    expect(order(vm.minutes)).toEqual(before);
  });
});
