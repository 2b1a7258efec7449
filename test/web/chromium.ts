// Headless Chromium for the browser tests: Debian's package (installed by ensure-chromium.sh when missing; the
// browser is never downloaded), driven by playwright-core in a throwaway profile.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(viewport = { width: 800, height: 900 }): Promise<Browser> {
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
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
