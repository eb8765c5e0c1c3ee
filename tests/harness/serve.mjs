// What the harness and the panel benchmark share: the repository served as
// static files on 127.0.0.1, and headless Chromium as these machines run it.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const TYPES = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

/** Static files from the repository, on 127.0.0.1 and a free port; nothing outside the repo. */
export function serveRepo() {
  const server = http.createServer((req, res) => {
    let urlPath = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    // Grafana serves @grafana/ui's icons from public/build/img/icons; so do we.
    const icon = /\/public\/build\/img\/icons\/(.+)$/.exec(urlPath);
    if (icon) {
      urlPath = `/node_modules/@grafana/ui/dist/public/img/icons/${icon[1]}`;
    }
    const file = path.resolve(repoRoot, '.' + urlPath);
    if (!file.startsWith(repoRoot + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Debian's Chromium, headless; playwright cannot download its own browsers here. */
export function launchChromium() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
