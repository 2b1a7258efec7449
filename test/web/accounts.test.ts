// Accounts for people, through the pages only. In a fetch-based browser (PageClient): what sign-up refuses, a
// password sign-in that says nothing about the handle, the guess limits, reset links, signing out everywhere.
// In Chromium: sign-up with a password and with a passkey (a virtual authenticator over the DevTools protocol),
// signing out and in again, and every new page audited with axe at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createResetLink } from "../../server/auth/reset-links.ts";
import { HOUR } from "../../server/clock.ts";
import { agentByHandle } from "../../server/domain/agents.ts";
import { createPlatformInvite } from "../../server/domain/platform-invites.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import type { Page } from "playwright-core";
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

async function signUp(b: PageClient, handle: string, password: string) {
  await b.get("/signup");
  return b.post("/signup", { handle, display_name: handle.toUpperCase(), method: "password", password });
}

/** A browser that holds a session (its first page) but has not signed in. */
async function fresh(): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/signin");
  return b;
}

const signedInAs = async (b: PageClient, handle: string) => (await b.get("/account")).html.includes(`Signed in as <strong>@${handle}</strong>`);

describe("accounts in a fetch-based browser", () => {
  test("/ offers a browser without a session to create an account or sign in", async () => {
    const home = await s.raw("/", { headers: { accept: "text/html" } });
    const text = await home.text();
    expect(text).toContain('<a href="/signup">Create an account</a>');
    expect(text).toContain('<a href="/signin">Sign in</a>');
  });

  test("pages load only this server's scripts; only those that offer passkeys load the passkey script and may fetch", async () => {
    const b = new PageClient(s.url);
    for (const path of ["/signin", "/signup"]) {
      const r = await b.get(path);
      expect(r.headers.get("content-security-policy")).toContain("script-src 'self'; connect-src 'self'");
      expect(r.html).toContain('<script src="/assets/passkey.js" defer></script>');
    }
    // Every other page loads only app.js (the service worker's registration), and may fetch nothing.
    for (const path of ["/settings", "/docs"]) {
      const r = await b.get(path);
      expect(r.headers.get("content-security-policy")).toContain("script-src 'self'; worker-src 'self'");
      expect(r.headers.get("content-security-policy")).not.toContain("connect-src");
      expect(r.html).not.toContain("/assets/passkey.js");
    }
    const script = await s.raw("/assets/passkey.js");
    expect(script.headers.get("content-type")).toStartWith("text/javascript");
    expect(await script.text()).toContain("navigator.credentials.create");
  });

  test("sign-up refuses a short password and a common one, and makes no handle then", async () => {
    const b = new PageClient(s.url);
    const short = await signUp(b, "pw-short", "abc1234");
    expect(short.status).toBe(400);
    expect(short.html).toContain("at least 8 characters");
    const common = await signUp(b, "pw-short", "Password123");
    expect(common.status).toBe(400);
    expect(common.html).toContain("most common");
    expect(await s.server.db.read((tx) => agentByHandle(tx, "pw-short"))).toBeUndefined();
    const ok = await signUp(b, "pw-short", GOOD);
    expect(ok.status).toBe(303);
    expect(await signedInAs(b, "pw-short")).toBe(true);
  });

  test("a password sign-up signs in; signing out and in with the password works", async () => {
    const b = new PageClient(s.url);
    expect((await signUp(b, "pw-ann", GOOD)).location).toBe("/");
    expect(await signedInAs(b, "pw-ann")).toBe(true);
    await b.follow(await b.post("/account/signout", { flow: "account" }));
    expect(await signedInAs(b, "pw-ann")).toBe(false);
    await b.get("/signin");
    const back = await b.post("/signin/password", { handle: "@PW-Ann", password: GOOD });
    expect(back.location).toBe("/account");
    expect(await signedInAs(b, "pw-ann")).toBe(true);
  });

  test("on an invite-only server, sign-up asks for the platform invite code and refuses a wrong one", async () => {
    const closed = await startTestServer({ inviteOnly: true });
    try {
      const invite = await closed.server.db.tx((tx) => createPlatformInvite(tx, closed.clock.now(), { uses: 1, expiresAt: null, note: null }));
      const b = new PageClient(closed.url);
      expect((await b.get("/signup")).html).toContain("Invite code for this server");
      const fields = { handle: "pw-invited", display_name: "Invited", method: "password", password: GOOD };
      expect((await b.post("/signup", { ...fields, platform_invite_code: "inv_wrong" })).status).toBeGreaterThanOrEqual(400);
      expect((await b.get("/signup")).status).toBe(200);
      expect((await b.post("/signup", { ...fields, platform_invite_code: invite })).location).toBe("/");
    } finally {
      await closed.stop();
    }
  });

  test("a wrong password and an unknown handle get the same answer", async () => {
    await signUp(new PageClient(s.url), "pw-bea", GOOD);
    const b = await fresh();
    const wrong = await b.post("/signin/password", { handle: "pw-bea", password: "not the password" });
    const unknown = await b.post("/signin/password", { handle: "pw-nobody", password: "not the password" });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(wrong.status);
    expect(unknown.html.replaceAll("pw-nobody", "HANDLE")).toBe(wrong.html.replaceAll("pw-bea", "HANDLE"));
    expect(wrong.html).toContain("The handle or the password is not right.");
  });

  test("ten wrong passwords for a handle in an hour: even the right one is refused until the hour is over", async () => {
    s.clock.advance(HOUR);
    await signUp(new PageClient(s.url), "pw-cat", GOOD);
    const b = await fresh();
    for (let i = 0; i < 10; i++) expect((await b.post("/signin/password", { handle: "pw-cat", password: `guess ${i} wrong` })).status).toBe(401);
    const refused = await b.post("/signin/password", { handle: "pw-cat", password: GOOD });
    expect(refused.status).toBe(429);
    expect(refused.html).toContain("Too many wrong passwords");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // An unknown handle hits the same wall: the limit says nothing about whether the handle exists.
    for (let i = 0; i < 10; i++) await b.post("/signin/password", { handle: "pw-ghost", password: `guess ${i} wrong` });
    expect((await b.post("/signin/password", { handle: "pw-ghost", password: GOOD })).status).toBe(429);
    s.clock.advance(HOUR);
    expect((await b.post("/signin/password", { handle: "pw-cat", password: GOOD })).location).toBe("/account");
  }, 60_000);

  test("thirty wrong passwords from one address in an hour, over many handles, stop that address", async () => {
    s.clock.advance(HOUR);
    await signUp(new PageClient(s.url), "pw-dan", GOOD);
    const b = await fresh();
    for (let i = 0; i < 30; i++) expect((await b.post("/signin/password", { handle: `pw-spray-${i}`, password: "spring2026!" })).status).toBe(401);
    expect((await b.post("/signin/password", { handle: "pw-dan", password: GOOD })).status).toBe(429);
    s.clock.advance(HOUR);
  }, 60_000);

  test("a reset link signs in once, lands on the account page, and lets the person set a password without the old one", async () => {
    await signUp(new PageClient(s.url), "pw-eve", GOOD);
    const agent = (await s.server.db.read((tx) => agentByHandle(tx, "pw-eve")))!;
    const link = await s.server.db.tx((tx) => createResetLink(tx, agent.agentId, s.url, s.clock.now()));
    const path = new URL(link.url).pathname;
    const b = new PageClient(s.url);
    const shown = await b.get(path);
    expect(shown.status).toBe(200);
    expect(shown.html).toContain("Sign me in");
    const used = await b.post("/account/reset", { token: path.split("/").pop()! });
    expect(used.location).toBe("/account#sign-in");
    const account = await b.get("/account");
    expect(account.html).toContain("Signed in as <strong>@pw-eve</strong>");
    // A fresh sign-in needs no current password.
    expect(account.html).not.toContain("Current password");
    const set = await b.post("/account/password", { password: "a brand new passphrase" });
    expect(set.html).toContain("Password saved.");
    const again = new PageClient(s.url);
    expect((await again.get(path)).status).toBe(410);
    await again.get("/signin");
    expect((await again.post("/account/reset", { token: path.split("/").pop()! })).status).toBe(410);
    expect((await again.post("/signin/password", { handle: "pw-eve", password: "a brand new passphrase" })).location).toBe("/account");
  });

  test("changing the password later needs the current one", async () => {
    const b = new PageClient(s.url);
    await signUp(b, "pw-fay", GOOD);
    s.clock.advance(HOUR);
    const page = await b.get("/account");
    expect(page.html).toContain("Current password");
    const refused = await b.post("/account/password", { current: "wrong current", password: "another fine passphrase" });
    expect(refused.status).toBe(400);
    expect(refused.html).toContain("The current password is not right.");
    const changed = await b.post("/account/password", { current: GOOD, password: "another fine passphrase" });
    expect(changed.html).toContain("Password saved.");
  });

  test("signing out everywhere ends every browser of the handle; its API key keeps working", async () => {
    const agent = await s.register("pw-gus");
    const one = await fresh();
    const two = await fresh();
    await signInWithCode(s, one, "account", "pw-gus", agent.key);
    await signInWithCode(s, two, "account", "pw-gus", agent.key);
    expect(await signedInAs(two, "pw-gus")).toBe(true);
    const page = await one.get("/account");
    expect(page.html).toContain("API keys and apps connected through OAuth keep working");
    expect((await one.post("/account/signout-everywhere", {})).location).toBe("/signin");
    expect(await signedInAs(one, "pw-gus")).toBe(false);
    expect(await signedInAs(two, "pw-gus")).toBe(false);
    await s.ok("get_me", {}, agent.key);
  });
});

