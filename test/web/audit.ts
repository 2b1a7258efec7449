// The accessibility and layout check of a page in Chromium, for browser tests beyond pages.test.ts: axe-core (run
// through the DevTools protocol, which the page's CSP does not govern) finds no serious or critical violation at
// 1280 and 390 px (and, when asked, in the dark color scheme too), nothing scrolls sideways, and with
// SVC_TEST_SCREENSHOTS=1 a screenshot lands in test-artifacts/ (a full-page PNG costs more than axe's run: off by default).
import { expect } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";

const ROOT = join(import.meta.dir, "../..");
const ARTIFACTS = join(ROOT, "test-artifacts");
/** Whether browser tests keep a screenshot of each page they audit or show (test-artifacts/). */
export const SCREENSHOTS = process.env.SVC_TEST_SCREENSHOTS === "1";
const AXE_SOURCE = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");
export const VIEWPORTS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
];

export interface AuditOptions {
  /**
   * Also in the dark color scheme (prefers-color-scheme: dark), where the colours of the page's own style change, and
   * with axe's check that a control's accessible name contains its visible words (label-content-name-mismatch, WCAG
   * 2.5.3), which axe leaves off by default.
   */
  full?: boolean;
}

/** Audits the page as it is now at each width (and, `full`, in both color schemes); ends at 1280 px in light. */
export async function audit(page: Page, name: string, o: AuditOptions = {}): Promise<void> {
  if (SCREENSHOTS) mkdirSync(ARTIFACTS, { recursive: true });
  const schemes = o.full ? (["light", "dark"] as const) : (["light"] as const);
  const rules = o.full ? { "label-content-name-mismatch": { enabled: true } } : {};
  for (const viewport of VIEWPORTS) {
    await page.setViewportSize(viewport);
    for (const colorScheme of schemes) {
      await page.emulateMedia({ colorScheme });
      // These functions run in the page, where globalThis is the window (the DOM's types are not in this project's).
      if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(AXE_SOURCE);
      const violations: { id: string; impact: string; help: string; targets: string[]; first: string }[] = await page.evaluate(async (rules) => {
        const result = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ["violations"], rules });
        return result.violations.map((v: any) => ({
          id: v.id,
          impact: v.impact,
          help: v.help,
          targets: v.nodes.slice(0, 3).map((n: any) => n.target.join(" ")),
          // What axe found at the first of them (the colours and the ratio of a contrast), to say what to fix.
          first: v.nodes[0]?.failureSummary ?? "",
        }));
      }, rules);
      const width = await page.evaluate(() => ({ scroll: (globalThis as any).document.documentElement.scrollWidth, inner: (globalThis as any).innerWidth }));
      const shot = `${name}-${viewport.width}${colorScheme === "dark" ? "-dark" : ""}`;
      if (SCREENSHOTS) await page.screenshot({ path: join(ARTIFACTS, `${shot}.png`), fullPage: true });
      expect({
        name,
        viewport: viewport.width,
        colorScheme,
        serious: violations.filter((v) => v.impact === "serious" || v.impact === "critical"),
        sideways: width.scroll > width.inner ? width : null,
      }).toEqual({ name, viewport: viewport.width, colorScheme, serious: [], sideways: null });
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
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
