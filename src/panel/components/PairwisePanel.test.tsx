import React from 'react';
import { fireEvent, render, screen, within } from '@testing-library/react';
import {
  createTheme,
  DataFrame,
  FieldType,
  getDefaultTimeRange,
  LoadingState,
  PanelProps,
  toDataFrame,
} from '@grafana/data';
import { getDataSourceSrv } from '@grafana/runtime';
import { goldenFrames } from '../testing/goldens';
import { sampleWindow } from '../testing/sampleFrames';
import { panelTestIds } from '../testIds';
import { DEFAULT_OPTIONS, PairwisePanelOptions } from '../types';
import { PairwisePanel } from './PairwisePanel';

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getDataSourceSrv: jest.fn(),
}));

/** Grafana's Prometheus data sources, which a panel naming none opens Explore on (the default one). */
function givePrometheus(list: Array<{ uid: string; isDefault?: boolean }>) {
  const getList = jest.fn(() => list.map((ds) => ({ ...ds, type: 'prometheus', name: ds.uid })));
  jest.mocked(getDataSourceSrv).mockReturnValue({ getList } as unknown as ReturnType<typeof getDataSourceSrv>);
  return getList;
}

const START = Date.UTC(2026, 10, 21, 14, 0);

/** Opens the second minute's details from the keyboard, as a user of the strip does. */
function openMinute() {
  const strip = screen.getByRole('listbox', { name: /Minute verdicts/ });
  fireEvent.focus(strip);
  fireEvent.keyDown(strip, { key: 'ArrowRight' });
  fireEvent.keyDown(strip, { key: 'Enter' });
}

function createProps(
  overrides: Partial<PanelProps<PairwisePanelOptions>> = {},
  series: DataFrame[] = goldenFrames('hour')
) {
  const props: PanelProps<PairwisePanelOptions> = {
    id: 1,
    data: { series, state: LoadingState.Done, timeRange: getDefaultTimeRange() },
    timeRange: getDefaultTimeRange(),
    timeZone: 'utc',
    options: { ...DEFAULT_OPTIONS },
    fieldConfig: { defaults: {}, overrides: [] },
    transparent: false,
    width: 1400,
    height: 800,
    renderCounter: 0,
    title: 'Pairwise',
    eventBus: {
      publish: jest.fn(),
      getStream: jest.fn(),
      subscribe: jest.fn(),
      removeAllListeners: jest.fn(),
      newScopedBus: jest.fn(),
    },
    onOptionsChange: jest.fn(),
    onFieldConfigChange: jest.fn(),
    replaceVariables: (s: string) => s,
    onChangeTimeRange: jest.fn(),
    ...overrides,
  } as PanelProps<PairwisePanelOptions>;
  return props;
}

const minutesOf = (series: DataFrame[]) => series.find((f) => f.name === 'minutes')!;
const verdictsOf = (series: DataFrame[]) =>
  minutesOf(series).fields.find((f) => f.name === 'verdict')!.values as string[];

