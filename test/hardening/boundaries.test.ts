// Input and process boundaries (docs/security.md): values JSON can parse but svc cannot keep as sent (non-finite
// numbers, lone surrogates), handles that would pass for the service itself, made-up tokens over MCP, long inbox
// cursors, and a database busy with another writer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Database from "libsql";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_RESERVED_HANDLES } from "../../server/contract/handles.ts";
import { toAppError } from "../../server/errors.ts";
import { checkedInputJsonSchema, TOOLS } from "../../server/tools/catalogue.ts";
import { z } from "zod";
import { toolJsonSchema } from "../../server/tools/json-schema.ts";
import type { WebContext } from "../../server/web/context.ts";
import { createHandleFromForm } from "../../server/web/signin.ts";
import { key, startTestServer, type TestServer } from "../harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ reservedHandles: ["acme-staff"] });
});
afterAll(() => s.stop());

/** POST a body as written (JSON.stringify cannot write 1e999). */
async function rawCall(tool: string, body: string, apiKey?: string): Promise<{ status: number; body: any }> {
  const res = await s.raw(`/v1/tools/${tool}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    body,
  });
  return { status: res.status, body: await res.json() };
}

/** tools/call over MCP with the JSON-RPC body as written; the tool's envelope from the result's text. */
async function mcpCall(body: string, token?: string): Promise<{ status: number; headers: Headers; json: any; envelope: any }> {
  const res = await s.raw("/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body,
  });
  const json: any = await res.json();
  const text = json.result?.content?.[0]?.text;
  return { status: res.status, headers: res.headers, json, envelope: text ? JSON.parse(text) : undefined };
}

const toolCall = (name: string, args: string) => `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;

describe("values JSON parses but svc could not keep as sent", () => {
  test("a non-finite number is a VALIDATION_ERROR naming the field, over REST and MCP, and changes nothing", async () => {
    const a = await s.register("finite-alice", { description: "kept" });
    const rest = await rawCall("update_me", `{"description":1e999,"idempotency_key":"${key()}"}`, a.key);
    expect(rest.status).toBe(400);
    expect(rest.body.error.code).toBe("VALIDATION_ERROR");
    expect(rest.body.error.details.issues).toEqual([{ path: "description", message: "must be a finite number" }]);
    const sandbox = await s.raw("/v1/sandbox/tools/add_expense", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"split":{"mode":"shares","among":[{"handle":"xyz","value":1e999}]}}`,
    });
    expect(((await sandbox.json()) as any).error.details.issues).toEqual([{ path: "split.among[0].value", message: "must be a finite number" }]);
    const mcp = await mcpCall(toolCall("update_me", `{"description":-1e999,"idempotency_key":"${key()}"}`), a.key);
    expect(mcp.envelope.error.code).toBe("VALIDATION_ERROR");
    expect(mcp.envelope.error.details.issues[0].path).toBe("description");
    expect((await s.ok("get_me", {}, a.key)).agent.description).toBe("kept");
  });

  test("a lone surrogate is a VALIDATION_ERROR naming the field, over REST and MCP, for any string field", async () => {
    const a = await s.register("surrogate-al");
    const lone = await rawCall("update_me", `{"display_name":"Al\\ud800","idempotency_key":"${key()}"}`, a.key);
    expect(lone.status).toBe(400);
    expect(lone.body.error.details.issues).toEqual([{ path: "display_name", message: "must not contain a lone surrogate (text that is not valid Unicode)" }]);
    const reg = await rawCall("register_agent", `{"handle":"surrogate-bo","display_name":"Bo","description":"\\udc00 trailing"}`);
    expect(reg.body.error.details.issues[0].path).toBe("description");
    const contact = await rawCall("add_contact", `{"handle":"surrogate-bo","note":["x"],"idempotency_key":"k\\udbffkkkkkkk"}`, a.key);
    expect(contact.body.error.details.issues[0].path).toBe("idempotency_key");
    const mcp = await mcpCall(toolCall("update_me", `{"description":"x\\ud83d","idempotency_key":"${key()}"}`), a.key);
    expect(mcp.envelope.error.code).toBe("VALIDATION_ERROR");
    expect(mcp.envelope.error.details.issues[0].path).toBe("description");
    // A pair is one character, as it should be.
    const me = await s.ok("update_me", { display_name: "Al \ud83d\ude00" }, a.key);
    expect(me.agent.display_name).toBe("Al 😀");
    expect((await s.call("get_me", {}, a.key)).body.data.agent.display_name).toBe("Al 😀");
  });

  test("no tool's input schema takes free JSON, so nesting deeper than any schema allows is refused in every process", () => {
    // server/cluster.ts runs a call nested past MAX_SENT_DEPTH in the worker itself: safe only while every schema refuses it.
    // The schema the server checks (the advertised one leaves out what a model need not read, additionalProperties).
    expect(TOOLS.flatMap((t) => freeJson(checkedInputJsonSchema(t), t.name))).toEqual([]);
    // The check sees free JSON where there is some.
    const samples = [
      z.strictObject({ x: z.unknown() }),
      z.strictObject({ x: z.record(z.string(), z.any()) }),
      z.object({ x: z.string() }),
      z.strictObject({ x: z.array(z.json()) }),
    ];
    for (const schema of samples) expect(freeJson(toolJsonSchema(schema, "input"), "sample")).not.toEqual([]);
  });
});

/** Where a JSON Schema takes free JSON: a value with no type, an object whose other keys take anything, an array of anything, a reference (recursion). */
function freeJson(node: any, at: string, typed = false): string[] {
  if (node === true) return [`${at} (true)`];
  if (node === null || typeof node !== "object") return [];
  const found: string[] = [];
  if ("$ref" in node) found.push(`${at} ($ref)`);
  const branches: unknown[] = ["anyOf", "oneOf", "allOf"].flatMap((k) => node[k] ?? []);
  // A branch of a node with a type (zod's allOf of patterns) is held to that type.
  if (!typed && !("type" in node) && !("const" in node) && !("enum" in node) && branches.length === 0) found.push(`${at} (no type)`);
  if (node.type === "object" && node.additionalProperties !== false && typeof node.additionalProperties !== "object") found.push(`${at} (open object)`);
  if (node.type === "array" && typeof node.items !== "object") found.push(`${at} (array of anything)`);
  for (const [k, v] of Object.entries(node.properties ?? {})) found.push(...freeJson(v, `${at}.${k}`));
  if (typeof node.additionalProperties === "object") found.push(...freeJson(node.additionalProperties, `${at}.*`));
  if (typeof node.items === "object") found.push(...freeJson(node.items, `${at}[]`));
  branches.forEach((b, i) => found.push(...freeJson(b, `${at}|${i}`, typed || "type" in node)));
  return found;
}

describe("reserved handles", () => {
  test("the default list and the operator's additions are refused with CONFLICT saying so; other handles register", async () => {
    expect(DEFAULT_RESERVED_HANDLES).toEqual(expect.arrayContaining(["admin", "svc", "support", "security", "root", "system", "administrator"]));
    for (const handle of [...DEFAULT_RESERVED_HANDLES, "acme-staff"]) {
      const r = await s.call("register_agent", { handle, display_name: "Someone" });
      expect([handle, r.status, r.body.error?.code]).toEqual([handle, 409, "CONFLICT"]);
      expect(r.body.error.message).toContain("reserved");
    }
    expect((await s.call("register_agent", { handle: "admin-fan", display_name: "Fan" })).status).toBe(200);
  });

  test("the web form that creates a handle refuses a reserved one", async () => {
    const form = new URLSearchParams({ handle: "@Support", display_name: "Support" });
    const answer = await s.server.db.tx((tx) =>
      createHandleFromForm({ svc: s.server.services, form, tx, now: new Date(), audit: () => {}, clientAddress: () => "127.0.0.1" } as unknown as WebContext),
    );
    expect(answer).toEqual({ error: expect.stringContaining("reserved"), status: 409 });
  });
});

describe("made-up tokens over MCP", () => {
  test("each failed credential spends the address's public limit: 429 with Retry-After past it, as over REST", async () => {
    const t = await startTestServer({ publicRateLimit: 5 });
    try {
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof mcpCallOn>> | undefined;
      for (let i = 0; i < 8; i++) {
        last = await mcpCallOn(t, `svc_made_up_${i}`);
        statuses.push(last.status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(last!.json.error.data.error.code).toBe("RATE_LIMITED");
      expect(last!.json.id).toBe(1);
    } finally {
      await t.stop();
    }
  });
});

async function mcpCallOn(t: TestServer, token: string) {
  const res = await t.raw("/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_me", arguments: {} } }),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

describe("get_inbox since", () => {
  test("any run of digits is a cursor; one past the end returns nothing new", async () => {
    const [a] = await s.contacts("since-alice", "since-bob");
    const all = await s.ok("get_inbox", { since: "0", include_seen: true }, a.key);
    expect(all.items.length).toBeGreaterThan(0);
    for (const since of ["9".repeat(21), "1".repeat(400), `000${"0".repeat(30)}`]) {
      const r = await s.call("get_inbox", { since, include_seen: true }, a.key);
      expect([since.length, r.status]).toEqual([since.length, 200]);
      if (/[1-9]/.test(since)) expect(r.body.data.items).toEqual([]);
      else expect(r.body.data.items.length).toBe(all.items.length);
    }
    const tooLong = await s.call("get_inbox", { since: "1".repeat(1001) }, a.key);
    expect(tooLong.body.error.code).toBe("VALIDATION_ERROR");
    expect((await s.call("get_inbox", { since: "12a" }, a.key)).body.error.code).toBe("VALIDATION_ERROR");
  });
});

describe("a database busy with another writer", () => {
  test("a write that cannot get the lock is STORAGE_UNAVAILABLE 503 with retry_after, not a bare 500", async () => {
    // A local file whose lock another connection holds (a remote or replica run of the suite, test/sqld.sh, too).
    const dir = mkdtempSync(join(tmpdir(), "svc-busy-"));
    const s = await startTestServer({ dbUrl: `file:${join(dir, "svc.db")}`, authToken: undefined, syncUrl: undefined });
    const a = await s.register("busy-alice");
    // The driver svc itself uses: bun:sqlite's locks are not seen by libsql's.
    const other = new Database(join(dir, "svc.db"));
    other.exec("BEGIN EXCLUSIVE");
    try {
      const r = await s.call("update_me", { display_name: "Busy", idempotency_key: key() }, a.key);
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe("STORAGE_UNAVAILABLE");
      expect(r.body.error.retry_after).toBe(1);
      expect(r.body.error.message).toContain("busy");
      expect(r.headers.get("retry-after")).toBe("1");
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect((await s.call("update_me", { display_name: "Busy", idempotency_key: key() }, a.key)).status).toBe(200);
    await s.stop();
  });

  test("a remote database's busy and locked answers are mapped the same way", () => {
    for (const err of [
      Object.assign(new Error("SQLITE_BUSY: database is locked"), { code: "SQLITE_BUSY" }),
      Object.assign(new Error("x"), { code: "SQLITE_LOCKED_SHAREDCACHE" }),
      new Error("wrapped", { cause: Object.assign(new Error("SERVER_ERROR: database is locked"), { code: "SERVER_ERROR" }) }),
    ]) {
      const e = toAppError(err);
      expect([e.code, e.status, e.retryAfter]).toEqual(["STORAGE_UNAVAILABLE", 503, 1]);
    }
    expect(toAppError(new Error("something else")).code).toBe("INTERNAL");
  });
});
