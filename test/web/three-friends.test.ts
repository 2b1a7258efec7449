// Three friends, each with only a phone's browser (Chromium at 390x844), through the pages only, as new people would:
// Ann signs up with a password and Bob with a passkey, each landing on the dashboard; Ann makes a group, invites Bob
// (a contact first) and adds Cleo, who has no account yet, by name, and e-mails her the link to take her place; Cleo
// opens it from the e-mail, signs up and takes her place over with the expense she already shared. Each confirms an
// e-mail address on the settings page (Bob wants expenses in a daily digest). They split costs in every mode, added by
// each of them and paid by each of them; Ann goes Back after adding one and sends the form again (still one); the
// bulk of the 30 expenses comes from Ann's own app, with an API key she made on her account page. The list is paged
// ("Older expenses"), searched, and the oldest opened. The notifications e-mailed carry the amounts the pages show;
// Cleo stops the expense e-mails with the one-click unsubscribe (RFC 8058) and still gets the others. They settle up
// with the suggested payments, each payee confirms, and every dashboard says they are settled up. Ann resets her
// password by e-mail and signs in with the new one; the group page she read is shown offline, read-only. Bob's daily
// digest comes a day later. The main pages are audited with axe (390 and 1280 px, light and dark), and no page or
// e-mail of the journey speaks to an agent (a tool name, "your human").
// Time moves with the injected clock; the job runner runs when the test says (s.server.jobs.runDue()).
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Locator, Page } from "playwright-core";
import { DAY, MINUTE } from "../../server/clock.ts";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { audit, follow } from "./audit.ts";
import { launchChromium, virtualAuthenticator, type Browser } from "./chromium.ts";
import { MailSink, type ReceivedMail } from "./email-sink.ts";

const PHONE = { width: 390, height: 844 };
const GROUP = "Flat 3B";
const ADDRESS = { ann: "ann@example.org", bob: "bob@example.org", cleo: "cleo@example.org" };
const PASSWORD = { ann: "a long and unusual phrase", cleo: "violet harbour compass lamp" };
const NEW_PASSWORD = "seven quiet lanterns over the bay";
const OFFLINE_BANNER = "You are offline: this is the page as you last saw it; nothing can be changed.";
/** The bulk of the 30 expenses: small coffees Ann pays, shared equally by the three. */
const COFFEES = 23;

let sink: MailSink;
let s: TestServer;
const browsers: Browser[] = [];
let ann: Page;
let bob: Page;
let cleo: Page;
/** The group's page, as Ann first saw it (with her view id), and its path. */
let groupUrl: string;
let groupPath: string;

// ---- no words for agents: every page the three browsers load, and every e-mail, is read for them ----

const TOOL_WORDS = new RegExp(`\\b(${TOOLS.map((t) => t.name).join("|")})\\b`, "g");
/** What speaks to an agent: a tool name, "your human", the agents' "(quoted)" mark (as no-agent-words.test.ts). */
function agentWords(text: string): string[] {
  const shown = text.replace(/<style>[\s\S]*?<\/style>/g, "");
  return [...(shown.match(TOOL_WORDS) ?? []), ...(shown.match(/your human/gi) ?? []), ...(shown.match(/\(quoted\)/g) ?? [])];
}
/** Each page the three browsers showed, with what in it speaks to an agent. */
const pagesRead: { url: string; title: string; words: string[] }[] = [];
/**
 * The home page of someone not signed in says how to connect an agent (its MCP configuration, `svc call get_me`):
 * written for the people who set one up, like /docs, which no-agent-words.test.ts leaves out too.
 */
const SETUP_PAGE = "svc: an agent network with a shared-expense ledger";
/** Reads the page the browser shows now for words meant for agents. */
async function read(p: Page) {
  const { title, html } = await p.evaluate(() => {
    const document = (globalThis as any).document;
    return { title: document.title as string, html: document.documentElement.outerHTML as string };
  });
  pagesRead.push({ url: p.url(), title, words: agentWords(html) });
}
/** Opens an address, as typed or as a link from an e-mail, and reads the page. */
async function visit(p: Page, url: string) {
  await p.goto(url);
  await read(p);
}
/** Clicks what leads to another page, waits for it, and reads it. */
async function go(p: Page, target: Locator) {
  await follow(p, target);
  await read(p);
}

