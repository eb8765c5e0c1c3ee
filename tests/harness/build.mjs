// Builds the harness host page and the sample frames into tests/harness/build/.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, 'build');
fs.mkdirSync(out, { recursive: true });

await build({
  entryPoints: [path.join(here, 'host.tsx')],
  bundle: true,
  outfile: path.join(out, 'host.js'),
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"', global: 'window' },
  loader: { '.svg': 'text', '.woff': 'empty', '.woff2': 'empty', '.ttf': 'empty', '.eot': 'empty', '.png': 'empty' },
  logLevel: 'warning',
  minify: true,
});
fs.copyFileSync(path.join(here, 'index.html'), path.join(out, 'index.html'));

await build({
  entryPoints: [path.join(here, 'make-sample.ts')],
  bundle: true,
  outfile: path.join(out, 'make-sample.cjs'),
  platform: 'node',
  format: 'cjs',
  packages: 'external',
  // @grafana/data touches window and document at import time: give it jsdom's.
  banner: {
    js: "{ const { JSDOM } = require('jsdom'); const dom = new JSDOM(''); globalThis.window = dom.window; globalThis.document = dom.window.document; }",
  },
  logLevel: 'warning',
});
execFileSync(process.execPath, [path.join(out, 'make-sample.cjs'), out], { stdio: 'inherit' });
console.log(`harness built in ${path.relative(process.cwd(), out)}`);
