// Streamable HTTP transport rules of the MCP specification, on /mcp and /mcp/docs alike.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VERSION } from "../../server/version.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { postRpc } from "./clients.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const ENDPOINTS = ["/mcp", "/mcp/docs"];
const ping = { jsonrpc: "2.0", id: 1, method: "ping" };

function post(path: string, headers: Record<string, string> = {}, body: unknown = ping) {
  return s.raw(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });
}

describe.each(ENDPOINTS)("%s", (path) => {
  test("Origin: none, the service's own, or a loopback page is accepted; any other is 403 with a JSON-RPC error", async () => {
    const own = new URL(s.url);
    for (const origin of [null, own.origin, "http://localhost:6274", "http://127.0.0.1:3000", "http://[::1]:8080"]) {
      const res = await post(path, origin ? { origin } : {});
      expect({ origin, status: res.status }).toEqual({ origin, status: 200 });
      expect(((await res.json()) as any).result).toEqual({});
    }
    for (const origin of ["http://evil.example.com", `http://${own.hostname}.evil.example.com:${own.port}`, "null", "not a url"]) {
      const res = await post(path, { origin });
      expect({ origin, status: res.status }).toEqual({ origin, status: 403 });
      const body: any = await res.json();
      expect(body).toMatchObject({ jsonrpc: "2.0", id: null });
      expect(body.error.code).toBeNumber();
    }
  });

  test("a DNS-rebinding request (foreign Host and Origin) is refused before anything runs", async () => {
    const res = await post(path, { host: "evil.example.com", origin: "http://evil.example.com" });
    expect(res.status).toBe(403);
  });

  test("MCP-Protocol-Version: a supported one passes, an unsupported one is 400", async () => {
    expect((await post(path, { "mcp-protocol-version": "2025-11-25" })).status).toBe(200);
    expect((await post(path, { "mcp-protocol-version": "2025-06-18" })).status).toBe(200);
    const res = await post(path, { "mcp-protocol-version": "1999-01-01" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toContain("Unsupported protocol version");
  });

  test("GET (no server stream is offered) and DELETE (no sessions) are 405 with Allow: POST", async () => {
    for (const method of ["GET", "DELETE", "PUT"]) {
      const res = await s.raw(path, { method, headers: { accept: "text/event-stream" } });
      expect({ method, status: res.status, allow: res.headers.get("allow") }).toEqual({ method, status: 405, allow: "POST" });
      expect(((await res.json()) as any).jsonrpc).toBe("2.0");
    }
  });

  test("stateless: initialize answers without a session id, and later requests need none", async () => {
    const init = await post(
      path,
      {},
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } },
    );
    expect(init.status).toBe(200);
    expect(init.headers.get("mcp-session-id")).toBeNull();
    expect(init.headers.get("content-type")).toStartWith("application/json");
    expect(init.headers.get("x-request-id")).toBeString();
    expect(init.headers.get("cache-control")).toBe("no-store");
    expect(init.headers.get("x-content-type-options")).toBe("nosniff");
    expect(((await init.json()) as any).result.protocolVersion).toBe("2025-11-25");
    const list = await post(path, { "mcp-protocol-version": "2025-11-25" }, { jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect(((await list.json()) as any).result.tools.length).toBeGreaterThan(0);
  });

  test("the 2025 handshake at 2025-06-18 too: the server answers with that version", async () => {
    const init = await post(
      path,
      {},
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } },
    );
    expect(((await init.json()) as any).result.protocolVersion).toBe("2025-06-18");
  });

  test("2026-07-28: server/discover names the revision, the capabilities and the server, with no session", async () => {
    const res = await postRpc("2026-07-28", `${s.url}${path}`, "server/discover");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(res.headers.get("x-request-id")).toBeString();
    const { result } = (await res.json()) as any;
    expect(result.supportedVersions).toContain("2026-07-28");
    expect(result.capabilities.tools).toBeDefined();
    expect(result.instructions).toBeString();
    expect(result._meta["io.modelcontextprotocol/serverInfo"]).toMatchObject({ version: VERSION });
    const list = await postRpc("2026-07-28", `${s.url}${path}`, "tools/list");
    expect(((await list.json()) as any).result.tools.length).toBeGreaterThan(0);
  });

  test("2026-07-28: a revision the server does not speak is refused naming the ones it does, with the request's id", async () => {
    const res = await post(
      path,
      { "mcp-protocol-version": "2027-01-01", "mcp-method": "tools/list" },
      {
        jsonrpc: "2.0",
        id: 9,
        method: "tools/list",
        params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2027-01-01", "io.modelcontextprotocol/clientCapabilities": {} } },
      },
    );
    expect(res.status).toBe(400);
    const body: any = await res.json();
    expect(body).toMatchObject({ id: 9, error: { code: -32022, data: { supported: ["2026-07-28"], requested: "2027-01-01" } } });
  });

  test("a notification is accepted with 202 and no body", async () => {
    const res = await post(path, {}, { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  test("a cancellation in the same batch cannot leave the answer unsent", async () => {
    const batch = [
      { jsonrpc: "2.0", id: 7, method: "tools/list" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } },
    ];
    const res = await post(path, {}, batch);
    expect(res.status).toBe(200);
    const answer: any = await res.json();
    expect((Array.isArray(answer) ? answer[0] : answer).result.tools.length).toBeGreaterThan(0);
  });

  test("a body over 1 MiB is 413 with a JSON-RPC error, whether its length is declared or it is streamed", async () => {
    const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { pad: "x".repeat(1024 * 1024 + 10) } });
    const declared = await post(path, {}, JSON.parse(big));
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as any).jsonrpc).toBe("2.0");
    const chunks = new ReadableStream({
      start(c) {
        for (let i = 0; i < big.length; i += 65536) c.enqueue(new TextEncoder().encode(big.slice(i, i + 65536)));
        c.close();
      },
    });
    const streamed = await s.raw(path, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: chunks,
    });
    expect(streamed.status).toBe(413);
  });

  test("a body that is not JSON (by its Content-Type) is 415", async () => {
    const res = await s.raw(path, {
      method: "POST",
      headers: { "content-type": "text/plain", accept: "application/json, text/event-stream" },
      body: JSON.stringify(ping),
    });
    expect(res.status).toBe(415);
  });

  test("a body that is not JSON-RPC is a JSON-RPC parse error, not a crash", async () => {
    const res = await s.raw(path, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{nope",
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe(-32700);
  });

  test("a body that is not UTF-8 is a JSON-RPC parse error naming it, not silently repaired", async () => {
    const call = new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_me", arguments: { x: "ok" } } }));
    // "ok" becomes two bytes that are no UTF-8: a lone continuation byte and an overlong lead byte.
    const at = call.indexOf(0x6f);
    call.set([0x80, 0xc0], at);
    const res = await s.raw(path, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: call,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: -32700, message: "Parse error: the body is not valid UTF-8." });
  });
});

test("other paths under /mcp are NOT_FOUND with the error envelope", async () => {
  const res = await post("/mcp/elsewhere");
  expect(res.status).toBe(404);
  expect(((await res.json()) as any).error.code).toBe("NOT_FOUND");
});

test("on /mcp, a call to add_attachment may pass 1 MiB (up to its own limit); any other message may not", async () => {
  const pad = "x".repeat(1024 * 1024 + 10);
  const call = (name: string) => ({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name, arguments: { content_base64: pad } } });
  expect((await post("/mcp", {}, call("get_me"))).status).toBe(413);
  expect((await post("/mcp/docs", {}, call("add_attachment"))).status).toBe(413);
  // read, then refused for want of a credential like any call without one
  expect((await post("/mcp", {}, call("add_attachment"))).status).toBe(401);
});
