// Render time of the Pairwise panel in headless Chromium, through the harness
// page built by tests/harness (served and launched by tests/harness/serve.mjs): loads the built page with a
// frames file and times, in the page, from the harness handing the frames to
// React (body[data-harness="ready"]) until the strip and a chart path are in
// the DOM and two animation frames have been painted.
//
//   node cmd/pairwise-bench/panel/bench.mjs --reps 7 FRAMES.json [FRAMES.json ...]
//
// Prints one JSON object: {"results": [{"file", "renderMs": [...], "loadMs": [...]}]}.
// Repetitions alternate the order of the files; each load is a fresh page.
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium, repoRoot, serveRepo } from '../../../tests/harness/serve.mjs';

const harness = path.join(repoRoot, 'tests', 'harness', 'build', 'index.html');

const args = process.argv.slice(2);
let reps = 5;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--reps') {
    reps = Number(args[++i]);
  } else {
    files.push(path.resolve(args[i]));
  }
}
if (!fs.existsSync(harness)) {
  console.error(`no harness page at ${harness}: build it with the harness's own build step`);
  process.exit(2);
}

const server = await serveRepo();
const port = server.address().port;

const browser = await launchChromium();

// Records when the harness marks itself ready and when the panel is drawn.
const probe = () => {
  window.__bench = {};
  const check = () => {
    const b = document.body;
    if (b && !window.__bench.ready && b.getAttribute('data-harness') === 'ready') {
      window.__bench.ready = performance.now();
    }
    if (
      window.__bench.ready &&
      !window.__bench.drawn &&
      document.querySelector('[data-testid="pairwise-strip"]') &&
      document.querySelector('[data-testid="pairwise-chart"] path')
    ) {
      window.__bench.drawn = -1;
      requestAnimationFrame(() => requestAnimationFrame(() => (window.__bench.drawn = performance.now())));
    }
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, attributes: true });
};

async function once(file) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  await page.addInitScript(probe);
  const rel = '/' + path.relative(repoRoot, file).split(path.sep).join('/');
  await page.goto(
    `http://127.0.0.1:${port}/tests/harness/build/index.html?theme=dark&width=1400&height=900&frames=${encodeURIComponent(rel)}`
  );
  await page.waitForFunction(() => window.__bench && window.__bench.drawn > 0, null, { timeout: 60000 });
  const t = await page.evaluate(() => window.__bench);
  const cells = await page.locator('[data-testid="pairwise-strip-cell"]').count();
  await context.close();
  return { render: t.drawn - t.ready, load: t.drawn, cells };
}

const results = files.map((file) => ({ file: path.relative(repoRoot, file), renderMs: [], loadMs: [], cells: 0 }));
try {
  for (const f of files) {
    await once(f); // warm-up
  }
  for (let r = 0; r < reps; r++) {
    for (let k = 0; k < files.length; k++) {
      const i = (k + r) % files.length;
      const m = await once(files[i]);
      results[i].renderMs.push(m.render);
      results[i].loadMs.push(m.load);
      results[i].cells = m.cells;
    }
  }
  console.log(JSON.stringify({ results }));
} finally {
  await browser.close();
  server.close();
}
