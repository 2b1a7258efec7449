// Deleting an account and downloading everything, through the pages only. In a fetch-based browser (PageClient): the
// typed handle, the proof (the current password, or a sign-in moments ago), wrong guesses counted, a browser signed
// in through a settings link (a read-only credential's, or any) refused. In Chromium: a person with only a passkey
// deletes with it (a virtual authenticator), every new page audited with axe at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { MINUTE } from "../../server/clock.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { grant } from "../auth/oauth-helpers.ts";
import { groupOf } from "../ledger/ledger-fixtures.ts";
import { audit, follow, VIEWPORTS } from "./audit.ts";
import { launchChromium, virtualAuthenticator, type Browser } from "./chromium.ts";
import { PageClient, signInWithCode } from "./page-client.ts";

let s: TestServer;
beforeAll(async () => {
  // localhost, not 127.0.0.1: a WebAuthn relying party is a domain, never an IP address.
  s = await startTestServer({ host: "localhost" });
}, 60_000);
afterAll(() => s?.stop());

const GOOD = "correct horse battery staple";
/** Past the ten minutes in which a fresh sign-in stands in for the password. */
const LATER = 11 * MINUTE;

async function signUp(handle: string): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/signup");
  expect((await b.post("/signup", { handle, display_name: handle.toUpperCase(), method: "password", password: GOOD })).status).toBe(303);
  return b;
}

/** A browser with a session on /account signed in with a code from the agent's inbox (no password, no passkey). */
async function codeBrowser(a: Agent): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/account");
  await signInWithCode(s, b, "account", a.handle, a.key);
  return b;
}

/** A browser signed in to the settings page only, through a link the credential asked for. */
async function settingsBrowser(credential: string): Promise<PageClient> {
  const link = (await s.ok("get_settings_link", {}, credential)).url as string;
  const b = new PageClient(s.url);
  const token = (await b.get(link.slice(s.url.length))).html.match(/name="token" value="([^"]+)"/)![1]!;
  expect((await b.post("/settings/link", { token })).location).toBe("/settings");
  return b;
}

const taken = async (handle: string) => (await s.call("register_agent", { handle, display_name: "Taken?" })).status === 409;
const signsIn = async (handle: string, password: string) => {
  const b = new PageClient(s.url);
  await b.get("/signin");
  return (await b.post("/signin/password", { handle, password })).status === 303;
};

