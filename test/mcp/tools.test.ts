// /mcp through the official SDK clients of both protocol eras: the catalogue as MCP tools, calls through the same
// pipeline as REST, the error envelope as isError results, and HTTP 401/403 with the challenge MCP clients act on.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import { sha256 } from "../../server/auth/secrets.ts";
import { TOOLS, findTool, inputJsonSchema, outputJsonSchema } from "../../server/tools/catalogue.ts";
import { VERSION } from "../../server/version.ts";
import { key, startTestServer, type TestServer } from "../harness.ts";
import { ERAS, connectMcp, handleFor, postRpc, refusedStatus, type McpClient } from "./clients.ts";

let s: TestServer;
const clients: McpClient[] = [];
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await s.stop();
});

/** tools/call, checking the result carries one text block with the answer's JSON. */
async function callRaw(client: McpClient, name: string, args: Record<string, unknown>): Promise<any> {
  const result: any = await client.callTool({ name, arguments: args });
  expect(result.content).toHaveLength(1);
  expect(result.content[0].type).toBe("text");
  return result;
}

/** A success: the same JSON as structuredContent and as text. */
async function call(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await callRaw(client, name, args);
  expect(result.isError).toBe(false);
  expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent);
  return result;
}

/** An error result: isError with the REST error envelope as its text (structuredContent is for the output schema). */
async function callFails(client: McpClient, name: string, args: Record<string, unknown>, code: string): Promise<any> {
  const result = await callRaw(client, name, args);
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const envelope = JSON.parse(result.content[0].text);
  expect(envelope.ok).toBe(false);
  expect(envelope.error.code).toBe(code);
  expect(envelope.error.message).toBeString();
  expect(envelope.error.suggested_action).toBeString();
  expect(envelope.request_id).toBeString();
  expect(result._meta["svc/request_id"]).toBe(envelope.request_id);
  return envelope;
}