describe("accounts in Chromium", () => {
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

  const heading = () => page.getByRole("heading", { level: 1 }).textContent();
  const signedInText = () => page.locator("main").textContent();

  test("a new person creates an account with a password, signs out, and signs in with the password", async () => {
    await page.goto(s.url);
    await audit(page, "home-offer");
    await follow(page, page.getByRole("link", { name: "Create an account" }));
    await expect(heading()).resolves.toBe("Create an account");
    await audit(page, "signup");
    await page.getByLabel("Handle").fill("chr-pw");
    await page.getByLabel("Display name").fill("Chris Password");
    await page.getByLabel("Password").fill("a long and unusual phrase");
    await follow(page, page.getByRole("button", { name: "Create account with a password" }));
    await expect(signedInText()).resolves.toContain("Hello, Chris Password");
    await page.goto(`${s.url}/account`);
    await expect(signedInText()).resolves.toContain("Signed in as @chr-pw");
    await audit(page, "account-sign-in-settings");
    await follow(page, page.getByRole("button", { name: "Sign out", exact: true }));
    await page.goto(`${s.url}/signin`);
    await audit(page, "signin");
    await page.getByLabel("Your handle", { exact: true }).fill("chr-pw");
    await page.getByLabel("Password", { exact: true }).fill("not it at all");
    await follow(page, page.getByRole("button", { name: "Sign in", exact: true }));
    await expect(page.getByRole("alert").textContent()).resolves.toBe("The handle or the password is not right.");
    await audit(page, "signin-wrong");
    await page.getByLabel("Password", { exact: true }).fill("a long and unusual phrase");
    await follow(page, page.getByRole("button", { name: "Sign in", exact: true }));
    await expect(signedInText()).resolves.toContain("Signed in as @chr-pw");
    await follow(page, page.getByRole("button", { name: "Sign out", exact: true }));
  }, 120_000);

  test("a new person creates an account with a passkey (a virtual authenticator), signs out, and signs in with it", async () => {
    const { cdp, authenticatorId } = await virtualAuthenticator(browser.context, page);
    await page.goto(`${s.url}/signup`);
    await page.getByLabel("Handle").fill("chr-key");
    await page.getByLabel("Display name").fill("Chris Passkey");
    await follow(page, page.getByRole("button", { name: "Create account with a passkey" }));
    await expect(signedInText()).resolves.toContain("Hello, Chris Passkey");
    await page.goto(`${s.url}/account`);
    await expect(signedInText()).resolves.toContain("Signed in as @chr-key");
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    expect(credentials).toHaveLength(1);
    await expect(signedInText()).resolves.toContain("Chrome on Linux, added");
    await follow(page, page.getByRole("button", { name: "Sign out", exact: true }));
    await expect(signedInText()).resolves.not.toContain("Signed in as");
    await page.goto(`${s.url}/signin`);
    await follow(page, page.getByRole("button", { name: "Sign in with a passkey" }));
    await expect(signedInText()).resolves.toContain("Signed in as @chr-key");
    // A second passkey for the same handle, added on /account.
    await page.getByLabel("Name for the new passkey").fill("Second key");
    const second = await virtualAuthenticator(browser.context, page, "usb");
    await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
    await follow(page, page.getByRole("button", { name: "Add a passkey" }));
    await expect(page.getByRole("status").first().textContent()).resolves.toBe("Passkey added.");
    await expect(signedInText()).resolves.toContain("Second key");
    await second.cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId: second.authenticatorId });
  }, 120_000);

  test("the reset link's page; no page broke its Content-Security-Policy", async () => {
    const agent = (await s.server.db.read((tx) => agentByHandle(tx, "chr-pw")))!;
    const link = await s.server.db.tx((tx) => createResetLink(tx, agent.agentId, s.url, s.clock.now()));
    await page.goto(link.url);
    await audit(page, "reset-link");
    await follow(page, page.getByRole("button", { name: "Sign me in" }));
    await expect(signedInText()).resolves.toContain("Signed in as @chr-pw");
    expect(cspViolations).toEqual([]);
  }, 120_000);
});