// ---- e-mail ----

const used = new Set<ReceivedMail>();
/** The first e-mail to `to` not looked at yet whose subject matches, waiting for it (10 s at most). */
async function mailTo(to: string, subject: RegExp): Promise<ReceivedMail> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = sink.mails.find((m) => !used.has(m) && m.headers.get("to") === to && subject.test(m.subject));
    if (found) {
      used.add(found);
      expect(agentWords(found.text)).toEqual([]);
      expect(agentWords(found.html)).toEqual([]);
      return found;
    }
    await sink.next(Math.max(1, deadline - Date.now())).catch(() => {
      throw new Error(
        `no e-mail to ${to} with a subject like ${subject}; arrived: ${sink.mails.map((m) => `${m.headers.get("to")}: ${m.subject}`).join(" | ")}`,
      );
    });
  }
}
/** The link of this server in an e-mail's text that starts with `prefix`. */
function linkIn(mail: ReceivedMail, prefix: string): string {
  const found = mail.text.match(new RegExp(`${s.url.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}${prefix}\\S*`));
  if (!found) throw new Error(`no ${prefix} link in: ${mail.text}`);
  return found[0];
}
/** Runs the jobs once the injected clock moved `ms` on, after any run a page started (the e-mails due go out). */
async function after(ms: number) {
  await s.server.jobs.idle();
  s.clock.advance(ms);
  await s.server.jobs.runDue();
  await s.server.jobs.idle();
}

// ---- the pages ----

const main = (p: Page) => p.locator("main").textContent();
const click = (p: Page, name: string | RegExp) => go(p, p.getByRole("button", { name, exact: typeof name === "string" }).first());
/** axe over the page (390 and 1280 px, light and dark), then back to the phone's size. */
async function audited(p: Page, name: string) {
  await audit(p, name, { full: true });
  await p.setViewportSize(PHONE);
}

async function signUpWithPassword(p: Page, handle: string, name: string, password: string) {
  await p.getByLabel("Handle").fill(handle);
  await p.getByLabel("Display name").fill(name);
  await p.getByLabel("Password", { exact: true }).fill(password);
  await click(p, "Create account with a password");
}

/** Adds `address` on the settings page, and confirms it with the link e-mailed to it. */
async function confirmAddress(p: Page, address: string) {
  await visit(p, `${s.url}/settings`);
  await p.getByLabel("E-mail address").fill(address);
  await click(p, "Send a confirmation link");
  await expect(main(p)).resolves.toContain(`We sent a link to ${address}`);
  const mail = await mailTo(address, /^Confirm your e-mail address for svc$/);
  await visit(p, linkIn(mail, "/settings/email/confirm/"));
  await click(p, "Confirm my address");
  await expect(main(p)).resolves.toContain(`${address} is confirmed`);
  await visit(p, `${s.url}/settings`);
  await expect(main(p)).resolves.toContain(`Your address: ${address} (confirmed)`);
}

type SplitMode = "equal" | "exact" | "percent" | "shares" | "adjustment";
interface NewExpense {
  description: string;
  amount: string;
  /** Who paid, by the name the form gives them (the one adding it when left out). */
  paidBy?: string;
  mode?: SplitMode;
  /** Each member's amount, percent, shares or adjustment, by name. */
  values?: Record<string, string>;
}

/**
 * The expense form's fields past Description and Amount: a phone-first form keeps them in a `details.more` (its
 * summary says who paid and how it is split), opened here, as a person taps it, before any of them is touched. The
 * fields are then filled as any: one that stayed hidden would time out.
 */
async function showEveryField(p: Page) {
  const more = p.locator("details.more");
  if ((await more.count()) === 0) return;
  if ((await more.first().getAttribute("open")) === null) await more.first().locator("summary").first().click();
}

