// Drives the harness page in headless Chromium: asserts what the panel shows against values
// computed from the frames file, and writes screenshots. Exits non-zero on any failure.
//
//   node tests/harness/run.mjs [frames.json ...]   (default: the generated samples)
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
function expectationsFor(file) {
  const frames = framesOf(JSON.parse(fs.readFileSync(file, 'utf8')));
  const minutes = frames.find((f) => f.schema.name === 'minutes');
  const decision = frames.find((f) => f.schema.name === 'decision');
  if (!minutes) {
    throw new Error(`${file}: no minutes frame`);
  }
  const verdicts = column(minutes, 'verdict');
  const decisions = column(minutes, 'decision') ?? [];
  const times = column(minutes, 'time');
  const expected = {
    minutes: verdicts.length,
    // Each minute's verdict by its time (ms), for the table's rows.
    verdictAt: new Map(times.map((t, i) => [String(t), verdicts[i]])),
    bad: verdicts.filter((v) => v === 'bad').length,
    headline: null,
    // The window decision of every minute, and where rollback first fires (-1: never).
    track: decisions.length === verdicts.length,
    rollbackCells: decisions.filter((d) => d === 'rollback').length,
    firstRollback: decisions.indexOf('rollback'),
    rollbackFires: decisions.indexOf('rollback') > 0,
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

// ---- run ------------------------------------------------------------------------------
const failures = [];
function check(name, ok, detail) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : `: ${detail}`}`);
  if (!ok) {
    failures.push(name);
  }
}

const defaults = [path.join(here, 'build', 'sample-frames.json'), path.join(here, 'build', 'sample-frames-day.json')];
const frameFiles = process.argv.slice(2).length ? process.argv.slice(2).map((f) => path.resolve(f)) : defaults;

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
            check(
              `${label}: rollback marker shown`,
              (await marker.count()) === 1 && (await marker.isVisible()),
              'no visible marker'
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
          check(
            `${label}: paired charts drawn`,
            (await page.locator('[data-testid="pairwise-chart"] path').count()) > 0,
            'no chart paths'
          );
          if (expected.rollbackFires) {
            const marks = await page.locator('[data-testid="pairwise-chart-firing"][data-decision="rollback"]').count();
            check(`${label}: both charts mark where rollback fires`, marks === 2, `got ${marks}`);
          }
        }
        check(`${label}: no page errors`, errors.length === 0, errors.join(' | '));
        await page.screenshot({ path: path.join(shotsDir, `panel-${theme}-${size}${tag}.png`) });

        if (size === 'large' && fileIndex === 0) {
          // Keyboard: focus the strip, move right, the active minute has a name and a tooltip.
          await page.focus('[data-testid="pairwise-strip"]');
          await page.keyboard.press('ArrowRight');
          const activeId = await page.getAttribute('[data-testid="pairwise-strip"]', 'aria-activedescendant');
          const activeName = activeId ? await page.getAttribute(`#${activeId}`, 'aria-label') : null;
          check(
            `${label}: arrow keys move the active minute`,
            /^\d\d:\d\d UTC, /.test(activeName ?? ''),
            `got ${activeName}`
          );
          check(
            `${label}: focus shows the tooltip`,
            (await page.locator('[data-testid="pairwise-tooltip"]').count()) === 1,
            'no tooltip'
          );
          // Hover the first bad counted minute for a tooltip screenshot.
          const badCell = page.locator('[data-testid="pairwise-strip-cell"][data-verdict="bad"]').nth(1);
          if ((await badCell.count()) > 0) {
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
          check(
            `${label}: track tooltip on focus`,
            (await page.locator('[data-testid="pairwise-track-tooltip"]').count()) === 1,
            'no track tooltip'
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
            const text = (await tip.textContent()) ?? '';
            check(
              `${label}: track tooltip gives the decision and its reason`,
              /ROLLBACK/.test(text) && /rollback/.test(text),
              text.slice(0, 120)
            );
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
