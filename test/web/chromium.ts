// Headless Chromium for the browser tests: Debian's package (installed by ensure-chromium.sh when missing; the
// browser is never downloaded), driven by playwright-core in a throwaway profile.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * `where`: the browser's time zone and language (Playwright's own by default). `serviceWorkers`: "allow" for the
 * tests about the pages kept for reading offline (sw.js); elsewhere the worker is blocked, since it stands in every
 * navigation (a fetch through it, then a write to its cache) and makes each page load slower without being tested.
 */
export async function launchChromium(
  viewport = { width: 800, height: 900 },
  where: { timezoneId?: string; locale?: string; serviceWorkers?: "allow" | "block" } = {},
): Promise<Browser> {
  const setup = Bun.spawnSync(["bash", join(import.meta.dir, "ensure-chromium.sh")], { stdout: "inherit", stderr: "inherit" });
  if (setup.exitCode !== 0) throw new Error("Chromium could not be installed (test/web/ensure-chromium.sh)");
  const profile = mkdtempSync(join(tmpdir(), "svc-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport,
    serviceWorkers: "block",
    ...where,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A virtual authenticator on the page, through the DevTools protocol: passkeys made and used on it need no person.
 * Returns the DevTools session and the authenticator's id (to list or remove its credentials).
 */
export async function virtualAuthenticator(context: BrowserContext, page: Page, transport: "internal" | "usb" = "internal") {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport, hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { cdp, authenticatorId };
}

/** Opens the rest of the expense form from its one-line summary, as a person taps it (nothing when it is open). */
export async function showAllFields(page: Page): Promise<void> {
  const more = page.locator("details.more");
  if ((await more.count()) && !(await more.evaluate((d) => (d as unknown as { open: boolean }).open))) await more.locator("summary").click();
}
