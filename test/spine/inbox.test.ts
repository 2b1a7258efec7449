import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DAY } from "../../server/clock.ts";
import { createClient, issueApiKey } from "../../server/auth/credentials.ts";
import { key, startTestServer, type Agent, type TestServer } from "../harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** An agent with `n` contact requests waiting in its inbox. */
async function withRequests(prefix: string, n: number): Promise<Agent> {
  const target = await s.register(`${prefix}-t`);
  for (let i = 0; i < n; i++) {
    const from = await s.register(`${prefix}-f${i}`);
    await s.ok("add_contact", { handle: target.handle, note: `note ${i}` }, from.key);
  }
  return target;
}

async function secondClient(agent: Agent): Promise<string> {
  return s.server.db.tx(async (tx) => {
    const clientId = await createClient(tx, agent.agent_id, "second", "api_key", s.clock.now(), { maxKeys: 100 });
    return issueApiKey(tx, clientId, s.clock.now());
  });
}

describe("inbox", () => {
  test("items carry every field; the inbox summary rides on authenticated responses", async () => {
    const t = await withRequests("ib1", 2);
    const me = await s.ok("get_me", {}, t.key);
    expect(me.inbox).toEqual({ unread: 2, requires_action: 2, top: expect.any(Array) });
    expect(me.inbox.top).toHaveLength(2);
    const r = await s.ok("get_inbox", {}, t.key);
    expect(r.items).toHaveLength(2);
    const item = r.items[0];
    expect(Object.keys(item).sort()).toEqual(
      [
        "app",
        "created_at",
        "expires_at",
        "from",
        "item_id",
        "note",
        "payload",
        "refs",
        "requires_action",
        "resolved",
        "seen",
        "seq",
        "summary_md",
        "suggested_tools",
        "type",
      ].sort(),
    );
    expect(item.app).toBe("network");
    expect(item.from.handle).toBe("ib1-f0");
    expect(Date.parse(item.expires_at) - Date.parse(item.created_at)).toBe(30 * DAY);
    expect(r.digest_md).toContain("2 new items");
    expect(r.suggested_next).toContain("respond_contact_request");
  });

  test("without since: continues from this client's cursor and marks what it returns as seen", async () => {
    const t = await withRequests("ib2", 3);
    const first = await s.ok("get_inbox", { limit: 2 }, t.key);
    expect(first.items.map((i: any) => i.note.untrusted_content)).toEqual(["note 0", "note 1"]);
    expect(first.next_cursor).toBe(String(first.items[1].seq));
    expect(first.unread).toBe(1);
    const second = await s.ok("get_inbox", {}, t.key);
    expect(second.items.map((i: any) => i.note.untrusted_content)).toEqual(["note 2"]);
    expect(second.next_cursor).toBeNull();
    expect((await s.ok("get_inbox", {}, t.key)).items).toHaveLength(0);
    // include_seen re-reads from the cursor's start only with since
    const all = await s.ok("get_inbox", { since: "0", include_seen: true }, t.key);
    expect(all.items).toHaveLength(3);
    expect(all.items.every((i: any) => i.seen)).toBe(true);
  });

  test("each client has its own cursor", async () => {
    const t = await withRequests("ib3", 2);
    const other = await secondClient(t);
    expect((await s.ok("get_inbox", {}, t.key)).items).toHaveLength(2);
    // the other client has not read yet: with include_seen it gets the same items from its own cursor
    expect((await s.ok("get_inbox", { include_seen: true }, other)).items).toHaveLength(2);
    expect((await s.ok("get_inbox", { include_seen: true }, other)).items).toHaveLength(0);
    expect((await s.ok("get_inbox", { include_seen: true }, t.key)).items).toHaveLength(0);
  });

  test("with since: reads from that cursor and marks nothing", async () => {
    const t = await withRequests("ib4", 2);
    const peek = await s.ok("get_inbox", { since: "0" }, t.key);
    expect(peek.items).toHaveLength(2);
    expect(peek.unread).toBe(2);
    const after = await s.ok("get_inbox", { since: String(peek.items[0].seq) }, t.key);
    expect(after.items).toHaveLength(1);
    expect((await s.ok("get_inbox", {}, t.key)).items).toHaveLength(2);
  });

  test("ack_inbox: seen, resolved, dismiss; keep only for envelopes", async () => {
    const t = await withRequests("ib5", 3);
    const items = (await s.ok("get_inbox", { since: "0" }, t.key)).items;
    const [a, b, c] = items.map((i: any) => i.item_id);
    expect((await s.ok("ack_inbox", { item_ids: [a], action: "seen" }, t.key)).updated).toBe(1);
    expect((await s.ok("ack_inbox", { item_ids: [b], action: "resolved" }, t.key)).updated).toBe(1);
    const sum = (await s.ok("get_me", {}, t.key)).inbox;
    expect(sum).toMatchObject({ unread: 1, requires_action: 2 });
    expect((await s.ok("ack_inbox", { item_ids: [c], action: "dismiss" }, t.key)).updated).toBe(1);
    const left = (await s.ok("get_inbox", { since: "0", include_seen: true }, t.key)).items.map((i: any) => i.item_id);
    expect(left).toEqual([a, b]);
    const keep = await s.call("ack_inbox", { item_ids: [a], action: "keep", idempotency_key: key() }, t.key);
    expect(keep.status).toBe(400);
    // another agent's items are not touched
    const stranger = await s.register("ib5-x");
    expect((await s.ok("ack_inbox", { item_ids: [a], action: "dismiss" }, stranger.key)).updated).toBe(0);
  });

  test("items expire after 30 days", async () => {
    const t = await withRequests("ib6", 1);
    s.clock.advance(30 * DAY + 1000);
    expect((await s.ok("get_inbox", { since: "0", include_seen: true }, t.key)).items).toHaveLength(0);
    expect((await s.ok("get_me", {}, t.key)).inbox.unread).toBe(0);
  });

  test("limits: limit 1-100, item_ids 1-100, since digits only", async () => {
    const t = await withRequests("ib7", 1);
    for (const [args, status] of [
      [{ limit: 0 }, 400],
      [{ limit: 1 }, 200],
      [{ limit: 100 }, 200],
      [{ limit: 101 }, 400],
      [{ limit: 1.5 }, 400],
      [{ since: "12a" }, 400],
      [{ since: "-1" }, 400],
      [{ since: "99999999999999999999" }, 200],
    ] as const) {
      expect([args, (await s.call("get_inbox", args, t.key)).status]).toEqual([args, status]);
    }
    const id = crypto.randomUUID();
    expect((await s.call("ack_inbox", { item_ids: [], action: "seen", idempotency_key: key() }, t.key)).status).toBe(400);
    expect((await s.call("ack_inbox", { item_ids: Array(100).fill(id), action: "seen", idempotency_key: key() }, t.key)).status).toBe(200);
    expect((await s.call("ack_inbox", { item_ids: Array(101).fill(id), action: "seen", idempotency_key: key() }, t.key)).status).toBe(400);
    expect((await s.call("ack_inbox", { item_ids: ["not-a-uuid"], action: "seen", idempotency_key: key() }, t.key)).status).toBe(400);
    expect((await s.call("ack_inbox", { item_ids: [id], action: "archive", idempotency_key: key() }, t.key)).status).toBe(400);
  });
});

