import fs from 'fs';
import path from 'path';
import { DataFrame, Field, FieldType, fieldMatchers } from '@grafana/data';
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
 * A field's unit and hideFrom as Grafana resolves them (applyFieldOverrides): the data source's config,
 * then the panel's defaults where it sets none, then every override whose matcher (@grafana/data's
 * field matchers) matches the field.
 */
function resolve(panel: Panel, field: Field, frame: DataFrame) {
  let unit = field.config.unit ?? panel.fieldConfig.defaults.unit;
  let hideFrom = panel.fieldConfig.defaults.custom?.hideFrom as Record<string, boolean> | undefined;
  for (const override of panel.fieldConfig.overrides) {
    const matches = fieldMatchers.get(override.matcher.id).get(override.matcher.options);
    if (!matches(field, frame, [frame])) {
      continue;
    }
    for (const property of override.properties) {
      if (property.id === 'unit') {
        unit = property.value as string;
      } else if (property.id === 'custom.hideFrom') {
        hideFrom = property.value as Record<string, boolean>;
      }
    }
  }
  return { unit, drawn: !hideFrom?.viz };
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
      const drawn = frame.fields
        .filter((field) => field.type === FieldType.number)
        .map((field) => ({ name: field.name, own: field.config.unit, ...resolve(panel, field, frame) }))
        .filter((field) => field.drawn);
      expect(drawn.map((f) => f.name)).toEqual(['min', 'median', 'max']);
      // Each field drawn in its own unit: no count shown as seconds.
      for (const field of drawn) {
        expect(field.unit).toBe(field.own);
      }
      const pods = frame.fields.find((f) => f.name === 'pods')!;
      expect(resolve(panel, pods, frame).unit).not.toBe('s');
    }
  });
});
