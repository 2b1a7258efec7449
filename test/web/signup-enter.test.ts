// In Chromium: pressing Enter in the sign-up page's password field creates the account with that password (the form's
// default button is the password one), not a passkey; the page still passes axe at both widths.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startTestServer, type TestServer } from "../harness.ts";
import { audit } from "./audit.ts";
import { launchChromium, type Browser } from "./chromium.ts";
import { PageClient } from "./page-client.ts";

let s: TestServer;
let browser: Browser;
let page: Page;
beforeAll(async () => {
  // localhost, not 127.0.0.1: a WebAuthn relying party is a domain, never an IP address.
  s = await startTestServer({ host: "localhost" });
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

test("Enter in the password field signs up with the password", async () => {
  await page.goto(`${s.url}/signup`);
  await audit(page, "signup-password-first");
  await page.getByLabel("Handle").fill("enter-ann");
  await page.getByLabel("Display name").fill("Ann Enter");
  await page.getByLabel("Password").fill("a long and unusual phrase");
  const loaded = page.waitForEvent("domcontentloaded", { timeout: 10_000 });
  await page.getByLabel("Password").press("Enter");
  await loaded.catch(async () => {
    throw new Error(`Enter signed nobody up: ${(await page.locator("main").textContent())?.slice(0, 300)}`);
  });
  await expect(page.locator("main").textContent()).resolves.toContain("Start here");
  // The password is the account's: a fresh browser signs in with it.
  const b = new PageClient(s.url);
  await b.get("/signin");
  expect((await b.post("/signin/password", { handle: "enter-ann", password: "a long and unusual phrase" })).location).toBe("/account");
}, 120_000);
