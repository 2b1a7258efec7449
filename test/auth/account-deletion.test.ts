// A person deletes their account (/account/delete, in a browser that signed in moments ago) or takes it all out
// (/account/export). Deleted: every table of the schema is read, column by column, for the person's agent id, and it
// may remain only where the former member must (group membership and ledger rows, what others hold of the shared
// ledger and mail); the others' balances and expenses read the same, the group still sums to zero, and the other
// members and contacts are told. Exported: the document reopened and compared with what the tools answer the person.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { groupOf, inboxItems } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { grant } from "./oauth-helpers.ts";
import { leftovers as leftoversIn, rawRows } from "./schema-leftovers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("IHDR pixels")]).toString("base64");
const PASSWORD = "correct horse battery staple";
const OPTIONS = [{ starts_at: "2026-12-05T19:00:00Z" }, { starts_at: "2026-12-06T19:00:00Z" }];

/** A browser on /account signed in as the agent with a code from its inbox (moments ago, so deleting needs no password). */
async function browserOf(a: Agent): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/account");
  const page = await signInWithCode(s, b, "account", a.handle, a.key);
  expect(page.html).toContain(`Signed in as <strong>@${a.handle}</strong>`);
  return b;
}

/**
 * Carol and everything a person accumulates: contacts (and a request, and a block), a shared group she owns with
 * expenses, a receipt, a payment, a placeholder, a group only she is in, a direct ledger, an invitation she never
 * answered, mail both ways, plans both ways, a settings link, an OAuth app, a browser with a password, a guess.
 */
async function world(p: string) {
  const [carol, alice, bob, dave] = await s.contacts(`${p}-carol`, `${p}-alice`, `${p}-bob`, `${p}-dave`);
  await s.ok("add_contact", { handle: bob.handle }, alice.key);
  await s.ok("respond_contact_request", { handle: alice.handle, action: "accept" }, bob.key);
  const eve = await s.register(`${p}-eve`);
  await s.ok("add_contact", { handle: carol.handle, note: "hi" }, eve.key);
  const frank = await s.register(`${p}-frank`);
  await s.ok("block_contact", { handle: carol.handle }, frank.key);
  await s.ok("update_me", { description: "I like trains" }, carol.key);

  const trip = await groupOf(s, [carol, alice, bob], "EUR", "Trip");
  const { expense: dinner } = await s.ok("add_expense", { group_id: trip.group_id, description: "Dinner", amount: "90.00" }, carol.key);
  await s.ok("add_attachment", { expense_id: dinner.expense_id, filename: "dinner.png", media_type: "image/png", content_base64: PNG }, carol.key);
  const { expense: taxi } = await s.ok("add_expense", { group_id: trip.group_id, description: "Taxi", amount: "30.00" }, alice.key);
  await s.ok("respond_expense", { expense_id: taxi.expense_id, action: "confirm" }, carol.key);
  const { payment } = await s.ok("record_payment", { group_id: trip.group_id, to: carol.handle, amount: "10.00" }, bob.key);
  await s.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, carol.key);
  await s.ok("create_group_invite", { group_id: trip.group_id, name: "Zoe" }, carol.key);

  const solo = await groupOf(s, [carol], "EUR", "Solo");
  const { expense: lunch } = await s.ok("add_expense", { group_id: solo.group_id, description: "Lunch", amount: "12.00" }, carol.key);
  await s.ok("add_attachment", { expense_id: lunch.expense_id, filename: "lunch.png", media_type: "image/png", content_base64: PNG }, carol.key);

  const { group: direct } = await s.ok("open_direct_ledger", { handle: alice.handle, currency: "EUR" }, carol.key);
  await s.ok("add_expense", { group_id: direct.group_id, description: "Tickets", amount: "20.00" }, carol.key);

  const { group: later } = await s.ok("create_group", { name: "Later", currency: "EUR" }, alice.key);
  await s.ok("create_group_invite", { group_id: later.group_id, handle: carol.handle }, alice.key);

  const toAlice = await s.ok("send_envelope", { to: [alice.handle], subject: "Hello", body_md: "From carol" }, carol.key);
  const fromAlice = await s.ok("send_envelope", { to: [carol.handle, bob.handle], subject: "Hi all", body_md: "From alice" }, alice.key);

  const { plan: carolsPlan } = await s.ok("create_plan", { title: "Carol's dinner", options: OPTIONS, invitees: [alice.handle, bob.handle] }, carol.key);
  const { plan: alicesPlan } = await s.ok("create_plan", { title: "Alice's picnic", options: OPTIONS, invitees: [carol.handle, bob.handle] }, alice.key);
  await s.ok("respond_plan", { plan_id: alicesPlan.plan_id, response: "yes" }, carol.key);

  await s.ok("get_settings_link", {}, carol.key);
  const { tokens } = await grant(s, new PageClient(s.url), carol);
  // A wrong contact code: a guess counted against her agent id.
  await s.call("add_contact", { code: "no-such-code-anywhere", idempotency_key: `k-${crypto.randomUUID()}` }, carol.key);

  const browser = await browserOf(carol);
  expect((await browser.post("/account/password", { password: PASSWORD })).html).toContain("Password saved.");
  return {
    carol,
    alice,
    bob,
    dave,
    eve,
    frank,
    trip: trip.group_id,
    solo: solo.group_id,
    direct: direct.group_id,
    later: later.group_id,
    mail: { toAlice: toAlice.envelope.envelope_id, fromAlice: fromAlice.envelope.envelope_id },
    plans: { carols: carolsPlan.plan_id, alices: alicesPlan.plan_id },
    tokens,
    browser,
  };
}

