import fs from 'fs';
import path from 'path';
import {
  applyFieldOverrides,
  createTheme,
  DataFrame,
  FieldConfigOptionsRegistry,
  FieldConfigPropertyItem,
  FieldConfigSource,
  FieldType,
} from '@grafana/data';
import { goldenFrames } from './panel/testing/goldens';

interface Override {
  matcher: { id: string; options?: unknown };
  properties: Array<{ id: string; value?: unknown }>;
}

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Array<{ queryType?: string }>;
  fieldConfig: { defaults: { unit?: string; custom?: Record<string, unknown> }; overrides: Override[] };
}

const dashboard: { panels: Panel[] } = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', 'dashboards', 'canary.json'), 'utf8')
);

/**
 * The two properties these panels set, registered as Grafana's own registry has them (unit a standard
 * option, hideFrom the timeseries panel's custom one), so that applyFieldOverrides, the function Grafana
 * runs, resolves each field: the data source's config, the panel's defaults, then every matching override.
 */
const registry = new FieldConfigOptionsRegistry(() =>
  [
    { id: 'unit', path: 'unit', isCustom: false },
    { id: 'custom.hideFrom', path: 'hideFrom', isCustom: true },
  ].map(
    (item) =>
      ({
        ...item,
        name: item.id,
        editor: () => null,
        override: () => null,
        process: (value: unknown) => value,
        shouldApply: () => true,
      }) as unknown as FieldConfigPropertyItem
  )
);

function resolved(panel: Panel, frame: DataFrame) {
  const [out] = applyFieldOverrides({
    data: [frame],
    fieldConfig: panel.fieldConfig as unknown as FieldConfigSource,
    fieldConfigRegistry: registry,
    replaceVariables: (v: string) => v,
    theme: createTheme(),
  });
  return out.fields.map((field) => ({
    name: field.name,
    type: field.type,
    unit: field.config.unit,
    drawn: !(field.config.custom?.hideFrom as Record<string, boolean> | undefined)?.viz,
  }));
}

describe('dashboards/canary.json', () => {
  it("draws on the pods panel's latency axis only the Pods fields that are seconds", () => {
    const podsPanels = dashboard.panels.filter(
      (p) => p.type === 'timeseries' && p.targets?.some((t) => t.queryType === 'pods')
    );
    expect(podsPanels.map((p) => p.id)).toContain(17);
    // The Pods frame as the data source writes it: min, median and max in seconds, pods a count.
    // (The panel's partitionByValues keeps the field names, which the matchers read.)
    const frame = goldenFrames('hour').find((f) => f.name === 'pods')!;
    for (const panel of podsPanels) {
      const fields = resolved(panel, frame);
      const drawn = fields.filter((field) => field.type === FieldType.number && field.drawn);
      expect(drawn.map((f) => f.name)).toEqual(['min', 'median', 'max']);
      // Each field drawn in its own unit: no count shown as seconds.
      for (const field of drawn) {
        expect(field.unit).toBe(frame.fields.find((f) => f.name === field.name)!.config.unit);
      }
      expect(fields.find((f) => f.name === 'pods')!.unit).not.toBe('s');
    }
  });

  it("gives each Pairwise panel's queries one analysis: only their query type differs", () => {
    // The panel refuses frames of queries that differ (queriesDisagree); the shipped dashboard must not need that.
    const panels = dashboard.panels.filter((p) => p.type === 'pairwise-canary-panel');
    expect(panels.length).toBeGreaterThan(0);
    for (const panel of panels) {
      const analyses = new Set(
        (panel.targets ?? []).map((t) => {
          const { refId: _refId, queryType: _queryType, ...rest } = t as Record<string, unknown>;
          return JSON.stringify(rest);
        })
      );
      expect(panel.targets?.map((t) => t.queryType)).toEqual(['minutes', 'decision', 'pods']);
      expect(analyses.size).toBe(1);
    }
  });
});
