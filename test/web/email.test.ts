// E-mail for people, through the real server and a real SMTP server on loopback (smtp-server, test/web/email-sink.ts):
// an address confirmed by a link; notifications derived from the inbox items with the right amounts and names,
// several at once in one e-mail, or in a daily digest; RFC 8058 one-click unsubscribe; sign-in and a password reset
// by a link sent by e-mail; nothing lost while the SMTP server is down, and nothing sent twice; the per-address limit;
// a claim link sent to a friend from the group page. Time moves with the injected clock, and the job runner runs
// when the test says (s.server.jobs.runDue()).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { emailAddresses, emailOutbox } from "../../db/schema/index.ts";
import { DAY, HOUR, MINUTE } from "../../server/clock.ts";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { MailSink, type ReceivedMail } from "./email-sink.ts";
import { PageClient, signInWithCode } from "./page-client.ts";

let sink: MailSink;
let s: TestServer;
const FROM = "svc <svc@svc.test>";
const PASSWORD = "correct horse battery staple";

beforeAll(async () => {
  sink = await MailSink.start();
  s = await startTestServer({ smtpUrl: sink.url, mailFrom: FROM });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await sink?.stop();
});

const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The one link of this server in an e-mail's text that starts with `prefix`. */
function linkIn(t: TestServer, mail: ReceivedMail, prefix: string): string {
  const found = mail.text.match(new RegExp(`${escaped(t.url)}${escaped(prefix)}[^\\s]*`));
  expect(found).not.toBeNull();
  return found![0];
}

/** Runs the jobs once the injected clock moved `ms` on, after any run a page started. */
async function after(ms: number, t: TestServer = s) {
  await t.server.jobs.idle();
  t.clock.advance(ms);
  await t.server.jobs.runDue();
}

/** No e-mail arrived, once every run the jobs started is over. */
async function nothingSent(t: TestServer = s, into: MailSink = sink) {
  await t.server.jobs.idle();
  expect(into.waiting).toBe(0);
}

const add = (g: TestGroup, by: string, description: string, amount: string, extra: Record<string, unknown> = {}) =>
  s.ok("add_expense", { group_id: g.group_id, description, amount, split: { mode: "equal" }, ...extra }, g.by[by]!.key);

/** A browser signed in as `handle` through a code its agent's key read. */
async function browserOf(t: TestServer, handle: string, agentKey: string): Promise<PageClient> {
  const b = new PageClient(t.url);
  await b.get("/account");
  await signInWithCode(t, b, "account", handle, agentKey);
  return b;
}

