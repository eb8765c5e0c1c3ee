/**
 * Harness host page. It provides the externals that Grafana provides to plugins (React,
 * @grafana/data, @grafana/ui, @grafana/runtime, @emotion/css) through a tiny AMD `define`, then
 * loads the REAL built panel bundle (dist/panel/module.js) and renders its panel component with
 * props built from a frames JSON file.
 *
 * URL: index.html?theme=dark|light&width=1200&height=700&frames=/path/to/frames.json
 *      [&unit=ms][&sortOrder=worst-first][&compact=1][&tableQuantiles=all]
 */
import * as emotionCss from '@emotion/css';
import * as grafanaData from '@grafana/data';
import {
  createTheme,
  DataFrameJSON,
  dataFrameFromJSON,
  getDefaultTimeRange,
  LoadingState,
  PanelPlugin,
  PanelProps,
} from '@grafana/data';
import * as grafanaRuntime from '@grafana/runtime';
import * as grafanaUi from '@grafana/ui';
import React from 'react';
import * as jsxRuntime from 'react/jsx-runtime';
import { createRoot } from 'react-dom/client';
import { DEFAULT_OPTIONS, PairwisePanelOptions } from '../../src/panel/types';

const MODULE_URL = '/dist/panel/module.js';

type AmdFactory = (...deps: unknown[]) => unknown;
const externals: Record<string, unknown> = {
  react: React,
  'react/jsx-runtime': jsxRuntime,
  '@grafana/data': grafanaData,
  '@grafana/ui': grafanaUi,
  '@grafana/runtime': grafanaRuntime,
  '@emotion/css': emotionCss,
  module: { uri: MODULE_URL },
};

function loadPanelModule(): Promise<{ plugin: PanelPlugin<PairwisePanelOptions> }> {
  return new Promise((resolve, reject) => {
    const define = (deps: string[], factory: AmdFactory) => {
      const missing = deps.filter((d) => !(d in externals));
      if (missing.length > 0) {
        reject(new Error(`panel bundle needs externals the harness lacks: ${missing.join(', ')}`));
        return;
      }
      resolve(factory(...deps.map((d) => externals[d])) as { plugin: PanelPlugin<PairwisePanelOptions> });
    };
    define.amd = true;
    (window as unknown as { define: unknown }).define = define;
    const script = document.createElement('script');
    script.src = MODULE_URL;
    script.onerror = () => reject(new Error(`could not load ${MODULE_URL}`));
    document.head.appendChild(script);
  });
}

/** Accepts an array of DataFrameJSON, {frames: [...]}, or a QueryData response {results: {A: {frames}}}. */
function framesFromJSON(json: unknown) {
  let list: DataFrameJSON[] = [];
  if (Array.isArray(json)) {
    list = json;
  } else if (json && typeof json === 'object' && 'frames' in json) {
    list = (json as { frames: DataFrameJSON[] }).frames;
  } else if (json && typeof json === 'object' && 'results' in json) {
    const results = (json as { results: Record<string, { frames?: DataFrameJSON[] }> }).results;
    list = Object.values(results).flatMap((r) => r.frames ?? []);
  }
  return list.map((frame) => dataFrameFromJSON(frame));
}

async function main() {
  const params = new URLSearchParams(window.location.search);
  const mode = params.get('theme') === 'light' ? 'light' : 'dark';
  const width = Number(params.get('width') ?? 1200);
  const height = Number(params.get('height') ?? 700);
  const framesUrl = params.get('frames') ?? '/tests/harness/build/sample-frames.json';
  const theme = createTheme({ colors: { mode } });

  document.body.style.margin = '0';
  document.body.style.background = theme.colors.background.canvas;
  document.body.style.color = theme.colors.text.primary;
  document.body.style.fontFamily = theme.typography.fontFamily;
  document.body.style.fontSize = `${theme.typography.fontSize}px`;

  const [{ plugin }, framesJson] = await Promise.all([
    loadPanelModule(),
    fetch(framesUrl).then((r) => {
      if (!r.ok) {
        throw new Error(`could not fetch ${framesUrl}: ${r.status}`);
      }
      return r.json();
    }),
  ]);
  const Panel = plugin.panel as React.ComponentType<PanelProps<PairwisePanelOptions>>;
  const series = framesFromJSON(framesJson);

  const options: PairwisePanelOptions = {
    ...DEFAULT_OPTIONS,
    // The harness has no Grafana data source service: name the data source the Explore links open,
    // as the shipped dashboard does with its variable.
    prometheusDatasourceUid: 'pairwise-prometheus',
    ...(params.get('sortOrder') ? { sortOrder: params.get('sortOrder') as PairwisePanelOptions['sortOrder'] } : {}),
    ...(params.get('tableQuantiles')
      ? { tableQuantiles: params.get('tableQuantiles') as PairwisePanelOptions['tableQuantiles'] }
      : {}),
    ...(params.get('compact') === '1' ? { compact: true } : {}),
  };
  const unit = params.get('unit') ?? undefined;
  const timeRange = getDefaultTimeRange();
  const pad = theme.spacing.gridSize;
  const props: PanelProps<PairwisePanelOptions> = {
    id: 1,
    data: { series, state: LoadingState.Done, timeRange },
    timeRange,
    timeZone: 'utc',
    options,
    fieldConfig: { defaults: unit ? { unit } : {}, overrides: [] },
    transparent: false,
    width: width - 2 * pad,
    height: height - 2 * pad,
    renderCounter: 0,
    title: 'Pairwise canary',
    eventBus: new grafanaData.EventBusSrv(),
    onOptionsChange: () => {},
    onFieldConfigChange: () => {},
    replaceVariables: (s: string) => s,
    onChangeTimeRange: () => {},
  };

  const root = document.getElementById('root')!;
  root.style.width = `${width}px`;
  root.style.height = `${height}px`;
  root.style.boxSizing = 'border-box';
  root.style.padding = `${pad}px`;
  root.style.background = theme.colors.background.primary;
  createRoot(root).render(
    <grafanaUi.ThemeContext.Provider value={theme}>
      <Panel {...props} />
    </grafanaUi.ThemeContext.Provider>
  );
  document.body.setAttribute('data-harness', 'ready');
}

main().catch((error: Error) => {
  document.body.setAttribute('data-harness', 'error');
  document.body.setAttribute('data-harness-error', error.message);
  console.error(error);
});
