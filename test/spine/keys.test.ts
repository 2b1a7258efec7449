import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe("API keys and clients", () => {
  test("register_agent returns the key once; it is stored only as a hash", async () => {
    const r = await s.ok("register_agent", { handle: "key-a1", display_name: "A", description: "d" });
    expect(r.api_key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    expect(r.agent).toMatchObject({ handle: "key-a1", display_name: "A", description: "d" });
    expect(r.next_step.length).toBeGreaterThan(0);
    const rows = await s.server.db.raw.execute("SELECT key_hash FROM api_keys");
    expect(JSON.stringify(rows.rows)).not.toContain(r.api_key);
    expect((await s.ok("get_me", {}, r.api_key)).agent.handle).toBe("key-a1");
  });

  test("POST /v1/agents registers like the tool", async () => {
    const res = await s.raw("/v1/agents", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ handle: "key-rest", display_name: "Rest" }),
    });
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body.data.api_key).toStartWith("svc_");
  });

  test("rotate_api_key: the old key works 10 more minutes, then stops; the new key works", async () => {
    const a = await s.register("key-a2");
    const { api_key: fresh } = await s.ok("rotate_api_key", {}, a.key);
    expect(fresh).not.toBe(a.key);
    expect((await s.call("get_me", {}, a.key)).status).toBe(200);
    s.clock.advance(10 * MINUTE - 1000);
    expect((await s.call("get_me", {}, a.key)).status).toBe(200);
    s.clock.advance(2000);
    expect((await s.call("get_me", {}, a.key)).status).toBe(401);
    expect((await s.call("get_me", {}, fresh)).status).toBe(200);
  });

  test("a key in its grace period finishes work in flight only: no new key, settings link, disconnecting or profile change; list_clients shows it", async () => {
    const a = await s.register("key-grace");
    const other = await s.server.db.tx(async (tx) => {
      const { createClient } = await import("../../server/auth/credentials.ts");
      return createClient(tx, a.agent_id, "laptop agent", "api_key", s.clock.now(), { maxKeys: 100 });
    });
    const before = (await s.ok("list_clients", {}, a.key)).clients;
    expect(before.map((c: any) => c.old_key_until)).toEqual([null, null]);
    const { api_key: fresh } = await s.ok("rotate_api_key", {}, a.key);
    const until = new Date(s.clock.now().getTime() + 10 * MINUTE).toISOString();
    for (const [tool, args] of [
      ["rotate_api_key", { idempotency_key: "grace-rotate-1" }],
      ["get_settings_link", {}],
      ["disconnect_client", { client_id: other, idempotency_key: "grace-disc-1" }],
      ["update_me", { display_name: "Taken Over", idempotency_key: "grace-update-1" }],
    ] as const) {
      const r = await s.call(tool, args, a.key);
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe("FORBIDDEN");
      expect(r.body.error.details).toEqual({ grace_until: until });
      expect(r.body.error.suggested_action).toContain("new API key");
    }
    // nothing changed: the other client is still connected, the name is the same; the caller's old key shows its end
    const after = (await s.ok("list_clients", {}, fresh)).clients;
    expect(after.map((c: any) => [c.client_id === other, c.current, c.old_key_until]).sort()).toEqual([
      [false, true, until],
      [true, false, null],
    ]);
    expect((await s.ok("get_me", {}, fresh)).agent.display_name).toBe("KEY-GRACE");
    // ordinary work goes on with the old key
    expect((await s.call("get_inbox", {}, a.key)).status).toBe(200);
    expect((await s.call("create_group", { name: "Still working", currency: "EUR", idempotency_key: "grace-group-1" }, a.key)).status).toBe(200);
    // a sign-in code would let the old key connect a new client: it sees none, the new key does
    const { sendSigninCode } = await import("../../server/domain/signin-codes.ts");
    await s.server.db.tx((tx) => sendSigninCode(tx, s.clock.now(), "web-session-hash", "key-grace", { kind: "join", clientName: "Thief" }));
    const codes = async (key: string) =>
      (await s.ok("get_inbox", { since: "0", include_seen: true }, key)).items.filter((i: any) => i.type === "auth.join_code");
    expect(await codes(a.key)).toEqual([]);
    // reading from the client's cursor (which the old and the new key share) does not move it past the code,
    // not even to an item after it
    const asker = await s.register("key-grace-x");
    await s.ok("add_contact", { handle: "key-grace" }, asker.key);
    expect((await s.ok("get_inbox", {}, a.key)).items.map((i: any) => i.type)).not.toContain("auth.join_code");
    expect((await s.ok("get_inbox", {}, fresh)).items.map((i: any) => i.type)).toEqual(["auth.join_code", "contact.request"]);
    expect(await codes(fresh)).toHaveLength(1);
    // the new key can do all of it
    expect((await s.call("get_settings_link", {}, fresh)).status).toBe(200);
    expect((await s.call("update_me", { display_name: "Owner", idempotency_key: "grace-update-2" }, fresh)).status).toBe(200);
    s.clock.advance(10 * MINUTE + 1000);
    expect((await s.ok("list_clients", {}, fresh)).clients.map((c: any) => c.old_key_until)).toEqual([null, null]);
  });

  test("GET /v1 answers who-am-I, and 401 with WWW-Authenticate without a credential", async () => {
    const a = await s.register("key-a3");
    const res = await s.raw("/v1", { headers: { authorization: `Bearer ${a.key}` } });
    const body: any = await res.json();
    expect(body.data.agent.handle).toBe("key-a3");
    expect(body.data.links.tools).toBe(`${s.url}/v1/tools`);
    const anon = await s.raw("/v1");
    expect(anon.status).toBe(401);
    expect(anon.headers.get("www-authenticate")).toContain("resource_metadata=");
  });

  test("get_me and update_me; the handle cannot change", async () => {
    const a = await s.register("key-a4");
    const me = await s.ok("get_me", {}, a.key);
    expect(me.groups).toEqual([]);
    expect(me.pending_invites_count).toBe(0);
    expect(me.verification).toEqual({ email: false, phone: false });
    const u = await s.ok("update_me", { display_name: "New Name", description: "about" }, a.key);
    expect(u.agent).toMatchObject({ handle: "key-a4", display_name: "New Name", description: "about" });
    expect((await s.call("update_me", { handle: "other", idempotency_key: "handle-change-1" }, a.key)).status).toBe(400);
  });

  test("list_clients and disconnect_client: another client's key stops at once; a client cannot disconnect itself", async () => {
    const a = await s.register("key-a5");
    // A second client of the same human (what join_network creates), made directly in the database.
    const { createClient, issueApiKey } = await import("../../server/auth/credentials.ts");
    const second = await s.server.db.tx(async (tx) => {
      const clientId = await createClient(tx, a.agent_id, "laptop agent", "api_key", s.clock.now(), { maxKeys: 100 });
      return { clientId, key: await issueApiKey(tx, clientId, s.clock.now()) };
    });
    const list = (await s.ok("list_clients", {}, a.key)).clients;
    expect(list).toHaveLength(2);
    const first = await s.ok("list_clients", { limit: 1 }, a.key);
    expect(first.clients.map((c: any) => c.client_id)).toEqual([list[0].client_id]);
    const rest = await s.ok("list_clients", { limit: 1, cursor: first.next_cursor }, a.key);
    expect(rest.clients.map((c: any) => c.client_id)).toEqual([list[1].client_id]);
    expect(rest.next_cursor).toBeNull();
    expect(list.filter((c: any) => c.current)).toHaveLength(1);
    const self = list.find((c: any) => c.current);
    expect((await s.call("disconnect_client", { client_id: self.client_id, idempotency_key: "disc-self-01" }, a.key)).status).toBe(409);
    expect((await s.call("get_me", {}, second.key)).status).toBe(200);
    expect((await s.ok("disconnect_client", { client_id: second.clientId }, a.key)).disconnected).toBe(true);
    expect((await s.call("get_me", {}, second.key)).status).toBe(401);
    const other = await s.register("key-a6");
    expect((await s.call("disconnect_client", { client_id: self.client_id, idempotency_key: "disc-other-1" }, other.key)).status).toBe(404);
  });

  test("invite-only servers need a valid platform invite code", async () => {
    const t = await startTestServer({ inviteOnly: true });
    const { createPlatformInvite } = await import("../../server/domain/platform-invites.ts");
    const code = await t.server.db.tx((tx) => createPlatformInvite(tx, t.clock.now(), { uses: 1, expiresAt: null, note: null }));
    const none = await t.call("register_agent", { handle: "inv-a", display_name: "A" });
    expect(none.status).toBe(403);
    expect(none.body.error.suggested_action).toContain("platform_invite_code");
    expect((await t.call("register_agent", { handle: "inv-a", display_name: "A", platform_invite_code: "wrong" })).status).toBe(403);
    expect((await t.call("register_agent", { handle: "inv-a", display_name: "A", platform_invite_code: code })).status).toBe(200);
    expect((await t.call("register_agent", { handle: "inv-b", display_name: "B", platform_invite_code: code })).status).toBe(403);
    await t.stop();
  });
});
