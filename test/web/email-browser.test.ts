// The e-mail pages in Chromium, audited with axe at 1280 and 390 px (test/web/audit.ts): the settings page's e-mail
// section in each state (no address, a link on its way, confirmed with the notification choices), the confirmation
// page, the sign-in page with "e-mail me a link", and the unsubscribe page; a person goes through them with the mouse
// and keyboard as anyone would.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { unsubscribeToken } from "../../server/domain/email/compose.ts";
import { agentByHandle } from "../../server/domain/agents.ts";
import { readFormKey } from "../../server/web/session.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { audit, follow, VIEWPORTS } from "./audit.ts";
import { launchChromium, type Browser } from "./chromium.ts";
import { MailSink } from "./email-sink.ts";

let sink: MailSink;
let s: TestServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  sink = await MailSink.start();
  s = await startTestServer({ smtpUrl: sink.url, mailFrom: "svc <svc@svc.test>" });
  browser = await launchChromium(VIEWPORTS[0]);
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await sink?.stop();
});

test("adding and confirming an address, choosing what comes, signing in by e-mail and unsubscribing: every page passes axe", async () => {
  await page.goto(`${s.url}/signup`);
  await page.getByLabel("Handle").fill("ax-ann");
  await page.getByLabel("Display name").fill("Ann");
  await page.getByLabel("Password", { exact: true }).fill("correct horse battery staple");
  await follow(page, page.getByRole("button", { name: "Create account with a password" }));
  await page.goto(`${s.url}/settings`);
  await audit(page, "email-settings-none");
  await page.getByLabel("E-mail address").fill("ann.ax@example.org");
  await follow(page, page.getByRole("button", { name: "Send a confirmation link" }));
  expect(await page.locator("main").textContent()).toContain("We sent a link to ann.ax@example.org");
  await audit(page, "email-settings-waiting");

  const mail = await sink.next();
  const link = mail.text.match(/http:\/\/\S+\/settings\/email\/confirm\/\S+/)![0];
  await page.goto(link);
  await audit(page, "email-confirm");
  await follow(page, page.getByRole("button", { name: "Confirm my address" }));
  await audit(page, "email-confirmed");

  await page.goto(`${s.url}/settings`);
  await audit(page, "email-settings-confirmed");
  await page.getByLabel("Mail from your contacts").selectOption("off");
  await follow(page, page.getByRole("button", { name: "Save what I get" }));
  expect(await page.locator("main").textContent()).toContain("Saved: what you get by e-mail.");
  expect(await page.getByLabel("Mail from your contacts").inputValue()).toBe("off");

  await page.goto(`${s.url}/account`);
  await follow(page, page.getByRole("button", { name: "Sign out every browser" }));
  await page.goto(`${s.url}/signin`);
  await audit(page, "email-signin");
  await page.getByLabel("Your e-mail address or handle").first().fill("ann.ax@example.org");
  // Enter in the field sends its own form.
  const sent = page.waitForEvent("domcontentloaded");
  await page.keyboard.press("Enter");
  await sent;
  expect(await page.locator("main").textContent()).toContain("we sent a link to sign in");
  const signin = await sink.next();
  await page.goto(signin.text.match(/http:\/\/\S+\/account\/reset\/\S+/)![0]);
  await audit(page, "email-signin-link");
  await follow(page, page.getByRole("button", { name: "Sign me in" }));
  await page.goto(`${s.url}/account`);
  expect(await page.locator("main").textContent()).toContain("Signed in as @ax-ann");

  const agent = (await s.server.db.read((tx) => agentByHandle(tx, "ax-ann")))!;
  const key = await s.server.db.read(readFormKey);
  await page.goto(`${s.url}/settings/email/unsubscribe/${unsubscribeToken(key, agent.agentId, ["expenses", "payments_to_confirm"])}`);
  await audit(page, "email-unsubscribe");
  await follow(page, page.getByRole("button", { name: "Stop these e-mails" }));
  expect(await page.locator("main").textContent()).toContain("You will get no more e-mails about: new and changed expenses you share; payments to confirm.");
  await audit(page, "email-unsubscribed");
}, 120_000);