describe.each(ERAS)("a %s client", (era) => {
  async function connect(apiKey: string | null, url = s.url): Promise<McpClient> {
    const client = await connectMcp(era, `${url}/mcp`, apiKey ? { authorization: `Bearer ${apiKey}` } : {});
    clients.push(client);
    return client;
  }
  const h = (handle: string) => handleFor(era, handle);

  describe("tools/list: the catalogue as MCP tools", () => {
    test("every tool, same names, the catalogue's own input and output schemas, annotations from the tags", async () => {
      const a = await s.register(h("mcp-list-a"));
      const { tools } = await (await connect(a.key)).listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
      for (const listed of tools) {
        const t = findTool(listed.name)!;
        expect(listed.name).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
        expect(listed.title).toBe(t.title);
        expect(listed.description).toBe(t.description);
        expect(listed.inputSchema).toEqual(inputJsonSchema(t) as any);
        expect(listed.outputSchema).toEqual(outputJsonSchema(t) as any);
        expect(listed.inputSchema.type).toBe("object");
        expect(listed.inputSchema.$schema).toBeUndefined();
        const read = t.tags.includes("read");
        expect({ tool: t.name, ...listed.annotations }).toEqual({
          tool: t.name,
          title: t.title,
          readOnlyHint: read,
          openWorldHint: false,
          ...(read ? {} : { destructiveHint: t.tags.includes("destructive"), idempotentHint: t.idempotent }),
        });
      }
      // spot checks against the spec's tags
      const annotations = (name: string) => tools.find((t) => t.name === name)!.annotations;
      expect(annotations("get_me")).toMatchObject({ readOnlyHint: true });
      expect(annotations("remove_contact")).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
      expect(annotations("add_contact")).toMatchObject({ destructiveHint: false, idempotentHint: true });
      expect(annotations("register_agent")).toMatchObject({ destructiveHint: false, idempotentHint: false });
    });

    test("listing needs no credential, as GET /v1/tools; the server names itself and says how to start", async () => {
      const client = await connect(null);
      expect((await client.listTools()).tools).toHaveLength(TOOLS.length);
      expect(client.getServerVersion()).toMatchObject({ name: "svc", version: VERSION });
      expect(client.getServerCapabilities()?.tools).toBeDefined();
      expect(client.getInstructions()).toContain("register_agent");
    });
  });

  describe("tools/call goes through the same pipeline as REST", () => {
    test("a read: structuredContent deep-equals REST data, inbox summary included", async () => {
      const [a] = await s.contacts(h("mcp-read-a"), h("mcp-read-b"));
      const client = await connect(a.key);
      for (const [tool, args] of [
        ["get_me", {}],
        ["list_contacts", {}],
        ["get_contact_code", {}],
      ] as const) {
        const rest = await s.ok(tool, args, a.key);
        const mcp = await call(client, tool, args);
        expect({ tool, data: mcp.structuredContent }).toEqual({ tool, data: rest });
      }
      expect((await call(client, "get_me")).structuredContent.inbox).toMatchObject({ unread: expect.any(Number) });
    });

    test("a write takes effect, and the same idempotency_key replays the answer with one effect", async () => {
      const a = await s.register(h("mcp-write-a"));
      await s.register(h("mcp-write-b"));
      const client = await connect(a.key);
      const args = { handle: h("mcp-write-b"), note: "hello over MCP", idempotency_key: key() };
      const first = await call(client, "add_contact", args);
      expect(first.structuredContent.status).toBe("requested");
      expect(first._meta["svc/idempotent_replayed"]).toBeUndefined();
      const again = await call(client, "add_contact", args);
      expect(again._meta["svc/idempotent_replayed"]).toBe(true);
      const { inbox: _a, ...firstData } = first.structuredContent;
      const { inbox: _b, ...againData } = again.structuredContent;
      expect(againData).toEqual(firstData);
      const outgoing = (await call(client, "list_contacts", { state: "outgoing" })).structuredContent.contacts;
      expect(outgoing.map((c: any) => c.agent.handle)).toEqual([h("mcp-write-b")]);
      // the key reused for different arguments
      const reused = await callFails(client, "add_contact", { ...args, note: "something else" }, "IDEMPOTENCY_KEY_REUSED");
      expect(reused.error.message).toBeString();
    });

    test("the target sees exactly one inbox item for the replayed write", async () => {
      const a = await s.register(h("mcp-once-a"));
      const b = await s.register(h("mcp-once-b"));
      const client = await connect(a.key);
      const args = { handle: h("mcp-once-b"), idempotency_key: key() };
      await call(client, "add_contact", args);
      await call(client, "add_contact", args);
      const items = (await s.ok("get_inbox", { since: "0", include_seen: true }, b.key)).items;
      expect(items.filter((i: any) => i.type === "contact.request")).toHaveLength(1);
    });

    test("the Idempotency-Key header works as over REST", async () => {
      const a = await s.register(h("mcp-header-key"));
      const headerKey = key();
      const callWithHeader = async () => {
        const res = await postRpc(
          era,
          `${s.url}/mcp`,
          "tools/call",
          { name: "update_me", arguments: { display_name: "Header" } },
          { authorization: `Bearer ${a.key}`, "idempotency-key": headerKey },
        );
        return ((await res.json()) as any).result;
      };
      const first = await callWithHeader();
      expect(first.isError).toBe(false);
      expect(first.structuredContent.agent.display_name).toBe("Header");
      expect((await callWithHeader())._meta["svc/idempotent_replayed"]).toBe(true);
    });

    test("public tools work without a credential: register over MCP, then use the key over MCP", async () => {
      const anonymous = await connect(null);
      const registered = await call(anonymous, "register_agent", { handle: h("mcp-public"), display_name: "Public" });
      expect(registered.structuredContent.api_key).toBeString();
      const me = await call(await connect(registered.structuredContent.api_key), "get_me");
      expect(me.structuredContent.agent.handle).toBe(h("mcp-public"));
    });
  });

  describe("errors are results with isError and the REST error envelope", () => {
    test("validation error: same code, message and details as REST", async () => {
      const a = await s.register(h("mcp-err-a"));
      const client = await connect(a.key);
      const envelope = await callFails(client, "get_inbox", { limit: 0 }, "VALIDATION_ERROR");
      const rest = await s.call("get_inbox", { limit: 0 }, a.key);
      expect(rest.status).toBe(400);
      expect(envelope.error).toEqual(rest.body.error);
      expect(envelope.error.details.issues[0].path).toBe("limit");
      const unknownField = await callFails(client, "get_me", { surprise: true }, "VALIDATION_ERROR");
      expect(unknownField.error.details.issues).toBeArray();
    });

    test("a client that listed the tools (and so checks structuredContent against each output schema) still gets the envelope", async () => {
      const a = await s.register(h("mcp-err-listed"));
      const client = await connect(a.key);
      await client.listTools();
      await callFails(client, "get_inbox", { limit: 0 }, "VALIDATION_ERROR");
      await callFails(client, "add_contact", { handle: "nobody-here", idempotency_key: key() }, "NOT_FOUND");
      expect((await call(client, "get_inbox", { limit: 5 })).structuredContent.items).toEqual([]);
    });

    test("arguments that are not an object: a VALIDATION_ERROR result, as a REST body that is not an object", async () => {
      const a = await s.register(h("mcp-err-args"));
      for (const args of [true, [1], "x", 3]) {
        const res = await postRpc(era, `${s.url}/mcp`, "tools/call", { name: "get_me", arguments: args }, { authorization: `Bearer ${a.key}` });
        const { result } = (await res.json()) as any;
        expect({ args, isError: result?.isError }).toEqual({ args, isError: true });
        const envelope = JSON.parse(result.content[0].text);
        expect(envelope.error.code).toBe("VALIDATION_ERROR");
        expect(envelope.error.details.issues[0].path).toBe("(arguments)");
      }
    });

    test("unknown tool: NOT_FOUND", async () => {
      const a = await s.register(h("mcp-err-b"));
      const envelope = await callFails(await connect(a.key), "no_such_tool", {}, "NOT_FOUND");
      expect(envelope.error.message).toContain("no_such_tool");
    });

    test("a credential without the scope: HTTP 403 insufficient_scope naming it, so an OAuth client can step up; reads pass", async () => {
      const ro = await s.register(h("mcp-readonly"));
      await s.server.db.raw.execute({ sql: "UPDATE api_keys SET scopes = 'svc:read' WHERE key_hash = ?", args: [sha256(ro.key)] });
      const client = await connect(ro.key);
      const err = await client.callTool({ name: "update_me", arguments: { display_name: "Nope", idempotency_key: key() } }).catch((e) => e);
      // the 2026 client reads the challenge itself (InsufficientScopeError); the 2025 one reports the status
      if (era === "2026-07-28") expect(err).toMatchObject({ requiredScope: "svc:write" });
      else expect(refusedStatus(err)).toBe(403);
      const res = await postRpc(
        era,
        `${s.url}/mcp`,
        "tools/call",
        { name: "update_me", arguments: { display_name: "Nope", idempotency_key: key() } },
        { authorization: `Bearer ${ro.key}` },
        17,
      );
      expect(res.status).toBe(403);
      expect(res.headers.get("www-authenticate")).toBe(
        `Bearer error="insufficient_scope", scope="svc:write", resource_metadata="${s.url}/.well-known/oauth-protected-resource", error_description="This credential lacks the scope svc:write."`,
      );
      const body: any = await res.json();
      expect(body).toMatchObject({
        jsonrpc: "2.0",
        id: 17,
        error: { data: { ok: false, error: { code: "FORBIDDEN", details: { required_scope: "svc:write" } } } },
      });
      expect((await s.ok("get_me", {}, ro.key)).agent.display_name).toBe(h("mcp-readonly").toUpperCase());
      expect((await call(client, "get_me")).structuredContent.agent.handle).toBe(h("mcp-readonly"));
    });

    test("rate limits apply per credential as over REST: RATE_LIMITED with retry_after, and the RateLimit headers", async () => {
      const limited = await startTestServer({ rateLimit: 2 });
      try {
        const { api_key } = await limited.ok("register_agent", { handle: h("mcp-limited"), display_name: "L" });
        const client = await connect(api_key, limited.url);
        await call(client, "get_me");
        await call(client, "get_me");
        const envelope = await callFails(client, "get_me", {}, "RATE_LIMITED");
        expect(envelope.error.retry_after).toBeGreaterThan(0);
        const res = await postRpc(era, `${limited.url}/mcp`, "tools/call", { name: "get_me", arguments: {} }, { authorization: `Bearer ${api_key}` });
        expect(res.status).toBe(200);
        expect(res.headers.get("ratelimit-policy")).toContain("q=2");
        expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      } finally {
        await limited.stop();
      }
    }, 30_000);
  });

  describe("authentication: HTTP 401 with the challenge MCP clients discover OAuth from", () => {
    const url = () => `${s.url}/mcp`;
    // the first request of the era: the 2025 handshake, or the 2026 discovery
    const opening = (headers: Record<string, string> = {}) =>
      era === "2026-07-28"
        ? postRpc(era, url(), "server/discover", {}, headers, "open-1")
        : postRpc(era, url(), "initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } }, headers, "open-1");
    const getMe = (headers: Record<string, string> = {}) => postRpc(era, url(), "tools/call", { name: "get_me", arguments: {} }, headers, 2);

    async function expectChallenge(res: Response, id: number | string = 2) {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${s.url}/.well-known/oauth-protected-resource"`);
      expect(extractWWWAuthenticateParams(res).resourceMetadataUrl?.href).toBe(`${s.url}/.well-known/oauth-protected-resource`);
      const body: any = await res.json();
      expect(body.jsonrpc).toBe("2.0");
      expect(body.id).toBe(id);
      expect(body.error.data).toMatchObject({ ok: false, error: { code: "UNAUTHENTICATED" }, request_id: res.headers.get("x-request-id") });
    }

    test("a tool that needs a credential, called without one", async () => {
      await expectChallenge(await getMe());
      const metadata = await fetch(`${s.url}/.well-known/oauth-protected-resource`);
      expect(metadata.status).toBe(200);
      expect(((await metadata.json()) as any).resource).toBe(s.url);
    });

    test("an invalid bearer token, on any request (the opening one too)", async () => {
      await expectChallenge(await opening({ authorization: "Bearer svc_not-a-real-key" }), "open-1");
      await expectChallenge(await getMe({ authorization: "Bearer svc_not-a-real-key" }));
    });

    test("the SDK client sees the 401 as an HTTP error, not a tool result", async () => {
      const client = await connect(null);
      const err = await client.callTool({ name: "get_me", arguments: {} }).catch((e) => e);
      expect(refusedStatus(err)).toBe(401);
      expect(refusedStatus(await connect("svc_not-a-real-key").catch((e) => e))).toBe(401);
    });

    test("a revoked key (rotated and past its grace period) is refused", async () => {
      const a = await s.register(h("mcp-rotated"));
      const { api_key: fresh } = await s.ok("rotate_api_key", {}, a.key);
      s.clock.advance(11 * 60_000);
      await expectChallenge(await getMe({ authorization: `Bearer ${a.key}` }));
      expect((await call(await connect(fresh), "get_me")).structuredContent.agent.handle).toBe(h("mcp-rotated"));
    });
  });
});
