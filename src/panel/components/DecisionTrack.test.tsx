import React from 'react';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { buildTrack, buildViewModel, ReadyViewModel } from '../data/viewModel';
import { backgroundImagesOf } from '../testing/css';
import { goldenFrames } from '../testing/goldens';
import { sampleWindow } from '../testing/sampleFrames';
import { panelTestIds } from '../testIds';
import { DEFAULT_OPTIONS } from '../types';
import { DecisionTrack } from './DecisionTrack';

const START = Date.UTC(2026, 10, 21, 14, 0);
const options = {
  timeZone: 'utc',
  tableQuantiles: DEFAULT_OPTIONS.tableQuantiles,
  prometheusDatasourceUid: DEFAULT_OPTIONS.prometheusDatasourceUid,
};

function viewModel(series = sampleWindow(START)): ReadyViewModel {
  const vm = buildViewModel(series, options);
  if (vm.status !== 'ok' || !vm.track) {
    throw new Error('expected a view model with a track');
  }
  return vm;
}

function renderTrack(vm: ReadyViewModel, props: { stripColumns?: number; compact?: boolean } = {}) {
  return render(
    <DecisionTrack
      minutes={vm.minutes}
      track={vm.track!}
      meta={vm.meta}
      stripColumns={props.stripColumns ?? 0}
      compact={props.compact ?? false}
    />
  );
}

const decisionsOf = (vm: ReadyViewModel) => vm.minutes.map((m) => m.windowDecision!.decision);

