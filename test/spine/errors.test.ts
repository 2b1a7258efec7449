import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";

let s: TestServer;
let alice: { key: string };
beforeAll(async () => {
  s = await startTestServer();
  alice = await s.register("err-alice");
});
afterAll(() => s.stop());

const post = (path: string, body: string | undefined, headers: Record<string, string> = {}) => s.raw(path, { method: "POST", headers, body });

describe("the error envelope", () => {
  test("VALIDATION_ERROR names each field in details.issues", async () => {
    const r = await s.call("register_agent", { handle: "X", display_name: "" });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    const paths = r.body.error.details.issues.map((i: any) => i.path).sort();
    expect(paths).toEqual(["display_name", "handle"]);
    expect(r.body.request_id).toBe(r.headers.get("x-request-id"));
  });

  test("unknown fields are refused", async () => {
    const r = await s.call("get_me", { surprise: 1 }, alice.key);
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.error.details.issues)).toContain("surprise");
  });

  test("malformed JSON, wrong content type, non-object and oversized bodies get the envelope", async () => {
    const cases: [string | undefined, Record<string, string>][] = [
      ["{not json", { "content-type": "application/json" }],
      ['{"handle":"abc"}', { "content-type": "text/plain" }],
      ["[1,2,3]", { "content-type": "application/json" }],
      ['"just a string"', { "content-type": "application/json" }],
      [JSON.stringify({ handle: "x".repeat(2 * 1024 * 1024) }), { "content-type": "application/json" }],
    ];
    for (const [body, headers] of cases) {
      const res = await post("/v1/tools/register_agent", body, headers);
      expect(res.status).toBe(400);
      const json: any = await res.json();
      expect(json.ok).toBe(false);
      expect(json.error.code).toBe("VALIDATION_ERROR");
      expect(json.error.details.issues.length).toBeGreaterThan(0);
      expect(JSON.stringify(json)).not.toMatch(/\.ts:\d+|at .*\(/);
    }
  });

  test("an empty body is an empty object: required fields are still required", async () => {
    const res = await post("/v1/tools/register_agent", undefined);
    expect(res.status).toBe(400);
    const me = await post("/v1/tools/get_me", undefined, { authorization: `Bearer ${alice.key}` });
    expect(me.status).toBe(200);
  });

  test("UNAUTHENTICATED carries WWW-Authenticate pointing at the protected-resource metadata", async () => {
    for (const auth of [undefined, "Bearer svc_not_a_real_key", "Basic abc"]) {
      const r = await s.call("get_me", {}, null, auth ? { authorization: auth } : {});
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("UNAUTHENTICATED");
      expect(r.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${s.url}/.well-known/oauth-protected-resource"`);
    }
  });

  test("NOT_FOUND for an unknown tool, on call, describe and sandbox", async () => {
    expect((await s.call("no_such_tool", {}, alice.key)).body.error.code).toBe("NOT_FOUND");
    expect((await s.raw("/v1/tools/no_such_tool")).status).toBe(404);
    expect((await post("/v1/sandbox/tools/no_such_tool", "{}", { "content-type": "application/json" })).status).toBe(404);
    const unknownPath = await s.raw("/v2/whatever");
    expect(unknownPath.status).toBe(404);
    expect(((await unknownPath.json()) as any).error.code).toBe("NOT_FOUND");
  });

  test("CONFLICT for a taken handle", async () => {
    const r = await s.call("register_agent", { handle: "err-alice", display_name: "Again" });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("CONFLICT");
  });

  test("FORBIDDEN with details.required_scope when a credential lacks the scope", async () => {
    // Narrow the key to read-only directly in the database: API keys carry both scopes, OAuth tokens may not.
    const bob = await s.register("err-bob");
    await s.server.db.raw.execute({
      sql: "UPDATE api_keys SET scopes = 'svc:read' WHERE client_id IN (SELECT client_id FROM clients WHERE agent_id = ?)",
      args: [bob.agent_id],
    });
    expect((await s.call("get_me", {}, bob.key)).status).toBe(200);
    const r = await s.call("update_me", { display_name: "B", idempotency_key: "scope-test-1" }, bob.key);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("FORBIDDEN");
    expect(r.body.error.details.required_scope).toBe("svc:write");
  });

  test("INTERNAL leaks nothing", async () => {
    // Break the database under a tool: the answer is a bare INTERNAL with a request_id.
    const t = await startTestServer();
    const a = await t.register("err-internal");
    await t.server.db.raw.execute("DROP TABLE inbox_counts");
    const r = await t.call("get_inbox", {}, a.key);
    expect(r.status).toBe(500);
    expect(r.body.error.code).toBe("INTERNAL");
    expect(r.body.error.message).toBe("Something went wrong on the server.");
    expect(JSON.stringify(r.body)).not.toContain("inbox_counts");
    await t.stop();
  });
});

describe("rate limiting", () => {
  test("RateLimit headers on every response; 429 with retry_after and Retry-After past the limit", async () => {
    const t = await startTestServer({ rateLimit: 3, publicRateLimit: 2 });
    const a = await t.register("rl-alice");
    for (let i = 0; i < 3; i++) {
      const r = await t.call("get_me", {}, a.key);
      expect(r.status).toBe(200);
      expect(r.headers.get("ratelimit-policy")).toBe('"credential";q=3;w=60');
      expect(r.headers.get("ratelimit")).toContain(`r=${2 - i}`);
    }
    const limited = await t.call("get_me", {}, a.key);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe("RATE_LIMITED");
    expect(limited.body.error.retry_after).toBeGreaterThan(0);
    expect(Number(limited.headers.get("retry-after"))).toBe(limited.body.error.retry_after);
    // public calls are limited per client address: one registration above plus one more is the limit
    expect((await t.call("register_agent", { handle: "rl-bob", display_name: "B" })).status).toBe(200);
    const pub = await t.call("register_agent", { handle: "rl-carol", display_name: "C" });
    expect(pub.status).toBe(429);
    expect(pub.headers.get("ratelimit-policy")).toBe('"address";q=2;w=60');
    // made-up tokens do not each get a fresh bucket: failed credentials spend the address's
    t.clock.advance(61_000);
    expect((await t.call("get_me", {}, "svc_made_up_1")).status).toBe(401);
    expect((await t.call("get_me", {}, "svc_made_up_2")).status).toBe(401);
    expect((await t.call("get_me", {}, "svc_made_up_3")).status).toBe(429);
    // the window passes
    t.clock.advance(61_000);
    expect((await t.call("get_me", {}, a.key)).status).toBe(200);
    await t.stop();
  });
});
