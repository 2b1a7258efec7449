import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient, issueApiKey } from "../../server/auth/credentials.ts";
import { McpSession } from "../hardening/transports.ts";
import { startTestServer, type TestServer } from "../harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const outgoing = async (key: string) => (await s.ok("list_contacts", { state: "outgoing" }, key)).contacts.length;

describe("idempotency", () => {
  test("a retry with the same key and arguments replays the stored answer without a second effect", async () => {
    const a = await s.register("idem-a1");
    const b = await s.register("idem-b1");
    const args = { handle: "idem-b1", note: "hello", idempotency_key: "retry-same-0001" };
    const first = await s.call("add_contact", args, a.key);
    const second = await s.call("add_contact", args, a.key);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    const { inbox: _i1, ...d1 } = first.body.data;
    const { inbox: _i2, ...d2 } = second.body.data;
    expect(d2).toEqual(d1);
    expect((await s.ok("list_contacts", { state: "incoming" }, b.key)).contacts).toHaveLength(1);
    expect((await s.ok("get_inbox", {}, b.key)).items).toHaveLength(1);
  });

  test("the Idempotency-Key header works like the field", async () => {
    const a = await s.register("idem-a2");
    const h = { "idempotency-key": "header-key-0001" };
    const r1 = await s.call("update_me", { display_name: "One" }, a.key, h);
    const r2 = await s.call("update_me", { display_name: "One" }, a.key, h);
    expect(r1.status).toBe(200);
    expect(r2.headers.get("idempotent-replayed")).toBe("true");
    const clash = await s.call("update_me", { display_name: "One", idempotency_key: "other-key-0001" }, a.key, h);
    expect(clash.status).toBe(400);
  });

  test("the same key with other arguments is IDEMPOTENCY_KEY_REUSED", async () => {
    const a = await s.register("idem-a3");
    await s.call("update_me", { display_name: "First", idempotency_key: "reuse-key-0001" }, a.key);
    const r = await s.call("update_me", { display_name: "Second", idempotency_key: "reuse-key-0001" }, a.key);
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect((await s.ok("get_me", {}, a.key)).agent.display_name).toBe("First");
  });

  test("keys belong to the agent: another agent's identical key is a separate call", async () => {
    const a = await s.register("idem-a4");
    const b = await s.register("idem-b4");
    await s.ok("update_me", { display_name: "A", idempotency_key: "shared-key-0001" }, a.key);
    await s.ok("update_me", { display_name: "B", idempotency_key: "shared-key-0001" }, b.key);
    expect((await s.ok("get_me", {}, b.key)).agent.display_name).toBe("B");
  });

  test("a retry with a credential revoked since is UNAUTHENTICATED, not the stored answer", async () => {
    // The server has seen whose the key is, so it reads the key's record beside the authentication (invoke.ts
    // readAhead): the authentication still decides.
    const a = await s.register("idem-revoked");
    const now = s.clock.now();
    const second = await s.server.db.tx(async (tx) => issueApiKey(tx, await createClient(tx, a.agent_id, "second", "api_key", now, { maxKeys: 10 }), now));
    const args = { display_name: "Second", idempotency_key: "revoked-retry-0001" };
    expect((await s.call("update_me", args, second)).status).toBe(200);
    expect((await s.call("update_me", args, second)).headers.get("idempotent-replayed")).toBe("true");
    const client = (await s.ok("list_clients", {}, a.key)).clients.find((c: { current: boolean }) => !c.current);
    await s.ok("disconnect_client", { client_id: client.client_id, idempotency_key: "revoked-retry-0002" }, a.key);
    const retry = await s.call("update_me", args, second);
    expect({ status: retry.status, code: retry.body.error?.code, data: retry.body.data }).toEqual({ status: 401, code: "UNAUTHENTICATED", data: undefined });
  });

  test("write tools require an idempotency_key (8-128 chars)", async () => {
    const a = await s.register("idem-a5");
    const missing = await s.call("update_me", { display_name: "X" }, a.key);
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.issues[0].path).toBe("idempotency_key");
    // said plainly (not "expected string, received undefined"), the same over REST, the sandbox and MCP
    const said = missing.body.error.details.issues[0].message;
    expect(said).toContain("write tools need an idempotency_key");
    expect(said).toContain("a UUID works");
    const sandbox = await s.raw("/v1/sandbox/tools/update_me", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(((await sandbox.json()) as any).error.details.issues[0].message).toBe(said);
    const mcp = await McpSession.connect(s.url, a.key);
    try {
      const over = await mcp.call("update_me", { display_name: "X" });
      expect(over.code).toBe("VALIDATION_ERROR");
      expect(over.body.error.details.issues[0].message).toBe(said);
    } finally {
      await mcp.close();
    }
    expect((await s.call("update_me", { display_name: "X", idempotency_key: "1234567" }, a.key)).status).toBe(400);
    expect((await s.call("update_me", { display_name: "X", idempotency_key: "12345678" }, a.key)).status).toBe(200);
    expect((await s.call("update_me", { display_name: "X", idempotency_key: "k".repeat(128) }, a.key)).status).toBe(200);
    expect((await s.call("update_me", { display_name: "X", idempotency_key: "k".repeat(129) }, a.key)).status).toBe(400);
  });

  test("concurrent calls with one key give exactly one effect", async () => {
    const a = await s.register("idem-a6");
    const target = await s.register("idem-t1");
    const args = { handle: "idem-t1", idempotency_key: "concurrent-0001" };
    const results = await Promise.all(Array.from({ length: 20 }, () => s.call("add_contact", args, a.key)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.filter((r) => r.headers.get("idempotent-replayed") !== "true")).toHaveLength(1);
    expect(await outgoing(a.key)).toBe(1);
    expect((await s.ok("get_inbox", {}, target.key)).items).toHaveLength(1);
  });

  test("rotate_api_key is never replayed, even with the same key", async () => {
    const a = await s.register("idem-a7");
    const first = await s.call("rotate_api_key", { idempotency_key: "rotate-key-0001" }, a.key);
    expect(first.status).toBe(200);
    const again = await s.call("rotate_api_key", { idempotency_key: "rotate-key-0001" }, a.key);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(JSON.stringify(again.body)).not.toContain(first.body.data.api_key);
  });
});