/** Fills the add-expense form the page shows now. */
async function fillExpense(p: Page, e: NewExpense) {
  await p.getByLabel("Description").fill(e.description);
  await p.getByLabel("Amount", { exact: true }).fill(e.amount);
  if (!e.paidBy && !e.mode && !e.values) return;
  await showEveryField(p);
  if (e.paidBy) await p.getByLabel("Who paid").selectOption({ label: e.paidBy });
  if (e.mode) await p.locator(`#f-split-${e.mode}`).check();
  for (const [name, value] of Object.entries(e.values ?? {})) await p.getByLabel(`${name}: amount, percent or shares`).fill(value);
}

/** From the group's page: "Add an expense", the form, and back on the group's page with it added. */
async function addExpense(p: Page, e: NewExpense) {
  await go(p, p.getByRole("link", { name: "Add an expense" }).first());
  await fillExpense(p, e);
  await click(p, "Add the expense");
  await expect(main(p)).resolves.toContain("Expense added");
}

/** The rows of the expense list on the page: each one's text. */
const listedExpenses = (p: Page) => p.getByRole("table", { name: "Expenses" }).locator("tbody tr").allTextContents();

beforeAll(async () => {
  sink = await MailSink.start();
  // localhost, not 127.0.0.1: a WebAuthn relying party is a domain, never an IP address.
  s = await startTestServer({ host: "localhost", smtpUrl: sink.url, mailFrom: "svc <svc@svc.test>" });
  // Ann reads pages offline at the end: her browser runs the service worker that keeps them.
  browsers.push(...(await Promise.all([launchChromium(PHONE, { serviceWorkers: "allow" }), launchChromium(PHONE), launchChromium(PHONE)])));
  const pages = await Promise.all(browsers.map(async (b) => b.context.pages()[0] ?? (await b.context.newPage())));
  ann = pages[0]!;
  bob = pages[1]!;
  cleo = pages[2]!;
}, 600_000);
afterAll(async () => {
  for (const b of browsers) await b.close();
  await s?.stop();
  await sink?.stop();
});