/** `b` adds `address` on the settings page and opens the link e-mailed to it. */
async function confirmAddress(b: PageClient, address: string, t: TestServer = s, into: MailSink = sink): Promise<void> {
  await b.get("/settings");
  expect((await b.post("/settings/email", { email: address })).status).toBe(303);
  const mail = await into.next();
  expect(mail.headers.get("to")).toBe(address);
  const confirm = await b.get(pathOf(linkIn(t, mail, "/settings/email/confirm/")));
  const done = await b.post("/settings/email/confirm", { token: confirm.html.match(/name="token" value="([^"]+)"/)![1]! });
  expect(done.html).toContain("is confirmed");
  await t.server.jobs.idle();
}

/** No tool name, no "your human": what a person reads. */
function plainLanguage(mail: ReceivedMail) {
  for (const body of [mail.text, mail.html]) {
    expect(body).not.toContain("your human");
    for (const tool of TOOLS) expect(body).not.toContain(tool.name);
  }
}

describe("an address confirmed by a link", () => {
  test("the settings page sends a confirmation link; opening it and pressing the button confirms the address", async () => {
    const ann = await s.register("cf-ann");
    const b = await browserOf(s, "cf-ann", ann.key);
    expect((await b.get("/settings")).html).toContain("Send a confirmation link");
    const sent = await b.follow(await b.post("/settings/email", { email: "Ann@example.org" }));
    expect(sent.html).toContain("We sent a link to <strong>Ann@example.org</strong>");
    const mail = await sink.next();
    expect(mail.headers.get("to")).toBe("Ann@example.org");
    expect(mail.headers.get("from")).toBe(FROM);
    expect(mail.subject).toBe("Confirm your e-mail address for svc");
    expect(mail.text).toContain("You added this address to your svc account @cf-ann.");
    plainLanguage(mail);
    const link = linkIn(s, mail, "/settings/email/confirm/eml_");
    expect(mail.html).toContain(`href="${link}"`);
    // Looking at the link (a preview) confirms nothing; the button does, once, in any browser.
    const elsewhere = new PageClient(s.url);
    const shown = await elsewhere.get(pathOf(link));
    expect(shown.html).toContain("Confirm <strong>Ann@example.org</strong> as the e-mail address of <strong>@cf-ann</strong>");
    expect((await b.get("/settings")).html).not.toContain("(confirmed)");
    const token = pathOf(link).split("/").pop()!;
    expect((await elsewhere.post("/settings/email/confirm", { token })).html).toContain("<strong>Ann@example.org</strong> is confirmed");
    expect((await elsewhere.post("/settings/email/confirm", { token })).status).toBe(410);
    const settings = await b.get("/settings");
    expect(settings.html).toContain("Your address: <strong>Ann@example.org</strong> (confirmed)");
    expect(settings.html).toContain("What you get by e-mail");
    await nothingSent();
  });

  test("a malformed address, or several at once, is refused and nothing is sent", async () => {
    const ben = await s.register("cf-ben");
    const b = await browserOf(s, "cf-ben", ben.key);
    await b.get("/settings");
    for (const bad of ["not-an-address", "a@b.org, c@d.org", "a@b.org\r\nBcc: c@d.org", "<a@b.org>", "a b@c.org"]) {
      const r = await b.post("/settings/email", { email: bad });
      expect(r.status).toBe(400);
      expect(r.html).toContain("That is not an e-mail address");
    }
    await nothingSent();
  });
});

describe("notifications", () => {
  test("a new expense: one e-mail a couple of minutes later, with the amounts, the names, and the other person's words escaped", async () => {
    const g = await groupWith(s, ["nt-ann", "nt-ben", "nt-col"], "EUR", "Lisbon <trip>");
    await confirmAddress(await browserOf(s, "nt-ann", g.by["nt-ann"]!.key), "ann.nt@example.org");
    await add(g, "nt-ben", "Dinner <b>& wine</b>", "60.00", { notes: "Paid with my card <script>alert(1)</script>" });
    await after(MINUTE);
    await nothingSent();
    await after(MINUTE);
    const mail = await sink.next();
    expect(mail.headers.get("to")).toBe("ann.nt@example.org");
    expect(mail.subject).toBe("New on svc: 1 expense update");
    expect(mail.text).toContain("Hello NT-ANN,");
    expect(mail.text).toContain("NT-BEN (@nt-ben) added “Dinner <b>& wine</b>”, in “Lisbon <trip>”: 60.00 EUR. Your share: 20.00 EUR.");
    expect(mail.text).toContain("  > Paid with my card <script>alert(1)</script>");
    expect(mail.text).toContain(`${s.url}/groups/${g.group_id}/expenses/`);
    expect(mail.html).toContain("“Dinner &lt;b&gt;&amp; wine&lt;/b&gt;”, in “Lisbon &lt;trip&gt;”: 60.00 EUR. Your share: 20.00 EUR.");
    expect(mail.html).toContain("Paid with my card &lt;script&gt;alert(1)&lt;/script&gt;");
    expect(mail.html).not.toContain("<script>");
    expect(mail.html).not.toContain("<b>&");
    plainLanguage(mail);
    // The agent's own inbox is as it was: the item, in the agent's words.
    const items = (await s.ok("get_inbox", { since: "0", include_seen: true }, g.by["nt-ann"]!.key)).items;
    expect(items.filter((i: any) => i.type === "ledger.expense_added")).toHaveLength(1);
    // Nobody else confirmed an address: nobody else got anything, and nothing comes twice.
    await after(10 * MINUTE);
    await nothingSent();
  });

  test("three people due at the same moment each get their e-mail, and the job goes on working after", async () => {
    const g = await groupWith(s, ["tr-ann", "tr-ben", "tr-col"], "EUR", "Cabin");
    for (const h of ["tr-ann", "tr-ben", "tr-col"]) await confirmAddress(await browserOf(s, h, g.by[h]!.key), `${h}@example.org`);
    await add(g, "tr-ann", "Firewood", "30.00");
    await add(g, "tr-ben", "Bread", "9.00");
    await after(2 * MINUTE);
    const first = [await sink.next(), await sink.next(), await sink.next()];
    expect(first.map((m) => m.headers.get("to")).sort()).toEqual(["tr-ann@example.org", "tr-ben@example.org", "tr-col@example.org"]);
    // The next round is composed and sent too: nothing was left half done.
    await add(g, "tr-col", "Milk", "3.00");
    await after(2 * MINUTE);
    const second = [await sink.next(), await sink.next()];
    expect(second.map((m) => m.headers.get("to")).sort()).toEqual(["tr-ann@example.org", "tr-ben@example.org"]);
    await after(10 * MINUTE);
    await nothingSent();
  });

  test("what happens within a few minutes comes in one e-mail", async () => {
    const g = await groupWith(s, ["co-ann", "co-ben", "co-col"], "EUR", "Flat");
    await confirmAddress(await browserOf(s, "co-ann", g.by["co-ann"]!.key), "ann.co@example.org");
    await add(g, "co-ben", "Groceries", "30.00");
    await after(MINUTE);
    await add(g, "co-col", "Rent", "900.00");
    await s.ok("record_payment", { group_id: g.group_id, to: "co-ann", amount: "12.50" }, g.by["co-ben"]!.key);
    await after(MINUTE);
    const mail = await sink.next();
    expect(mail.subject).toBe("New on svc: 2 expense updates, 1 payment to confirm");
    expect(mail.text).toContain("CO-BEN (@co-ben) added “Groceries”, in “Flat”: 30.00 EUR. Your share: 10.00 EUR.");
    expect(mail.text).toContain("CO-COL (@co-col) added “Rent”, in “Flat”: 900.00 EUR. Your share: 300.00 EUR.");
    expect(mail.text).toContain("CO-BEN (@co-ben) says they paid you 12.50 EUR in “Flat”. Confirm it once you have received it, or reject it.");
    plainLanguage(mail);
    await after(10 * MINUTE);
    await nothingSent();
  });

  test("a kind chosen daily comes in a digest a day later; the others still come at once", async () => {
    const g = await groupWith(s, ["dg-ann", "dg-ben"], "EUR", "Boat");
    const b = await browserOf(s, "dg-ann", g.by["dg-ann"]!.key);
    await confirmAddress(b, "ann.dg@example.org");
    await b.get("/settings");
    expect((await b.follow(await b.post("/settings/email/prefs", { expenses: "daily" }))).html).toContain("Saved: what you get by e-mail.");
    expect((await b.get("/settings")).html).toContain(
      '<select id="f-email-expenses" name="expenses"><option value="immediate">At once</option><option value="daily" selected>',
    );
    await add(g, "dg-ben", "Fuel", "80.00");
    await after(2 * MINUTE);
    await nothingSent();
    await s.ok("record_payment", { group_id: g.group_id, to: "dg-ann", amount: "5.00" }, g.by["dg-ben"]!.key);
    await after(2 * MINUTE);
    const now = await sink.next();
    expect(now.subject).toBe("New on svc: 1 payment to confirm");
    expect(now.text).not.toContain("Fuel");
    await add(g, "dg-ben", "Mooring", "20.00");
    await after(12 * HOUR);
    await nothingSent();
    await after(12 * HOUR);
    const digest = await sink.next();
    expect(digest.subject).toBe("Your daily svc digest: 2 expense updates");
    expect(digest.text).toContain("Here is what happened on svc in the last day: 2 expense updates.");
    expect(digest.text).toContain("DG-BEN (@dg-ben) added “Fuel”, in “Boat”: 80.00 EUR. Your share: 40.00 EUR.");
    expect(digest.text).toContain("DG-BEN (@dg-ben) added “Mooring”, in “Boat”: 20.00 EUR. Your share: 10.00 EUR.");
    plainLanguage(digest);
    await after(DAY);
    await nothingSent();
  });

  test("one-click unsubscribe (RFC 8058): a POST to the List-Unsubscribe URL stops that kind, and only it", async () => {
    const g = await groupWith(s, ["us-ann", "us-ben"], "EUR", "Bikes");
    const b = await browserOf(s, "us-ann", g.by["us-ann"]!.key);
    await confirmAddress(b, "ann.us@example.org");
    await add(g, "us-ben", "Tyres", "40.00");
    await after(2 * MINUTE);
    const mail = await sink.next();
    expect(mail.headers.get("list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click");
    const url = mail.headers.get("list-unsubscribe")!.match(/^<([^>]+)>$/)![1]!;
    expect(url).toStartWith(`${s.url}/settings/email/unsubscribe/`);
    expect(mail.text).toContain(url);
    // Looking at the page stops nothing.
    const page = await new PageClient(s.url).get(pathOf(url));
    expect(page.html).toContain("Stop the e-mails about: new and changed expenses you share.");
    expect((await b.get("/settings")).html).toContain('name="expenses"><option value="immediate" selected>');
    // A forged or altered token stops nothing.
    expect((await s.raw(`${pathOf(url)}x`, { method: "POST", body: "List-Unsubscribe=One-Click" })).status).toBe(404);
    // What a mail client sends: no cookie, no form of this server.
    const res = await s.raw(pathOf(url), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("You will get no more e-mails about: new and changed expenses you share.");
    expect((await b.get("/settings")).html).toContain(
      'name="expenses"><option value="immediate">At once</option><option value="daily">In a daily e-mail</option><option value="off" selected>',
    );
    await add(g, "us-ben", "Chain", "15.00");
    await after(2 * MINUTE);
    await nothingSent();
    await s.ok("record_payment", { group_id: g.group_id, to: "us-ann", amount: "20.00" }, g.by["us-ben"]!.key);
    await after(2 * MINUTE);
    const other = await sink.next();
    expect(other.subject).toBe("New on svc: 1 payment to confirm");
    expect(other.text).not.toContain("Chain");
  });
});

describe("signing in by e-mail", () => {
  test("“e-mail me a link”: the link signs a browser in once; an unknown address gets the same answer and no e-mail", async () => {
    const ann = await s.register("si-ann");
    await confirmAddress(await browserOf(s, "si-ann", ann.key), "ann.si@example.org");
    const b = new PageClient(s.url);
    expect((await b.get("/signin")).html).toContain("E-mail me a link");
    const unknown = await b.post("/signin/email", { email: "nobody@example.org", purpose: "signin" });
    await nothingSent();
    const asked = await b.post("/signin/email", { email: "ANN.SI@example.org", purpose: "signin" });
    expect(asked.status).toBe(200);
    expect(asked.html).toContain("we sent a link to sign in");
    expect(unknown.html.replace(/name="csrf" value="[^"]+"/g, "")).toBe(asked.html.replace(/name="csrf" value="[^"]+"/g, ""));
    const mail = await sink.next();
    expect(mail.headers.get("to")).toBe("ann.si@example.org");
    expect(mail.subject).toBe("Your svc sign-in link");
    plainLanguage(mail);
    const link = pathOf(linkIn(s, mail, "/account/reset/rst_"));
    const shown = await b.get(link);
    expect(shown.html).toContain("This link signs you in once.");
    const token = link.split("/").pop()!;
    const used = await b.post("/account/reset", { token });
    expect(used.status).toBe(303);
    expect(used.location).toBe("/");
    expect((await b.get("/account")).html).toContain("Signed in as <strong>@si-ann</strong>");
    expect((await new PageClient(s.url).get(link)).status).toBe(410);
    // By the handle too: the link goes to its confirmed address.
    await b.post("/signin/email", { email: "@si-ann", purpose: "signin" });
    expect((await sink.next()).headers.get("to")).toBe("ann.si@example.org");
  });

  test("a password reset by e-mail: the link lets the person set a new password without the old one", async () => {
    const b = new PageClient(s.url);
    await b.get("/signup");
    expect((await b.post("/signup", { handle: "rs-ann", display_name: "Ann Reset", method: "password", password: PASSWORD })).status).toBe(303);
    await confirmAddress(b, "ann.rs@example.org");
    await b.follow(await b.post("/account/signout", { flow: "account" }));
    const other = new PageClient(s.url);
    await other.get("/signin");
    const asked = await other.post("/signin/email", { email: "ann.rs@example.org", purpose: "reset" });
    expect(asked.html).toContain("we sent a link to reset its password");
    const mail = await sink.next();
    expect(mail.subject).toBe("Reset your svc password");
    expect(mail.text).toContain("Hello Ann Reset,");
    plainLanguage(mail);
    const link = pathOf(linkIn(s, mail, "/account/reset/rst_"));
    expect((await other.get(link)).html).toContain("then set a new password or add a passkey");
    const used = await other.post("/account/reset", { token: link.split("/").pop()! });
    expect(used.location).toBe("/account#sign-in");
    const account = await other.get("/account");
    expect(account.html).toContain("Signed in as <strong>@rs-ann</strong>");
    expect(account.html).not.toContain("Current password");
    expect((await other.post("/account/password", { password: "a brand new passphrase" })).html).toContain("Password saved.");
    const fresh = new PageClient(s.url);
    await fresh.get("/signin");
    expect((await fresh.post("/signin/password", { handle: "rs-ann", password: PASSWORD })).status).toBe(401);
    expect((await fresh.post("/signin/password", { handle: "rs-ann", password: "a brand new passphrase" })).location).toBe("/account");
  });

  test("an address added in a browser obtained through an agent's key ends with that key", async () => {
    const ann = await s.register("tk-ann");
    const b = await browserOf(s, "tk-ann", ann.key);
    await confirmAddress(b, "ann.tk@example.org");
    const keyClient = (await s.ok("list_clients", {}, ann.key)).clients.find((c: any) => c.current).client_id;
    // The key's client is disconnected (from the browser's account page, as the person would).
    await b.get("/account");
    expect((await b.post("/account/clients/disconnect", { client_id: keyClient, idempotency_key: crypto.randomUUID() })).status).toBe(303);
    const other = new PageClient(s.url);
    await other.get("/signin");
    await other.post("/signin/email", { email: "ann.tk@example.org", purpose: "signin" });
    await nothingSent();
    expect(await s.server.db.read((tx) => tx.select().from(emailAddresses).where(eq(emailAddresses.agentId, ann.agent_id)))).toEqual([]);
  });
});

describe("the outbox", () => {
  test("SMTP down, then up: nothing is lost, and each e-mail is sent once", async () => {
    const own = await MailSink.start();
    const port = own.port;
    const t = await startTestServer({ smtpUrl: own.url, mailFrom: FROM });
    try {
      const g = await groupWith(t, ["dn-ann", "dn-ben"], "EUR", "Hut");
      await confirmAddress(await browserOf(t, "dn-ann", g.by["dn-ann"]!.key), "ann.dn@example.org", t, own);
      await own.stop();
      await t.ok("add_expense", { group_id: g.group_id, description: "Wood", amount: "18.00", split: { mode: "equal" } }, g.by["dn-ben"]!.key);
      await after(2 * MINUTE, t);
      await after(MINUTE, t);
      const waiting = (await t.server.db.read((tx) => tx.select().from(emailOutbox))).filter((r) => r.purpose === "notification");
      expect(waiting).toHaveLength(1);
      expect(waiting[0]).toMatchObject({ sentAt: null, failedAt: null, attempts: 2 });
      expect(waiting[0]!.lastError).toContain("ECONNREFUSED");
      const back = await MailSink.start(port);
      try {
        await after(2 * MINUTE, t);
        const mail = await back.next();
        expect(mail.subject).toBe("New on svc: 1 expense update");
        expect(mail.text).toContain("DN-BEN (@dn-ben) added “Wood”, in “Hut”: 18.00 EUR. Your share: 9.00 EUR.");
        await after(HOUR, t);
        await nothingSent(t, back);
        const sent = (await t.server.db.read((tx) => tx.select().from(emailOutbox))).filter((r) => r.purpose === "notification");
        expect(sent[0]!.sentAt).not.toBeNull();
      } finally {
        await back.stop();
      }
    } finally {
      await t.stop();
    }
  }, 60_000);

  test("an address gets at most 10 e-mails an hour; what comes past that waits and comes together, not lost", async () => {
    const g = await groupWith(s, ["lm-ann", "lm-ben"], "EUR", "Club");
    // The confirmation e-mail is the first of the hour.
    await confirmAddress(await browserOf(s, "lm-ann", g.by["lm-ann"]!.key), "ann.lm@example.org");
    for (let i = 1; i <= 9; i++) {
      await add(g, "lm-ben", `Round ${i}`, "10.00");
      await after(2 * MINUTE);
      expect((await sink.next()).text).toContain(`“Round ${i}”`);
    }
    await add(g, "lm-ben", "Round 10", "10.00");
    await after(2 * MINUTE);
    await add(g, "lm-ben", "Round 11", "10.00");
    await after(10 * MINUTE);
    await nothingSent();
    // The hour of the first e-mail is over: one e-mail with both.
    await after(40 * MINUTE);
    const late = await sink.next();
    expect(late.subject).toBe("New on svc: 2 expense updates");
    expect(late.text).toContain("“Round 10”");
    expect(late.text).toContain("“Round 11”");
    await after(10 * MINUTE);
    await nothingSent();
  }, 60_000);
});

describe("a claim link by e-mail", () => {
  test("a member sends a placeholder's claim link to the friend's address from the group page", async () => {
    const g = await groupWith(s, ["cl-ann", "cl-ben"], "EUR", "Cabin");
    const b = new PageClient(s.url);
    await b.get("/groups");
    await signInWithCode(s, b, "groups", "cl-ann", g.by["cl-ann"]!.key);
    await b.get(`/groups/${g.group_id}`);
    const added = await b.post(`/groups/${g.group_id}/placeholders`, { form: "placeholder", name: "Dana", idempotency_key: crypto.randomUUID() });
    const page = await b.follow(added);
    const code = page.html.match(/name="code" value="([^"]+)"/)?.[1];
    expect(code).toStartWith("claim-");
    expect(page.html).toContain("Or e-mail the link to them");
    const sent = await b.post(`/groups/${g.group_id}/placeholders/email`, { code: code!, email: "dana@example.org" });
    expect(sent.status).toBe(303);
    expect((await b.follow(sent)).html).toContain("We e-mailed them the link to take their place.");
    const mail = await sink.next();
    expect(mail.headers.get("to")).toBe("dana@example.org");
    expect(mail.subject).toBe("Your place in a group on svc");
    expect(mail.text).toContain("CL-ANN (@cl-ann) added you as “Dana” to the group “Cabin” on svc");
    plainLanguage(mail);
    const link = pathOf(linkIn(s, mail, "/claim/claim-"));
    expect(link).toBe(`/claim/${code}`);
    expect((await new PageClient(s.url).get(link)).html).toContain("Cabin");
    // Another group's page cannot send it.
    const other = await groupWith(s, ["cl-col"], "EUR", "Elsewhere");
    await s.ok("create_group_invite", { group_id: other.group_id, name: "Eve" }, other.by["cl-col"]!.key);
    expect((await b.post(`/groups/${other.group_id}/placeholders/email`, { code: code!, email: "dana@example.org" })).status).toBe(404);
    await nothingSent();
  });
});

describe("without --smtp-url", () => {
  test("no page offers e-mail, and every page still works", async () => {
    const t = await startTestServer();
    try {
      const ann = await t.register("off-ann");
      const b = await browserOf(t, "off-ann", ann.key);
      const settings = await b.get("/settings");
      expect(settings.status).toBe(200);
      expect(settings.html).not.toContain("E-mail address");
      const signin = await new PageClient(t.url).get("/signin");
      expect(signin.status).toBe(200);
      expect(signin.html).not.toContain("E-mail me a link");
      await b.get("/settings");
      expect((await b.post("/settings/email", { email: "ann.off@example.org" })).status).toBe(200);
      expect(await t.server.db.read((tx) => tx.select().from(emailOutbox))).toEqual([]);
    } finally {
      await t.stop();
    }
  });
});
