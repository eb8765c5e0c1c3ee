import { FieldType, toDataFrame } from '@grafana/data';
import { goldenFrames, goldenMeta } from '../testing/goldens';
import { decisionFrame, minutesFrame, SAMPLE_META, sampleWindow } from '../testing/sampleFrames';
import { DEFAULT_OPTIONS } from '../types';
import { buildViewModel, latencyFormatter, NO_DATA_MESSAGE, ReadyViewModel } from './viewModel';

const START = Date.UTC(2026, 10, 21, 14, 0);
const options = {
  timeZone: 'utc',
  tableQuantiles: DEFAULT_OPTIONS.tableQuantiles,
  prometheusDatasourceUid: 'pairwise-prometheus',
};

function ready(vm: ReturnType<typeof buildViewModel>): ReadyViewModel {
  if (vm.status !== 'ok') {
    throw new Error(`expected a ready view model, got ${vm.status}: ${vm.message}`);
  }
  return vm;
}

describe('buildViewModel', () => {
  it('asks for a minutes frame when there is none', () => {
    expect(buildViewModel([], options)).toEqual({ status: 'empty', message: NO_DATA_MESSAGE });
    expect(buildViewModel(undefined, options).status).toBe('empty');
  });

  it('names the missing fields of a wrong frame', () => {
    const frame = toDataFrame({
      name: 'minutes',
      fields: [
        { name: 'time', type: FieldType.time, values: [START] },
        { name: 'verdict', type: FieldType.string, values: ['good'] },
      ],
    });
    const vm = buildViewModel([frame], options);
    expect(vm.status).toBe('invalid');
    expect(vm.status === 'invalid' && vm.message).toMatch(/missing the fields ratio, baseline_p99, canary_p99/);
  });

  it('reads minutes as the backend wrote them, computing no verdicts', () => {
    // A minute whose ratio says "good" by the default rule but which the backend marked bad stays bad.
    const frame = minutesFrame(START, [
      { ratio: 0.9, verdict: 'bad' },
      { ratio: 1.23, verdict: 'bad' },
      { ratio: null, verdict: 'no-data' },
      { ratio: 1.02, verdict: 'insufficient', warmup: true },
    ]);
    const vm = ready(buildViewModel([frame], options));
    expect(vm.minutes.map((m) => m.verdict)).toEqual(['bad', 'bad', 'no-data', 'insufficient']);
    expect(vm.minutes[1].accessibleName).toBe('14:01 UTC, bad, ratio 1.23');
    expect(vm.minutes[2].accessibleName).toBe('14:02 UTC, no data, ratio n/a');
    expect(vm.minutes[3].accessibleName).toBe('14:03 UTC, insufficient data, ratio 1.02, warm-up');
    expect(vm.minutes[3].canaryBounds.upper).toBe(Infinity);
    expect(vm.minuteCounts).toMatchObject({ bad: 2, noData: 1, warmup: 1, insufficient: 0 });
  });

  it('names the date of each minute when the minutes span more than one day', () => {
    // 23:59 and the next day's 00:00, 00:01: "00:00" alone would not say which day.
    const frame = minutesFrame(Date.UTC(2026, 10, 21, 23, 59), [
      { ratio: 1.0, verdict: 'neutral' },
      { ratio: 1.3, verdict: 'bad' },
      { ratio: 1.0, verdict: 'neutral' },
    ]);
    const vm = ready(buildViewModel([frame], options));
    expect(vm.minutes.map((m) => m.dayLabel)).toEqual(['2026-11-21', '2026-11-22', '2026-11-22']);
    expect(vm.minutes[1].accessibleName).toBe('2026-11-22 00:00 UTC, bad, ratio 1.30');
    // Within one day the time alone is shown.
    const oneDay = ready(buildViewModel([minutesFrame(START, [{ ratio: 1.3, verdict: 'bad' }])], options));
    expect(oneDay.minutes[0].dayLabel).toBe('');
    expect(oneDay.minutes[0].accessibleName).toBe('14:00 UTC, bad, ratio 1.30');
  });

  it('leaves out a minute whose time is not a number', () => {
    const frame = minutesFrame(START, [
      { ratio: 1.0, verdict: 'neutral' },
      { ratio: 1.3, verdict: 'bad' },
    ]);
    const time = frame.fields.find((f) => f.name === 'time')!;
    time.values[0] = NaN;
    const vm = ready(buildViewModel([frame], options));
    expect(vm.minutes.map((m) => m.time)).toEqual([START + 60_000]);
  });

  it('reads partial minutes, by name or by code 5, and counts them apart', () => {
    const frame = minutesFrame(START, [
      { ratio: 1.02, verdict: 'partial' },
      { ratio: 1.3, verdict: 'bad' },
    ]);
    const byCode = {
      ...frame,
      fields: frame.fields.map((f) => (f.name === 'verdict' ? { ...f, values: ['', 'bad'] } : f)),
    };
    for (const f of [frame, byCode]) {
      const vm = ready(buildViewModel([f], options));
      expect(vm.minutes[0].verdict).toBe('partial');
      expect(vm.minutes[0].accessibleName).toBe('14:00 UTC, partial fleet, ratio 1.02');
      expect(vm.minuteCounts).toMatchObject({ partial: 1, bad: 1, noData: 0 });
    }
  });

  it("names each minute's zone at its own time, not at the time the panel is read", () => {
    // January minutes in Berlin are CET, even read in July (CEST).
    const now = jest.spyOn(Date, 'now').mockReturnValue(Date.UTC(2026, 6, 15, 12, 0));
    try {
      const january = Date.UTC(2026, 0, 15, 12, 0);
      const vm = ready(
        buildViewModel([minutesFrame(january, [{ ratio: 1.23, verdict: 'bad' }])], {
          ...options,
          timeZone: 'Europe/Berlin',
        })
      );
      expect(vm.minutes[0].fullTimeLabel).toBe('2026-01-15 13:00 CET');
      expect(vm.minutes[0].accessibleName).toBe('13:00 CET, bad, ratio 1.23');
      expect(vm.zoneLabel).toBe('CET');
    } finally {
      now.mockRestore();
    }
  });

  it('names the zone of each minute across a daylight-saving change, and of the worst minute and the deployment', () => {
    // Berlin moves from CET to CEST at 01:00 UTC on 2026-03-29: 01:59 CET is followed by 03:00 CEST.
    const start = Date.UTC(2026, 2, 29, 0, 58);
    const frames = [
      minutesFrame(
        start,
        [
          { ratio: 1, verdict: 'neutral' },
          { ratio: 1, verdict: 'neutral' },
          { ratio: 1.3, verdict: 'bad' },
          { ratio: 1, verdict: 'neutral' },
        ],
        { ...SAMPLE_META, since: '2026-03-29T00:30:00Z' }
      ),
      decisionFrame(start + 3 * 60_000, {
        decision: 'hold',
        good: 0,
        bad: 1,
        neutral: 3,
        insufficient: 0,
        noData: 0,
        warmup: 0,
        worstMinute: start + 2 * 60_000,
        worstRatio: 1.3,
        reason: '',
      }),
    ];
    const vm = ready(buildViewModel(frames, { ...options, timeZone: 'Europe/Berlin' }));
    expect(vm.minutes.map((m) => m.fullTimeLabel)).toEqual([
      '2026-03-29 01:58 CET',
      '2026-03-29 01:59 CET',
      '2026-03-29 03:00 CEST',
      '2026-03-29 03:01 CEST',
    ]);
    expect(vm.minutes.map((m) => m.zoneLabel)).toEqual(['CET', 'CET', 'CEST', 'CEST']);
    expect(vm.minutes[2].accessibleName).toBe('03:00 CEST, bad, ratio 1.30');
    // No one zone for the whole range.
    expect(vm.zoneLabel).toBe('');
    expect(vm.decision!.worst).toBe('Worst minute 03:00 CEST, ratio 1.30×');
    // Frames without the anchored column (no window decisions here) pooled from a start whenever one was set.
    expect(vm.decision!.rule).toBe(
      'evidence rule, pooled since the deployment at 2026-03-29 01:30 CET, flags over a 60-minute window'
    );
  });

  it('falls back to verdict_code and to field shape when names are missing', () => {
    const frame = minutesFrame(START, [{ ratio: 1.3, verdict: 'bad' }]);
    const unnamed = {
      ...frame,
      name: undefined,
      fields: frame.fields.map((f) => (f.name === 'verdict' ? { ...f, values: ['???'] } : f)),
    };
    const vm = ready(buildViewModel([unnamed], options));
    expect(vm.minutes[0].verdict).toBe('bad');
  });

  it('writes the decision headline from the reason the backend wrote, and its flags in its words', () => {
    const series = goldenFrames('hour');
    const decisionRow = (name: string) => series[1].fields.find((f) => f.name === name)!.values[0];
    const decision = ready(buildViewModel(series, options)).decision!;
    expect(decision.headline).toBe(`ROLLBACK: ${decisionRow('reason')}`);
    expect(decision.headline).toMatch(/^ROLLBACK: canary p99 exceedances .* reached the rollback boundary/);
    expect(decision.rule).toBe('evidence rule, 60-minute window');
    expect(decision.thresholds).toBe('good ≤ 0.95×, bad ≥ 1.10×');
    expect(decision.worst).toMatch(/^Worst minute \d\d:\d\d UTC, ratio 1\.\d\d×$/);
    const flagTexts = goldenMeta('hour').flagTexts as Record<string, string>;
    expect(decision.flags).toEqual(
      String(decisionRow('flags'))
        .split(',')
        .map((code) => ({ code, text: flagTexts[code] }))
    );
    expect(decision.flags.map((f) => f.code)).toEqual(['traffic-parity', 'partial-fleet']);
    // A rollback names the pods that hold the canary's tail, in the backend's words.
    expect(decision.byPod).toBe(decisionRow('by_pod'));
    expect(decision.byPod).toMatch(/^of the canary's \d+ observations beyond the p99 .* holds \d+/);
    expect(decision.fromDecisionFrame).toBe(true);
    expect(ready(buildViewModel(goldenFrames('hour-reference'), options)).decision!.headline).toMatch(
      /^ROLLBACK: \d+ bad minutes of 60, limit 5$/
    );
  });

  it('refuses to show the frames of queries that differ as one analysis', () => {
    const decision = (custom: object) => ({
      ...decisionFrame(START, {
        decision: 'rollback',
        good: 0,
        bad: 5,
        neutral: 0,
        insufficient: 0,
        noData: 0,
        warmup: 0,
        worstMinute: START,
        worstRatio: 1.5,
        reason: 'r',
      }),
      meta: { custom },
    });
    const minutes = minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }]);
    // The same analysis (and a decision frame without meta, as older backends wrote it): shown.
    expect(buildViewModel([minutes, decision(SAMPLE_META)], options).status).toBe('ok');
    expect(buildViewModel([minutes, decision({})], options).status).toBe('ok');
    const other = {
      ...SAMPLE_META,
      metric: 'rpc_duration_seconds',
      canarySelector: '{app="checkout",track="canary2"}',
    };
    expect(buildViewModel([minutes, decision(other)], options)).toEqual({
      status: 'invalid',
      message:
        "The decision query and the minutes query differ in their metric, canary selector: the panel would show two analyses as one. Give the panel's queries the same settings; only their query type differs.",
    });
  });

  it("names flags the frame's meta does not by the contract's texts, and unknown ones by their code", () => {
    const frames = (reason: string) => [
      minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }]),
      decisionFrame(START, {
        decision: 'hold',
        good: 30,
        bad: 2,
        neutral: 28,
        insufficient: 0,
        noData: 0,
        warmup: 0,
        worstMinute: START + 7 * 60_000,
        worstRatio: 1.234,
        reason,
        flags: 'fleet-missing,new-flag',
      }),
    ];
    const decision = ready(buildViewModel(frames('because'), options)).decision!;
    expect(decision.headline).toBe('HOLD: because');
    expect(decision.flags[0].text).toMatch(/^Fleet missing: /);
    expect(decision.flags[1].text).toBe('new-flag');
    expect(decision.worst).toBe('Worst minute 14:07 UTC, ratio 1.23×');
    // The panel adds no words of its own to a decision without a reason.
    expect(ready(buildViewModel(frames(''), options)).decision!.headline).toBe('HOLD');
  });

  it('reads flag texts only from own string entries: a flag named __proto__ or toString reads as its code', () => {
    const decision = (flags: string, meta: object = SAMPLE_META) =>
      ready(
        buildViewModel(
          [
            minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }], meta),
            decisionFrame(START, {
              decision: 'hold',
              good: 0,
              bad: 0,
              neutral: 1,
              insufficient: 0,
              noData: 0,
              warmup: 0,
              worstMinute: null,
              worstRatio: null,
              reason: '',
              flags,
            }),
          ],
          options
        )
      ).decision!;
    const plain = decision('traffic-parity,__proto__,toString,constructor');
    expect(plain.flags.map((f) => f.text)).toEqual([
      expect.stringMatching(/^Traffic parity: /),
      '__proto__',
      'toString',
      'constructor',
    ]);
    expect(plain.flags.every((f) => typeof f.text === 'string')).toBe(true);
    // Each flag once, however often the frame names it.
    expect(decision('traffic-parity,shared-series,traffic-parity').flags.map((f) => f.code)).toEqual([
      'traffic-parity',
      'shared-series',
    ]);

    // The meta's texts are used only when they are strings; else the contract's text, else the code.
    const meta = {
      ...SAMPLE_META,
      flagTexts: JSON.parse(
        '{"traffic-parity": {"text": "not a string"}, "new-flag": 42, "other-flag": "Other flag: in the meta\'s words", "__proto__": {"x": 1}}'
      ),
    };
    expect(decision('traffic-parity,new-flag,other-flag,__proto__', meta).flags).toEqual([
      { code: 'traffic-parity', text: expect.stringMatching(/^Traffic parity: /) },
      { code: 'new-flag', text: 'new-flag' },
      { code: 'other-flag', text: "Other flag: in the meta's words" },
      { code: '__proto__', text: '__proto__' },
    ]);
    expect(
      ready(buildViewModel([minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }], meta)], options)).meta.flagTexts
    ).toEqual({
      'other-flag': "Other flag: in the meta's words",
    });
  });

  it("reads each minute's window decision of the golden hour, where rollback fires and promote was there first", () => {
    const series = goldenFrames('hour');
    const vm = ready(buildViewModel(series, options));
    const decisions = series[0].fields.find((f) => f.name === 'decision')!.values as string[];
    expect(vm.minutes.map((m) => m.windowDecision?.decision)).toEqual(decisions);
    const first = decisions.indexOf('rollback');
    expect(vm.track!.firings).toEqual([
      { decision: 'promote', index: 0, fired: false, line: 0 },
      { decision: 'rollback', index: first, fired: true, line: 0 },
    ]);
    const e = vm.minutes[first].windowDecision!;
    expect(e.reason).toMatch(/reached the rollback boundary/);
    // The regression is first seen by the recent run of minutes, not yet by the whole window.
    expect(e.reason).toMatch(/over the last \d+ minutes/);
    expect(e.evidence.recentStatistic).toBeGreaterThanOrEqual(e.evidence.recentBoundary!);
    expect(e.evidence.statistic).toBeLessThan(e.evidence.rollbackBoundary!);
    expect(e.evidence.promoteBoundary).toBeLessThan(0);
    expect(vm.minuteCounts).toMatchObject({ noData: 1, insufficient: 1, partial: 1, warmup: 1 });
    expect(vm.decision!.decision).toBe(decisions[decisions.length - 1]);
  });

  it("reads whether each minute's decision pooled from the deployment's start, as the backend wrote it", () => {
    const deployed = ready(buildViewModel(goldenFrames('hour-deployed'), options));
    expect(deployed.meta.since).toBe(Date.UTC(2026, 10, 21, 11, 0));
    expect(deployed.minutes.map((m) => m.windowDecision?.anchored)).toEqual(deployed.minutes.map(() => true));
    expect(deployed.decision!.rule).toBe(
      'evidence rule, pooled since the deployment at 2026-11-21 11:00 UTC, flags over a 60-minute window'
    );
    // Each decision pooled the two hours before the range too, past the window.
    expect(Math.min(...deployed.minutes.map((m) => m.windowDecision!.evidence.minutes!))).toBeGreaterThan(60);
    expect(deployed.track!.pooled).toBe(deployed.minutes.length);
    const sliding = ready(buildViewModel(goldenFrames('hour'), options));
    expect(sliding.minutes.map((m) => m.windowDecision?.anchored)).toEqual(sliding.minutes.map(() => false));
    expect(sliding.track!.pooled).toBe(0);
    expect(sliding.decision!.rule).toBe('evidence rule, 60-minute window');
    // Frames without the column (an older data source) leave it unknown.
    const [minutes, ...rest] = goldenFrames('hour');
    const without = { ...minutes, fields: minutes.fields.filter((f) => f.name !== 'anchored') };
    expect(ready(buildViewModel([without, ...rest], options)).minutes[0].windowDecision?.anchored).toBeNull();
  });

  it("shows a deployment start's seconds when it has them: its first whole minute is the next but one", () => {
    const meta = (since: string) => {
      const [minutes, decision] = sampleWindow(START);
      return [{ ...minutes, meta: { custom: { ...minutes.meta!.custom, since } } }, decision];
    };
    expect(ready(buildViewModel(meta('2026-11-21T13:41:30Z'), options)).decision!.rule).toBe(
      'evidence rule, 60-minute sliding window, deployed 2026-11-21 13:41:30 UTC'
    );
    expect(ready(buildViewModel(meta('2026-11-21T13:41:00Z'), options)).decision!.rule).toBe(
      'evidence rule, 60-minute sliding window, deployed 2026-11-21 13:41 UTC'
    );
  });

  it("reads each minute's window decision and where rollback first fires", () => {
    const series = sampleWindow(START);
    const vm = ready(buildViewModel(series, options));
    const minutes = series[0];
    const decisions = minutes.fields.find((f) => f.name === 'decision')!.values as string[];
    expect(vm.minutes.map((m) => m.windowDecision?.decision)).toEqual(decisions);
    const first = decisions.indexOf('rollback');
    expect(first).toBeGreaterThan(0);
    expect(vm.track).toMatchObject({
      rule: 'evidence',
      windowMinutes: 60,
      counts: { rollback: decisions.filter((d) => d === 'rollback').length },
    });
    expect(vm.track!.firings).toContainEqual(
      expect.objectContaining({ decision: 'rollback', index: first, fired: true })
    );
    // Promote fires earlier in the sample, close enough that the labels take two lines.
    const promote = vm.track!.firings.find((f) => f.decision === 'promote')!;
    expect(first - promote.index).toBeLessThan(0.3 * 60);
    expect(vm.track!.firings.map((f) => f.line)).toEqual([0, 1]);
    expect(vm.track!.markerLines).toBe(2);
    const e = vm.minutes[first].windowDecision!;
    expect(e.reason).toMatch(/reached the rollback boundary/);
    expect(e.evidence.rollbackBoundary).toBe(14.2);
    expect(e.evidence.promoteBoundary).toBe(-11.9);
    // The banner's decision is the last minute's.
    expect(vm.decision!.decision).toBe(decisions[decisions.length - 1]);
  });

  it('says a decision was already there when the first minute shown has it', () => {
    const rows = [
      { ratio: 1.3, verdict: 'bad' as const },
      { ratio: 1.3, verdict: 'bad' as const },
      { ratio: 1, verdict: 'neutral' as const },
    ];
    const windows = ['rollback', 'rollback', 'hold'] as const;
    const frame = minutesFrame(
      START,
      rows.map((r, i) => ({
        ...r,
        window: {
          decision: windows[i],
          reason: `window ${i}`,
          statistic: 20 - i * 10,
          rollbackBoundary: 14.2,
          promoteStatistic: 0,
          promoteBoundary: -11.9,
          minutes: i + 1,
          canaryTail: 100,
          expectedCanaryTail: 80,
        },
      }))
    );
    const vm = ready(buildViewModel([frame], options));
    expect(vm.track!.firings).toEqual([{ decision: 'rollback', index: 0, fired: false, line: 0 }]);
    expect(vm.track!.markerLines).toBe(1);
    expect(vm.track!.counts).toEqual({ promote: 0, hold: 1, rollback: 2 });
    // No decision frame: the last minute's window decision is the decision, in the backend's words.
    expect(vm.decision).toMatchObject({ decision: 'hold', headline: 'HOLD: window 2', fromDecisionFrame: false });
  });

  it('draws no track from minutes without window decisions', () => {
    const vm = ready(buildViewModel([minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }])], options));
    expect(vm.track).toBeNull();
    expect(vm.minutes[0].windowDecision).toBeNull();
    expect(vm.decision).toBeNull();
  });

  it('does not take an unnamed minutes frame for the decision frame', () => {
    const [minutes] = sampleWindow(START, 5);
    const unnamed = { ...minutes, name: undefined };
    const vm = ready(buildViewModel([unnamed], options));
    expect(vm.decision?.fromDecisionFrame).toBe(false);
  });

  it('picks table quantiles: tail by default, all on request, verdict quantile always', () => {
    const frame = minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }]);
    expect(ready(buildViewModel([frame], options)).tableQuantiles).toEqual(['p99', 'p99.9']);
    expect(ready(buildViewModel([frame], { ...options, tableQuantiles: 'all' })).tableQuantiles).toEqual(
      SAMPLE_META.quantiles
    );
    const p50Verdict = minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }], {
      ...SAMPLE_META,
      verdictQuantile: 'p50',
    });
    expect(ready(buildViewModel([p50Verdict], options)).tableQuantiles).toEqual(['p50', 'p99', 'p99.9']);
  });

  it('links each minute to Explore with the PromQL the data source wrote in the meta', () => {
    const vm = ready(buildViewModel(goldenFrames('hour'), options));
    const url = decodeURIComponent(vm.minutes[0].exploreUrl ?? '');
    const queries = goldenMeta('hour').exploreQueries as { baseline: string; canary: string };
    expect(url).toContain(JSON.stringify(queries.canary));
    expect(url).toContain(JSON.stringify(queries.baseline));
    expect(url).toContain('"uid":"pairwise-prometheus"');
    // Without queries in the meta there is no link: the panel writes no PromQL.
    const sample = ready(buildViewModel([minutesFrame(START, [{ ratio: 1, verdict: 'neutral' }])], options));
    expect(sample.minutes[0].exploreUrl).toBeNull();
  });

  it('attaches the per-pod spread to its minute', () => {
    const vm = ready(buildViewModel(goldenFrames('hour'), options));
    expect(vm.minutes[2].pods.map((p) => p.fleet)).toEqual(['baseline', 'canary']);
    expect(vm.minutes[2].pods[1]).toMatchObject({ pods: 2, max: 0.34 });
  });
});

describe('latencyFormatter', () => {
  it('shows seconds with an automatic unit by default', () => {
    expect(latencyFormatter(undefined)(0.2)).toBe('200 ms');
    expect(latencyFormatter('s')(null)).toBe('—');
    expect(latencyFormatter('s')(Infinity)).toBe('+∞');
  });
  it('converts seconds for a ms unit', () => {
    expect(latencyFormatter('ms', 1)(0.0123)).toBe('12.3 ms');
  });
  it('reads a unit named like an object property as no time unit', () => {
    for (const unit of ['__proto__', 'toString', 'constructor']) {
      expect(latencyFormatter(unit)(0.2)).toBe('200 ms');
    }
  });
});
