// Budgets and quotas per agent (docs/limits.md): the rate limit of all an agent's clients together, the cap on
// live API keys, and what one agent may store. Each refuses past its value with a code and a message naming the
// limit, stores nothing, and leaves other agents writing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient, issueApiKey } from "../../server/auth/credentials.ts";
import { DAY, HOUR, MINUTE } from "../../server/clock.ts";
import { DEFAULTS } from "../../server/config.ts";
import { key, startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";

const refused = async (s: TestServer, tool: string, args: Record<string, unknown>, agent: Agent, status: number, code: string) => {
  const r = await s.call(tool, { idempotency_key: key(), ...args }, agent.key);
  expect({ status: r.status, code: r.body.error?.code }).toEqual({ status, code });
  return r;
};

describe("the rate limit per agent", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ rateLimit: 5, agentRateLimit: 8 });
  });
  afterAll(() => s.stop());

  test("two keys of one agent together hit the agent's limit while each is under its own; another agent still gets through", async () => {
    const a = await s.register("rl-a");
    const b = await s.register("rl-b");
    const second = await s.server.db.tx(async (tx) =>
      issueApiKey(tx, await createClient(tx, a.agent_id, "second", "api_key", s.clock.now(), { maxKeys: 100 }), s.clock.now()),
    );
    for (let i = 0; i < 4; i++) {
      expect((await s.call("get_me", {}, a.key)).status).toBe(200);
      expect((await s.call("get_me", {}, second)).status).toBe(200);
    }
    // Each key has made 4 of its 5; the agent has made 8 of its 8.
    const over = await s.call("get_me", {}, second);
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe("RATE_LIMITED");
    expect(over.body.error.retry_after).toBe(60);
    expect(over.headers.get("RateLimit-Policy")).toBe('"agent";q=8;w=60');
    expect((await s.call("get_me", {}, a.key)).status).toBe(429);
    expect((await s.call("get_me", {}, b.key)).status).toBe(200);
    s.clock.advance(MINUTE);
    const next = await s.call("get_me", {}, a.key);
    expect(next.status).toBe(200);
    // The closer of the two limits is the one shown: the key's 4 left, not the agent's 7.
    expect(next.headers.get("RateLimit")).toBe('"credential";r=4;t=60');
  });
});

