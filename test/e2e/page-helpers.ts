/// <reference lib="dom" />
import { expect, type Page } from '@playwright/test';

export type Theme = 'light' | 'dark';
/** The two widths every view is checked at: a narrow window and a laptop. */
export const WIDTHS = [800, 1440] as const;

/** Open `hash` at `width` in `theme` (the theme is the one the console remembers per browser). */
export async function openAt(page: Page, url: string, hash: string, width: number, theme: Theme): Promise<void> {
  await page.setViewportSize({ width, height: 900 });
  await page.evaluate((t) => localStorage.setItem('lightworker.theme', t), theme);
  await page.goto(`${url}${hash}`);
  await page.reload();
  await expect(page.locator('html')).toHaveAttribute('data-theme', theme);
}

export async function noSidewaysScroll(page: Page, width: number): Promise<void> {
  const sw = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(sw, `the page scrolls sideways at ${width} px`).toBeLessThanOrEqual(width);
}

/**
 * The page as it stands, at both widths in both themes (switched in place, without a reload, so state
 * such as a banner or a form's error stays): no sideways scrolling, a screenshot `<name>-<theme>-<width>`.
 */
export async function shootEverySize(page: Page, shot: (page: Page, name: string) => Promise<void>, name: string): Promise<void> {
  for (const width of WIDTHS) {
    for (const theme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width, height: 900 });
      // The theme button, as a user switches: the page keeps its state, the button its label.
      if ((await page.locator('html').getAttribute('data-theme')) !== theme) await page.locator('nav.side button[aria-label^="switch to"]').click();
      await expect(page.locator('html')).toHaveAttribute('data-theme', theme);
      await noSidewaysScroll(page, width);
      await shot(page, `${name}-${theme}-${width}`);
    }
  }
}

/**
 * WCAG contrast of the text of the first element matching `selector` against what is really behind it:
 * the element's and its ancestors' backgrounds, composited (diff2html uses translucent line colours).
 */
export async function contrastOf(page: Page, selector: string): Promise<number> {
  const r = await contrastDetail(page, selector);
  return r.ratio;
}

export async function contrastDetail(page: Page, selector: string): Promise<{ ratio: number; fg: string; bg: string; what: string }> {
  return page.locator(selector).first().evaluate((el) => {
    const parse = (c: string): number[] => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) throw new Error(`unparsed colour ${c}`);
      const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const layers: number[][] = [];
    for (let n: Element | null = el; n; n = n.parentElement) {
      const bg = parse(getComputedStyle(n).backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] >= 1) break;
    }
    let base = [255, 255, 255];
    for (const l of layers.reverse()) base = base.map((v, i) => l[i] * l[3] + v * (1 - l[3]));
    const fg0 = parse(getComputedStyle(el).color);
    const fg = base.map((v, i) => fg0[i] * fg0[3] + v * (1 - fg0[3]));
    const lum = (c: number[]) => {
      const [r, g, b] = c.map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [hi, lo] = [lum(fg), lum(base)].sort((a, b) => b - a);
    const what = `${el.tagName.toLowerCase()}.${(el.getAttribute('class') ?? '').replace(/ +/g, '.')} in ${el.parentElement?.className ?? ''}`;
    return { ratio: (hi + 0.05) / (lo + 0.05), fg: fg.map(Math.round).join(','), bg: base.map(Math.round).join(','), what };
  });
}
