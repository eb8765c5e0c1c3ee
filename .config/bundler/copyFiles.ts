import { getPluginJson, hasReadme } from './utils.ts';

const pluginJson = getPluginJson();
const logoPaths: string[] = Array.from(new Set([pluginJson.info?.logos?.large, pluginJson.info?.logos?.small])).filter(
  Boolean
);
const screenshotPaths: string[] = pluginJson.info?.screenshots?.map((s: { path: string }) => s.path) || [];

export const copyFilePatterns = [
  // If src/README.md exists use it; otherwise the root README
  // To `compiler.options.output`
  { from: hasReadme() ? 'README.md' : '../README.md', to: '.', force: true },
  { from: 'plugin.json', to: '.' },
  { from: '../LICENSE', to: '.', noErrorOnMissing: true },
  { from: '../CHANGELOG.md', to: '.', force: true, noErrorOnMissing: true },
  // Pairwise: nested plugins (datasource/, panel/) carry their own logos.
  { from: '**/img/*.svg', to: '.', noErrorOnMissing: true },
  // plugin.json files; the front end's contract.json is bundled into module.js instead.
  { from: '**/*.json', to: '.', globOptions: { ignore: ['**/contract.json'] } },
  { from: '**/query_help.md', to: '.', noErrorOnMissing: true },
  // Pairwise: the canary dashboard has one source, dashboards/canary.json at the root.
  { from: '../dashboards/canary.json', to: 'dashboards/canary.json' },
  ...logoPaths.map((logoPath) => ({ from: logoPath, to: logoPath })),
  ...screenshotPaths.map((screenshotPath) => ({
    from: screenshotPath,
    to: screenshotPath,
  })),
];