describe("quotas per agent", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      quotas: { ...DEFAULTS.quotas, keys: 3, envelopeBytesPerDay: 100, expensesPerGroupPerDay: 3, groups: 3, openPlans: 2, pendingHosts: 3 },
    });
  });
  afterAll(() => s.stop());

  test("the defaults are the documented ones", () => {
    expect(DEFAULTS.agentRateLimit).toBe(1200);
    expect(DEFAULTS.quotas).toEqual({
      keys: 20,
      envelopeBytesPerDay: 5_000_000,
      expensesPerGroupPerDay: 2000,
      groups: 500,
      openPlans: 200,
      pendingHosts: 20,
      attachmentBytes: 1024 * 1024 * 1024,
    });
  });

  test("live API keys: /account refuses one past the cap; rotate_api_key still replaces a key; disconnecting one makes room", async () => {
    const a = await s.register("q-keys");
    const b = new PageClient(s.url);
    await b.get("/account");
    await signInWithCode(s, b, "account", a.handle, a.key);
    for (const name of ["Laptop", "Server"]) expect((await b.post("/account/keys", { name })).status).toBe(200);
    const full = await b.post("/account/keys", { name: "One too many" });
    expect(full.status).toBe(409);
    expect(full.html).toContain("the limit is 3");
    // The browser is a client too (kind web), not counted against the keys.
    const clients = (await s.ok("list_clients", {}, a.key)).clients.filter((c: any) => c.kind === "api_key");
    expect(clients.map((c: any) => c.name)).not.toContain("One too many");
    expect(clients).toHaveLength(3);
    const { api_key: rotated } = await s.ok("rotate_api_key", {}, a.key);
    expect((await s.ok("get_me", {}, rotated)).agent.handle).toBe("q-keys");
    const laptop = clients.find((c: any) => c.name === "Laptop");
    await s.ok("disconnect_client", { client_id: laptop.client_id }, rotated);
    expect((await b.post("/account/keys", { name: "Now it fits" })).status).toBe(200);
    // Another handle is not touched by this one's keys.
    const other = new PageClient(s.url);
    const o = await s.register("q-keys-other");
    await other.get("/account");
    await signInWithCode(s, other, "account", o.handle, o.key);
    expect((await other.post("/account/keys", { name: "Laptop" })).status).toBe(200);
  });

  test("envelope bytes a day: refused past the budget with retry_after until enough ages out; nothing stored; others still send; a retry replays", async () => {
    const [a, b] = await s.contacts("q-mail-a", "q-mail-b");
    // 1 + 49 bytes of UTF-8 (é is two bytes): two of them fill the 100-byte day.
    const mail = { to: [b.handle], subject: "s", body_md: `${"é".repeat(24)}x` };
    await s.ok("send_envelope", mail, a.key);
    s.clock.advance(HOUR);
    const last = { ...mail, idempotency_key: key() };
    expect((await s.call("send_envelope", last, a.key)).status).toBe(200);
    const r = await refused(s, "send_envelope", { ...mail, body_md: "x" }, a, 429, "RATE_LIMITED");
    expect(r.body.error.message).toContain("limit of 100 bytes");
    expect(r.body.error.details).toMatchObject({ limit_bytes: 100, used_bytes: 100, envelope_bytes: 2 });
    // The first envelope leaves the rolling day 23 hours from now.
    expect(r.body.error.retry_after).toBe((DAY - HOUR) / 1000);
    expect(r.headers.get("Retry-After")).toBe(String((DAY - HOUR) / 1000));
    expect((await s.ok("list_envelopes", { direction: "sent" }, a.key)).envelopes).toHaveLength(2);
    // A reply counts too.
    const sent = (await s.ok("list_envelopes", { direction: "sent" }, a.key)).envelopes[0];
    await refused(s, "reply_envelope", { envelope_id: sent.envelope_id, body_md: "x" }, a, 429, "RATE_LIMITED");
    // The call that succeeded before the budget ran out still replays its answer.
    const again = await s.call("send_envelope", last, a.key);
    expect(again.status).toBe(200);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect((await s.call("send_envelope", { to: [a.handle], subject: "s", body_md: `${"é".repeat(24)}x`, idempotency_key: key() }, b.key)).status).toBe(200);
    s.clock.advance(DAY - HOUR);
    expect((await s.call("send_envelope", { ...mail, body_md: "x", idempotency_key: key() }, a.key)).status).toBe(200);
  });

  test("expenses per group a day: refused past the budget, per group; nothing stored; other members still add", async () => {
    const [a, b] = await s.contacts("q-exp-a", "q-exp-b");
    const { group } = await s.ok("create_group", { name: "Flat", currency: "EUR", members: [b.handle] }, a.key);
    const inv = (await s.ok("get_inbox", { since: "0" }, b.key)).items.find((i: any) => i.type === "group.invitation");
    await s.ok("respond_group_invite", { invite_id: inv.refs.invite_id, action: "accept" }, b.key);
    const { group: other } = await s.ok("create_group", { name: "Trip", currency: "EUR" }, a.key);
    const expense = { group_id: group.group_id, description: "Thing", amount: "1.00" };
    for (let i = 0; i < 3; i++) {
      await s.ok("add_expense", expense, a.key);
      s.clock.advance(MINUTE);
    }
    const r = await refused(s, "add_expense", expense, a, 429, "RATE_LIMITED");
    expect(r.body.error.message).toContain("the limit is 3");
    expect(r.body.error.retry_after).toBe((DAY - 3 * MINUTE) / 1000);
    expect((await s.ok("list_expenses", { group_id: group.group_id }, a.key)).expenses).toHaveLength(3);
    await s.ok("add_expense", { ...expense, group_id: other.group_id }, a.key);
    await s.ok("add_expense", expense, b.key);
  });

  test("groups: create, join and a new direct ledger are refused at the cap; leaving one makes room; others still create", async () => {
    const [a, b] = await s.contacts("q-grp-a", "q-grp-b");
    const ids: string[] = [];
    for (const name of ["One", "Two", "Three"]) ids.push((await s.ok("create_group", { name, currency: "EUR" }, a.key)).group.group_id);
    const r = await refused(s, "create_group", { name: "Four", currency: "EUR" }, a, 409, "CONFLICT");
    expect(r.body.error.message).toContain("the limit is 3");
    expect((await s.ok("list_groups", {}, a.key)).groups).toHaveLength(3);
    const { group: theirs } = await s.ok("create_group", { name: "Theirs", currency: "EUR" }, b.key);
    const { invite } = await s.ok("create_group_invite", { group_id: theirs.group_id }, b.key);
    await refused(s, "join_group", { invite_code: invite.code }, a, 409, "CONFLICT");
    await refused(s, "open_direct_ledger", { handle: b.handle, currency: "EUR" }, a, 409, "CONFLICT");
    expect((await s.ok("list_groups", {}, a.key)).groups).toHaveLength(3);
    await s.ok("leave_group", { group_id: ids[0] }, a.key);
    expect((await s.ok("join_group", { invite_code: invite.code }, a.key)).joined).toBe(true);
  });

  test("open plans: refused at the cap; cancelling one, or one being over, makes room; others still plan", async () => {
    const [a, b] = await s.contacts("q-plan-a", "q-plan-b");
    const plan = (startsAt: string, to = b) => ({ title: "Dinner", options: [{ starts_at: startsAt }], invitees: [to.handle] });
    const soon = "2026-11-23T19:00:00Z";
    const first = (await s.ok("create_plan", plan(soon), a.key)).plan;
    await s.ok("create_plan", plan("2026-12-23T19:00:00Z"), a.key);
    const r = await refused(s, "create_plan", plan(soon), a, 409, "CONFLICT");
    expect(r.body.error.message).toContain("the limit is 2");
    expect((await s.ok("list_plans", {}, a.key)).plans.filter((p: any) => p.organiser.handle === a.handle)).toHaveLength(2);
    await s.ok("create_plan", plan(soon, a), b.key);
    await s.ok("cancel_plan", { plan_id: first.plan_id }, a.key);
    await s.ok("create_plan", plan(soon), a.key);
    await refused(s, "create_plan", plan(soon), a, 409, "CONFLICT");
    s.clock.advance(2 * DAY);
    await s.ok("create_plan", plan("2026-12-01T19:00:00Z"), a.key);
  });
});
