// The plans pages in Chromium on a phone, in New York: a person proposes a plan to a contact with two times typed in
// their own time zone (kept as the UTC instants they mean), the contact answers, and the organiser chooses the time
// the answers favour; the plan is then scheduled for it. A refused proposal keeps what was typed, its error beside
// the field; a person without contacts is told to add one first.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { audit, follow } from "./audit.ts";
import { launchChromium, type Browser } from "./chromium.ts";
import { inboxCode, PageClient, signInWithCode } from "./page-client.ts";

let s: TestServer;
let browser: Browser;
let page: Page;
let ann: Agent;
let cat: Agent;
beforeAll(async () => {
  s = await startTestServer();
  ann = await s.register("pl-ann", { display_name: "Ann" });
  cat = await s.register("pl-cat", { display_name: "Cat" });
  await s.ok("add_contact", { handle: "pl-cat" }, ann.key);
  await s.ok("respond_contact_request", { handle: "pl-ann", action: "accept" }, cat.key);
  browser = await launchChromium({ width: 390, height: 844 }, { timezoneId: "America/New_York" });
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

const main = () => page.locator("main").textContent();

test("Ann proposes a plan with two times in her zone; Cat answers; Ann chooses the time and the plan is scheduled", async () => {
  await page.goto(`${s.url}/signin`);
  await page.getByLabel("Your handle").fill("pl-ann");
  await follow(page, page.getByRole("button", { name: "Send me a code" }));
  await page.getByLabel("One-time code").fill(await inboxCode(s, ann.key));
  await follow(page, page.getByRole("button", { name: "Continue" }));

  await page.goto(`${s.url}/plans`);
  await follow(page, page.getByRole("link", { name: "Propose a plan" }));
  await audit(page, "plan-new", { full: true });
  await page.getByLabel("What").fill("Dinner at Rosa's");
  await page.locator("#f-starts_at_0").fill("2026-12-10T19:30");
  await page.locator("#f-place_0").fill("Rosa's");
  await page.locator("#f-starts_at_1").fill("2026-12-11T20:00");
  await page.getByLabel("Cat", { exact: true }).check();
  await follow(page, page.getByRole("button", { name: "Propose the plan" }));
  await expect(page.getByRole("status").textContent()).resolves.toBe("The plan is proposed: the people invited are asked.");

  const planId = new URL(page.url()).pathname.split("/")[2]!;
  const { plan } = await s.ok("get_plan", { plan_id: planId }, cat.key);
  // 19:30 in New York in December is 00:30 UTC the next day.
  expect(plan.options.map((o: any) => o.starts_at)).toEqual(["2026-12-11T00:30:00.000Z", "2026-12-12T01:00:00.000Z"]);
  expect(plan.invitees.map((i: any) => i.agent.handle)).toEqual(["pl-cat"]);
  await s.ok("respond_plan", { plan_id: planId, response: "yes", option_ids: [plan.options[1].option_id] }, cat.key);

  await page.reload();
  await expect(main()).resolves.toContain("Cat: yes");
  const choose = page.getByRole("button", { name: /^Choose this time/ });
  await expect(choose.count()).resolves.toBe(2);
  await audit(page, "plan-organiser", { full: true });
  await follow(page, choose.nth(1));
  await expect(page.getByRole("status").textContent()).resolves.toBe("The time is chosen: everyone invited is told.");
  const chosen = (await s.ok("get_plan", { plan_id: planId }, cat.key)).plan;
  expect(chosen).toMatchObject({ state: "scheduled", chosen_option_id: plan.options[1].option_id });
  await expect(main()).resolves.toContain("chosen");
  await expect(choose.count()).resolves.toBe(1);
}, 120_000);

test("a proposal with nobody invited comes back with its error beside the people, what was typed kept", async () => {
  const b = new PageClient(s.url);
  await b.get("/plans");
  await signInWithCode(s, b, "account", "pl-ann", ann.key);
  const form = await b.get("/plans/new");
  expect(form.html).toContain("Times are in your time zone");
  const refused = await b.post("/plans/new", { title: "Picnic", starts_at_0: "2026-12-20T12:00", place_0: "The park" });
  expect(refused.status).toBe(400);
  expect(refused.html).toContain('id="f-invitees-error"');
  expect(refused.html).toContain('value="Picnic"');
  expect(refused.html).toContain('value="The park"');
  expect(refused.html).not.toContain("create_plan");
  // Without script the time typed is read as UTC, as the form says.
  const sent = await b.post("/plans/new", { title: "Picnic", starts_at_0: "2026-12-20T12:00", invitee: "pl-cat" });
  expect(sent.status).toBe(303);
  const { plans } = await s.ok("list_plans", {}, cat.key);
  expect(plans.find((p: any) => p.title.untrusted_content === "Picnic").options[0].starts_at).toBe("2026-12-20T12:00:00.000Z");

  // Someone with no contacts is told to add one first.
  const dee = await s.register("pl-dee", { display_name: "Dee" });
  const d = new PageClient(s.url);
  await d.get("/plans");
  await signInWithCode(s, d, "account", "pl-dee", dee.key);
  expect((await d.get("/plans/new")).html).toContain('<a href="/contacts">Add a contact</a> first');
}, 60_000);