const read = (q: ReturnType<typeof sql>) => rawRows(s, q);
const leftovers = (needle: string, allowed?: Parameters<typeof leftoversIn>[2]) => leftoversIn(s, needle, allowed);

/** A tool's answer as its caller reads it, without the inbox summary that rides on it. */
async function answer(tool: string, args: Record<string, unknown>, key: string) {
  const { inbox: _, ...data } = await s.ok(tool, args, key);
  return data;
}

/** What a member reads of a group's money: balances and every expense. */
// Without as_of_seq: the deletion is itself one of the group's events (the ledger reads the same).
const ledgerOf = async (key: string, groupId: string) => {
  const { as_of_seq: _b, ...balances } = await answer("get_balances", { group_id: groupId }, key);
  const { as_of_seq: _e, ...expenses } = await answer("list_expenses", { group_id: groupId, limit: 100 }, key);
  return { balances, expenses };
};

describe("deleting an account on /account", () => {
  test("the former member stays in the ledger; everything else of theirs is gone from every table; the others read the same and are told", async () => {
    const w = await world("del");
    const id = w.carol.agent_id;
    // Before: what alice and bob read of the shared group and the direct ledger; and that carol is everywhere.
    const before = {
      aliceTrip: await ledgerOf(w.alice.key, w.trip),
      bobTrip: await ledgerOf(w.bob.key, w.trip),
      aliceDirect: await ledgerOf(w.alice.key, w.direct),
    };
    const held = await leftovers(id);
    for (const table of ["clients", "contacts", "inbox_items", "passwords", "web_sessions", "plans", "plan_invitees", "attempt_times", "signin_codes"])
      expect(held.map((f) => f.table)).toContain(table);
    // Her clients (the key, the OAuth app, browsers): what hangs on them is found by their ids.
    const clientIds = ((await read(sql`SELECT client_id FROM clients WHERE agent_id = ${id}`)) as [string][]).map(([c]) => c);
    expect(clientIds.length).toBeGreaterThanOrEqual(4);
    expect((await leftovers(clientIds[0]!, {})).map((f) => f.table)).toContain("api_keys");

    const page = await w.browser.get("/account/delete");
    expect(page.status).toBe(200);
    expect(page.html).toContain("Trip");
    expect(page.html).toContain("Solo");
    const done = await w.browser.post("/account/delete", { confirm_handle: `@${w.carol.handle.toUpperCase()}` });
    expect(done.status).toBe(200);
    expect(done.html).toContain(`@${w.carol.handle} was deleted`);
    expect(done.headers.getSetCookie().join()).toContain("svc_session=; Path=/");

    // The others read the same ledger; each group still sums to zero.
    expect(await ledgerOf(w.alice.key, w.trip)).toEqual(before.aliceTrip);
    expect(await ledgerOf(w.bob.key, w.trip)).toEqual(before.bobTrip);
    expect(await ledgerOf(w.alice.key, w.direct)).toEqual(before.aliceDirect);
    for (const g of [w.trip, w.direct]) {
      const { members } = await s.ok("get_balances", { group_id: g }, w.alice.key);
      expect(members.reduce((sum: number, m: any) => sum + m.balance_minor, 0)).toBe(0);
      expect(members.find((m: any) => m.member_id === id)).toMatchObject({ agent: { handle: w.carol.handle, display_name: "DEL-CAROL" } });
    }
    // Carol owned Trip: the longest-standing member with an account took over.
    const group = (await s.ok("get_group", { group_id: w.trip }, w.alice.key)).group;
    expect(group.members.find((m: any) => m.member_id === w.alice.agent_id).role).toBe("owner");
    expect(group.members.find((m: any) => m.member_id === id).role).toBe("member");

    // Told: the others of her groups (only about the groups they share) and her contacts; not who asked or blocked.
    const told = async (a: Agent) => (await inboxItems(s, a.key, "network.account_deleted"))[0];
    expect((await told(w.alice)).payload).toMatchObject({ handle: w.carol.handle, member_id: id, was_contact: true });
    expect((await told(w.alice)).payload.groups.map((g: any) => g.group_id).sort()).toEqual([w.trip, w.direct].sort());
    expect((await told(w.bob)).payload.groups.map((g: any) => g.group_id)).toEqual([w.trip]);
    expect((await told(w.dave)).payload).toMatchObject({ was_contact: true, groups: [] });
    expect((await told(w.alice)).summary_md).toContain("former member");
    expect(await told(w.eve)).toBeUndefined();
    expect(await told(w.frank)).toBeUndefined();
    // What carol left in others' inboxes outside the ledger and mail is gone; their contact with her too.
    expect((await inboxItems(s, w.alice.key)).filter((i: any) => i.app === "plans" && i.refs.plan_id === w.plans.carols)).toEqual([]);
    expect((await inboxItems(s, w.eve.key)).length).toBe(0);
    expect((await s.ok("list_contacts", { state: "outgoing" }, w.eve.key)).contacts).toEqual([]);
    expect((await s.ok("list_contacts", {}, w.alice.key)).contacts.map((c: any) => c.agent.handle)).not.toContain(w.carol.handle);
    // Mail alice holds stays hers; her plan goes on without carol.
    expect((await s.ok("get_envelope", { envelope_id: w.mail.toAlice }, w.alice.key)).envelope.body_md.untrusted_content).toBe("From carol");
    expect((await s.ok("get_envelope", { envelope_id: w.mail.fromAlice }, w.bob.key)).envelope.to.map((t: any) => t.handle)).toContain(w.carol.handle);
    expect((await s.ok("get_plan", { plan_id: w.plans.alices }, w.alice.key)).plan.invitees.map((i: any) => i.agent.handle)).toEqual([w.bob.handle]);

    // No way in: the key, the OAuth token, the browser; the handle is never given out again.
    expect((await s.call("get_me", {}, w.carol.key)).status).toBe(401);
    expect((await s.call("get_me", {}, w.tokens.access_token)).status).toBe(401);
    expect((await w.browser.get("/account")).html).not.toContain("Signed in as");
    const again = await s.call("register_agent", { handle: w.carol.handle, display_name: "Someone else" });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");

    // The group goes on: an expense shared with the former member reaches no inbox of hers.
    await s.ok(
      "add_expense",
      { group_id: w.trip, description: "Late fee", amount: "4.00", split: { mode: "equal", among: [{ handle: w.alice.handle }, { handle: w.carol.handle }] } },
      w.alice.key,
    );

    // Table by table, column by column: carol's id only where the former member must remain.
    expect(await leftovers(id)).toEqual([]);
    for (const c of clientIds) expect(await leftovers(c, {})).toEqual([]);
    // The group only she was in is gone whole, its receipt too.
    expect(await leftovers(w.solo, {})).toEqual([]);
    const [row] = await read(
      sql`SELECT handle, display_name, description, contact_code, phone, email, retired_at IS NOT NULL, deleted_at IS NOT NULL FROM agents WHERE agent_id = ${id}`,
    );
    expect(row).toEqual([w.carol.handle, "DEL-CAROL", null, null, null, null, 1, 1]);
  });
});

