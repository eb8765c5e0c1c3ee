import fs from 'fs';
import path from 'path';

const read = (rel: string) => JSON.parse(fs.readFileSync(path.join(__dirname, rel), 'utf8'));

describe('plugin.json files', () => {
  const app = read('plugin.json');
  const datasource = read('datasource/plugin.json');
  const panel = read('panel/plugin.json');

  it('declares the app without an executable of its own', () => {
    expect(app.id).toBe('pairwise-canary-app');
    expect(app.type).toBe('app');
    expect(app.backend).toBeFalsy();
    expect(app.executable).toBeUndefined();
  });

  it('includes the nested data source and panel with matching types', () => {
    const byPath = (p: string) => app.includes.find((i: { path: string }) => i.path === p);
    expect(byPath('datasource/plugin.json')).toMatchObject({ type: datasource.type });
    expect(byPath('panel/plugin.json')).toMatchObject({ type: panel.type });
    expect(byPath('dashboards/canary.json')).toMatchObject({ type: 'dashboard' });
  });

  it('declares a backend, alerting data source run by gpx_pairwise', () => {
    expect(datasource).toMatchObject({
      id: 'pairwise-canary-datasource',
      type: 'datasource',
      backend: true,
      alerting: true,
      metrics: true,
      executable: 'gpx_pairwise',
    });
  });

  it('declares the panel', () => {
    expect(panel).toMatchObject({ id: 'pairwise-canary-panel', type: 'panel' });
    expect(panel.backend).toBeFalsy();
  });

  it('gives each nested plugin its own module', () => {
    for (const dir of ['.', 'datasource', 'panel']) {
      const hasModule = ['module.ts', 'module.tsx'].some((m) => fs.existsSync(path.join(__dirname, dir, m)));
      expect(hasModule).toBe(true);
    }
  });
});
