// The pages in headless Chromium (Debian's package, driven by playwright-core; the browser is never downloaded):
// join with a code read from the other agent's inbox, OAuth consent, the account page and the settings page.
// A screenshot of each lands in test-artifacts/.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { pkce, registerClient } from "../auth/oauth-helpers.ts";
import { launchChromium, type Browser } from "./chromium.ts";
import { inboxCode } from "./page-client.ts";

const ARTIFACTS = join(import.meta.dir, "../../test-artifacts");
let s: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let alice: Agent;
/** Where the OAuth client is sent back to: a tiny server standing in for the MCP client's redirect listener. */
let callbackServer: ReturnType<typeof Bun.serve>;
const callbacks: URL[] = [];
const cspViolations: string[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  context = browser.context;
  mkdirSync(ARTIFACTS, { recursive: true });
  s = await startTestServer();
  alice = await s.register("web-alice");
  callbackServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      callbacks.push(new URL(req.url));
      return new Response("<!doctype html><title>Client</title><p>Signed in; you can close this window.</p>", { headers: { "content-type": "text/html" } });
    },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(m.text());
  });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  callbackServer?.stop(true);
  await s?.stop();
});

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

describe("the pages in Chromium", () => {
  test("join: enter the code, prove the handle with the code from the other agent's inbox, connect", async () => {
    const j = await s.ok("join_network", { client_name: "Chromium App" });
    await page.goto(j.enter_url);
    await expect(page.getByLabel("Code shown by your app").inputValue()).resolves.toBe(j.user_code);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByLabel("Your handle").fill("web-alice");
    await page.getByRole("button", { name: "Send me a code" }).click();
    await page.getByLabel("One-time code").fill(await inboxCode(s, alice.key));
    await shot("join-code");
    await page.getByRole("button", { name: "Continue" }).click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Connect Chromium App");
    await shot("join-confirm");
    await page.getByRole("button", { name: "Connect to @web-alice" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toContain("is now connected to @web-alice");
    await shot("join-done");
    const r = await s.ok("finish_join", { poll_token: j.poll_token });
    expect(r).toMatchObject({ status: "connected", created: false });
    expect(r.agent.handle).toBe("web-alice");
  });

  test("consent: the page names the client and scopes; Allow sends the browser back with a code", async () => {
    const redirect = `http://127.0.0.1:${callbackServer.port}/callback`;
    const client = (await registerClient(s, { client_name: "Desktop Assistant", redirect_uris: [redirect] })).body;
    const { challenge } = pkce();
    const q = new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: "S256", scope: "svc:read svc:write offline_access", state: "browser-state", resource: s.url });
    await page.goto(`${s.url}/oauth/authorize?${q}`);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Allow Desktop Assistant?");
    await expect(page.locator("main").textContent()).resolves.toContain(`127.0.0.1:${callbackServer.port}`);
    await shot("consent");
    await page.getByRole("button", { name: "Allow" }).click();
    await page.waitForURL(/\/callback\?/);
    // Chromium may also ask the callback server for /favicon.ico after the page loads.
    const back = callbacks.findLast((u) => u.pathname === "/callback")!;
    expect(back.searchParams.get("state")).toBe("browser-state");
    expect(back.searchParams.get("code")).toStartWith("code_");
  });

  test("account: the clients are listed, and a new API key is shown once", async () => {
    await page.goto(`${s.url}/account`);
    await expect(page.locator("table").textContent()).resolves.toContain("Chromium App");
    await page.getByLabel("Name of the app that will use it").fill("Script on my laptop");
    await page.getByRole("button", { name: "Create API key" }).click();
    const key = (await page.locator("#new-key").textContent())!;
    expect((await s.ok("get_me", {}, key)).agent.handle).toBe("web-alice");
    await shot("account");
    await page.goto(`${s.url}/account`);
    expect(await page.locator("#new-key").count()).toBe(0);
    await expect(page.locator("table").textContent()).resolves.toContain("Script on my laptop");
  });

  test("settings: the link from get_settings_link opens the page, which saves the profile", async () => {
    const link = await s.ok("get_settings_link", {}, alice.key);
    await page.goto(link.url);
    await page.getByRole("button", { name: "Open my settings" }).click();
    await page.getByLabel("Display name").fill("Alice in Chromium");
    await page.getByLabel("About you").fill("Pays for the pizza");
    await page.getByRole("button", { name: "Save" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toBe("Saved.");
    await shot("settings");
    expect((await s.ok("get_me", {}, alice.key)).agent).toMatchObject({ display_name: "Alice in Chromium", description: "Pays for the pizza" });
    await page.goto(link.url);
    await expect(page.getByRole("alert").textContent()).resolves.toContain("expired or was already used");
  });

  test("no page broke its own Content-Security-Policy", () => {
    expect(cspViolations).toEqual([]);
  });
});