describe('PairwisePanel', () => {
  beforeEach(() => {
    givePrometheus([{ uid: 'prom-default', isDefault: true }]);
  });

  it('says why there are no minutes: no frames asks for the query, a failed query gives its error', () => {
    const { rerender } = render(<PairwisePanel {...createProps({}, [])} />);
    expect(screen.getByText(/check the query's metric and selectors/)).toBeInTheDocument();
    const failed = createProps({}, []);
    failed.data = {
      ...failed.data,
      state: LoadingState.Error,
      errors: [{ message: 'Prometheus at http://prometheus:9090 is unreachable', refId: 'minutes' }],
    };
    rerender(<PairwisePanel {...failed} />);
    expect(
      screen.getByText(/The Pairwise query failed: Prometheus at http:\/\/prometheus:9090 is unreachable/)
    ).toBeInTheDocument();
    expect(screen.queryByText(/check the query's metric and selectors/)).not.toBeInTheDocument();
  });

  it('says what to check when there is no data', () => {
    render(<PairwisePanel {...createProps({}, [])} />);
    expect(screen.getByText(/Pairwise needs a minutes frame from the Pairwise data source/)).toBeInTheDocument();
  });

  it('names the missing fields of a frame of the wrong shape', () => {
    const wrong = toDataFrame({ name: 'minutes', fields: [{ name: 'time', type: FieldType.time, values: [START] }] });
    render(<PairwisePanel {...createProps({}, [wrong])} />);
    expect(screen.getByTestId(panelTestIds.shapeError)).toHaveTextContent(
      /missing the fields verdict, ratio, baseline_p99, canary_p99/
    );
  });

  it("shows the decision in the backend's words, with rule, thresholds, worst minute and warnings", () => {
    const series = goldenFrames('hour');
    render(<PairwisePanel {...createProps({}, series)} />);
    const banner = screen.getByTestId(panelTestIds.banner);
    const decision = series.find((f) => f.name === 'decision')!;
    const reason = decision.fields.find((f) => f.name === 'reason')!.values[0];
    expect(within(banner).getByTestId(panelTestIds.bannerHeadline).textContent).toMatch(/^(PROMOTE|HOLD|ROLLBACK): /);
    expect(within(banner).getByTestId(panelTestIds.bannerHeadline)).toHaveTextContent(reason);
    expect(banner).toHaveTextContent('evidence rule, 60-minute window');
    expect(banner).toHaveTextContent('good ≤ 0.95×, bad ≥ 1.10×');
    expect(banner).toHaveTextContent(/Worst minute \d\d:\d\d UTC, ratio \d\.\d\d×/);
    expect(screen.getByTestId(panelTestIds.bannerFlags)).toHaveTextContent(/Traffic parity/);
    expect(screen.getByTestId(panelTestIds.bannerFlags)).toHaveTextContent(/Partial fleet/);
    // The rollback names the pods that hold the canary's tail.
    const byPod = decision.fields.find((f) => f.name === 'by_pod')!.values[0];
    expect(byPod).not.toBe('');
    expect(within(banner).getByTestId(panelTestIds.bannerByPod)).toHaveTextContent(`By pod: ${byPod}`);
  });

  it('shows a flag named __proto__ by its code instead of crashing', () => {
    const series = sampleWindow(START).map((frame) =>
      frame.name === 'decision'
        ? {
            ...frame,
            fields: frame.fields.map((f) => (f.name === 'flags' ? { ...f, values: ['traffic-parity,__proto__'] } : f)),
          }
        : frame
    );
    render(<PairwisePanel {...createProps({}, series)} />);
    const flags = within(screen.getByTestId(panelTestIds.bannerFlags)).getAllByRole('listitem');
    expect(flags).toHaveLength(2);
    expect(flags[0]).toHaveTextContent(/^Traffic parity: /);
    expect(flags[1]).toHaveTextContent(/^__proto__$/);
  });

  it('draws one strip cell per minute with a symbol and an accessible name', () => {
    const series = goldenFrames('hour');
    render(<PairwisePanel {...createProps({}, series)} />);
    const cells = screen.getAllByTestId(panelTestIds.stripCell);
    const verdicts = verdictsOf(series);
    expect(cells).toHaveLength(verdicts.length);
    const badCount = verdicts.filter((v) => v === 'bad').length;
    expect(cells.filter((c) => c.getAttribute('data-verdict') === 'bad')).toHaveLength(badCount);
    expect(cells[0]).toHaveAccessibleName(/^13:01 UTC, neutral, ratio 1\.00$/);
    expect(cells[0]).toHaveTextContent('–');
    expect(cells[3]).toHaveAccessibleName(/^13:04 UTC, good, ratio 0\.\d\d, warm-up$/);
    expect(cells[59]).toHaveAccessibleName(/^14:00 UTC, bad, ratio 1\.\d\d$/);
    expect(cells[59]).toHaveTextContent('✕');
  });

  it('moves through the strip with the keyboard and shows the minute details', () => {
    render(<PairwisePanel {...createProps()} />);
    const strip = screen.getByRole('listbox', { name: /Minute verdicts/ });
    expect(strip).toHaveAttribute('tabindex', '0');
    fireEvent.focus(strip);
    fireEvent.keyDown(strip, { key: 'ArrowRight' });
    fireEvent.keyDown(strip, { key: 'ArrowRight' });
    const active = document.getElementById(strip.getAttribute('aria-activedescendant')!)!;
    expect(active).toHaveAccessibleName(/^13:03 UTC/);
    const tooltip = screen.getByTestId(panelTestIds.tooltip);
    expect(tooltip).toHaveTextContent('p99.99');
    expect(tooltip).toHaveTextContent('observations');
    fireEvent.keyDown(strip, { key: 'Enter' });
    expect(screen.getByRole('link', { name: /Open this minute in Explore/ })).toHaveAttribute(
      'href',
      expect.stringContaining('/explore?')
    );
    fireEvent.keyDown(strip, { key: 'Escape' });
    expect(screen.queryByTestId(panelTestIds.tooltip)).not.toBeInTheDocument();
    fireEvent.keyDown(strip, { key: 'End' });
    expect(document.getElementById(strip.getAttribute('aria-activedescendant')!)).toHaveAccessibleName(/^14:00 UTC/);
  });

  it("opens Explore on the data source the dashboard's variable names", () => {
    const replaceVariables = (s: string) => s.replace('${prometheus}', 'prom-uid-from-the-variable');
    render(
      <PairwisePanel
        {...createProps({
          replaceVariables,
          options: { ...DEFAULT_OPTIONS, prometheusDatasourceUid: '${prometheus}' },
        })}
      />
    );
    openMinute();
    const href = screen.getByRole('link', { name: /Open this minute in Explore/ }).getAttribute('href')!;
    expect(decodeURIComponent(href)).toContain('prom-uid-from-the-variable');
    expect(decodeURIComponent(href)).not.toContain('${prometheus}');
  });

  it('opens Explore on the default Prometheus data source when the variable is not on this dashboard', () => {
    givePrometheus([{ uid: 'prom-main', isDefault: true }]);
    render(
      <PairwisePanel
        {...createProps({
          replaceVariables: (s: string) => s, // Grafana leaves a variable it does not know as written
          options: { ...DEFAULT_OPTIONS, prometheusDatasourceUid: '${prometheus}' },
        })}
      />
    );
    openMinute();
    const href = screen.getByRole('link', { name: /Open this minute in Explore/ }).getAttribute('href')!;
    expect(decodeURIComponent(href)).toContain('"uid":"prom-main"');
    expect(decodeURIComponent(href)).not.toContain('${prometheus}');
  });

  it('opens Explore on the default Prometheus data source when the panel names none, and else links nothing', () => {
    expect(DEFAULT_OPTIONS.prometheusDatasourceUid).toBe('');
    const getList = givePrometheus([{ uid: 'prom-other' }, { uid: 'prom-main', isDefault: true }]);
    const { unmount } = render(<PairwisePanel {...createProps()} />);
    openMinute();
    const href = screen.getByRole('link', { name: /Open this minute in Explore/ }).getAttribute('href')!;
    expect(getList).toHaveBeenCalledWith({ type: 'prometheus' });
    expect(decodeURIComponent(href)).toContain('"uid":"prom-main"');
    unmount();

    // No Prometheus data source (or several, none the default): no links rather than a broken one.
    for (const list of [[], [{ uid: 'a' }, { uid: 'b' }]]) {
      givePrometheus(list);
      const { unmount: again } = render(<PairwisePanel {...createProps()} />);
      openMinute();
      expect(screen.getByTestId(panelTestIds.tooltip)).toBeInTheDocument();
      expect(screen.queryByRole('link', { name: /in Explore/ })).not.toBeInTheDocument();
      again();
    }
  });

  it('names the zone of each minute across a daylight-saving change, in the strip and the table', () => {
    // Berlin moves from CET to CEST at 01:00 UTC on 2026-03-29, read here in July.
    const now = jest.spyOn(Date, 'now').mockReturnValue(Date.UTC(2026, 6, 15, 12, 0));
    try {
      const series = sampleWindow(Date.UTC(2026, 2, 29, 0, 30), 60);
      render(<PairwisePanel {...createProps({ timeZone: 'Europe/Berlin' }, series)} />);
      const cells = screen.getAllByTestId(panelTestIds.stripCell);
      expect(cells[0]).toHaveAccessibleName(/^01:30 CET, /);
      expect(cells[29]).toHaveAccessibleName(/^01:59 CET, /);
      expect(cells[30]).toHaveAccessibleName(/^03:00 CEST, /);
      // The table's header names no single zone; each row names its own.
      const table = screen.getByTestId(panelTestIds.table);
      expect(within(table).getByRole('columnheader', { name: /^minute/ })).not.toHaveTextContent(/\(/);
      expect(screen.getAllByTestId(panelTestIds.tableRow)[0]).toHaveTextContent(/^01:30 CET/);
      // Latest first: the last minute is in summer time.
      fireEvent.click(within(within(table).getByRole('columnheader', { name: /^minute/ })).getByRole('button'));
      expect(screen.getAllByTestId(panelTestIds.tableRow)[0]).toHaveTextContent(/^03:29 CEST/);
    } finally {
      now.mockRestore();
    }
  });

  it('sorts the reference table by header click and marks bad rows in words', () => {
    const series = goldenFrames('hour');
    render(<PairwisePanel {...createProps({}, series)} />);
    const table = screen.getByTestId(panelTestIds.table);
    const ratioHeader = within(table).getByRole('columnheader', { name: /ratio/ });
    expect(ratioHeader).toHaveAttribute('aria-sort', 'none');
    fireEvent.click(within(ratioHeader).getByRole('button'));
    expect(ratioHeader).toHaveAttribute('aria-sort', 'descending');
    const firstRow = screen.getAllByTestId(panelTestIds.tableRow)[0];
    expect(firstRow).toHaveTextContent('✕ bad');
    fireEvent.click(within(ratioHeader).getByRole('button'));
    expect(ratioHeader).toHaveAttribute('aria-sort', 'ascending');
  });

  it('starts worst first when asked and hides p50 and p99.99 unless all quantiles are on', () => {
    const { unmount } = render(
      <PairwisePanel {...createProps({ options: { ...DEFAULT_OPTIONS, sortOrder: 'worst-first' } })} />
    );
    expect(screen.getAllByTestId(panelTestIds.tableRow)[0]).toHaveAttribute('data-verdict', 'bad');
    expect(screen.queryByRole('columnheader', { name: /p50/ })).not.toBeInTheDocument();
    unmount();
    render(<PairwisePanel {...createProps({ options: { ...DEFAULT_OPTIONS, tableQuantiles: 'all' } })} />);
    expect(screen.getByRole('columnheader', { name: /p50 baseline/ })).toBeInTheDocument();
    expect(screen.getByRole('columnheader', { name: /p99.99 canary/ })).toBeInTheDocument();
  });

  it('renders only a slice of a day of minutes in the table', () => {
    render(<PairwisePanel {...createProps({}, sampleWindow(START, 1440))} />);
    expect(screen.getAllByTestId(panelTestIds.stripCell)).toHaveLength(1440);
    expect(screen.getAllByTestId(panelTestIds.tableRow).length).toBeLessThan(100);
  });

  it('keeps to banner and strip in a small panel', () => {
    render(<PairwisePanel {...createProps({ width: 300, height: 200 })} />);
    expect(screen.getByTestId(panelTestIds.banner)).toBeInTheDocument();
    expect(screen.getByTestId(panelTestIds.strip)).toBeInTheDocument();
    expect(screen.queryByTestId(panelTestIds.table)).not.toBeInTheDocument();
    expect(screen.queryByTestId(panelTestIds.chart)).not.toBeInTheDocument();
  });

  it('formats latencies in the unit of the field config', () => {
    render(
      <PairwisePanel {...createProps({ fieldConfig: { defaults: { unit: 'ms', decimals: 1 }, overrides: [] } })} />
    );
    expect(screen.getAllByTestId(panelTestIds.tableRow)[1]).toHaveTextContent(/\d+\.\d ms/);
  });

  it('takes the decision from the last minute when there is no decision frame', () => {
    const series = goldenFrames('hour');
    render(<PairwisePanel {...createProps({}, [minutesOf(series)])} />);
    const reasons = minutesOf(series).fields.find((f) => f.name === 'decision_reason')!.values as string[];
    const decisions = minutesOf(series).fields.find((f) => f.name === 'decision')!.values as string[];
    expect(screen.getByTestId(panelTestIds.bannerHeadline)).toHaveTextContent(
      `${decisions[decisions.length - 1].toUpperCase()}: ${reasons[reasons.length - 1]}`
    );
    expect(screen.getByTestId(panelTestIds.banner)).toHaveTextContent(/add a Decision query/);
  });

  it('asks for a decision query when neither frame carries a decision', () => {
    const minutes = minutesOf(goldenFrames('hour'));
    const bare = { ...minutes, fields: minutes.fields.filter((f) => !/^(decision|decision_code)$/.test(f.name)) };
    render(<PairwisePanel {...createProps({}, [bare])} />);
    expect(screen.getByTestId(panelTestIds.bannerHeadline)).toHaveTextContent(/No decision/);
    expect(screen.queryByTestId(panelTestIds.track)).not.toBeInTheDocument();
  });

  it('puts the decision track under a one-row strip, aligned, and marks where rollback fires on the charts', () => {
    const series = goldenFrames('hour');
    render(<PairwisePanel {...createProps({}, series)} />);
    const strip = screen.getByTestId(panelTestIds.strip);
    const trackGrid = screen.getByTestId(panelTestIds.trackCells).parentElement!;
    expect(trackGrid.style.gridTemplateColumns).toBe(strip.style.gridTemplateColumns);
    expect(screen.getAllByTestId(panelTestIds.trackCell)).toHaveLength(60);
    const firings = screen.getAllByTestId(panelTestIds.chartFiring);
    // Both charts mark the minute.
    expect(firings.filter((f) => f.getAttribute('data-decision') === 'rollback')).toHaveLength(2);
    expect(firings[0]).toHaveTextContent(/fires \d\d:\d\d/);
  });

  it('draws a day as a timeline track and keeps it in a small panel', () => {
    const { unmount } = render(<PairwisePanel {...createProps({}, sampleWindow(START, 1440))} />);
    expect(screen.getByTestId(panelTestIds.trackCells).parentElement!.style.gridTemplateColumns).toBe(
      'repeat(1440, minmax(0, 1fr))'
    );
    unmount();
    render(<PairwisePanel {...createProps({ width: 300, height: 200 })} />);
    expect(screen.getByTestId(panelTestIds.track)).toBeInTheDocument();
    expect(screen.queryByText(/Window decision \(/)).not.toBeInTheDocument();
  });

  it("marks the dashboard's annotations, such as the alert rule's state, on both charts with their words", () => {
    const series = goldenFrames('hour');
    const times = minutesOf(series).fields.find((f) => f.name === 'time')!.values as number[];
    // As Grafana hands a panel its annotations: frames of time, timeEnd, title, text and color.
    const alertState = toDataFrame({
      fields: [
        { name: 'time', type: FieldType.time, values: [times[29] - 30_000, times[40], times[0] - 3_600_000] },
        { name: 'timeEnd', type: FieldType.time, values: [null, times[50], null] },
        { name: 'title', type: FieldType.string, values: ['', '', ''] },
        {
          name: 'text',
          type: FieldType.string,
          values: ['<b>Alerting</b> rollback', 'Pending', 'Normal, before the range'],
        },
        { name: 'color', type: FieldType.string, values: ['red', '', 'green'] },
      ],
    });
    render(<PairwisePanel {...createProps({ data: { ...createProps().data, series, annotations: [alertState] } })} />);
    const theme = createTheme();
    for (const chart of [screen.getByTestId(panelTestIds.chart), screen.getByTestId(panelTestIds.ratioChart)]) {
      const marks = within(chart).getAllByTestId(panelTestIds.chartAnnotation);
      // The one before the charted minutes is left out.
      expect(marks).toHaveLength(2);
      expect(marks[0].querySelector('title')).toHaveTextContent(/^Alerting rollback, 13:30$/);
      expect(marks[0].querySelector('line')).toHaveAttribute('stroke', theme.visualization.getColorByName('red'));
      expect(marks[1].querySelector('title')).toHaveTextContent(/^Pending, 13:41 to 13:51$/);
      expect(marks[1].querySelector('rect')).toBeInTheDocument();
      expect(within(chart).getByRole('img')).toHaveAccessibleName(
        /; annotations: Alerting rollback, 13:30; Pending, 13:41 to 13:51$/
      );
    }
  });

  it('hides the track when switched off', () => {
    render(<PairwisePanel {...createProps({ options: { ...DEFAULT_OPTIONS, showTrack: false } })} />);
    expect(screen.queryByTestId(panelTestIds.track)).not.toBeInTheDocument();
  });
});
