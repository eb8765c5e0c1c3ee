/**
 * The background images the page's style rules give an element, in rule order. jsdom drops
 * gradients from inline and computed styles but keeps the text of the rules Emotion inserts, so a
 * test can tell a cell's pattern from the rules whose selector matches it.
 */
export function backgroundImagesOf(el: Element): string[] {
  const images: string[] = [];
  for (const sheet of Array.from(document.styleSheets)) {
    for (const rule of Array.from(sheet.cssRules)) {
      if (!(rule instanceof CSSStyleRule) || !matches(el, rule.selectorText)) {
        continue;
      }
      const image = /background-image:\s*([^;}]+)/.exec(rule.cssText)?.[1]?.trim();
      if (image) {
        images.push(image);
      }
    }
  }
  return images;
}

function matches(el: Element, selector: string): boolean {
  try {
    return el.matches(selector);
  } catch {
    return false;
  }
}