test("sign-up: Ann with a password, Bob with a passkey; each confirms an e-mail address, Bob wants expenses daily", async () => {
  await visit(ann, s.url);
  await go(ann, ann.getByRole("link", { name: "Create an account" }));
  await signUpWithPassword(ann, "tf-ann", "Ann", PASSWORD.ann);
  // Sign-up lands on the dashboard, which greets her by name.
  expect(new URL(ann.url()).pathname).toBe("/");
  await expect(ann.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Hello, Ann");
  await expect(main(ann)).resolves.toContain("You are settled up in every group.");

  await virtualAuthenticator(browsers[1]!.context, bob);
  await visit(bob, `${s.url}/signup`);
  await bob.getByLabel("Handle").fill("tf-bob");
  await bob.getByLabel("Display name").fill("Bob");
  await click(bob, "Create account with a passkey");
  expect(new URL(bob.url()).pathname).toBe("/");
  await expect(bob.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Hello, Bob");

  await confirmAddress(ann, ADDRESS.ann);
  await confirmAddress(bob, ADDRESS.bob);
  await bob.getByLabel("New and changed expenses you share").selectOption("daily");
  await click(bob, "Save what I get");
  await expect(main(bob)).resolves.toContain("Saved: what you get by e-mail.");
  await expect(bob.getByLabel("New and changed expenses you share").inputValue()).resolves.toBe("daily");
}, 120_000);

test("a group: Ann invites Bob, adds Cleo by name and e-mails her the link; Cleo signs up from it and takes her place over", async () => {
  // Contacts first: Ann asks, Bob accepts.
  await visit(ann, `${s.url}/contacts`);
  await ann.getByLabel("Their handle").fill("tf-bob");
  await click(ann, "Send contact request");
  await visit(bob, `${s.url}/contacts`);
  await click(bob, "Accept Ann (@tf-ann)");
  await expect(main(bob)).resolves.toContain("@tf-ann");

  await visit(ann, `${s.url}/groups`);
  await go(ann, ann.getByRole("link", { name: "New group" }));
  await ann.getByLabel("Name").fill(GROUP);
  await ann.getByLabel("Currency").fill("EUR");
  await click(ann, "Create group");
  groupUrl = ann.url();
  groupPath = new URL(groupUrl).pathname;
  expect(groupPath).toMatch(/^\/groups\/[0-9a-f-]{36}$/);
  await go(ann, ann.getByRole("link", { name: "Group settings" }));
  await ann.getByLabel("Contact's handle").fill("tf-bob");
  await click(ann, "Send invitation");
  await visit(bob, `${s.url}/inbox`);
  await click(bob, /^Join the group/);
  await visit(bob, `${s.url}${groupPath}`);
  await expect(main(bob)).resolves.toContain("2 members");

  // Cleo, without an account: by name, then her link by e-mail.
  await visit(ann, groupUrl);
  await ann.getByLabel("Add someone without an account").fill("Cleo");
  await click(ann, "Add by name");
  await expect(main(ann)).resolves.toContain("Cleo no account yet");
  const shown = await ann.getByLabel(/Link for them to take their place/).inputValue();
  await ann.getByLabel("Or e-mail the link to them").fill(ADDRESS.cleo);
  await click(ann, "Send the link");
  await expect(main(ann)).resolves.toContain("We e-mailed them the link to take their place.");
  const invitation = await mailTo(ADDRESS.cleo, /^Your place in a group on svc$/);
  expect(invitation.text).toContain(`Ann (@tf-ann) added you as “Cleo” to the group “${GROUP}” on svc`);
  const claimLink = linkIn(invitation, "/claim/claim-");
  expect(claimLink).toBe(shown);

  // A first expense with Cleo in it, before she has an account: her history.
  await visit(ann, groupUrl);
  await addExpense(ann, { description: "Groceries", amount: "60.00" });
  await expect(main(ann)).resolves.toContain("Cleo (no account yet) owes 20.00 EUR");

  // Cleo opens the link from the e-mail on her phone, signs up, and is back on it.
  await visit(cleo, claimLink);
  await expect(main(cleo)).resolves.toContain(`You were added as Cleo to the group ${GROUP}`);
  await expect(main(cleo)).resolves.toContain("-20.00 EUR");
  await go(cleo, cleo.getByRole("link", { name: "create an account" }));
  await signUpWithPassword(cleo, "tf-cleo", "Cleo", PASSWORD.cleo);
  expect(cleo.url()).toBe(claimLink);
  await audited(cleo, "tf-claim");
  await click(cleo, "Take over Cleo as @tf-cleo");
  expect(new URL(cleo.url()).pathname).toBe(groupPath);
  await expect(main(cleo)).resolves.toContain("3 members");
  await expect(main(cleo)).resolves.toContain("Your balance: -20.00 EUR");
  // Her history is hers: the expense from before, her share in it.
  await go(cleo, cleo.getByRole("link", { name: "“Groceries”" }));
  await expect(main(cleo)).resolves.toContain("You owe 20.00 EUR");
  await visit(ann, groupUrl);
  await expect(main(ann)).resolves.toContain("Cleo owes 20.00 EUR");
  await expect(main(ann)).resolves.not.toContain("no account yet");

  await confirmAddress(cleo, ADDRESS.cleo);
  await audited(cleo, "tf-settings");
}, 120_000);

test("expenses in every split mode, paid by each of them; Back and the same form again adds one; 30 in all", async () => {
  // Ann: the rent by exact amounts; the boat Bob paid, equally with his extra 3.00. Bob: the power he paid, by
  // percentages, and dinner, equally. Cleo: the food she paid, by shares.
  await visit(ann, groupUrl);
  await addExpense(ann, { description: "Rent", amount: "90.00", mode: "exact", values: { Ann: "30.00", Bob: "40.00", Cleo: "20.00" } });
  await go(ann, ann.getByRole("link", { name: "Add an expense" }).first());
  await audited(ann, "tf-expense-new");
  await fillExpense(ann, { description: "Boat", amount: "39.00", paidBy: "Bob", mode: "adjustment", values: { Bob: "3.00" } });
  await click(ann, "Add the expense");
  await expect(main(ann)).resolves.toContain("Expense added");
  await visit(bob, `${s.url}${groupPath}`);
  await addExpense(bob, { description: "Power", amount: "50.00", mode: "percent", values: { Ann: "20", Bob: "40", Cleo: "40" } });
  await addExpense(bob, { description: "Dinner", amount: "90.00" });
  await visit(cleo, `${s.url}${groupPath}`);
  await addExpense(cleo, { description: "Food", amount: "40.00", mode: "shares", values: { Ann: "1", Bob: "2", Cleo: "1" } });

  // A taxi: added, then Back to the form and the same form sent again: it is there once.
  await visit(ann, groupUrl);
  await go(ann, ann.getByRole("link", { name: "Add an expense" }).first());
  await fillExpense(ann, { description: "Taxi", amount: "12.00" });
  await click(ann, "Add the expense");
  await expect(main(ann)).resolves.toContain("Expense added");
  await ann.goBack({ waitUntil: "domcontentloaded" });
  await read(ann);
  expect(new URL(ann.url()).pathname).toBe(`${groupPath}/expenses/new`);
  await fillExpense(ann, { description: "Taxi", amount: "12.00" });
  await click(ann, "Add the expense");
  await visit(ann, groupUrl);
  const rows = await listedExpenses(ann);
  expect(rows.filter((row) => row.includes("“Taxi”"))).toHaveLength(1);
  // What each is for Ann, as her group page lists it.
  for (const [description, paidBy, forAnn] of [
    ["Rent", "Ann", "you lent 60.00 EUR"],
    ["Boat", "Bob", "you owe 12.00 EUR"],
    ["Power", "Bob", "you owe 10.00 EUR"],
    ["Dinner", "Bob", "you owe 30.00 EUR"],
    ["Food", "Cleo", "you owe 10.00 EUR"],
    ["Taxi", "Ann", "you lent 8.00 EUR"],
  ])
    expect(rows.find((row) => row.includes(`“${description}”`))).toContain(`paid by ${paidBy} · ${forAnn}`);

  // The rest of the 30, coffees Ann paid, from her own app: an API key she creates on her account page.
  await visit(ann, `${s.url}/account`);
  await ann.getByLabel("Name of the app that will use it").fill("Coffee counter");
  await click(ann, "Create API key");
  const key = (await ann.locator("#new-key").textContent())!.trim();
  const groupId = groupPath.split("/")[2];
  for (let i = 1; i <= COFFEES; i++) {
    const res = await fetch(`${s.url}/v1/tools/add_expense`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ group_id: groupId, description: `Coffee ${i}`, amount: "3.00", split: { mode: "equal" }, idempotency_key: crypto.randomUUID() }),
    });
    expect(res.status).toBe(200);
  }
  await visit(ann, groupUrl);
  await expect(main(ann)).resolves.toContain("450.00 EUR over 30 expenses");
  // Ann paid 231.00 and her shares come to 139.00; Bob paid 179.00 against 172.00; Cleo 40.00 against 139.00.
  await expect(main(ann)).resolves.toContain("Your balance: +92.00 EUR");
  await expect(main(ann)).resolves.toContain("Bob is owed 7.00 EUR");
  await expect(main(ann)).resolves.toContain("Cleo owes 99.00 EUR");
  await audited(ann, "tf-group");
}, 180_000);