describe("limits of identity fields, both sides", () => {
  const cases: [string, Record<string, unknown>, number][] = [
    ["handle 3 chars", { handle: "abc" }, 200],
    ["handle 2 chars", { handle: "ab" }, 400],
    ["handle 32 chars", { handle: "h".repeat(32) }, 200],
    ["handle 33 chars", { handle: "h".repeat(33) }, 400],
    ["handle uppercase", { handle: "Abcd" }, 400],
    ["handle starting with _", { handle: "_abc" }, 400],
    ["handle with dot", { handle: "ab.c" }, 400],
    ["display_name 80", { display_name: "d".repeat(80) }, 200],
    ["display_name 81", { display_name: "d".repeat(81) }, 400],
    ["display_name control char", { display_name: "a\u0007b" }, 400],
    ["display_name C1 control", { display_name: "a\u0085b" }, 400],
    ["description 500", { description: "x".repeat(500) }, 200],
    ["description 501", { description: "x".repeat(501) }, 400],
    ["platform_invite_code 200", { platform_invite_code: "p".repeat(200) }, 200],
    ["platform_invite_code 201", { platform_invite_code: "p".repeat(201) }, 400],
    ["platform_invite_code empty", { platform_invite_code: "" }, 400],
    ["invite_code 7 chars", { invite_code: "i".repeat(7) }, 400],
    ["invite_code 65 chars", { invite_code: "i".repeat(65) }, 400],
  ];
  let n = 0;
  for (const [name, patch, status] of cases) {
    test(name, async () => {
      const args = { handle: `lim-${++n}`, display_name: "Limit", ...patch };
      expect((await s.call("register_agent", args)).status).toBe(status);
    });
  }

  test("add_contact code 3-120 chars and note up to 500", async () => {
    const a = await s.register("lim-code");
    const call = (args: Record<string, unknown>) => s.call("add_contact", { ...args, idempotency_key: key() }, a.key);
    expect((await call({ code: "ab" })).status).toBe(400);
    expect((await call({ code: "abc" })).status).toBe(404);
    expect((await call({ code: "a".repeat(120) })).status).toBe(404);
    expect((await call({ code: "a".repeat(121) })).status).toBe(400);
    await s.register("lim-note");
    expect((await call({ handle: "lim-note", note: "n".repeat(500) })).status).toBe(200);
  });
});