describe("deleting an account in a fetch-based browser", () => {
  test("/account offers the download and the deletion; the download is one JSON file", async () => {
    const b = await signUp("acd-ann");
    const account = await b.get("/account");
    expect(account.html).toContain('<a href="/account/export" download>Download everything</a>');
    expect(account.html).toContain('<a href="/account/delete">Delete your account</a>');
    const file = await b.get("/account/export");
    expect(file.headers.get("content-disposition")).toStartWith('attachment; filename="svc-account-acd-ann-');
    expect(JSON.parse(file.html).profile.handle).toBe("acd-ann");
    // Without a session: sign in first.
    expect((await new PageClient(s.url).get("/account/export")).status).toBe(401);
  });

  test("the handle must be typed and the current password given, once the sign-in is no longer fresh; wrong guesses count", async () => {
    const b = await signUp("acd-ben");
    s.clock.advance(LATER);
    const page = await b.get("/account/delete");
    expect(page.status).toBe(200);
    expect(page.html).toContain("This deletes <strong>@acd-ben</strong> for good");
    expect(page.html).toContain('name="current"');
    const typo = await b.post("/account/delete", { confirm_handle: "acd-bem", current: GOOD });
    expect(typo.status).toBe(400);
    expect(typo.html).toContain("Type your handle, acd-ben, to confirm");
    const none = await b.post("/account/delete", { confirm_handle: "acd-ben" });
    expect(none.status).toBe(400);
    expect(none.html).toContain("Give your current password");
    const wrong = await b.post("/account/delete", { confirm_handle: "acd-ben", current: "not my password at all" });
    expect(wrong.status).toBe(400);
    expect(wrong.html).toContain("The current password is not right");
    expect(await signsIn("acd-ben", GOOD)).toBe(true);
    // Guesses here count with the sign-in page's: ten wrong ones an hour, then none is even checked.
    for (let i = 0; i < 9; i++) await b.post("/account/delete", { confirm_handle: "acd-ben", current: `wrong guess ${i}` });
    const limited = await b.post("/account/delete", { confirm_handle: "acd-ben", current: GOOD });
    expect(limited.status).toBe(429);
    expect(await signsIn("acd-ben", GOOD)).toBe(false);
    s.clock.advance(61 * MINUTE);

    const b2 = new PageClient(s.url);
    await b2.get("/signin");
    await b2.post("/signin/password", { handle: "acd-ben", password: GOOD });
    s.clock.advance(LATER);
    await b2.get("/account/delete");
    const done = await b2.post("/account/delete", { confirm_handle: "acd-ben", current: GOOD });
    expect(done.status).toBe(200);
    expect(done.html).toContain("@acd-ben was deleted");
    expect(await signsIn("acd-ben", GOOD)).toBe(false);
    expect(await taken("acd-ben")).toBe(true);
    // The other browser is signed out too.
    expect((await b.get("/account")).html).not.toContain("Signed in as");
  });

  test("without a password or passkey, a sign-in moments ago is the proof", async () => {
    const [cal, dee] = await s.contacts("acd-cal", "acd-dee");
    await groupOf(s, [cal, dee], "EUR", "Flat");
    const b = await codeBrowser(cal);
    s.clock.advance(LATER);
    const stale = await b.get("/account/delete");
    expect(stale.html).toContain("sign out and sign in again");
    expect(stale.html).toContain("Flat");
    expect((await b.post("/account/delete", { confirm_handle: "acd-cal" })).status).toBe(400);
    expect((await s.call("get_me", {}, cal.key)).status).toBe(200);
    const again = await codeBrowser(cal);
    const fresh = await again.get("/account/delete");
    expect(fresh.html).toContain("You signed in moments ago");
    const done = await again.post("/account/delete", { confirm_handle: "acd-cal" });
    expect(done.status).toBe(200);
    expect(done.html).toContain("In 1 group you stay as a former member");
    expect((await s.call("get_me", {}, cal.key)).status).toBe(401);
  });

  test("a browser signed in through a settings link, a read-only credential's or not, cannot delete", async () => {
    const eli = await s.register("acd-eli");
    const { tokens } = await grant(s, new PageClient(s.url), eli, "svc:read");
    for (const b of [await settingsBrowser(tokens.access_token), await settingsBrowser(eli.key)]) {
      expect((await b.get("/settings")).status).toBe(200);
      expect((await b.get("/account/delete")).status).toBe(401);
      // The form's token of this very session (the account page offers to sign in), so only the sign-in is lacking.
      expect((await b.get("/account")).html).toContain('name="csrf"');
      const refused = await b.post("/account/delete", { confirm_handle: "acd-eli" });
      expect(refused.status).toBe(303);
      expect(refused.location).toBe("/account");
    }
    expect((await s.call("get_me", {}, eli.key)).status).toBe(200);
  });
});

describe("deleting an account in Chromium", () => {
  let browser: Browser;
  let page: Page;
  const cspViolations: string[] = [];
  beforeAll(async () => {
    browser = await launchChromium(VIEWPORTS[0]);
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(m.text());
    });
  }, 600_000);
  afterAll(() => browser?.close());

  test("a person with only a passkey deletes their account with it; the pages pass the audit", async () => {
    const { cdp, authenticatorId } = await virtualAuthenticator(browser.context, page);
    await page.goto(`${s.url}/signup`);
    await page.getByLabel("Handle").fill("acd-key");
    await page.getByLabel("Display name").fill("Kim Passkey");
    await follow(page, page.getByRole("button", { name: "Create account with a passkey" }));
    await expect(page.locator("main").textContent()).resolves.toContain("Start here");
    await page.goto(`${s.url}/account`);
    s.clock.advance(LATER);
    await follow(page, page.getByRole("link", { name: "Delete your account" }));
    await audit(page, "account-delete");
    await expect(page.locator("main").textContent()).resolves.not.toContain("Your current password");
    await page.getByLabel("Type your handle to confirm").fill("acd-key");
    await follow(page, page.getByRole("button", { name: "Delete it, confirming with a passkey" }));
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Account deleted");
    await audit(page, "account-deleted");
    expect(await taken("acd-key")).toBe(true);
    await page.goto(`${s.url}/account`);
    await expect(page.locator("main").textContent()).resolves.not.toContain("Signed in as");
    expect(cspViolations).toEqual([]);
    await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
  }, 120_000);
});
