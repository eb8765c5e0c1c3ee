// Drives the harness page in headless Chromium: asserts what the panel shows against values
// computed from the frames file, and writes screenshots. Exits non-zero on any failure.
//
//   node tests/harness/run.mjs [[--no-decisions] frames.json ...]   (default: the generated samples)
//
// Frames must carry a decision per minute (the decision track): a file without them fails, unless
// it is marked --no-decisions, and then the panel must show no track.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, repoRoot, serveRepo } from './serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const shotsDir = path.join(here, 'screenshots');
fs.mkdirSync(shotsDir, { recursive: true });

// ---- expectations, from the frames file alone --------------------------------------------
function framesOf(json) {
  if (Array.isArray(json)) {
    return json;
  }
  if (json.frames) {
    return json.frames;
  }
  if (json.results) {
    return Object.values(json.results).flatMap((r) => r.frames ?? []);
  }
  throw new Error('unrecognised frames file');
}
function column(frame, name) {
  const i = frame.schema.fields.findIndex((f) => f.name === name);
  return i < 0 ? undefined : frame.data.values[i];
}
const DECISION_CODES = ['promote', 'hold', 'rollback'];
const finiteNumber = (v) => typeof v === 'number' && Number.isFinite(v);
/** "2026-11-21 13:48": the date and minute of a time (ms) as the panel shows it in UTC. */
const fullTime = (ms) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
const hhmm = (ms) => fullTime(ms).slice(11);

function expectationsFor(file) {
  const frames = framesOf(JSON.parse(fs.readFileSync(file, 'utf8')));
  const minutes = frames.find((f) => f.schema.name === 'minutes');
  const decision = frames.find((f) => f.schema.name === 'decision');
  if (!minutes) {
    throw new Error(`${file}: no minutes frame`);
  }
  const custom = minutes.schema.meta?.custom ?? {};
  const vq = custom.verdictQuantile ?? 'p99';
  const verdicts = column(minutes, 'verdict');
  const codes = column(minutes, 'decision_code') ?? [];
  const decisions = (column(minutes, 'decision') ?? codes.map(() => '')).map((d, i) =>
    d ? String(d).toLowerCase() : DECISION_CODES[codes[i]]
  );
  const times = column(minutes, 'time');
  // Indices of the minutes with a finite value of a column: the points of its chart line.
  const finiteAt = (name) => (column(minutes, name) ?? []).flatMap((v, i) => (finiteNumber(v) ? [i] : []));
  const expected = {
    minutes: verdicts.length,
    times,
    // Each minute's verdict by its time (ms), for the table's rows.
    verdicts,
    verdictAt: new Map(times.map((t, i) => [String(t), verdicts[i]])),
    bad: verdicts.filter((v) => v === 'bad').length,
    headline: null,
    // The window decision of every minute, and where rollback first fires (-1: never).
    track: decisions.length === verdicts.length && decisions.every((d) => DECISION_CODES.includes(d)),
    decisions,
    reasons: column(minutes, 'decision_reason') ?? [],
    rollbackCells: decisions.filter((d) => d === 'rollback').length,
    firstRollback: decisions.indexOf('rollback'),
    rollbackFires: decisions.indexOf('rollback') > 0,
    // Minutes whose decision pooled the evidence since the deployment's start (meta.custom.since,
    // evidence rule): the anchored column says which; frames without it pooled whenever a start was set.
    anchored: (column(minutes, 'anchored') ?? times.map(() => true)).map(
      (a) => a === true && Boolean(custom.since) && custom.rule !== 'reference'
    ),
    evidenceMinutes: column(minutes, 'evidence_minutes') ?? [],
    lines: {
      baseline: finiteAt(`baseline_${vq}`),
      canary: finiteAt(`canary_${vq}`),
      ratio: finiteAt('ratio'),
    },
  };
  if (decision) {
    const one = (name) => column(decision, name)?.at(-1);
    const d = one('decision');
    const reason = one('reason');
    // The banner reads the reason the backend wrote, and adds nothing of its own.
    expected.headline = reason ? `${d.toUpperCase()}: ${reason}` : d.toUpperCase();
  }
  return expected;
}

