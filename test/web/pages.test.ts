// The pages in headless Chromium (Debian's package, driven by playwright-core; the browser is never downloaded):
// the home page and the docs, join with a code read from the other agent's inbox, OAuth consent, sign-up from an
// MCP client, the account, settings and group pages. Every page is checked at 1280 and 390 px wide with axe-core
// (no serious or critical violation) and for sideways scrolling; a screenshot of each lands in test-artifacts/.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { pkce, registerClient, tokenCall } from "../auth/oauth-helpers.ts";
import { groupOf } from "../ledger/ledger-fixtures.ts";
import { audit as auditPage, follow as followTo, VIEWPORTS } from "./audit.ts";
import { launchChromium, showAllFields, type Browser } from "./chromium.ts";
import { inboxCode } from "./page-client.ts";

let s: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let alice: Agent;
/** Where the OAuth client is sent back to: a tiny server standing in for the MCP client's redirect listener. */
let callbackServer: ReturnType<typeof Bun.serve>;
const callbacks: URL[] = [];
const cspViolations: string[] = [];
const audited: string[] = [];

beforeAll(async () => {
  browser = await launchChromium(VIEWPORTS[0]);
  context = browser.context;
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

/** The shared audit (test/web/audit.ts) of the page as it is now, remembered so the last test can check every page was audited. */
async function audit(name: string): Promise<void> {
  await auditPage(page, name);
  audited.push(name);
}

/** Clicks what leads to another page and waits for that page's document (test/web/audit.ts). */
const follow = (target: Locator) => followTo(page, target);

describe("the pages in Chromium", () => {
  test("home, documentation and the not-found page", async () => {
    await page.goto(s.url);
    await expect(page.locator("main pre").first().textContent()).resolves.toContain(`"url": "${s.url}/mcp"`);
    await audit("home");
    await follow(page.getByRole("link", { name: "Documentation" }));
    await audit("docs");
    await page.goto(`${s.url}/docs/tools/add_expense`);
    await audit("docs-tool");
    await page.goto(`${s.url}/docs/overview`);
    await audit("docs-overview");
    await page.goto(`${s.url}/groups/not/here`);
    await audit("not-found");
  }, 120_000);

  test("join: enter the code, prove the handle with the code from the other agent's inbox, connect", async () => {
    const j = await s.ok("join_network", { client_name: "Chromium App" });
    await page.goto(j.enter_url);
    await expect(page.getByLabel("Code shown by your app").inputValue()).resolves.toBe(j.user_code);
    await audit("join-enter-code");
    await follow(page.getByRole("button", { name: "Continue" }));
    // Both forms have a handle field; each label points at its own input.
    await expect(page.getByLabel("Your handle").getAttribute("id")).resolves.toBe("signin-handle");
    await expect(page.getByLabel("Handle", { exact: true }).getAttribute("id")).resolves.toBe("new-handle");
    await audit("join-signin");
    await page.getByLabel("Your handle").fill("web-alice");
    await follow(page.getByRole("button", { name: "Send me a code" }));
    await page.getByLabel("One-time code").fill(await inboxCode(s, alice.key));
    await audit("join-code");
    await follow(page.getByRole("button", { name: "Continue" }));
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Connect Chromium App");
    await audit("join-confirm");
    await follow(page.getByRole("button", { name: "Connect to @web-alice" }));
    await expect(page.getByRole("status").textContent()).resolves.toContain("is now connected to @web-alice");
    await audit("join-done");
    const r = await s.ok("finish_join", { poll_token: j.poll_token });
    expect(r).toMatchObject({ status: "connected", created: false });
    expect(r.agent.handle).toBe("web-alice");
  }, 120_000);

  test("consent: the page names the client and scopes; Allow and Deny are the large actions; Allow sends the browser back with a code", async () => {
    const redirect = `http://127.0.0.1:${callbackServer.port}/callback`;
    const client = (await registerClient(s, { client_name: "Desktop Assistant", redirect_uris: [redirect] })).body;
    const { challenge } = pkce();
    const q = new URLSearchParams({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: redirect,
      code_challenge: challenge,
      code_challenge_method: "S256",
      scope: "svc:read svc:write offline_access",
      state: "browser-state",
      resource: s.url,
    });
    await page.goto(`${s.url}/oauth/authorize?${q}`);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Allow Desktop Assistant?");
    await expect(page.locator("main").textContent()).resolves.toContain(`127.0.0.1:${callbackServer.port}`);
    const allow = (await page.getByRole("button", { name: "Allow" }).boundingBox())!;
    const deny = (await page.getByRole("button", { name: "Deny" }).boundingBox())!;
    const other = (await page.getByRole("button", { name: /Use another handle/ }).boundingBox())!;
    expect(deny.height).toBe(allow.height);
    expect(other.height).toBeLessThan(allow.height);
    await audit("consent");
    await page.getByRole("button", { name: "Allow" }).click();
    await page.waitForURL(/\/callback\?/);
    // Chromium may also ask the callback server for /favicon.ico after the page loads.
    const back = callbacks.findLast((u) => u.pathname === "/callback")!;
    expect(back.searchParams.get("state")).toBe("browser-state");
    expect(back.searchParams.get("code")).toStartWith("code_");
  }, 120_000);

  test("account: the clients are listed (the one in use marked), a new API key is shown once, nothing is cut off at 390 px", async () => {
    await s.ok("get_me", {}, alice.key);
    // The last use of each client is written in batches (server/auth/last-use.ts).
    await s.server.lastUse.flush();
    await page.goto(`${s.url}/account`);
    const apps = page.getByRole("list", { name: "Connected apps" });
    await expect(apps.textContent()).resolves.toContain("Chromium App");
    await expect(
      apps
        .getByRole("listitem")
        .filter({ hasText: /^Agent that registered the handle/ })
        .textContent(),
    ).resolves.toContain("in use");
    await page.getByLabel("Name of the app that will use it").fill("Script on my laptop");
    await follow(page.getByRole("button", { name: "Create API key" }));
    const key = (await page.locator("#new-key").textContent())!;
    expect((await s.ok("get_me", {}, key)).agent.handle).toBe("web-alice");
    await page.goto(`${s.url}/account`);
    expect(await page.locator("#new-key").count()).toBe(0);
    await expect(apps.textContent()).resolves.toContain("Script on my laptop");
    await audit("account");
    await page.setViewportSize(VIEWPORTS[1]!);
    for (const button of await page.getByRole("button", { name: /^Disconnect / }).all()) {
      const box = (await button.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(VIEWPORTS[1]!.width);
    }
    await page.setViewportSize(VIEWPORTS[0]!);
  }, 120_000);

  test("groups: the list, and a group's chart, sentences and export link", async () => {
    const bob = await s.register("web-bob");
    const g = await groupOf(s, [alice, bob], "EUR", "Lisbon trip");
    await s.ok(
      "add_expense",
      {
        group_id: g.group_id,
        description: "Dinner at Rosa's",
        amount: "60.00",
        split: {
          mode: "shares",
          among: [
            { handle: "web-alice", value: 1 },
            { handle: "web-bob", value: 2 },
          ],
        },
      },
      alice.key,
    );
    await s.ok("record_payment", { group_id: g.group_id, to: "web-alice", amount: "10.00" }, bob.key);
    await page.goto(`${s.url}/groups`);
    await audit("groups");
    await follow(page.getByRole("link", { name: "Lisbon trip" }));
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Lisbon trip");
    await expect(page.getByRole("img", { name: /^Balances: / }).count()).resolves.toBe(1);
    // bob's pending 10.00 counts in settle-up as if confirmed: 30.00 is left to settle
    await expect(page.locator("main").textContent()).resolves.toContain("WEB-BOB owes WEB-ALICE 30.00 EUR");
    await expect(page.getByRole("link", { name: "Download the whole ledger as CSV" }).getAttribute("href")).resolves.toBe(`/groups/${g.group_id}/export.csv`);
    await audit("group");

    // Adding an expense: the form, then the same form with a refused split (its error beside the fieldset).
    await follow(page.getByRole("link", { name: "Add an expense" }));
    await audit("expense-new");
    await page.getByLabel("Description").fill("Museum tickets");
    await page.getByLabel("Amount", { exact: true }).fill("30.00");
    await showAllFields(page);
    await page.getByLabel("Exact amounts (each member's amount)").check();
    await page.getByLabel("WEB-ALICE: amount, percent or shares").fill("10.00");
    await page.getByLabel("WEB-BOB: amount, percent or shares").fill("5.00");
    await follow(page.getByRole("button", { name: "Add the expense" }));
    await expect(page.locator("#f-split-error").textContent()).resolves.toContain("Exact amounts sum to 15.00");
    await audit("expense-new-refused");
    await page.getByLabel("WEB-BOB: amount, percent or shares").fill("20.00");
    await follow(page.getByRole("button", { name: "Add the expense" }));
    await expect(page.getByRole("status").textContent()).resolves.toContain("Expense added.");

    // The expense's own page (history, shares) and its edit form.
    await follow(page.getByRole("link", { name: "“Museum tickets”" }));
    await expect(page.locator("main").textContent()).resolves.toContain("WEB-BOB: 20.00 EUR");
    await audit("expense");
    await follow(page.getByRole("link", { name: "Edit this expense" }));
    await audit("expense-edit");
  }, 120_000);

  test("the web app: dashboard, inbox with a quoted note, contacts (accept), a new group and its settings", async () => {
    const carol = await s.register("web-carol");
    await s.ok("add_contact", { handle: "web-alice", note: "Carol from the <b>climbing</b> club" }, carol.key);
    await page.goto(s.url);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Hello, WEB-ALICE");
    await expect(page.getByRole("list", { name: "By person" }).textContent()).resolves.toContain("WEB-BOB owes you");
    await audit("dashboard");
    await follow(page.getByRole("link", { name: "Inbox" }).first());
    await expect(page.locator("blockquote").first().textContent()).resolves.toContain("Carol from the <b>climbing</b> clubwritten by WEB-CAROL");
    await audit("inbox");
    await page.goto(`${s.url}/contacts`);
    await audit("contacts");
    await follow(page.getByRole("button", { name: "Accept WEB-CAROL (@web-carol)" }));
    await expect(page.getByRole("status").textContent()).resolves.toBe("You are now contacts.");
    await page.goto(`${s.url}/groups/new`);
    await page.getByLabel("Name").fill("Ski week");
    await page.getByLabel("Currency").fill("CHF");
    await audit("group-new");
    await follow(page.getByRole("button", { name: "Create group" }));
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Ski week");
    await follow(page.getByRole("link", { name: "Group settings" }));
    await page.getByLabel("Contact's handle").fill("web-carol");
    await follow(page.getByRole("button", { name: "Send invitation" }));
    await expect(page.getByRole("status").textContent()).resolves.toContain("Invitation sent");
    await audit("group-settings");
    expect((await s.ok("get_inbox", { since: "0" }, carol.key)).items.map((i: any) => i.type)).toContain("group.invitation");
    const { plan } = await s.ok(
      "create_plan",
      {
        title: "Bouldering",
        options: [{ starts_at: "2026-12-04T18:00:00Z", place: "The wall" }, { starts_at: "2026-12-06T10:00:00Z" }],
        invitees: ["web-alice"],
      },
      carol.key,
    );
    await page.goto(`${s.url}/plans`);
    await audit("plans");
    await follow(page.getByRole("link", { name: "Bouldering" }));
    await page.getByLabel("yes").check();
    await page.getByRole("checkbox").first().check();
    await audit("plan");
    await follow(page.getByRole("button", { name: "Send my answer" }));
    await expect(page.getByRole("status").textContent()).resolves.toBe("Your answer is saved.");
    expect((await s.ok("get_plan", { plan_id: plan.plan_id }, carol.key)).plan.invitees[0]).toMatchObject({
      response: "yes",
      option_ids: [plan.options[0].option_id],
    });
  }, 120_000);

  test("settings: the link from get_settings_link opens the page, which saves the profile", async () => {
    const link = await s.ok("get_settings_link", {}, alice.key);
    await page.goto(link.url);
    await audit("settings-link");
    await follow(page.getByRole("button", { name: "Open my settings" }));
    await page.getByLabel("Display name").fill("Alice in Chromium");
    await page.getByLabel("About you").fill("Pays for the pizza");
    await follow(page.getByRole("button", { name: "Save" }));
    await expect(page.getByRole("status").textContent()).resolves.toBe("Saved.");
    await audit("settings");
    expect((await s.ok("get_me", {}, alice.key)).agent).toMatchObject({ display_name: "Alice in Chromium", description: "Pays for the pizza" });
    await page.goto(link.url);
    await expect(page.getByRole("alert").textContent()).resolves.toContain("expired or was already used");
  }, 120_000);

  test("sign-up from an MCP client: a new person creates a handle on the sign-in page, allows the app, and its token acts as the new handle", async () => {
    await context.clearCookies();
    const redirect = `http://127.0.0.1:${callbackServer.port}/callback`;
    const client = (await registerClient(s, { client_name: "Pocket Agent", redirect_uris: [redirect] })).body;
    const { verifier, challenge } = pkce();
    const q = new URLSearchParams({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: redirect,
      code_challenge: challenge,
      code_challenge_method: "S256",
      scope: "svc:read svc:write",
      state: "new-person",
      resource: s.url,
    });
    await page.goto(`${s.url}/oauth/authorize?${q}`);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Sign in to continue to Pocket Agent");
    await audit("oauth-signin");
    await page.getByLabel("Handle", { exact: true }).fill("web-newcomer");
    await page.getByLabel("Display name").fill("Newcomer");
    // The form posts, and the answer sends the browser on to the consent page, at the sign-in page's own address.
    await follow(page.getByRole("button", { name: "Create my handle and continue" }));
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Allow Pocket Agent?");
    await expect(page.locator("main").textContent()).resolves.toContain("@web-newcomer");
    // The consent page's own address (the sign-in page's) has state=new-person too: wait for the client's.
    await page.getByRole("button", { name: "Allow" }).click();
    await page.waitForURL((u) => u.port === String(callbackServer.port) && u.pathname === "/callback" && u.searchParams.get("state") === "new-person");
    const back = callbacks.findLast((u) => u.searchParams.get("state") === "new-person")!;
    const t = await tokenCall(s, {
      grant_type: "authorization_code",
      code: back.searchParams.get("code")!,
      redirect_uri: redirect,
      client_id: client.client_id,
      code_verifier: verifier,
    });
    expect(t.status).toBe(200);
    expect((await s.ok("get_me", {}, t.body.access_token)).agent).toMatchObject({ handle: "web-newcomer", display_name: "Newcomer" });
  }, 120_000);

  test("no page broke its own Content-Security-Policy, and every page was audited", () => {
    expect(cspViolations).toEqual([]);
    expect(audited.length).toBeGreaterThanOrEqual(28);
  });
});
