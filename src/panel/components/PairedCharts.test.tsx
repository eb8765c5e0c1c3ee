import React from 'react';
import { render, screen, within } from '@testing-library/react';
import { DataFrame } from '@grafana/data';
import { buildViewModel, ReadyViewModel } from '../data/viewModel';
import { goldenFrames } from '../testing/goldens';
import { minutesFrame, SAMPLE_META, SampleWindowDecision } from '../testing/sampleFrames';
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

function renderCharts(vm: ReadyViewModel, firings = vm.track?.firings ?? []) {
  return render(
    <PairedCharts
      minutes={vm.minutes}
      meta={vm.meta}
      firings={firings}
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

/** The minutes as the frame has them (the backend's, for the goldens). */
interface FrameMinute {
  time: number;
  baseline: number | null;
  canary: number | null;
  decision: string;
}

function frameMinutes(frames: DataFrame[], quantile: string): FrameMinute[] {
  const frame = frames.find((f) => f.name === 'minutes')!;
  const field = (name: string) => frame.fields.find((f) => f.name === name)!.values;
  return field('time').map((time: number, i: number) => ({
    time,
    baseline: field(`baseline_${quantile}`)[i],
    canary: field(`canary_${quantile}`)[i],
    decision: field('decision')[i],
  }));
}

function ready(frames: DataFrame[]): { vm: ReadyViewModel; minutes: FrameMinute[] } {
  const vm = buildViewModel(frames, options);
  if (vm.status !== 'ok') {
    throw new Error(`expected a ready view model, got ${vm.status}`);
  }
  return { vm, minutes: frameMinutes(frames, 'p99') };
}

/** 40 sample minutes from 14:00 whose window decision is hold, promote from 14:12, hold, and rollback from 14:30. */
function sampleDecisions(): DataFrame[] {
  const window = (decision: SampleWindowDecision['decision']): SampleWindowDecision => ({
    decision,
    reason: decision,
    statistic: 0,
    rollbackBoundary: 14.2,
    promoteStatistic: 0,
    promoteBoundary: -11.9,
    minutes: 30,
    canaryTail: 0,
    expectedCanaryTail: 0,
  });
  return [
    minutesFrame(
      START,
      Array.from({ length: 40 }, (_, i) => ({
        ratio: i >= 30 ? 1.3 : 0.9,
        verdict: i >= 30 ? ('bad' as const) : ('good' as const),
        window: window(i >= 30 ? 'rollback' : i >= 12 && i < 20 ? 'promote' : 'hold'),
      }))
    ),
  ];
}

/** The text element of the chart whose whole text is `text`. */
function textElement(chart: HTMLElement, text: string): Element {
  const found = Array.from(chart.querySelectorAll('text')).filter((t) => t.textContent === text);
  expect(found).toHaveLength(1);
  return found[0];
}

const num = (el: Element, attr: string) => Number(el.getAttribute(attr));

/**
 * Where the chart's time axis puts a minute: linear between the axis labels of the first and the
 * last minute.
 */
function timeAxis(chart: HTMLElement, minutes: ReadyViewModel['minutes']): (time: number) => number {
  const first = minutes[0];
  const last = minutes[minutes.length - 1];
  const x0 = num(textElement(chart, first.timeLabel), 'x');
  const x1 = num(textElement(chart, last.timeLabel), 'x');
  expect(x1).toBeGreaterThan(x0);
  return (time) => x0 + ((time - first.time) / (last.time - first.time)) * (x1 - x0);
}

/** Where the latency chart's y axis puts a value in seconds: linear between its grid labels of 0 and `at`. */
function latencyAxis(chart: HTMLElement, vm: ReadyViewModel, at: number): (seconds: number) => number {
  const y0 = num(textElement(chart, vm.formatLatency(0)), 'y');
  const yAt = num(textElement(chart, vm.formatLatency(at)), 'y');
  expect(yAt).toBeLessThan(y0);
  return (seconds) => y0 + ((yAt - y0) * seconds) / at;
}

/** The line the chart draws in the style of the legend's sample for `label` (stroke and dashes). */
function fleetLine(chart: HTMLElement, label: 'baseline' | 'canary'): Element {
  const sample = textElement(chart, label).previousElementSibling!;
  expect(sample.tagName).toBe('line');
  const lines = Array.from(chart.querySelectorAll('path[fill="none"]')).filter(
    (p) =>
      p.getAttribute('stroke') === sample.getAttribute('stroke') &&
      p.getAttribute('stroke-dasharray') === sample.getAttribute('stroke-dasharray')
  );
  expect(lines).toHaveLength(1);
  return lines[0];
}

/** The points of an SVG path of M and L commands, one array per subpath. */
function subpaths(d: string): Array<Array<[number, number]>> {
  return d
    .split('M')
    .filter(Boolean)
    .map((sub) => sub.split('L').map((p) => p.split(',').map(Number) as [number, number]));
}

/** Runs of consecutive minutes whose value is known: a line breaks where a value is missing. */
function runs(minutes: FrameMinute[], pick: (m: FrameMinute) => number | null): FrameMinute[][] {
  const out: FrameMinute[][] = [[]];
  for (const m of minutes) {
    const v = pick(m);
    if (v === null || !Number.isFinite(v)) {
      out.push([]);
    } else {
      out[out.length - 1].push(m);
    }
  }
  return out.filter((r) => r.length > 0);
}

/** Points more than 0.1 px (the path's precision) from where the axes put their minute and value. */
function misplaced(
  line: Element,
  minutes: FrameMinute[],
  pick: (m: FrameMinute) => number | null,
  x: (time: number) => number,
  y: (seconds: number) => number
): string[] {
  const expected = runs(minutes, pick);
  const drawn = subpaths(line.getAttribute('d') ?? '');
  expect(drawn.map((s) => s.length)).toEqual(expected.map((r) => r.length));
  return expected.flatMap((run, r) =>
    run.flatMap((m, i) => {
      const [px, py] = drawn[r][i];
      const ex = x(m.time);
      const ey = y(pick(m)!);
      return Math.abs(px - ex) > 0.1 || Math.abs(py - ey) > 0.1
        ? [`${new Date(m.time).toISOString()}: drawn at ${px},${py}, expected ${ex.toFixed(1)},${ey.toFixed(1)}`]
        : [];
    })
  );
}

describe('PairedCharts', () => {
  it("draws each fleet's verdict quantile at its own minutes and values (golden hour)", () => {
    const { vm, minutes } = ready(goldenFrames('hour'));
    expect(vm.meta.verdictQuantile).toBe('p99');
    renderCharts(vm);
    const chart = screen.getByTestId(panelTestIds.chart);
    expect(chart).toHaveTextContent('p99 per minute');
    // The hour's p99 values lie between 0.17 s and 0.26 s: the axis has a grid line at 0.2 s.
    const x = timeAxis(chart, vm.minutes);
    const y = latencyAxis(chart, vm, 0.2);
    const baseline = fleetLine(chart, 'baseline');
    const canary = fleetLine(chart, 'canary');
    expect(misplaced(baseline, minutes, (m) => m.baseline, x, y)).toEqual([]);
    expect(misplaced(canary, minutes, (m) => m.canary, x, y)).toEqual([]);

    // 13:46, the first minute of the regression: the canary's p99 (0.26 s) is above the baseline's (0.2 s).
    const at = minutes.findIndex((m) => new Date(m.time).toISOString() === '2026-11-21T13:46:00.000Z');
    expect(minutes[at].canary).toBeGreaterThan(minutes[at].baseline!);
    // Minute 13:03 (the third) has no data: both lines break there, and the second subpath starts at 13:04.
    const point = (line: Element) => subpaths(line.getAttribute('d')!)[1][at - 3];
    expect(point(canary)[0]).toBeCloseTo(point(baseline)[0], 5);
    expect(point(canary)[0]).toBeCloseTo(x(minutes[at].time), 0);
    expect(point(canary)[1]).toBeLessThan(point(baseline)[1] - 10);
    expect(point(baseline)[1]).toBeCloseTo(y(0.2), 0);
    expect(point(canary)[1]).toBeCloseTo(y(0.26), 0);
  });

  it.each<[string, () => DataFrame[], string[]]>([
    ['golden hour', () => goldenFrames('hour'), ['rollback fires 13:49']],
    ['sample', sampleDecisions, ['promote fires 14:12', 'rollback fires 14:30']],
  ])('marks where the window decisions fire at their first minute on both charts (%s)', (_name, frames, labels) => {
    const { vm, minutes } = ready(frames());
    renderCharts(vm);
    // The first minute whose window decision is rollback (promote), when the range does not start with it.
    const firstOf = (decision: string) => minutes.findIndex((m) => m.decision === decision);
    const fired = (['promote', 'rollback'] as const).filter((d) => firstOf(d) > 0);
    expect(fired.length).toBe(labels.length);
    for (const testId of [panelTestIds.chart, panelTestIds.ratioChart]) {
      const chart = screen.getByTestId(testId);
      const x = timeAxis(chart, vm.minutes);
      const marks = within(chart).getAllByTestId(panelTestIds.chartFiring);
      expect(marks.map((m) => m.getAttribute('data-decision'))).toEqual(fired);
      marks.forEach((mark, i) => {
        const minute = minutes[firstOf(fired[i])];
        const line = mark.querySelector('line')!;
        expect(num(line, 'x1')).toBeCloseTo(x(minute.time), 3);
        expect(num(line, 'x2')).toBeCloseTo(x(minute.time), 3);
        const label = mark.querySelector('text')!;
        expect(label).toHaveTextContent(labels[i]);
        expect(Math.abs(num(label, 'x') - x(minute.time))).toBeLessThanOrEqual(4);
      });
    }
  });

  it('draws minutes whose verdict quantile is 0 throughout on a positive range, without NaN', () => {
    const vm = viewModel(
      START,
      Array.from({ length: 10 }, () => ({ ratio: 1, verdict: 'neutral' as const, baselineP99: 0 }))
    );
    expect(vm.minutes.every((m) => m.quantiles.p99.baseline === 0 && m.quantiles.p99.canary === 0)).toBe(true);
    renderCharts(vm, []);
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
    renderCharts(vm, []);
    const numbers = svgNumbers(screen.getByTestId(panelTestIds.ratioChart));
    expect(numbers.length).toBeGreaterThan(0);
    expect(numbers.filter((n) => /NaN|Infinity/.test(n))).toEqual([]);
  });
});
