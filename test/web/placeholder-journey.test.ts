// A friend without an account, through the pages only, in Chromium: Ann adds Carol to a group by name, splits an
// expense with her and copies the claim link (its Copy link button); Carol opens it, creates an account, is back on it
// and takes her place over, ending with Carol's balance. The group page and the claim page are audited with axe at 1280 and 390 px.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startTestServer, type TestServer } from "../harness.ts";
import { audit, follow } from "./audit.ts";
import { launchChromium, showAllFields, type Browser } from "./chromium.ts";

let s: TestServer;
let browsers: Browser[] = [];
let ann: Page;
let carol: Page;
beforeAll(async () => {
  s = await startTestServer({ host: "localhost" });
  browsers = [await launchChromium({ width: 1280, height: 900 }), await launchChromium({ width: 1280, height: 900 })];
  ann = browsers[0]!.context.pages()[0] ?? (await browsers[0]!.context.newPage());
  carol = browsers[1]!.context.pages()[0] ?? (await browsers[1]!.context.newPage());
}, 600_000);
afterAll(async () => {
  for (const b of browsers) await b.close();
  await s?.stop();
});

const main = (p: Page) => p.locator("main").textContent();
const click = (p: Page, name: string | RegExp) => follow(p, p.getByRole("button", { name, exact: typeof name === "string" }).first());

async function signUp(p: Page, handle: string, name: string, landing = `Hello, ${name}`) {
  await p.getByLabel("Handle").fill(handle);
  await p.getByLabel("Display name").fill(name);
  await p.getByLabel("Password").fill("a long and unusual phrase");
  await click(p, "Create account with a password");
  await expect(main(p)).resolves.toContain(landing);
}

test("a member adds a friend by name and splits with her; the friend takes her place over from the claim link", async () => {
  await ann.goto(`${s.url}/signup`);
  await signUp(ann, "pj-ann", "Ann");
  await ann.goto(`${s.url}/groups/new`);
  await ann.getByLabel("Name").fill("Beach house");
  await ann.getByLabel("Currency").fill("EUR");
  await click(ann, "Create group");
  const groupUrl = ann.url();

  await ann.getByLabel("Add someone without an account").fill("Carol");
  await click(ann, "Add by name");
  await expect(main(ann)).resolves.toContain("Carol no account yet");
  const link = await ann.getByLabel(/Link for them to take their place/).inputValue();
  expect(link).toContain("/claim/claim-");
  await browsers[0]!.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: s.url });
  await ann.getByRole("button", { name: "Copy link" }).click();
  await ann.getByText("Copied.").waitFor();
  expect(await ann.evaluate(() => navigator.clipboard.readText())).toBe(link);
  await audit(ann, "placeholder-group");

  await follow(ann, ann.getByRole("link", { name: "Add an expense" }));
  await ann.getByLabel("Description").fill("Groceries");
  await ann.getByLabel("Amount", { exact: true }).fill("40.00");
  await showAllFields(ann);
  await ann.getByLabel("Carol (no account yet) is in it").check();
  await click(ann, "Add the expense");
  await expect(main(ann)).resolves.toContain("Carol (no account yet) owes 20.00 EUR");

  // Carol, with no account, opens the link, creates one, and is back on the link's page.
  await carol.goto(link);
  await expect(main(carol)).resolves.toContain("Beach house");
  await audit(carol, "placeholder-claim-signed-out");
  await follow(carol, carol.getByRole("link", { name: "Create an account" }));
  await signUp(carol, "pj-carol", "Carol", "Take over Carol as @pj-carol");
  expect(carol.url()).toBe(link);
  await audit(carol, "placeholder-claim");
  await click(carol, "Take over Carol as @pj-carol");
  // the same page (each browser's address has a view id of its own: server/web/form-keys.ts)
  expect(new URL(carol.url()).pathname).toBe(new URL(groupUrl).pathname);
  await expect(main(carol)).resolves.toContain("Your balance: -20.00 EUR");
  await ann.goto(groupUrl);
  // Carol now by the name she signed up with, no longer "(no account yet)".
  await expect(main(ann)).resolves.toContain("Carol owes 20.00 EUR");
}, 300_000);
