// Two people with only a browser, through the pages only, in Chromium: one signs up with a password, the other with a
// passkey; they become contacts, share a group, add an expense in each split mode and one in another currency,
// settle up with the suggested payment, the payee confirms it, exchange mail, and both dashboards say they are
// settled. Each page on the way is audited with axe at 1280 and 390 px.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startTestServer, type TestServer } from "../harness.ts";
import { audit, follow } from "./audit.ts";
import { launchChromium, showAllFields, virtualAuthenticator, type Browser } from "./chromium.ts";

let s: TestServer;
let browsers: Browser[] = [];
let ann: Page;
let bob: Page;
beforeAll(async () => {
  // localhost, not 127.0.0.1: a WebAuthn relying party is a domain, never an IP address.
  s = await startTestServer({ host: "localhost" });
  browsers = [await launchChromium({ width: 1280, height: 900 }), await launchChromium({ width: 1280, height: 900 })];
  ann = browsers[0]!.context.pages()[0] ?? (await browsers[0]!.context.newPage());
  bob = browsers[1]!.context.pages()[0] ?? (await browsers[1]!.context.newPage());
}, 600_000);
afterAll(async () => {
  for (const b of browsers) await b.close();
  await s?.stop();
});

const main = (p: Page) => p.locator("main").textContent();
const click = (p: Page, name: string | RegExp) => follow(p, p.getByRole("button", { name, exact: typeof name === "string" }).first());

/** Adds an expense on the group's page: the split's mode and each member's value or tick. */
async function addExpense(
  p: Page,
  e: { description: string; amount: string; currency?: string; rate?: string; mode: string; values?: Record<string, string>; ticked?: string[] },
) {
  await follow(p, p.getByRole("link", { name: "Add an expense" }));
  await p.getByLabel("Description").fill(e.description);
  await p.getByLabel("Amount", { exact: true }).fill(e.amount);
  await showAllFields(p);
  if (e.currency) await p.getByLabel("Currency").fill(e.currency);
  if (e.rate) await p.getByLabel("Exchange rate").fill(e.rate);
  await p.locator(`#f-split-${e.mode}`).check();
  for (const h of e.ticked ?? []) await p.getByLabel(`${h} is in it`).check();
  for (const [h, v] of Object.entries(e.values ?? {})) await p.getByLabel(`${h}: amount, percent or shares`).fill(v);
  await click(p, "Add the expense");
  await expect(main(p)).resolves.toContain(e.description);
}

test("two people sign up, share a group, split costs every way, settle up, and both end at zero", async () => {
  // Ann: a password.
  await ann.goto(s.url);
  await follow(ann, ann.getByRole("link", { name: "Create an account" }));
  await ann.getByLabel("Handle").fill("jr-ann");
  await ann.getByLabel("Display name").fill("Ann");
  await ann.getByLabel("Password").fill("a long and unusual phrase");
  await click(ann, "Create account with a password");
  await expect(main(ann)).resolves.toContain("Start here");

  // Bob: a passkey, from the browser's virtual authenticator.
  await virtualAuthenticator(browsers[1]!.context, bob);
  await bob.goto(`${s.url}/signup`);
  await bob.getByLabel("Handle").fill("jr-bob");
  await bob.getByLabel("Display name").fill("Bob");
  await click(bob, "Create account with a passkey");
  await expect(main(bob)).resolves.toContain("Hello, Bob");

  // Contacts: Ann asks, Bob accepts.
  await ann.goto(`${s.url}/contacts`);
  await ann.getByLabel("Their handle").fill("jr-bob");
  await click(ann, "Send contact request");
  await bob.goto(`${s.url}/contacts`);
  await audit(bob, "journey-contacts");
  await click(bob, "Accept Ann (@jr-ann)");
  await expect(main(bob)).resolves.toContain("@jr-ann");

  // A group: Ann creates it and invites Bob, who joins from his inbox.
  await ann.goto(`${s.url}/groups`);
  await follow(ann, ann.getByRole("link", { name: "New group" }));
  await ann.getByLabel("Name").fill("Flat 3B");
  await ann.getByLabel("Currency").fill("EUR");
  await click(ann, "Create group");
  const groupUrl = ann.url();
  // the group's page, at its address with a view id (server/web/form-keys.ts)
  expect(groupUrl).toMatch(/\/groups\/[0-9a-f-]{36}\?view=[A-Za-z0-9_-]+$/);
  await follow(ann, ann.getByRole("link", { name: "Group settings" }));
  await ann.getByLabel("Contact's handle").fill("jr-bob");
  await click(ann, "Send invitation");
  await bob.goto(`${s.url}/inbox`);
  await audit(bob, "journey-inbox");
  await click(bob, /^Join the group/);
  await bob.goto(groupUrl);
  await expect(main(bob)).resolves.toContain("2 members");

  // An expense in each split mode, and one in another currency.
  await ann.goto(groupUrl);
  await addExpense(ann, { description: "Rent", amount: "100.00", mode: "equal", ticked: ["Ann", "Bob"] });
  await addExpense(ann, { description: "Power", amount: "30.00", mode: "exact", values: { Ann: "10.00", Bob: "20.00" } });
  await addExpense(ann, { description: "Water", amount: "20.00", mode: "percent", values: { Ann: "50", Bob: "50" } });
  await addExpense(ann, { description: "Food", amount: "30.00", mode: "shares", values: { Ann: "1", Bob: "2" } });
  await addExpense(ann, { description: "Taxi", amount: "10.00", currency: "USD", rate: "0.9", mode: "equal", ticked: ["Ann", "Bob"] });
  await audit(ann, "journey-group");
  // Bob owes 50 + 20 + 10 + 20 + 4.50 = 104.50 EUR.
  await bob.goto(groupUrl);
  await expect(main(bob)).resolves.toContain("104.50");
  await click(bob, "Record this payment: you paid Ann 104.50 EUR");
  await expect(main(bob)).resolves.toContain("Payment recorded");
  await ann.goto(groupUrl);
  await click(ann, "Confirm the payment of 104.50 from Bob");
  await expect(main(ann)).resolves.toContain("Everyone is settled up.");

  // Mail: Ann writes, Bob reads it (her words quoted as hers) and replies.
  await ann.goto(`${s.url}/envelopes`);
  await ann.getByLabel("To (handles of your contacts, separated by commas)").fill("jr-bob");
  await ann.getByLabel("Subject").fill("Keys");
  await ann.getByLabel("Message").fill("The spare key is under the mat: https://example.org/map");
  await click(ann, "Send");
  await expect(main(ann)).resolves.toContain("Your envelope is sent.");
  await audit(ann, "journey-envelopes");
  await bob.goto(`${s.url}/envelopes`);
  await follow(bob, bob.getByRole("link", { name: "Keys" }));
  await expect(bob.locator("blockquote").textContent()).resolves.toContain("written by Ann");
  await expect(main(bob)).resolves.toContain("example.org");
  await audit(bob, "journey-envelope");
  await bob.getByLabel("Your reply").fill("Thanks!");
  await click(bob, "Send the reply");
  await expect(main(bob)).resolves.toContain("Your reply is sent.");

  for (const [p, name] of [
    [ann, "journey-dashboard-ann"],
    [bob, "journey-dashboard-bob"],
  ] as const) {
    await p.goto(s.url);
    await expect(main(p)).resolves.toContain("You are settled up in every group.");
    await audit(p, name);
  }
}, 300_000);
