// The accessibility and layout check of a page in Chromium, for browser tests beyond pages.test.ts: axe-core (run
// through the DevTools protocol, which the page's CSP does not govern) finds no serious or critical violation at
// 1280 and 390 px, nothing scrolls sideways, and a screenshot lands in test-artifacts/.
import { expect } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";

const ROOT = join(import.meta.dir, "../..");
const ARTIFACTS = join(ROOT, "test-artifacts");
const AXE_SOURCE = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");
export const VIEWPORTS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
];

/** Audits the page as it is now at each width; ends at 1280 px. */
export async function audit(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const viewport of VIEWPORTS) {
    await page.setViewportSize(viewport);
    // These functions run in the page, where globalThis is the window (the DOM's types are not in this project's).
    if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(AXE_SOURCE);
    const violations: { id: string; impact: string; help: string; targets: string[] }[] = await page.evaluate(async () => {
      const result = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ["violations"] });
      return result.violations.map((v: any) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        targets: v.nodes.slice(0, 3).map((n: any) => n.target.join(" ")),
      }));
    });
    const width = await page.evaluate(() => ({ scroll: (globalThis as any).document.documentElement.scrollWidth, inner: (globalThis as any).innerWidth }));
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${viewport.width}.png`), fullPage: true });
    expect({
      name,
      viewport: viewport.width,
      serious: violations.filter((v) => v.impact === "serious" || v.impact === "critical"),
      sideways: width.scroll > width.inner ? width : null,
    }).toEqual({ name, viewport: viewport.width, serious: [], sideways: null });
  }
  await page.setViewportSize(VIEWPORTS[0]!);
}

/** Clicks what leads to another page and waits for that page's document (a read made at once could meet the old one). */
export async function follow(page: Page, target: Locator): Promise<void> {
  const loaded = page.waitForEvent("domcontentloaded");
  await target.click();
  await loaded.catch(async (err: unknown) => {
    throw new Error(`no new page after the click: ${err} at ${page.url()}: ${(await page.locator("body").textContent())?.slice(0, 500)}`);
  });
}