// ---- colours, from Grafana's palette and not from the panel's code -------------------------
// Grafana's error colour (#D10E5C dark, #E0226E light) and the palette's red (#F2495C) are the
// red family; its success colour (#1A7F4B, #1B855E) and the palette's green (#73BF69) the green
// family; the warning colour of hold (#FF9900) is neither. Judged by hue and chroma, not by value.
function hueChroma(css) {
  const [r, g, b, a = 1] = (css.match(/[\d.]+/g) ?? []).map(Number);
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const c = max - min;
  let h = 0;
  if (c > 0) {
    h = max === r ? ((g - b) / c) % 6 : max === g ? (b - r) / c + 2 : (r - g) / c + 4;
  }
  return { hue: (h * 60 + 360) % 360, chroma: c / 255, alpha: a };
}
const colourFamily = (css) => {
  const { hue, chroma, alpha } = hueChroma(css);
  if (alpha < 0.3) {
    return 'none';
  }
  if (chroma < 0.12) {
    return 'grey';
  }
  if (chroma >= 0.25 && (hue >= 320 || hue <= 20)) {
    return 'red';
  }
  if (chroma >= 0.25 && hue >= 80 && hue <= 170) {
    return 'green';
  }
  return 'other';
};

/** The points of an SVG path of M and L commands: [x, y] each. */
const pathPoints = (d) =>
  [...(d ?? '').matchAll(/[ML](-?[\d.]+),(-?[\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);

// ---- run ------------------------------------------------------------------------------
const failures = [];
function check(name, ok, detail) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : `: ${detail}`}`);
  if (!ok) {
    failures.push(name);
  }
}

const defaults = [path.join(here, 'build', 'sample-frames.json'), path.join(here, 'build', 'sample-frames-day.json')];
// Files marked --no-decisions are those whose frames are meant to carry no per-minute decision.
const args = process.argv.slice(2);
const withoutDecisions = new Set();
const frameFiles = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--no-decisions') {
    if (++i === args.length) {
      throw new Error('--no-decisions needs a frames file');
    }
    withoutDecisions.add(path.resolve(args[i]));
  }
  frameFiles.push(path.resolve(args[i]));
}
if (frameFiles.length === 0) {
  frameFiles.push(...defaults);
}

const server = await serveRepo();
const port = server.address().port;
const browser = await launchChromium();

try {
  for (const [fileIndex, file] of frameFiles.entries()) {
    const expected = expectationsFor(file);
    const rel = '/' + path.relative(repoRoot, file).split(path.sep).join('/');
    const tag = fileIndex === 0 ? '' : `-${path.basename(file, '.json')}`;
    const sizes =
      fileIndex === 0
        ? [
            ['small', 400, 300],
            ['large', 1400, 800],
          ]
        : [['large', 1400, 800]];
    const themes = fileIndex === 0 ? ['dark', 'light'] : ['dark'];
    for (const theme of themes) {
      for (const [size, width, height] of sizes) {
        const label = `${path.basename(file)} ${theme} ${size}`;
        const page = await browser.newPage({ viewport: { width, height } });
        const errors = [];
        page.on('pageerror', (e) => errors.push(e.message));
        page.on(
          'console',
          (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && errors.push(m.text())
        );
        page.on(
          'response',
          (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && errors.push(`${r.status()} ${r.url()}`)
        );
        await page.goto(
          `http://127.0.0.1:${port}/tests/harness/build/index.html?theme=${theme}&width=${width}&height=${height}&frames=${encodeURIComponent(rel)}`
        );
        await page.waitForSelector('body[data-harness="ready"], body[data-harness="error"]', { timeout: 20000 });
        const harnessError = await page.getAttribute('body', 'data-harness-error');
        check(`${label}: harness loaded the built panel`, !harnessError, harnessError);
        await page.waitForSelector('[data-testid="pairwise-strip"]', { timeout: 10000 }).catch(() => {});

        if (expected.headline) {
          const headline = (await page.textContent('[data-testid="pairwise-banner-headline"]'))?.trim();
          check(`${label}: banner reads "${expected.headline}"`, headline === expected.headline, `got "${headline}"`);
        }
        const cells = await page.locator('[data-testid="pairwise-strip-cell"]').count();
        check(`${label}: ${expected.minutes} strip cells`, cells === expected.minutes, `got ${cells}`);
        const bad = await page.locator('[data-testid="pairwise-strip-cell"][data-verdict="bad"]').count();
        check(`${label}: ${expected.bad} bad cells`, bad === expected.bad, `got ${bad}`);
        const badNamed = await page.locator('[data-testid="pairwise-strip-cell"][aria-label*=", bad, "]').count();
        check(`${label}: bad cells are named "bad"`, badNamed === expected.bad, `got ${badNamed}`);
        // Each cell's colour, by its minute's verdict in the frames: bad red, good green, neutral grey.
        const verdictFamily = { bad: 'red', good: 'green', neutral: 'grey' };
        const stripColours = await page
          .locator('[data-testid="pairwise-strip-cell"]')
          .evaluateAll((els) => els.map((e) => [Number(e.dataset.index), getComputedStyle(e).backgroundColor]));
        const miscoloured = stripColours.filter(([i, bg]) => {
          const want = verdictFamily[expected.verdicts[i]];
          return want && colourFamily(bg) !== want;
        });
        check(
          `${label}: bad cells red, good green, neutral grey`,
          stripColours.length === expected.minutes && miscoloured.length === 0,
          `${miscoloured.length} cells: ${JSON.stringify(miscoloured.slice(0, 3).map(([i, bg]) => [expected.verdicts[i], bg]))}`
        );

        const trackCount = await page.locator('[data-testid="pairwise-track-cell"]').count();
        if (withoutDecisions.has(file)) {
          check(
            `${label}: no decision track (frames marked --no-decisions)`,
            !expected.track && trackCount === 0,
            expected.track ? 'the frames carry decisions' : `${trackCount} track cells`
          );
        } else {
          check(
            `${label}: frames carry a decision for every minute`,
            expected.track,
            'no per-minute decision in the minutes frame (mark the file --no-decisions if it is meant to have none)'
          );
        }

        if (expected.track) {
          const trackCells = page.locator('[data-testid="pairwise-track-cell"]');
          check(
            `${label}: ${expected.minutes} decision track cells`,
            (await trackCells.count()) === expected.minutes,
            `got ${await trackCells.count()}`
          );
          const rollbackCells = await page
            .locator('[data-testid="pairwise-track-cell"][data-decision="rollback"]')
            .count();
          check(
            `${label}: ${expected.rollbackCells} rollback track cells`,
            rollbackCells === expected.rollbackCells,
            `got ${rollbackCells}`
          );
          // Each cell's colour and pattern, by its minute's decision in the frames: rollback red and
          // hatched, promote green and dotted, hold neither red nor green and plain.
          const trackStyles = await trackCells.evaluateAll((els) =>
            els.map((e) => {
              const style = getComputedStyle(e);
              return [Number(e.dataset.index), style.backgroundColor, style.backgroundImage];
            })
          );
          const wrongStyle = trackStyles.filter(([i, bg, image]) => {
            const family = colourFamily(bg);
            switch (expected.decisions[i]) {
              case 'rollback':
                return family !== 'red' || !/linear-gradient/.test(image) || /radial-gradient/.test(image);
              case 'promote':
                return family !== 'green' || !/radial-gradient/.test(image);
              default:
                return ['red', 'green', 'none'].includes(family) || image !== 'none';
            }
          });
          check(
            `${label}: track cells rollback red hatched, promote green dotted, hold plain and neither`,
            trackStyles.length === expected.minutes && wrongStyle.length === 0,
            `${wrongStyle.length} cells: ${JSON.stringify(wrongStyle.slice(0, 3).map(([i, ...s]) => [expected.decisions[i], ...s]))}`
          );
          if (expected.firstRollback >= 0) {
            const marked = await page.getAttribute(
              '[data-testid="pairwise-track-cell"][data-fires="rollback"]',
              'data-index'
            );
            check(
              `${label}: rollback marked at minute ${expected.firstRollback}`,
              Number(marked) === expected.firstRollback,
              `marked ${marked}`
            );
            const marker = page.locator('[data-testid="pairwise-track-marker"][data-decision="rollback"]');
            const markerColour =
              (await marker.count()) === 1
                ? await marker.evaluate((e) => getComputedStyle(e.querySelector('span')).color)
                : '';
            check(
              `${label}: rollback marker shown, in red`,
              (await marker.count()) === 1 && (await marker.isVisible()) && colourFamily(markerColour) === 'red',
              `${await marker.count()} markers, colour ${markerColour}`
            );
          }
          // The track lines up with a one-row strip: each decision cell under its minute cell.
          const stripBoxes = await page
            .locator('[data-testid="pairwise-strip-cell"]')
            .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()));
          const trackBoxes = await trackCells.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()));
          const oneRow = stripBoxes.length > 0 && stripBoxes.every((b) => Math.abs(b.top - stripBoxes[0].top) < 1);
          if (oneRow) {
            const offset = Math.max(
              ...stripBoxes.map(
                (b, i) => Math.abs(b.left - trackBoxes[i].left) + Math.abs(b.width - trackBoxes[i].width)
              )
            );
            check(`${label}: track cells line up with the strip's`, offset < 1, `off by up to ${offset.toFixed(2)} px`);
          }
        }

        const table = page.locator('[data-testid="pairwise-table"]');
        if (size === 'small') {
          check(`${label}: no table in a small panel`, (await table.count()) === 0, 'table shown');
        } else {
          const rowCount = Number(await table.getAttribute('aria-rowcount'));
          check(
            `${label}: table has ${expected.minutes} rows`,
            rowCount === expected.minutes + 1,
            `aria-rowcount ${rowCount}`
          );
          const rendered = await page.locator('[data-testid="pairwise-table-row"]').count();
          check(
            `${label}: table renders a visible slice`,
            rendered > 0 && rendered <= Math.min(expected.minutes, 120),
            `rendered ${rendered}`
          );
          // Every row drawn (a slice of the table) is marked with its own minute's verdict.
          const rows = await page
            .locator('[data-testid="pairwise-table-row"]')
            .evaluateAll((els) => els.map((e) => [e.getAttribute('data-time'), e.getAttribute('data-verdict')]));
          const mismarked = rows.filter(([t, v]) => expected.verdictAt.get(t) !== v);
          check(
            `${label}: rows marked with their minute's verdict`,
            rows.length > 0 && mismarked.length === 0,
            `${mismarked.length} of ${rows.length} rows: ${JSON.stringify(mismarked.slice(0, 3))}`
          );
          // The charts' lines and firing marks, placed by the frames' times on each chart's x range
          // (its plot area, the clip rectangle), from the first minute to the last.
          const charts = await page.evaluate(() =>
            [...document.querySelectorAll('[data-testid="pairwise-chart"], [data-testid="pairwise-ratio-chart"]')].map(
              (chart) => {
                const clip = chart.querySelector('clipPath rect');
                return {
                  ratio: chart.getAttribute('data-testid') === 'pairwise-ratio-chart',
                  left: Number(clip?.getAttribute('x')),
                  width: Number(clip?.getAttribute('width')),
                  lines: [...chart.querySelectorAll('path[fill="none"]')].map((p) => ({
                    d: p.getAttribute('d'),
                    dashed: p.hasAttribute('stroke-dasharray'),
                  })),
                  firings: [...chart.querySelectorAll('[data-testid="pairwise-chart-firing"]')].map((g) => ({
                    decision: g.getAttribute('data-decision'),
                    x: Number(g.querySelector('line')?.getAttribute('x1')),
                    stroke: getComputedStyle(g.querySelector('line')).stroke,
                  })),
                };
              }
            )
          );
          const t0 = expected.times[0];
          const t1 = expected.times.at(-1);
          const xAt = (chart, t) => chart.left + (t1 > t0 ? ((t - t0) / (t1 - t0)) * chart.width : chart.width / 2);
          // A line has a point for every minute with a value, at that minute's time.
          const lineError = (chart, line, minutes) => {
            const points = pathPoints(line?.d);
            const off = points.findIndex(([x], k) => !(Math.abs(x - xAt(chart, expected.times[minutes[k]])) <= 0.6));
            if (points.length !== minutes.length) {
              return `${points.length} points for ${minutes.length} minutes with a value`;
            }
            return off >= 0 ? `point ${off} at x ${points[off][0]}, not at ${hhmm(expected.times[minutes[off]])}` : '';
          };
          const latency = charts.find((c) => !c.ratio);
          const ratio = charts.find((c) => c.ratio);
          const lineErrors = [
            latency
              ? lineError(
                  latency,
                  latency.lines.find((l) => !l.dashed),
                  expected.lines.baseline
                )
              : 'no chart',
            latency
              ? lineError(
                  latency,
                  latency.lines.find((l) => l.dashed),
                  expected.lines.canary
                )
              : 'no chart',
            ratio ? lineError(ratio, ratio.lines[0], expected.lines.ratio) : 'no ratio chart',
          ];
          check(
            `${label}: baseline, canary and ratio lines have a point per minute with a value, at its time`,
            lineErrors.every((e) => e === ''),
            `baseline: ${lineErrors[0]}; canary: ${lineErrors[1]}; ratio: ${lineErrors[2]}`
          );
          if (expected.rollbackFires) {
            const tFire = expected.times[expected.firstRollback];
            const marks = charts.flatMap((c) =>
              c.firings.filter((f) => f.decision === 'rollback').map((f) => ({ ...f, want: xAt(c, tFire) }))
            );
            check(
              `${label}: both charts mark rollback firing at ${hhmm(tFire)}, in red`,
              marks.length === 2 &&
                marks.every((m) => Math.abs(m.x - m.want) <= 0.6 && colourFamily(m.stroke) === 'red'),
              JSON.stringify(marks)
            );
          }
        }
        check(`${label}: no page errors`, errors.length === 0, errors.join(' | '));
        await page.screenshot({ path: path.join(shotsDir, `panel-${theme}-${size}${tag}.png`) });

        if (size === 'large' && fileIndex === 0) {
          // Keyboard: focus the strip, move right: the active minute is the next row's, a minute on,
          // named by its time, and the tooltip is that minute's.
          const activeMinute = async () => {
            const id = await page.getAttribute('[data-testid="pairwise-strip"]', 'aria-activedescendant');
            return id
              ? page.locator(`#${id}`).evaluate((e) => [Number(e.dataset.index), e.getAttribute('aria-label')])
              : [null, null];
          };
          await page.focus('[data-testid="pairwise-strip"]');
          const [from, fromName] = await activeMinute();
          await page.keyboard.press('ArrowRight');
          const [to, toName] = await activeMinute();
          const tFrom = expected.times[from];
          check(
            `${label}: ArrowRight moves the active minute one row, a minute on`,
            from !== null &&
              to === from + 1 &&
              expected.times[to] === tFrom + 60_000 &&
              fromName?.startsWith(`${hhmm(tFrom)} `) &&
              toName?.startsWith(`${hhmm(tFrom + 60_000)} `),
            `from ${from} "${fromName}" to ${to} "${toName}"`
          );
          const minuteTip = page.locator('[data-testid="pairwise-tooltip"]');
          const minuteTipText = (await minuteTip.count()) === 1 ? await minuteTip.textContent() : '';
          check(
            `${label}: focus shows the tooltip of the active minute`,
            to !== null && minuteTipText.includes(fullTime(expected.times[to])),
            minuteTipText.slice(0, 120) || 'no tooltip'
          );
          // Pin the first bad minute's tooltip: its Explore link, and a screenshot.
          const badCell = page.locator('[data-testid="pairwise-strip-cell"][data-verdict="bad"]').first();
          const badShown = await badCell.count();
          check(
            `${label}: a bad minute of the frames is in the strip`,
            expected.bad === 0 || badShown > 0,
            `bad minutes ${expected.bad}, cells ${badShown}`
          );
          if (badShown > 0) {
            await badCell.click();
            await page.waitForSelector('[data-testid="pairwise-tooltip"]');
            const link = await page.locator('[data-testid="pairwise-tooltip"] a[href*="/explore?"]').count();
            check(`${label}: pinned tooltip links to Explore`, link === 1, `links ${link}`);
            await page.screenshot({ path: path.join(shotsDir, `panel-${theme}-${size}-tooltip.png`) });
            // Unpin it, so the track's tooltip is alone in its screenshot.
            await page.focus('[data-testid="pairwise-strip"]');
            await page.keyboard.press('Escape');
          }
        }
        // The track's tooltip of minute i: its time, decision and reason as the frames have them, and
        // whether its decision pooled the evidence since the deployment's start.
        const trackTooltipChecks = (what, i, text) => {
          const t = expected.times[i];
          check(
            `${label}: ${what} track tooltip names ${fullTime(t)} and ${expected.decisions[i]}`,
            text.includes(fullTime(t)) && text.includes(expected.decisions[i].toUpperCase()),
            text.slice(0, 120)
          );
          const reason = expected.reasons[i];
          check(
            `${label}: ${what} track tooltip gives the minute's decision_reason`,
            Boolean(reason) && text.includes(reason),
            reason ? `no "${reason.slice(0, 60)}..." in "${text.slice(0, 300)}"` : 'the frame has no decision_reason'
          );
          const evidence = `since the start (${expected.evidenceMinutes[i]}`;
          if (expected.anchored[i]) {
            check(
              `${label}: ${what} track tooltip: pooled since the deployment's start, "${evidence}"`,
              text.includes("since the deployment's start") && text.includes(evidence),
              text.slice(0, 400)
            );
          } else {
            check(
              `${label}: ${what} track tooltip: not pooled since a deployment's start`,
              !text.includes("since the deployment's start") && !text.includes('since the start ('),
              text.slice(0, 400)
            );
          }
        };
        if (size === 'large' && expected.track) {
          // Keyboard on the decision track: End reaches the last minute, whose decision is the banner's.
          await page.focus('[data-testid="pairwise-track-cells"]');
          await page.keyboard.press('End');
          const trackActive = await page.getAttribute('[data-testid="pairwise-track-cells"]', 'aria-activedescendant');
          const lastIndex = trackActive ? await page.getAttribute(`#${trackActive}`, 'data-index') : null;
          check(
            `${label}: End moves the track to the last minute`,
            Number(lastIndex) === expected.minutes - 1,
            `got ${lastIndex}`
          );
          const endTip = page.locator('[data-testid="pairwise-track-tooltip"]');
          trackTooltipChecks(
            'last minute',
            expected.minutes - 1,
            (await endTip.count()) === 1 ? await endTip.textContent() : ''
          );
          await page.keyboard.press('Escape');
          if (expected.firstRollback >= 0) {
            // Pin the tooltip of the minute where rollback fires, for a screenshot.
            // A day's cells are narrower than a pixel: click the element itself, not a point.
            await page
              .locator('[data-testid="pairwise-track-cell"][data-fires="rollback"]')
              .evaluate((el) => el.click());
            const tip = page.locator('[data-testid="pairwise-track-tooltip"]');
            await tip.waitFor();
            trackTooltipChecks('rollback firing', expected.firstRollback, (await tip.textContent()) ?? '');
            // The tooltip measures itself, then moves inside the window (a 0.1 s transition).
            await page.waitForTimeout(400);
            await page.screenshot({ path: path.join(shotsDir, `panel-${theme}-${size}${tag}-track.png`) });
          }
        }
        await page.close();
      }
    }
  }
} finally {
  await browser.close();
  server.close();
}

const total = failures.length;
console.log(total === 0 ? 'harness: all checks passed' : `harness: ${total} check(s) failed`);
console.log(`screenshots in ${path.relative(process.cwd(), shotsDir)}`);
process.exit(total === 0 ? 0 : 1);
