// The Back button in a real browser (Chromium): a person adds an expense, goes back to the form and sends it again;
// records a payment, goes back and sends that again. Each is done once: the page Back brings (fetched again, as
// pages are never stored) carries the same idempotency keys, so the second send is replayed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startTestServer, type TestServer } from "../harness.ts";
import { follow } from "./audit.ts";
import { launchChromium, type Browser } from "./chromium.ts";

let s: TestServer;
let browser: Browser;
let ann: Page;
beforeAll(async () => {
  s = await startTestServer({ host: "localhost" });
  browser = await launchChromium({ width: 1280, height: 900 });
  ann = browser.context.pages()[0] ?? (await browser.context.newPage());
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

const main = (p: Page) => p.locator("main").textContent();
const click = (p: Page, name: string) => follow(p, p.getByRole("button", { name, exact: true }).first());
/** Back in history, waiting for the page it brings. */
async function back(p: Page) {
  await p.goBack({ waitUntil: "domcontentloaded" });
}

test("Back, then the same form sent again: one expense and one payment", async () => {
  await ann.goto(`${s.url}/signup`);
  await ann.getByLabel("Handle").fill("bb-ann");
  await ann.getByLabel("Display name").fill("Ann");
  await ann.getByLabel("Password").fill("a long and unusual phrase");
  await click(ann, "Create account with a password");
  await expect(main(ann)).resolves.toContain("Start here");
  await ann.goto(`${s.url}/groups/new`);
  await ann.getByLabel("Name").fill("Cabin");
  await ann.getByLabel("Currency").fill("EUR");
  await click(ann, "Create group");
  const groupPath = new URL(ann.url()).pathname;
  await ann.getByLabel("Add someone without an account").fill("Dana");
  await click(ann, "Add by name");

  await follow(ann, ann.getByRole("link", { name: "Add an expense" }));
  const fill = async () => {
    await ann.getByLabel("Description").fill("Firewood");
    await ann.getByLabel("Amount", { exact: true }).fill("40.00");
  };
  await fill();
  await click(ann, "Add the expense");
  await expect(main(ann)).resolves.toContain("Expense added");
  await back(ann);
  expect(new URL(ann.url()).pathname).toBe(`${groupPath}/expenses/new`);
  await fill();
  await click(ann, "Add the expense");
  await ann.goto(`${s.url}${groupPath}`);
  const expenses = await ann.locator("table").first().textContent();
  expect(expenses!.match(/Firewood/g)).toHaveLength(1);
  await expect(main(ann)).resolves.toContain("Dana (no account yet) owes 20.00 EUR");

  // Dana gives Ann 20.00 in cash: Ann records it from the settle-up row, goes back, and presses it again.
  await ann.goto(`${s.url}${groupPath}`);
  await click(ann, "Record that Dana paid you 20.00 EUR");
  await expect(main(ann)).resolves.toContain("It counts at once");
  await back(ann);
  const again = ann.getByRole("button", { name: "Record that Dana paid you 20.00 EUR", exact: true });
  // Fetched again, the page no longer suggests it (settled); the form below is sent again instead.
  expect(await again.count()).toBe(0);
  await ann.getByLabel("Paid by").selectOption({ label: "Dana (no account yet)" });
  await ann.getByLabel("Paid to").selectOption({ label: "Ann (you)" });
  await ann.locator("#f-pay-amount").fill("5.00");
  await click(ann, "Record the payment");
  await expect(main(ann)).resolves.toContain("It counts at once");
  await back(ann);
  await ann.getByLabel("Paid by").selectOption({ label: "Dana (no account yet)" });
  await ann.getByLabel("Paid to").selectOption({ label: "Ann (you)" });
  await ann.locator("#f-pay-amount").fill("5.00");
  await click(ann, "Record the payment");
  await ann.goto(`${s.url}${groupPath}`);
  const payments = await ann.locator("table").last().textContent();
  expect(payments!.match(/paid Ann 5\.00 EUR/g)).toHaveLength(1);
  expect(payments!.match(/paid Ann 20\.00 EUR/g)).toHaveLength(1);
}, 300_000);