describe("downloading everything on /account", () => {
  test("one JSON file that reads, part by part, as the tools answer the person, with no secret in it", async () => {
    const w = await world("exp");
    const { carol } = w;
    const res = await w.browser.get("/account/export");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="svc-account-${carol.handle}-2026-11-22.json"`);
    const doc = JSON.parse(res.html);
    expect(doc).toMatchObject({ format: "svc-account-export", version: 1 });

    expect(doc.profile).toMatchObject((await s.ok("get_me", {}, carol.key)).agent);
    expect(doc.profile.description).toBe("I like trains");
    expect(doc.sign_in.password_set_at).toBeString();
    const clientFields = (list: any[]) =>
      list.map(({ client_id, name, kind, created_at, obtained_through }: any) => ({ client_id, name, kind, created_at, obtained_through }));
    expect(clientFields(doc.clients)).toEqual(clientFields((await s.ok("list_clients", {}, carol.key)).clients));
    const contacts = [];
    for (const state of ["accepted", "incoming", "outgoing", "blocked"])
      contacts.push(...(await s.ok("list_contacts", { state, limit: 100 }, carol.key)).contacts);
    expect(doc.contacts).toEqual(contacts);
    expect(doc.contacts.map((c: any) => c.state).sort()).toEqual(["accepted", "accepted", "accepted", "incoming"]);
    expect(doc.inbox).toEqual((await inboxItems(s, carol.key)).filter((i: any) => i.type !== "auth.join_code"));
    expect(doc.inbox.length).toBeGreaterThan(5);
    const envelopes = (await s.ok("list_envelopes", { limit: 100 }, carol.key)).envelopes;
    expect(doc.mail.map((e: any) => e.envelope_id)).toEqual(envelopes.map((e: any) => e.envelope_id));
    for (const e of doc.mail) expect(e).toEqual((await s.ok("get_envelope", { envelope_id: e.envelope_id }, carol.key)).envelope);
    expect(doc.plans.map((p: any) => p.plan.plan_id).sort()).toEqual([w.plans.carols, w.plans.alices].sort());
    for (const p of doc.plans) {
      const { plan, expenses } = await s.ok("get_plan", { plan_id: p.plan.plan_id }, carol.key);
      expect(p).toEqual({ plan, expenses });
    }
    const groups = (await s.ok("list_groups", {}, carol.key)).groups.map((g: any) => g.group_id);
    expect(doc.groups.map((g: any) => g.group.group_id).sort()).toEqual(groups.sort());
    expect(groups.sort()).toEqual([w.trip, w.solo, w.direct].sort());
    for (const g of doc.groups) {
      const exported = await s.ok("export_group", { group_id: g.group.group_id, format: "json" }, carol.key);
      expect(g).toEqual(JSON.parse(exported.content.untrusted_content));
    }
    // No secret: not the key, the OAuth tokens, the password, a sign-in code.
    for (const secret of [carol.key, w.tokens.access_token, w.tokens.refresh_token, PASSWORD]) expect(res.html).not.toContain(secret);
    expect(res.html).not.toContain("auth.join_code");
  });
});
