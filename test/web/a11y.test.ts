// Accessibility in Chromium, one browser for the file: axe-core over the main pages at 390 and 1280 px in the light
// and the dark color scheme, with axe's check that a control's accessible name contains its visible words (WCAG
// 2.5.3: "Record this payment" is announced with those words); a keyboard walk where the skip link ("Skip to
// content") brings the page's main action within three presses of Tab; the focus on the first field in error (or the
// error) after a refused form; and Enter in the password field of the sign-in form on /join signs in with the
// password, not with the passkey button.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { authorizePath, pkce, registerClient } from "../auth/oauth-helpers.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { groupOf } from "../ledger/ledger-fixtures.ts";
import { audit, follow } from "./audit.ts";
import { launchChromium, showAllFields, type Browser } from "./chromium.ts";
import { inboxCode, PageClient } from "./page-client.ts";

let s: TestServer;
let browser: Browser;
let page: Page;
let ann: Agent;
let groupPath: string;
let claimPath: string;
let expensePath: string;
const PASSWORD = "violet harbour 42 compass";

beforeAll(async () => {
  s = await startTestServer();
  ann = await s.register("ax-ann", { display_name: "Ann" });
  const bob = await s.register("ax-bob", { display_name: "Bob" });
  const g = await groupOf(s, [ann, bob], "EUR", "Lisbon trip");
  groupPath = `/groups/${g.group_id}`;
  // Bob paid, so Ann owes him: her group page offers "Record this payment", her dashboard "Record paying it".
  const dinner = await s.ok("add_expense", { group_id: g.group_id, description: "Dinner at Rosa's", amount: "60.00" }, bob.key);
  expensePath = `${groupPath}/expenses/${dinner.expense.expense_id}`;
  const { invite } = await s.ok("create_group_invite", { group_id: g.group_id, name: "Dana" }, bob.key);
  claimPath = new URL(invite.placeholder.claim_url).pathname;
  await s.ok("add_contact", { handle: "ax-ann", note: "From the trip" }, bob.key);
  await s.ok("respond_contact_request", { handle: "ax-bob", action: "accept" }, ann.key);
  await s.ok("add_contact", { handle: "ax-ann", note: "We met at the climbing wall" }, (await s.register("ax-cat", { display_name: "Cat" })).key);
  await s.ok("send_envelope", { to: ["ax-ann"], subject: "Keys", body_md: "Under the mat: https://example.org/map" }, bob.key);
  // Pat has a password (signed up on the page), for the sign-in on /join.
  const pat = new PageClient(s.url);
  await pat.get("/signup");
  expect((await pat.post("/signup", { handle: "ax-pat", display_name: "Pat", method: "password", password: PASSWORD })).status).toBe(303);
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

const main = () => page.locator("main").textContent();
/** What has the keyboard focus: its tag, id, text or label. */
const focused = () =>
  page.evaluate(() => {
    const el = (globalThis as any).document.activeElement;
    return {
      tag: el.tagName.toLowerCase(),
      id: el.id as string,
      text: (el.textContent ?? "").trim() as string,
      name: (el.getAttribute("name") ?? "") as string,
    };
  });

/** The browser signed in as Ann (through the sign-in page, with the code left in her agent's inbox), unless it is; signed out of anyone else first. */
async function signedInAsAnn() {
  await page.goto(`${s.url}/account`);
  const now = await main();
  if (now?.includes("Signed in as @ax-ann")) return;
  if (now?.includes("Signed in as")) await follow(page, page.getByRole("button", { name: "Sign out", exact: true }));
  await page.goto(`${s.url}/signin`);
  await page.getByLabel("Your handle").fill("ax-ann");
  await follow(page, page.getByRole("button", { name: "Send me a code" }));
  await page.getByLabel("One-time code").fill(await inboxCode(s, ann.key));
  await follow(page, page.getByRole("button", { name: "Continue" }));
  await expect(main()).resolves.toContain("Signed in as @ax-ann");
}

describe("axe over the main pages, 390 and 1280 px, light and dark", () => {
  test("the pages of someone not signed in: home, sign-in, sign-up, /join, the OAuth sign-in, a claim link", async () => {
    await page.goto(s.url);
    await audit(page, "ax-home", { full: true });
    await page.goto(`${s.url}/signin`);
    await audit(page, "ax-signin", { full: true });
    await page.getByLabel("Your handle").fill("ax-pat");
    await page.getByLabel("Password", { exact: true }).fill("not the password");
    await follow(page, page.getByRole("button", { name: "Sign in", exact: true }));
    await expect(page.getByRole("alert").textContent()).resolves.toBe("The handle or the password is not right.");
    // The refusal has no field of its own: the focus is on what it says.
    expect(await focused()).toMatchObject({ tag: "p", text: "The handle or the password is not right." });
    await audit(page, "ax-signin-refused", { full: true });
    await page.goto(`${s.url}/signup`);
    await audit(page, "ax-signup", { full: true });
    const j = await s.ok("join_network", { client_name: "Terminal" });
    await page.goto(j.enter_url);
    await follow(page, page.getByRole("button", { name: "Continue" }));
    await audit(page, "ax-join", { full: true });
    const client = (await registerClient(s, { client_name: "Desk App" })).body;
    await page.goto(
      `${s.url}${authorizePath({ client_id: client.client_id, code_challenge: pkce().challenge, scope: "svc:read", state: "st", resource: s.url })}`,
    );
    await audit(page, "ax-oauth-signin", { full: true });
    await page.goto(`${s.url}${claimPath}`);
    await audit(page, "ax-claim", { full: true });
  }, 300_000);

  test("the pages of someone signed in: dashboard, groups, a group, expenses, activity, contacts, inbox, mail, plans, account, settings", async () => {
    await signedInAsAnn();
    for (const [name, path] of [
      ["ax-dashboard", "/"],
      ["ax-groups", "/groups"],
      ["ax-group", groupPath],
      ["ax-expense-new", `${groupPath}/expenses/new`],
      ["ax-expense", expensePath],
      ["ax-activity", `${groupPath}/activity`],
      ["ax-group-new", "/groups/new"],
      ["ax-contacts", "/contacts"],
      ["ax-inbox", "/inbox"],
      ["ax-mail", "/envelopes"],
      ["ax-plans", "/plans"],
      ["ax-account", "/account"],
      ["ax-settings", "/settings"],
    ] as const) {
      await page.goto(`${s.url}${path}`);
      await audit(page, name, { full: true });
    }
  }, 300_000);

  test("a refused expense: its errors beside the fields, readable in the dark too, and the focus on the split in error", async () => {
    await signedInAsAnn();
    await page.goto(`${s.url}${groupPath}/expenses/new`);
    await page.getByLabel("Description").fill("Museum tickets");
    await page.getByLabel("Amount", { exact: true }).fill("30.00");
    await showAllFields(page);
    await page.locator("#f-split-exact").check();
    await page.getByLabel("Ann: amount, percent or shares").fill("10.00");
    await page.getByLabel("Bob: amount, percent or shares").fill("5.00");
    await follow(page, page.getByRole("button", { name: "Add the expense" }));
    await expect(page.locator("#f-split-error").textContent()).resolves.toContain("sum to 15.00");
    // The first control of the fieldset in error has the focus, its error read with it.
    const inSplit = await page.evaluate(() => (globalThis as any).document.activeElement.closest("fieldset")?.getAttribute("aria-describedby"));
    expect(inSplit).toBe("f-split-error");
    await audit(page, "ax-expense-refused", { full: true });
  }, 120_000);

  test("a refused contact request: the focus is on the field in error", async () => {
    await signedInAsAnn();
    await page.goto(`${s.url}/contacts`);
    await page.getByLabel("Their handle").fill("No Such!");
    await follow(page, page.getByRole("button", { name: "Send contact request" }));
    expect(await focused()).toMatchObject({ tag: "input", name: "handle" });
    expect(await page.evaluate(() => (globalThis as any).document.activeElement.getAttribute("aria-invalid"))).toBe("true");
    await audit(page, "ax-contacts-refused", { full: true });
  }, 120_000);
});

describe("the keyboard", () => {
  test("the skip link, first on every page, brings the group page's main action within three presses of Tab", async () => {
    await signedInAsAnn();
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${s.url}${groupPath}`);
      await page.keyboard.press("Tab");
      expect(await focused()).toMatchObject({ tag: "a", text: "Skip to content" });
      // Shown when it has the focus (off screen otherwise).
      const box = (await page.getByRole("link", { name: "Skip to content" }).boundingBox())!;
      expect(box.y).toBeGreaterThanOrEqual(0);
      await page.keyboard.press("Enter");
      await page.keyboard.press("Tab");
      expect(await focused()).toMatchObject({ tag: "a", text: "Add an expense" });
      await follow(page, page.getByRole("link", { name: "Add an expense" }));
      // On the form, past the skip link and the link back to the group, the form's first field: four presses.
      await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await page.keyboard.press("Tab");
      expect(await focused()).toMatchObject({ tag: "a", text: "Lisbon trip" });
      await page.keyboard.press("Tab");
      const inForm = await page.evaluate(() => (globalThis as any).document.activeElement.closest("form")?.getAttribute("action"));
      expect(inForm).toBe(`${groupPath}/expenses/new`);
    } finally {
      await page.setViewportSize({ width: 800, height: 900 });
    }
  }, 120_000);

  test("Record this payment is announced with its visible words", async () => {
    await signedInAsAnn();
    await page.goto(`${s.url}${groupPath}`);
    const button = page.getByRole("button", { name: /^Record this payment/ });
    await expect(button.textContent()).resolves.toBe("Record this payment");
    await expect(button.getAttribute("aria-label")).resolves.toBe("Record this payment: you paid Bob 30.00 EUR");
    await page.goto(s.url);
    const across = page.getByRole("button", { name: /^Record paying it/ });
    await expect(across.textContent()).resolves.toBe("Record paying it");
  }, 120_000);

  test("Enter in the password field of the sign-in form on /join signs in with the password", async () => {
    await browser.context.clearCookies();
    const j = await s.ok("join_network", { client_name: "Laptop" });
    await page.goto(j.enter_url);
    await follow(page, page.getByRole("button", { name: "Continue" }));
    await page.getByLabel("Your handle").fill("ax-pat");
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    const loaded = page.waitForEvent("domcontentloaded", { timeout: 10_000 });
    await page.getByLabel("Password", { exact: true }).press("Enter");
    await loaded;
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Connect Laptop");
    await expect(main()).resolves.toContain("Connect to @ax-pat");
  }, 120_000);
});

describe("on a phone (390 x 844)", () => {
  test("the add form opens with the description and the amount, and one line for who paid and how it is split", async () => {
    await signedInAsAnn();
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${s.url}${groupPath}`);
      // The Add button stays in reach: in view at the top of the page and after scrolling to its end.
      const add = page.getByRole("link", { name: "Add an expense" });
      const inView = async () => {
        const box = (await add.boundingBox())!;
        return box.y >= 0 && box.y + box.height <= 844 && box.height >= 44;
      };
      expect(await inView()).toBe(true);
      await page.evaluate(() => (globalThis as any).window.scrollTo(0, (globalThis as any).document.body.scrollHeight));
      expect(await inView()).toBe(true);

      await follow(page, add);
      const summary = page.locator("details.more > summary");
      await expect(summary.innerText()).resolves.toBe("Paid by you, split equally among everyone (change)");
      // Closed, the form fits the screen: its two fields, the line and the submit button.
      const formHeight = (await page.locator("main form").boundingBox())!.height;
      expect(formHeight).toBeLessThan(500);
      await expect(page.getByLabel("Currency").isVisible()).resolves.toBe(false);
      await audit(page, "ax-expense-new-phone", { full: true });
      // A refused split shows the rest open, with its error.
      await page.getByLabel("Description").fill("Tram");
      await page.getByLabel("Amount", { exact: true }).fill("3,20");
      await showAllFields(page);
      await expect(summary.innerText()).resolves.toBe("Who paid, the split, and more");
      await page.locator("#f-split-exact").check();
      await page.getByLabel("Ann: amount, percent or shares").fill("1,00");
      await follow(page, page.getByRole("button", { name: "Add the expense" }));
      await expect(page.locator("details.more").getAttribute("open")).resolves.toBe("");
      await expect(page.locator("#f-split-error").isVisible()).resolves.toBe(true);
      // Bob paying, split by shares, in another currency: the line says each.
      await page.getByLabel("Who paid").selectOption({ label: "Bob" });
      await page.locator("#f-split-shares").check();
      await page.getByLabel("Ann: amount, percent or shares").fill("2");
      await page.getByLabel("Dana (no account yet): amount, percent or shares").fill("");
      await page.getByLabel("Bob: amount, percent or shares").fill("1");
      await follow(page, page.getByRole("button", { name: "Add the expense" }));
      await expect(main()).resolves.toContain("Tram");
      const tram = page.getByRole("link", { name: /Tram/ }).first();
      await follow(page, tram);
      await follow(page, page.getByRole("link", { name: "Edit" }));
      await expect(summary.innerText()).resolves.toBe("Paid by Bob, split by shares (change)");
    } finally {
      await page.setViewportSize({ width: 800, height: 900 });
    }
  }, 120_000);
});
