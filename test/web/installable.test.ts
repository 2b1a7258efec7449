// svc as an installable app (server/web/webapp.ts, sw.js): the manifest and its icons are served with their types
// and sizes, every page links the manifest and registers the service worker, and Chromium finds the app installable.
// A page read while signed in is shown offline as it was read, with the offline banner and its forms disabled; a page
// not read says it was not saved; nothing but the pages read is kept. After signing out (Clear-Site-Data, and the
// worker told), or once a page is answered to a browser no one is signed in to, nothing read before is shown offline.
// Headers through plain HTTP; the rest in Chromium (test/web/chromium.ts), offline as the browser context emulates it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { groupOf } from "../ledger/ledger-fixtures.ts";
import { follow } from "./audit.ts";
import { launchChromium, type Browser } from "./chromium.ts";
import { inboxCode, PageClient, signInWithCode } from "./page-client.ts";

const BANNER = "You are offline: this is the page as you last saw it; nothing can be changed.";

let s: TestServer;
let browser: Browser;
let page: Page;
let ann: Agent;
let groupPath: string;

beforeAll(async () => {
  s = await startTestServer();
  ann = await s.register("in-ann", { display_name: "Ann" });
  const bob = await s.register("in-bob", { display_name: "Bob" });
  const g = await groupOf(s, [ann, bob], "EUR", "Ferry trip");
  await s.ok("add_expense", { group_id: g.group_id, description: "Ferry tickets", amount: "42.00" }, ann.key);
  groupPath = `/groups/${g.group_id}`;
  browser = await launchChromium({ width: 390, height: 844 }, { serviceWorkers: "allow" });
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

/** Width and height of a PNG, from its header. */
function pngSize(bytes: Uint8Array): { width: number; height: number } {
  expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** Signs the browser in as Ann through the sign-in page, with the code left in her agent's inbox. */
async function signIn() {
  await page.goto(`${s.url}/signin`);
  await page.getByLabel("Your handle").fill("in-ann");
  await follow(page, page.getByRole("button", { name: "Send me a code" }));
  await page.getByLabel("One-time code").fill(await inboxCode(s, ann.key));
  await follow(page, page.getByRole("button", { name: "Continue" }));
  await expect(page.locator("main").textContent()).resolves.toContain("Signed in as @in-ann");
}

/** The addresses (path and query) the service worker keeps, as the page sees its caches. */
const kept = (): Promise<string[]> =>
  page.evaluate(async () => {
    const out: string[] = [];
    const all = (globalThis as any).caches;
    for (const name of await all.keys()) for (const req of await (await all.open(name)).keys()) out.push(new URL(req.url).pathname + new URL(req.url).search);
    return out.sort();
  });

/**
 * Waits until the worker keeps the page at `path` (or, `false`, keeps no page at all): it stores a page after answering
 * with it, so the cache is read again until it shows (15 s at most).
 */
async function keptOrNot(path: string, present: boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const paths = await kept();
    if (present ? paths.includes(path) : paths.length === 0) return;
    if (Date.now() > deadline) throw new Error(`the worker keeps ${JSON.stringify(paths)}, waiting for ${present ? path : "nothing"}`);
    await Bun.sleep(50);
  }
}

/** Opens a page while offline: the worker's answer, or Chromium's own error when no worker answers. */
async function offlineText(path: string): Promise<string> {
  try {
    await page.goto(`${s.url}${path}`);
  } catch {
    return "";
  }
  return (await page.locator("body").textContent()) ?? "";
}

describe("the manifest, the icons and the worker, as served", () => {
  test("the manifest names the app and its icons, each a PNG of its size; the worker's script is scoped to every page", async () => {
    const manifest = await s.raw("/manifest.webmanifest");
    expect(manifest.headers.get("content-type")).toStartWith("application/manifest+json");
    const m = (await manifest.json()) as any;
    expect(m).toMatchObject({ name: "svc", start_url: "/", scope: "/", display: "standalone" });
    const purposes = [];
    for (const icon of m.icons) {
      const res = await s.raw(icon.src);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      const { width, height } = pngSize(new Uint8Array(await res.arrayBuffer()));
      expect(`${width}x${height}`).toBe(icon.sizes);
      purposes.push(`${icon.sizes} ${icon.purpose}`);
    }
    expect(purposes.sort()).toEqual(["192x192 any", "512x512 any", "512x512 maskable"]);
    expect((await s.raw("/icons/nothing.png")).status).toBe(404);
    const worker = await s.raw("/sw.js");
    expect(worker.headers.get("content-type")).toStartWith("text/javascript");
    expect(worker.headers.get("cache-control")).toBe("no-cache");
    expect(worker.headers.get("service-worker-allowed")).toBe("/");
    expect(await worker.text()).toContain(JSON.stringify(BANNER).slice(1, -1));
  });

  test("a page read signed in is marked for the worker with an id of its reader; one read signed out makes it forget; a link's secret page is not kept", async () => {
    const b = new PageClient(s.url);
    const out = await b.get("/groups");
    expect(out.headers.get("x-svc-offline")).toBe("forget");
    expect(out.html).toContain('<link rel="manifest" href="/manifest.webmanifest">');
    expect(out.html).toContain('<script src="/assets/app.js" defer></script>');
    await signInWithCode(s, b, "groups", "in-ann", ann.key);
    const mark = (await b.get(groupPath)).headers.get("x-svc-offline");
    expect(mark).toMatch(/^keep [A-Za-z0-9_-]{22}$/);
    expect(mark).not.toContain(ann.agent_id);
    expect((await b.get("/groups")).headers.get("x-svc-offline")).toBe(mark);
    // A link that signs in is a secret of its address: neither kept nor forgetting.
    expect((await b.get("/account/reset/not-a-token")).headers.get("x-svc-offline")).toBeNull();
    // The API is never a page to keep.
    expect((await s.raw("/v1/tools")).headers.get("x-svc-offline")).toBeNull();
    // Signing out clears the site's data in the browser.
    await b.get("/account");
    const signedOut = await b.post("/account/signout", { flow: "account" });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("clear-site-data")).toBe('"cache", "storage"');
  });
});

describe("in Chromium", () => {
  test("installable: the page links the manifest, the worker controls the pages, and Chromium reports nothing in the way", async () => {
    await signIn();
    await page.goto(`${s.url}/`);
    await page.waitForFunction(() => (globalThis as any).navigator.serviceWorker.controller !== null, undefined, { timeout: 15_000 });
    const scope = await page.evaluate(async () => (await (globalThis as any).navigator.serviceWorker.ready).scope);
    expect(scope).toBe(`${s.url}/`);
    const cdp = await browser.context.newCDPSession(page);
    const manifest = await cdp.send("Page.getAppManifest");
    expect(manifest.errors).toEqual([]);
    expect(manifest.url).toBe(`${s.url}/manifest.webmanifest`);
    const { installabilityErrors } = await cdp.send("Page.getInstallabilityErrors");
    expect(installabilityErrors).toEqual([]);
  }, 120_000);

  test("a page read online is shown offline as it was, marked and read-only; a page not read says so; only pages read are kept", async () => {
    await page.goto(`${s.url}${groupPath}`);
    await expect(page.locator("main").textContent()).resolves.toContain("Ferry tickets");
    await keptOrNot(groupPath, true);
    // The pages read since signing in (the account page the sign-in ended on, the dashboard, the group's page at its
    // address without the view id), and nothing else: no script, icon, manifest or API answer.
    expect(await kept()).toEqual(["/", "/account", groupPath].sort());

    await browser.context.setOffline(true);
    try {
      await page.goto(`${s.url}${groupPath}`);
      await expect(page.getByRole("status").first().textContent()).resolves.toBe(BANNER);
      await expect(page.locator("main").textContent()).resolves.toContain("Ferry tickets");
      // Every form's controls are disabled: nothing can be sent.
      const controls = page.locator("main form button, main form input:not([type=hidden]), main form select, main form textarea");
      expect(await controls.count()).toBeGreaterThan(0);
      for (const control of await controls.all()) expect(await control.isDisabled()).toBe(true);
      // A page of the same person not read on this device.
      const notRead = await offlineText("/contacts");
      expect(notRead).toContain("this page was not saved on this device");
      expect(notRead).not.toContain("Ferry tickets");
    } finally {
      await browser.context.setOffline(false);
    }
  }, 120_000);

  test("after signing out, nothing read before is shown offline", async () => {
    await page.goto(`${s.url}/account`);
    await follow(page, page.getByRole("button", { name: "Sign out", exact: true }));
    await expect(page.locator("main").textContent()).resolves.not.toContain("Signed in as");
    expect(await kept()).toEqual([]);
    await browser.context.setOffline(true);
    try {
      const shown = await offlineText(groupPath);
      expect(shown).not.toContain("Ferry tickets");
      expect(shown).not.toContain(BANNER);
    } finally {
      await browser.context.setOffline(false);
    }
  }, 120_000);

  test("a page answered to a browser no one is signed in to (the session ended) makes the worker forget every page it kept", async () => {
    await signIn();
    await page.goto(`${s.url}${groupPath}`);
    await page.waitForFunction(() => (globalThis as any).navigator.serviceWorker.controller !== null, undefined, { timeout: 15_000 });
    await page.reload();
    await keptOrNot(groupPath, true);
    // The session ends without a sign-out (its cookie gone, as when it expires): the next page is a stranger's.
    await browser.context.clearCookies();
    await page.goto(`${s.url}/groups`);
    await expect(page.locator("main").textContent()).resolves.toContain("Sign in to see your groups");
    await keptOrNot(groupPath, false);
    await browser.context.setOffline(true);
    try {
      expect(await offlineText(groupPath)).not.toContain("Ferry tickets");
    } finally {
      await browser.context.setOffline(false);
    }
  }, 120_000);
});
