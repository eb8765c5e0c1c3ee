import { createTheme, GrafanaTheme2 } from '@grafana/data';
import { decisionColor, decisionPatterns, verdictColors, verdictPatterns } from './verdictStyle';

const THEMES: Array<[string, GrafanaTheme2]> = [
  ['dark', createTheme({ colors: { mode: 'dark' } })],
  ['light', createTheme({ colors: { mode: 'light' } })],
];

/** The hue (0-360°) of a #rrggbb colour. */
function hue(hex: string): number {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) {
    throw new Error(`not a #rrggbb colour: ${hex}`);
  }
  const [r, g, b] = m.slice(1).map((h) => parseInt(h, 16) / 255);
  const max = Math.max(r, g, b);
  const d = max - Math.min(r, g, b);
  if (d === 0) {
    return 0;
  }
  const h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
  return (h * 60 + 360) % 360;
}

/** Hue ranges of the colour families a reader tells apart. */
const FAMILY = {
  red: (h: number) => h >= 320 || h <= 15,
  green: (h: number) => h >= 90 && h <= 170,
  amber: (h: number) => h >= 25 && h <= 60,
};

/** The name of the theme's visualization hue (red, green, ...) that has this colour among its shades. */
function paletteHueOf(theme: GrafanaTheme2, color: string): string | undefined {
  return theme.visualization.hues.find((h) => h.shades.some((s) => s.color.toLowerCase() === color.toLowerCase()))
    ?.name;
}

/** The rgba() colours a CSS background image draws with. */
function inks(image: string): Array<[number, number, number]> {
  return Array.from(image.matchAll(/rgba?\((\d+),\s*(\d+),\s*(\d+)/g)).map(
    (m) => [Number(m[1]), Number(m[2]), Number(m[3])] as [number, number, number]
  );
}

const isDark = ([r, g, b]: [number, number, number]) => Math.max(r, g, b) < 64;
const isLight = ([r, g, b]: [number, number, number]) => Math.min(r, g, b) > 192;

describe.each(THEMES)('verdictStyle in the %s theme', (_mode, theme) => {
  it('colours promote with the success green, rollback with the error red and hold with the warning amber', () => {
    expect(decisionColor(theme, 'promote')).toBe(theme.colors.success.main);
    expect(decisionColor(theme, 'rollback')).toBe(theme.colors.error.main);
    expect(decisionColor(theme, 'hold')).toBe(theme.colors.warning.main);
    expect(FAMILY.green(hue(decisionColor(theme, 'promote')))).toBe(true);
    expect(FAMILY.red(hue(decisionColor(theme, 'rollback')))).toBe(true);
    expect(FAMILY.amber(hue(decisionColor(theme, 'hold')))).toBe(true);
  });

  it('colours each verdict from its own hue of the visualization palette', () => {
    const colors = verdictColors(theme);
    expect(colors.good).toBe(theme.visualization.getColorByName('green'));
    expect(colors.bad).toBe(theme.visualization.getColorByName('red'));
    expect(colors.insufficient).toBe(theme.visualization.getColorByName('yellow'));
    expect(colors.partial).toBe(theme.visualization.getColorByName('purple'));
    expect(paletteHueOf(theme, colors.good)).toBe('green');
    expect(paletteHueOf(theme, colors.bad)).toBe('red');
    expect(paletteHueOf(theme, colors.insufficient)).toBe('yellow');
    expect(paletteHueOf(theme, colors.partial)).toBe('purple');
    expect(FAMILY.green(hue(colors.good))).toBe(true);
    expect(FAMILY.red(hue(colors.bad))).toBe(true);
    // Neutral is the grey of disabled text, and a no-data cell has no fill.
    expect(colors.neutral).toBe(theme.colors.text.disabled);
    expect(colors['no-data']).toBe('transparent');
  });

  it('draws rollback as a dark hatch and promote as a row of light dots through the middle', () => {
    const { rollback, promote } = decisionPatterns();
    expect(rollback.backgroundImage).toMatch(/^repeating-linear-gradient\(135deg, /);
    expect(rollback.backgroundSize).toBeUndefined();
    expect(inks(rollback.backgroundImage).length).toBeGreaterThan(0);
    expect(inks(rollback.backgroundImage).every(isDark)).toBe(true);

    expect(promote.backgroundImage).toMatch(/^radial-gradient\(circle, /);
    expect(promote.backgroundSize).toBe('4px 100%');
    expect(promote.backgroundPosition).toBe('center');
    expect(inks(promote.backgroundImage).length).toBeGreaterThan(0);
    expect(inks(promote.backgroundImage).every(isLight)).toBe(true);
  });

  it('gives bad a cross-hatch, insufficient dots, no data a single hatch and partial a shaded left half', () => {
    const patterns = verdictPatterns(theme);
    expect(patterns.bad.backgroundImage).toMatch(
      /^repeating-linear-gradient\(45deg, .*\), repeating-linear-gradient\(135deg, .*\)$/
    );
    expect(patterns.insufficient.backgroundImage).toMatch(/^radial-gradient\(/);
    expect(patterns['no-data'].backgroundImage).toMatch(/^repeating-linear-gradient\(135deg, /);
    expect(patterns['no-data'].backgroundImage).not.toContain('45deg');
    expect(patterns.partial.backgroundImage).toMatch(/^linear-gradient\(90deg, .* 50%, transparent 50%\)$/);
  });
});