describe('DecisionTrack', () => {
  it('draws no track when some minute shown has no decision (a frame from an older data source)', () => {
    const vm = viewModel();
    expect(buildTrack(vm.minutes, vm.meta)).not.toBeNull();
    const partly = vm.minutes.map((m, i) => (i === 3 ? { ...m, windowDecision: null } : m));
    expect(buildTrack(partly, vm.meta)).toBeNull();
  });

  it("draws each minute's window decision, named and marked", () => {
    const vm = viewModel();
    renderTrack(vm);
    const cells = screen.getAllByTestId(panelTestIds.trackCell);
    expect(cells).toHaveLength(60);
    expect(cells.map((c) => c.getAttribute('data-decision'))).toEqual(decisionsOf(vm));
    const first = decisionsOf(vm).indexOf('rollback');
    const label = `${vm.minutes[first].timeLabel}`;
    expect(cells[first]).toHaveAccessibleName(
      `2026-11-21 ${label} UTC, window decision rollback, rollback fires ${label}`
    );
    expect(cells[first]).toHaveAttribute('data-fires', 'rollback');
    expect(cells.filter((c) => c.hasAttribute('data-fires'))).toHaveLength(vm.track!.firings.length);
    expect(cells[first - 1]).toHaveAccessibleName(/window decision (hold|promote)$/);
    const marker = screen.getAllByTestId(panelTestIds.trackMarker).find((m) => m.dataset.decision === 'rollback')!;
    expect(marker).toHaveTextContent(`rollback fires ${label}`);
    expect(marker.style.gridColumn).toBe(`${first + 1} / span 1`);
    // The listbox says where rollback fires and how to move.
    expect(screen.getByRole('listbox')).toHaveAccessibleName(/rollback fires \d\d:\d\d.*N and P jump/);
    expect(screen.getByTestId(panelTestIds.track)).toHaveTextContent(
      `▼ rollback ${decisionsOf(vm).filter((d) => d === 'rollback').length}`
    );
  });

  it('tells promote, hold and rollback apart by pattern, not colour alone', () => {
    const vm = viewModel();
    renderTrack(vm);
    const cells = screen.getAllByTestId(panelTestIds.trackCell);
    const patternOf = (decision: string) =>
      backgroundImagesOf(cells.find((c) => c.dataset.decision === decision)!).join(', ');
    expect(patternOf('promote')).not.toBe('');
    expect(patternOf('rollback')).not.toBe('');
    expect(patternOf('promote')).not.toBe(patternOf('rollback'));
    expect(patternOf('hold')).toBe('');
    for (const cell of cells) {
      expect(backgroundImagesOf(cell).join(', ')).toBe(patternOf(cell.dataset.decision!));
    }
    // The legend's swatches show them.
    const legend = screen.getByText(/^Window decision/).parentElement!;
    const swatches = Array.from(legend.querySelectorAll('[style*="background-color"]'));
    expect(swatches.map((s) => backgroundImagesOf(s).join(', '))).toEqual([
      patternOf('promote'),
      patternOf('hold'),
      patternOf('rollback'),
    ]);
  });

  it('lines up with a one-row strip, and is a timeline otherwise', () => {
    const vm = viewModel();
    const { unmount } = renderTrack(vm, { stripColumns: 64 });
    const grid = screen.getByTestId(panelTestIds.trackCells).parentElement!;
    expect(grid.style.gridTemplateColumns).toBe('repeat(64, minmax(0, 1fr))');
    expect(screen.getByTestId(panelTestIds.trackCells).style.gridColumn).toBe('1 / span 60');
    unmount();
    renderTrack(vm, { stripColumns: 0 });
    expect(screen.getByTestId(panelTestIds.trackCells).parentElement!.style.gridTemplateColumns).toBe(
      'repeat(60, minmax(0, 1fr))'
    );
  });

  it('moves with the keyboard and tells the decision, its reason and the evidence against the boundary', () => {
    const vm = viewModel();
    renderTrack(vm);
    const track = screen.getByRole('listbox');
    expect(track).toHaveAttribute('tabindex', '0');
    fireEvent.focus(track);
    const activeCell = () => document.getElementById(track.getAttribute('aria-activedescendant')!)!;
    expect(activeCell()).toHaveAttribute('data-index', '0');
    fireEvent.keyDown(track, { key: 'ArrowRight' });
    expect(activeCell()).toHaveAttribute('data-index', '1');

    // N jumps to the next change of decision: here, where rollback fires.
    const first = decisionsOf(vm).indexOf('rollback');
    let index = 1;
    while (index < first) {
      fireEvent.keyDown(track, { key: 'n' });
      index = Number(activeCell().getAttribute('data-index'));
    }
    expect(index).toBe(first);
    const tooltip = screen.getByTestId(panelTestIds.trackTooltip);
    expect(tooltip).toHaveTextContent(`${vm.minutes[first].fullTimeLabel}: ROLLBACK`);
    expect(tooltip).toHaveTextContent('Rollback first fires at this minute.');
    expect(tooltip).toHaveTextContent(vm.minutes[first].windowDecision!.reason);
    const rows = within(tooltip).getAllByRole('row');
    const recent = rows.find((r) => /last \d+ min/.test(r.textContent ?? ''))!;
    expect(recent).toHaveTextContent(/rollback at 14\.2\s*reached/);
    expect(within(tooltip).getByRole('row', { name: /promote/ })).toHaveTextContent('promote at -11.9');
    expect(tooltip).toHaveTextContent(/canary p99 exceedances/);

    fireEvent.keyDown(track, { key: 'p' });
    expect(Number(activeCell().getAttribute('data-index'))).toBeLessThan(first);
    fireEvent.keyDown(track, { key: 'End' });
    expect(activeCell()).toHaveAttribute('data-index', '59');
    fireEvent.keyDown(track, { key: 'Enter' });
    expect(screen.getByTestId(panelTestIds.trackTooltip)).not.toHaveTextContent('Click or press Enter to pin');
    fireEvent.keyDown(track, { key: 'Escape' });
    expect(screen.queryByTestId(panelTestIds.trackTooltip)).not.toBeInTheDocument();
  });

  describe("says whether a minute's decision pooled the evidence since the deployment's start", () => {
    /** The view model with the deployment start and each minute's anchored column as the backend sends them. */
    const deployed = (since: number | null, anchored: boolean | null): ReadyViewModel => {
      const vm = viewModel();
      return {
        ...vm,
        meta: { ...vm.meta, since },
        minutes: vm.minutes.map((m) => ({
          ...m,
          windowDecision: m.windowDecision && { ...m.windowDecision, anchored },
        })),
      };
    };
    const tooltipOf = (vm: ReadyViewModel) => {
      const { unmount } = renderTrack(vm);
      fireEvent.mouseEnter(screen.getAllByTestId(panelTestIds.trackCell)[3]);
      const text = screen.getByTestId(panelTestIds.trackTooltip).textContent ?? '';
      unmount();
      return text;
    };

    it('without a deployment start: the window ending at the minute', () => {
      const text = tooltipOf(deployed(null, false));
      expect(text).toContain('Decision of the 60-minute window ending at this minute (evidence rule).');
      expect(text).toContain('whole window (');
    });

    it('pooled from the start when the backend anchored the minute', () => {
      const text = tooltipOf(deployed(START - 5 * 60_000, true));
      expect(text).toContain(
        "Decision at this minute on the evidence since the deployment's start, pooled for its first day (evidence rule); the flags read the 60-minute window ending here."
      );
      expect(text).toContain('since the start (');
      expect(text).not.toContain('whole window');
    });

    it('sliding when the backend did not anchor it, and why', () => {
      const within = tooltipOf(deployed(START - 5 * 60_000, false));
      expect(within).toContain(
        'Decision of the 60-minute window ending at this minute, judged as a sliding window (evidence rule): the range asked for ends more than a day after the deployment started'
      );
      expect(within).toContain('whole window (');
      const old = tooltipOf(deployed(START - 2 * 24 * 60 * 60_000, false));
      expect(old).toContain('the deployment started more than a day before this minute');
      // A range crossing the deployment's first day: pooled, then sliding.
      const vm = deployed(START - 24 * 60 * 60_000, true);
      const crossing = {
        ...vm,
        minutes: vm.minutes.map((m, i) =>
          i < 10 ? m : { ...m, windowDecision: { ...m.windowDecision!, anchored: false } }
        ),
      };
      renderTrack({ ...crossing, track: buildTrack(crossing.minutes, crossing.meta) });
      expect(screen.getByTestId(panelTestIds.track)).toHaveTextContent(
        'Decision (evidence rule, pooled since the deployment, then 60-min windows)'
      );
      expect(screen.getByTestId(panelTestIds.trackCells)).toHaveAttribute(
        'aria-label',
        expect.stringContaining('pooled for its first day, then of the 60-minute window ending at it.')
      );
    });

    it("on the backend's frames of a deployment two hours old: the track, its legend and tooltip say pooled", () => {
      const deployed = viewModel(goldenFrames('hour-deployed'));
      const { unmount } = renderTrack(deployed);
      expect(screen.getByTestId(panelTestIds.trackCells)).toHaveAttribute(
        'aria-label',
        expect.stringMatching(
          /^Decisions: each minute's is the decision on the evidence since the deployment's start, pooled for its first day\. /
        )
      );
      expect(screen.getByTestId(panelTestIds.track)).toHaveTextContent(
        'Decision (evidence rule, pooled since the deployment)'
      );
      fireEvent.mouseEnter(screen.getAllByTestId(panelTestIds.trackCell)[0]);
      const first = deployed.minutes[0].windowDecision!.evidence.minutes;
      expect(screen.getByTestId(panelTestIds.trackTooltip)).toHaveTextContent(
        `since the start (${first} min with evidence)`
      );
      unmount();
      renderTrack(viewModel(goldenFrames('hour')));
      expect(screen.getByTestId(panelTestIds.trackCells)).toHaveAttribute(
        'aria-label',
        expect.stringMatching(
          /^Window decisions: each minute's is the decision of the 60-minute window ending at it\. /
        )
      );
      expect(screen.getByTestId(panelTestIds.track)).toHaveTextContent('Window decision (evidence rule, 60 min)');
    });

    it('frames without the anchored column: pooled whenever a start is set', () => {
      expect(tooltipOf(deployed(START - 5 * 60_000, null))).toContain("on the evidence since the deployment's start");
      expect(tooltipOf(deployed(null, null))).toContain(
        'Decision of the 60-minute window ending at this minute (evidence rule).'
      );
    });
  });

  it('shows the tooltip on hover and pins it on click', () => {
    renderTrack(viewModel());
    const cells = screen.getAllByTestId(panelTestIds.trackCell);
    fireEvent.mouseOver(cells[10]);
    expect(screen.getByTestId(panelTestIds.trackTooltip)).toHaveTextContent('14:10 UTC');
    fireEvent.click(cells[12]);
    fireEvent.mouseLeave(screen.getByRole('listbox'));
    expect(screen.getByTestId(panelTestIds.trackTooltip)).toHaveTextContent('14:12 UTC');
  });

  it('keeps the pinned minute when an auto-refresh shifts a rolling range', () => {
    const track = (vm: ReadyViewModel) => (
      <DecisionTrack minutes={vm.minutes} track={vm.track!} meta={vm.meta} stripColumns={0} compact={false} />
    );
    const { rerender } = render(track(viewModel()));
    const listbox = screen.getByRole('listbox');
    const activeCell = () => document.getElementById(listbox.getAttribute('aria-activedescendant')!)!;
    fireEvent.focus(listbox);
    fireEvent.keyDown(listbox, { key: 'End' });
    fireEvent.keyDown(listbox, { key: 'Enter' });
    expect(activeCell()).toHaveAccessibleName(/^2026-11-21 14:59 UTC, /);

    // A minute later 14:59 is the last cell but one, and its tooltip stays.
    rerender(track(viewModel(sampleWindow(START + 60_000))));
    expect(activeCell()).toHaveAttribute('data-index', '58');
    expect(activeCell()).toHaveAccessibleName(/^2026-11-21 14:59 UTC, /);
    expect(screen.getByTestId(panelTestIds.trackTooltip)).toHaveTextContent('2026-11-21 14:59 UTC');
    // The keys move from the minute it kept.
    fireEvent.keyDown(listbox, { key: 'ArrowRight' });
    expect(activeCell()).toHaveAccessibleName(/^2026-11-21 15:00 UTC, /);
  });

  it('gives the reference rule its reason without the evidence table', () => {
    const series = goldenFrames('hour-reference');
    const reasons = series[0].fields.find((f) => f.name === 'decision_reason')!.values as string[];
    const vm = viewModel(series);
    renderTrack(vm);
    act(() => {
      fireEvent.focus(screen.getByRole('listbox'));
    });
    fireEvent.keyDown(screen.getByRole('listbox'), { key: 'End' });
    const tooltip = screen.getByTestId(panelTestIds.trackTooltip);
    expect(tooltip).toHaveTextContent('reference rule');
    expect(reasons[reasons.length - 1]).toMatch(/^\d+ bad minutes of 60, limit 5$/);
    expect(tooltip).toHaveTextContent(reasons[reasons.length - 1]);
    expect(within(tooltip).queryByRole('table')).not.toBeInTheDocument();
  });

  it('keeps markers and drops labels and legend when compact', () => {
    renderTrack(viewModel(), { compact: true });
    expect(screen.getAllByTestId(panelTestIds.trackMarker)[0]).toHaveTextContent(/^▲$/);
    expect(screen.getByTestId(panelTestIds.track)).not.toHaveTextContent('Window decision');
  });
});
