import { PanelOptionsEditorBuilder, standardEditorsRegistry } from '@grafana/data';
import { plugin } from './module';
import { DEFAULT_OPTIONS } from './types';

// Grafana registers its option editors at start-up; stand-ins are enough to run the builder.
standardEditorsRegistry.setInit(() => ['boolean', 'radio', 'text'].map((id) => ({ id, name: id, editor: () => null })));

describe('panel plugin options', () => {
  const items = () => {
    // The builder runs lazily; run it the way Grafana does.
    const builder = new PanelOptionsEditorBuilder<typeof DEFAULT_OPTIONS>();
    plugin.getPanelOptionsSupplier()(builder, { data: [] });
    return builder.getItems();
  };

  it('takes every default from types.ts', () => {
    const defaults = Object.fromEntries(items().map((item) => [item.path, item.defaultValue]));
    expect(defaults).toEqual(DEFAULT_OPTIONS);
  });

  it('groups options and hides table options when the table is off', () => {
    const byPath = Object.fromEntries(items().map((item) => [item.path, item]));
    expect(byPath.showBanner.category).toEqual(['Layout']);
    expect(byPath.sortOrder.showIf?.({ ...DEFAULT_OPTIONS, showTable: false }, undefined)).toBe(false);
    expect(byPath.tableQuantiles.showIf?.({ ...DEFAULT_OPTIONS, showTable: true }, undefined)).toBe(true);
  });
});
