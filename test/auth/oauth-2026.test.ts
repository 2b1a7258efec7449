// The authorization rules of MCP 2026-07-28 as the SDK v2 client meets them: a scope step-up from a 403
// insufficient_scope challenge, and discovery of an issuer with a path (svc behind a proxy at /svc).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport, UnauthorizedError, buildDiscoveryUrls } from "@modelcontextprotocol/client";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { MemoryProvider, approve, grant } from "./oauth-helpers.ts";

const pinned = () => new Client({ name: "oauth-2026", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });

describe("step-up authorization", () => {
  let s: TestServer;
  let human: Agent;
  beforeAll(async () => {
    s = await startTestServer();
    human = await s.register("stepup-human");
  });
  afterAll(() => s.stop());

  test("a token without svc:write: the write is refused 403 insufficient_scope, the client asks for more, and the call then goes through", async () => {
    const b = new PageClient(s.url);
    // a client that signed in for reading only
    const provider = new MemoryProvider();
    const { client, tokens } = await grant(s, b, human, "svc:read");
    // stored as the SDK stores them: stamped with the issuer that issued them (SEP-2352)
    provider.info = { ...client, issuer: s.url };
    provider.saved = { ...tokens, issuer: s.url };
    const mcpUrl = new URL(`${s.url}/mcp`);
    const first = pinned();
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await first.connect(transport);
    expect(((await first.callTool({ name: "get_me", arguments: {} })).structuredContent as any).agent.handle).toBe("stepup-human");

    const write = { name: "update_me", arguments: { display_name: "Stepped Up", idempotency_key: "step-up-write-1" } };
    await expect(first.callTool(write)).rejects.toThrow(UnauthorizedError);
    // the client went back to the authorization server for what the challenge named, keeping what it had
    const url = provider.authorizationUrl!;
    const asked = url.searchParams.get("scope")!.split(" ");
    expect(asked).toContain("svc:write");
    expect(asked).toContain("svc:read");
    const back = await approve(s, b, `${url.pathname}${url.search}`, human);
    await transport.finishAuth(back);
    await first.close();

    const second = pinned();
    await second.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const done = await second.callTool(write);
    expect((done.structuredContent as any).agent.display_name).toBe("Stepped Up");
    expect(provider.saved!.scope!.split(" ")).toContain("svc:write");
    await second.close();
  }, 30_000);
});

describe("an issuer with a path: svc behind a proxy at /svc", () => {
  let s: TestServer;
  let proxy: ReturnType<typeof Bun.serve>;
  let base: string;
  let human: Agent;
  beforeAll(async () => {
    // The proxy forwards /svc/* to svc without the prefix, and the host's /.well-known/* as it is.
    let upstream = "";
    proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const url = new URL(req.url);
        const path = url.pathname.startsWith("/svc/") ? url.pathname.slice(4) : url.pathname.startsWith("/.well-known/") ? url.pathname : null;
        if (path === null) return new Response("not here", { status: 404 });
        const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
        const res = await fetch(`${upstream}${path}${url.search}`, { method: req.method, headers: req.headers, body, redirect: "manual" });
        return new Response(res.body, { status: res.status, headers: res.headers });
      },
    });
    base = `http://127.0.0.1:${proxy.port}/svc`;
    s = await startTestServer({ baseUrl: base });
    upstream = s.url;
    human = await s.register("path-human");
  });
  afterAll(async () => {
    proxy?.stop(true);
    await s?.stop();
  });

  test("the metadata documents answer at the RFC 8414 and RFC 9728 locations of the path", async () => {
    const origin = `http://127.0.0.1:${proxy.port}`;
    // RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path; the first URL a client tries
    const [first] = buildDiscoveryUrls(base);
    expect(first!.url.href).toBe(`${origin}/.well-known/oauth-authorization-server/svc`);
    const as = (await (await fetch(first!.url)).json()) as any;
    expect(as.issuer).toBe(base);
    expect(as.authorization_endpoint).toBe(`${base}/oauth/authorize`);
    const prm = (await (await fetch(`${origin}/.well-known/oauth-protected-resource/svc/mcp`)).json()) as any;
    expect(prm).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    const service = (await (await fetch(`${origin}/.well-known/oauth-protected-resource/svc`)).json()) as any;
    expect(service.resource).toBe(base);
    // what the 401 names is reachable through the prefix
    const challenge = await fetch(`${base}/v1`);
    expect(challenge.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource"`);
    expect(((await (await fetch(`${base}/.well-known/oauth-protected-resource`)).json()) as any).resource).toBe(base);
    // nothing answers for another path
    expect((await fetch(`${origin}/.well-known/oauth-authorization-server/other`)).status).toBe(404);
  }, 30_000);

  test("the SDK v2 client signs in through the proxy and calls a tool", async () => {
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${base}/mcp`);
    const first = pinned();
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await first.connect(transport);
    await expect(first.callTool({ name: "get_me", arguments: {} })).rejects.toThrow(UnauthorizedError);
    expect(provider.discovery?.authorizationServerUrl).toBe(base);
    const url = provider.authorizationUrl!;
    expect(`${url.origin}${url.pathname}`).toBe(`${base}/oauth/authorize`);
    // the pages, reached through the prefix as a browser would
    const b = new PageClient(base);
    const back = await approve(s, b, `${url.pathname.slice(4)}${url.search}`, human);
    expect(back.get("iss")).toBe(base);
    await transport.finishAuth(back);
    await first.close();
    const second = pinned();
    await second.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    expect(((await second.callTool({ name: "get_me", arguments: {} })).structuredContent as any).agent.handle).toBe("path-human");
    await second.close();
  }, 30_000);
});