test("the 30 expenses a page at a time, searched, and the oldest opened", async () => {
  await visit(ann, groupUrl);
  const newest = await listedExpenses(ann);
  expect(newest).toHaveLength(20);
  expect(newest[0]).toContain(`“Coffee ${COFFEES}”`);
  expect(newest.every((row) => /“Coffee \d+”/.test(row))).toBe(true);
  await go(ann, ann.getByRole("link", { name: "Older expenses" }));
  const older = await listedExpenses(ann);
  expect(older).toHaveLength(10);
  expect(older.map((row) => row.match(/“([^”]+)”/)?.[1])).toEqual([
    "Coffee 3",
    "Coffee 2",
    "Coffee 1",
    "Taxi",
    "Food",
    "Dinner",
    "Power",
    "Boat",
    "Rent",
    "Groceries",
  ]);
  await expect(ann.getByRole("link", { name: "Older expenses" }).count()).resolves.toBe(0);
  await go(ann, ann.getByRole("link", { name: "“Groceries”" }));
  await expect(ann.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Expense: “Groceries”");
  // Cleo's share, from before she had an account, is hers.
  await expect(main(ann)).resolves.toContain("Cleo: 20.00 EUR");

  await visit(ann, groupUrl);
  await ann.getByLabel("Find words in the description or notes").fill("coffee");
  await go(ann, ann.getByRole("button", { name: "Show expenses" }));
  await expect(main(ann)).resolves.toContain("Expenses matching “coffee”");
  const found = await listedExpenses(ann);
  expect(found).toHaveLength(20);
  // The next page keeps the search: every coffee once, nothing else.
  await go(ann, ann.getByRole("link", { name: "Older expenses" }));
  found.push(...(await listedExpenses(ann)));
  const numbers = found.map((row) => Number(row.match(/“Coffee (\d+)”/)?.[1]));
  expect(numbers.sort((a, b) => a - b)).toEqual(Array.from({ length: COFFEES }, (_, i) => i + 1));
  await ann.getByLabel("Find words in the description or notes").fill("DINNER");
  await go(ann, ann.getByRole("button", { name: "Show expenses" }));
  const dinner = await listedExpenses(ann);
  expect(dinner).toHaveLength(1);
  expect(dinner[0]).toContain("“Dinner”");
  expect(dinner[0]).toContain("paid by Bob");
}, 120_000);

test("e-mail notifications carry the amounts the pages show; Bob's wait for his digest; Cleo stops hers in one click", async () => {
  await after(2 * MINUTE);
  // Ann hears of what the others added: Bob's power and dinner, Cleo's food.
  const toAnn = await mailTo(ADDRESS.ann, /^New on svc: 3 expense updates/);
  const dinner = toAnn.text.match(/- Bob \(@tf-bob\) added “Dinner”, in “Flat 3B”: 90\.00 EUR\. Your share: 30\.00 EUR\.\n {2}(\S+)/);
  expect(dinner).not.toBeNull();
  expect(toAnn.text).toContain("- Bob (@tf-bob) added “Power”, in “Flat 3B”: 50.00 EUR. Your share: 10.00 EUR.\n");
  expect(toAnn.text).toContain("- Cleo (@tf-cleo) added “Food”, in “Flat 3B”: 40.00 EUR. Your share: 10.00 EUR.\n");
  // The link opens the expense, where the page says the same amount.
  await visit(ann, dinner![1]!);
  await expect(main(ann)).resolves.toContain("You owe 30.00 EUR");
  await expect(main(ann)).resolves.toContain("Bob: 90.00 EUR");

  // Cleo hears of every one she shares that the others added: all but the first (before her account) and her food.
  const toCleo = await mailTo(ADDRESS.cleo, /^New on svc: /);
  expect(toCleo.subject).toBe("New on svc: 28 expense updates");
  expect(toCleo.text).toContain("- Ann (@tf-ann) added “Boat”, in “Flat 3B”: 39.00 EUR. Your share: 12.00 EUR.\n");
  expect(toCleo.text).toContain("- Ann (@tf-ann) added “Coffee 1”, in “Flat 3B”: 3.00 EUR. Your share: 1.00 EUR.\n");
  const rent = toCleo.text.match(/- Ann \(@tf-ann\) added “Rent”, in “Flat 3B”: 90\.00 EUR\. Your share: 20\.00 EUR\.\n {2}(\S+)/);
  expect(rent).not.toBeNull();
  await visit(cleo, rent![1]!);
  await expect(main(cleo)).resolves.toContain("You owe 20.00 EUR");

  // Bob chose a daily e-mail for expenses: nothing about them yet.
  expect(sink.mails.filter((m) => m.headers.get("to") === ADDRESS.bob && m.text.includes("Your share"))).toEqual([]);

  // Cleo's mail client sends the one-click unsubscribe: no cookie, no page of svc.
  expect(toCleo.headers.get("list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click");
  const unsubscribe = toCleo.headers.get("list-unsubscribe")?.match(/^<([^>]+)>$/)?.[1];
  expect(unsubscribe).toStartWith(`${s.url}/settings/email/unsubscribe/`);
  const stopped = await fetch(unsubscribe!, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "List-Unsubscribe=One-Click",
  });
  expect(stopped.status).toBe(200);
  expect(await stopped.text()).toContain("You will get no more e-mails about: new and changed expenses you share.");
  await visit(cleo, `${s.url}/settings`);
  await expect(cleo.getByLabel("New and changed expenses you share").inputValue()).resolves.toBe("off");
  await expect(cleo.getByLabel("Payments confirmed, rejected or voided").inputValue()).resolves.toBe("immediate");
}, 120_000);

test("settling up with the suggested payments: each payee confirms, and every dashboard says they are settled", async () => {
  await visit(cleo, s.url);
  await expect(main(cleo)).resolves.toContain("You owe 99.00 EUR in total");
  await audited(cleo, "tf-dashboard");
  await visit(ann, s.url);
  await expect(main(ann)).resolves.toContain("You are owed 92.00 EUR in total");
  await visit(bob, s.url);
  await expect(main(bob)).resolves.toContain("You are owed 7.00 EUR in total");

  // Cleo owes both: the group page suggests a payment to each.
  await visit(cleo, `${s.url}${groupPath}`);
  for (const [payee, amount] of [
    ["Ann", "92.00"],
    ["Bob", "7.00"],
  ]) {
    await click(cleo, `Record this payment: you paid ${payee} ${amount} EUR`);
    await expect(main(cleo)).resolves.toContain("Payment recorded");
  }
  await expect(main(cleo)).resolves.toContain("Everyone is settled up once the payments waiting for confirmation are confirmed.");
  await after(2 * MINUTE);
  for (const [payee, page, address, amount] of [
    ["Ann", ann, ADDRESS.ann, "92.00"],
    ["Bob", bob, ADDRESS.bob, "7.00"],
  ] as const) {
    const toConfirm = await mailTo(address, /^New on svc: 1 payment to confirm$/);
    expect(toConfirm.text).toContain(`- Cleo (@tf-cleo) says they paid you ${amount} EUR in “Flat 3B”. Confirm it once you have received it, or reject it.`);
    await visit(page, `${s.url}${groupPath}`);
    await click(page, `Confirm the payment of ${amount} from Cleo`);
    await expect(main(page)).resolves.toContain(payee === "Bob" ? "Everyone is settled up." : "Bob is owed 7.00 EUR");
  }
  await visit(ann, groupUrl);
  await expect(main(ann)).resolves.toContain("Everyone is settled up.");
  await expect(main(ann)).resolves.toContain("Your balance: 0.00 EUR");
  for (const p of [ann, bob, cleo]) {
    await visit(p, s.url);
    await expect(main(p)).resolves.toContain("You are settled up in every group.");
  }
}, 120_000);

test("a forgotten password: Ann resets it from a link by e-mail and signs in with the new one", async () => {
  await visit(ann, `${s.url}/account`);
  await click(ann, "Sign out");
  await visit(ann, `${s.url}/signin`);
  await ann.getByText("Forgot your password?").click();
  await ann.locator("#email-reset").fill(ADDRESS.ann);
  await click(ann, "E-mail me a reset link");
  await expect(main(ann)).resolves.toContain("we sent a link to reset its password");
  const mail = await mailTo(ADDRESS.ann, /^Reset your svc password$/);
  expect(mail.text).toContain("Hello Ann,");
  await visit(ann, linkIn(mail, "/account/reset/"));
  await expect(main(ann)).resolves.toContain("then set a new password or add a passkey");
  await click(ann, "Sign me in");
  expect(new URL(ann.url()).pathname).toBe("/account");
  // Signed in by the link just now: the new password needs no current one.
  await expect(ann.getByLabel("Current password").count()).resolves.toBe(0);
  await ann.getByLabel("New password").fill(NEW_PASSWORD);
  await click(ann, "Change password");
  await expect(main(ann)).resolves.toContain("Password saved.");
  await click(ann, "Sign out");

  for (const [password, works] of [
    [PASSWORD.ann, false],
    [NEW_PASSWORD, true],
  ] as const) {
    await visit(ann, `${s.url}/signin`);
    await ann.getByLabel("Your handle").fill("tf-ann");
    await ann.getByLabel("Password", { exact: true }).fill(password);
    await click(ann, "Sign in");
    if (works) await expect(main(ann)).resolves.toContain("Signed in as @tf-ann");
    else await expect(ann.getByRole("alert").textContent()).resolves.toBe("The handle or the password is not right.");
  }
}, 120_000);

test("installed and offline: the group page Ann read is shown as she saw it, marked, and nothing can be sent", async () => {
  await visit(ann, s.url);
  await ann.waitForFunction(() => (globalThis as any).navigator.serviceWorker.controller !== null, undefined, { timeout: 15_000 });
  const cdp = await browsers[0]!.context.newCDPSession(ann);
  expect((await cdp.send("Page.getInstallabilityErrors")).installabilityErrors).toEqual([]);
  await cdp.detach();
  await visit(ann, `${s.url}${groupPath}`);
  await expect(main(ann)).resolves.toContain("Everyone is settled up.");
  // The worker keeps a page once it answered with it.
  await ann.waitForFunction(
    async (path) => {
      const all = (globalThis as any).caches;
      for (const name of await all.keys())
        for (const req of await (await all.open(name)).keys()) if (new URL(req.url).pathname + new URL(req.url).search === path) return true;
      return false;
    },
    groupPath,
    { timeout: 15_000, polling: 100 },
  );

  await browsers[0]!.context.setOffline(true);
  try {
    await visit(ann, `${s.url}${groupPath}`);
    await expect(ann.getByRole("status").first().textContent()).resolves.toBe(OFFLINE_BANNER);
    await expect(main(ann)).resolves.toContain("Everyone is settled up.");
    await expect(main(ann)).resolves.toContain("“Coffee");
    const controls = ann.locator("main form button, main form input:not([type=hidden]), main form select, main form textarea");
    expect(await controls.count()).toBeGreaterThan(0);
    for (const control of await controls.all()) expect(await control.isDisabled()).toBe(true);
  } finally {
    await browsers[0]!.context.setOffline(false);
  }
}, 120_000);

test("a day later: Bob's daily digest; Cleo still gets the e-mails she kept; no page or e-mail spoke to an agent", async () => {
  await after(DAY);
  // Bob shares 28 expenses the others added: all but his own two.
  const digest = await mailTo(ADDRESS.bob, /^Your daily svc digest: /);
  expect(digest.subject).toBe("Your daily svc digest: 28 expense updates");
  expect(digest.text).toContain("Here is what happened on svc in the last day: 28 expense updates.");
  expect(digest.text).toContain("- Ann (@tf-ann) added “Groceries”, in “Flat 3B”: 60.00 EUR. Your share: 20.00 EUR.\n");
  expect(digest.text).toContain("- Ann (@tf-ann) added “Rent”, in “Flat 3B”: 90.00 EUR. Your share: 40.00 EUR.\n");
  expect(digest.text).toContain("- Ann (@tf-ann) added “Boat”, in “Flat 3B”: 39.00 EUR. Your share: 15.00 EUR. You paid 39.00 EUR.\n");
  expect(digest.text).toContain("- Cleo (@tf-cleo) added “Food”, in “Flat 3B”: 40.00 EUR. Your share: 20.00 EUR.\n");
  // Cleo turned off only the expense e-mails: the confirmations of her payments still come.
  const toCleo = await mailTo(ADDRESS.cleo, /^New on svc: 2 payment updates$/);
  expect(toCleo.text).toContain("- Ann (@tf-ann) confirmed your payment of 92.00 EUR in “Flat 3B”; it counts in the balances.");
  expect(toCleo.text).toContain("- Bob (@tf-bob) confirmed your payment of 7.00 EUR in “Flat 3B”; it counts in the balances.");

  expect(pagesRead.filter((p) => p.words.length && !p.title.startsWith(SETUP_PAGE))).toEqual([]);
  expect(pagesRead.filter((p) => !p.title.startsWith(SETUP_PAGE)).length).toBeGreaterThan(80);
  for (const m of sink.mails) expect({ subject: m.subject, words: [...agentWords(m.text), ...agentWords(m.html)] }).toEqual({ subject: m.subject, words: [] });
}, 60_000);
