// Client ID metadata documents: the client_id rules and the document checks on their own, then the whole
// authorization-code flow with PKCE over HTTP with an https URL as client_id. The document is served over real TLS
// by a local server; the server under test fetches it with the real transport, its address guard replaced by a
// lookup to loopback (the guard is tested in safe-fetch.test.ts, and below it refuses the same URL by default).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { auth } from "@modelcontextprotocol/client";
import { METADATA_CACHE_SECONDS, cacheSeconds, clientIdUrlProblem, parseClientMetadata } from "../../server/auth/client-metadata.ts";
import { MAX_DOCUMENT_BYTES, fetchDocument } from "../../server/auth/safe-fetch.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { MemoryProvider, REDIRECT, approve, authorizePath, pkce, tokenCall } from "./oauth-helpers.ts";
import { serveTls, toLoopback, type TlsHost } from "./tls-fixture.ts";

const HOST = "apps.cimd.test";

describe("client_id URLs", () => {
  const cases: [string, string | null][] = [
    ["https://apps.example/oauth/client.json", null],
    ["https://apps.example:8443/c", null],
    ["https://apps.example/c?v=2", null],
    ["http://apps.example/oauth/client.json", "must use https"],
    ["https://apps.example/", "must have a path"],
    ["https://apps.example", "must have a path"],
    ["https://apps.example/a/../client.json", "must be written in its normal form (no dot segments, lowercase host, no default port)"],
    ["https://apps.example/a/%2e%2e/client.json", "must be written in its normal form (no dot segments, lowercase host, no default port)"],
    ["https://Apps.Example/client.json", "must be written in its normal form (no dot segments, lowercase host, no default port)"],
    ["https://apps.example:443/client.json", "must be written in its normal form (no dot segments, lowercase host, no default port)"],
    ["https://apps.example/client.json#frag", "must not have a fragment"],
    ["https://me:pw@apps.example/client.json", "must not carry a user name or password"],
    ["https://apps_example/client.json", "must name a plain host"],
    [`https://apps.example/${"a".repeat(1000)}`, "is longer than 1000 characters"],
    ["https//apps.example/client.json", "is not a URL"],
  ];
  test.each(cases)("%s", (id, problem) => {
    expect(clientIdUrlProblem(id)).toBe(problem);
  });
});

describe("how long a document is kept", () => {
  const { fallback, min, max } = METADATA_CACHE_SECONDS;
  test.each([
    [null, fallback],
    ["max-age=120", 120],
    ["public, max-age=600", 600],
    ["max-age=5", min],
    ["max-age=999999", max],
    ["no-store", min],
    ["no-cache, max-age=600", min],
    ["max-age=abc", fallback],
  ])("Cache-Control %p keeps it %p seconds", (header, seconds) => {
    expect(cacheSeconds(header)).toBe(seconds);
  });
});

describe("checking a fetched document", () => {
  const ID = "https://apps.example/oauth/client.json";
  const good = { client_id: ID, client_name: "Desktop Assistant", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" };
  const fetched = (doc: unknown, over: Partial<{ status: number; contentType: string | null; body: string }> = {}) => ({
    status: 200,
    contentType: "application/json; charset=utf-8",
    cacheControl: null,
    body: JSON.stringify(doc),
    ...over,
  });

  test("a good document gives the client's name, redirect URIs and defaults", () => {
    expect(parseClientMetadata(ID, fetched(good))).toEqual({
      clientName: "Desktop Assistant",
      redirectUris: [REDIRECT],
      grantTypes: ["authorization_code", "refresh_token"],
      scope: null,
    });
    expect(parseClientMetadata(ID, fetched(good, { contentType: "application/oauth-client+json" })).clientName).toBe("Desktop Assistant");
  });

  const refusals: [string, ReturnType<typeof fetched>, string][] = [
    ["a redirect", fetched(good, { status: 302 }), "answered with a redirect (302), which is not followed"],
    ["an error status", fetched(good, { status: 404 }), "could not be fetched (status 404)"],
    ["HTML", fetched(good, { contentType: "text/html" }), "is not served as application/json"],
    ["no content type", fetched(good, { contentType: null }), "is not served as application/json"],
    ["too large", fetched(good, { body: JSON.stringify({ ...good, pad: "x".repeat(MAX_DOCUMENT_BYTES) }) }), `is larger than ${MAX_DOCUMENT_BYTES} bytes`],
    ["not JSON", fetched(good, { body: "{client_id:" }), "is not valid JSON"],
    ["an array", fetched([good]), "is not a JSON object"],
    ["another client_id", fetched({ ...good, client_id: `${ID}?x` }), "names a different client_id than its own URL"],
    ["no client_id", fetched({ ...good, client_id: undefined }), "names a different client_id than its own URL"],
    ["a client secret", fetched({ ...good, client_secret: "s3cret" }), "contains a client secret"],
    ["a secret-based auth method", fetched({ ...good, token_endpoint_auth_method: "client_secret_basic" }), "token_endpoint_auth_method must be none"],
    ["no redirect URIs", fetched({ ...good, redirect_uris: [] }), "redirect_uris must list 1 to 10 URIs"],
    ["an http redirect URI off loopback", fetched({ ...good, redirect_uris: ["http://evil.example/cb"] }), "http is allowed only on a loopback host"],
    ["an unsupported grant", fetched({ ...good, grant_types: ["authorization_code", "implicit"] }), "grant_types must include authorization_code"],
  ];
  test.each(refusals)("refuses %s", (_name, doc, message) => {
    expect(() => parseClientMetadata(ID, doc)).toThrow(message);
  });
});

describe("the authorization-code flow with a URL client_id", () => {
  let s: TestServer;
  let host: TlsHost;
  let human: Agent;
  /** What the document server answers, by path. */
  const docs = new Map<string, { status?: number; headers?: Record<string, string>; body: unknown }>();
  const url = (path: string) => `https://${HOST}:${host.port}${path}`;
  const fetchesOf = (path: string) => host.seen.filter((p) => p === path).length;
  const publish = (path: string, doc: Record<string, unknown>, headers: Record<string, string> = { "cache-control": "max-age=120" }) =>
    docs.set(path, { body: { client_id: url(path), redirect_uris: [REDIRECT], ...doc }, headers: { "content-type": "application/json", ...headers } });

  beforeAll(async () => {
    host = serveTls(HOST, (req) => {
      const d = docs.get(new URL(req.url).pathname);
      if (!d) return new Response("not found", { status: 404 });
      return new Response(typeof d.body === "string" ? d.body : JSON.stringify(d.body), { status: d.status ?? 200, headers: d.headers });
    });
    s = await startTestServer({ fetchClientMetadata: (id) => fetchDocument(id, { lookup: toLoopback, ca: host.cert }) });
    human = await s.register("cimd-human");
  });
  afterAll(async () => {
    await s.stop();
    host.stop();
  });

  test("the authorization server says it supports metadata documents", async () => {
    const as = (await (await s.raw("/.well-known/oauth-authorization-server")).json()) as any;
    expect(as.client_id_metadata_document_supported).toBe(true);
  });

  test("the MCP SDK client: URL client_id, consent naming the app and its hosts, token, calls, refresh; the document is fetched once", async () => {
    publish("/clients/desktop.json", {
      client_name: "Desktop Assistant",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
    const provider = new (class extends MemoryProvider {
      clientMetadataUrl = url("/clients/desktop.json");
    })();
    const serverUrl = `${s.url}/mcp`;
    const resourceMetadataUrl = new URL(`${s.url}/.well-known/oauth-protected-resource`);
    expect(await auth(provider, { serverUrl, resourceMetadataUrl })).toBe("REDIRECT");
    expect(provider.info?.client_id).toBe(url("/clients/desktop.json"));
    const authorizeAt = provider.authorizationUrl!;
    expect(authorizeAt.searchParams.get("client_id")).toBe(url("/clients/desktop.json"));

    const b = new PageClient(s.url);
    const path = `${authorizeAt.pathname}${authorizeAt.search}`;
    expect((await b.get(path)).location).toBe("/oauth/consent");
    expect((await b.get("/oauth/consent")).html).toContain("<strong>Desktop Assistant</strong> wants to use svc as you");
    const back = await approve(s, b, path, human);
    // signed in now, the consent page names the app, where the answer goes, and who publishes its document
    await b.get(path);
    const consent = await b.get("/oauth/consent");
    expect(consent.html).toContain("<strong>Desktop Assistant</strong> wants to act as <strong>@cimd-human</strong>");
    expect(consent.html).toContain("you go back to <strong>127.0.0.1:9</strong>");
    expect(consent.html).toContain(`Its details are published by <strong>${HOST}:${host.port}</strong>`);
    expect(back.get("state")).toBe("sdk-state");

    expect(back.get("iss")).toBe(s.url);
    expect(await auth(provider, { serverUrl, resourceMetadataUrl, authorizationCode: back.get("code")!, iss: back.get("iss")! })).toBe("AUTHORIZED");
    const tokens = provider.saved!;
    expect(tokens.scope).toBe("svc:read svc:write offline_access");
    const me = await s.call("get_me", {}, tokens.access_token);
    expect(me.body.data.agent.handle).toBe("cimd-human");
    const clients = (await s.call("list_clients", {}, tokens.access_token)).body.data.clients;
    expect(clients.find((c: any) => c.current)).toMatchObject({ kind: "oauth", name: "Desktop Assistant" });

    expect(await auth(provider, { serverUrl, resourceMetadataUrl })).toBe("AUTHORIZED");
    expect(provider.saved!.refresh_token).not.toBe(tokens.refresh_token);
    expect((await s.call("get_me", {}, provider.saved!.access_token)).status).toBe(200);
    // three authorization requests within max-age: one fetch
    expect(fetchesOf("/clients/desktop.json")).toBe(1);
  });

  test("PKCE by hand: code exchange with the URL client_id; the document is fetched again once its max-age is over, and its new redirect URIs rule", async () => {
    publish("/clients/cli.json", { client_name: "CLI Tool" }, { "cache-control": "max-age=300" });
    const clientId = url("/clients/cli.json");
    const b = new PageClient(s.url);
    const { verifier, challenge } = pkce();
    const back = await approve(s, b, authorizePath({ client_id: clientId, code_challenge: challenge, scope: "svc:read", state: "cli-1" }), human);
    const t = await tokenCall(s, {
      grant_type: "authorization_code",
      code: back.get("code")!,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(t.status).toBe(200);
    expect(t.body.scope).toBe("svc:read");
    expect((await s.call("get_me", {}, t.body.access_token)).status).toBe(200);
    // another client_id cannot redeem the code
    const second = await approve(s, b, authorizePath({ client_id: clientId, code_challenge: challenge, state: "cli-2" }), human);
    const stolen = await tokenCall(s, {
      grant_type: "authorization_code",
      code: second.get("code")!,
      redirect_uri: REDIRECT,
      client_id: url("/clients/desktop.json"),
      code_verifier: verifier,
    });
    expect(stolen.body.error).toBe("invalid_grant");
    expect(fetchesOf("/clients/cli.json")).toBe(1);

    publish("/clients/cli.json", { client_name: "CLI Tool", redirect_uris: ["http://127.0.0.1:9/elsewhere"] }, { "cache-control": "max-age=300" });
    s.clock.advance(299_000);
    expect((await b.get(authorizePath({ client_id: clientId, code_challenge: challenge }))).status).toBe(303);
    expect(fetchesOf("/clients/cli.json")).toBe(1);
    s.clock.advance(2_000);
    const refused = await b.get(authorizePath({ client_id: clientId, code_challenge: challenge }));
    expect(refused.status).toBe(400);
    expect(refused.location).toBeNull();
    expect(refused.html).toContain("redirect_uri mismatch");
    expect(fetchesOf("/clients/cli.json")).toBe(2);
  });

  test("a document that cannot be used stops the request on a page, never a redirect", async () => {
    docs.set("/bad/moved.json", { status: 302, headers: { location: "/clients/desktop.json" }, body: "" });
    docs.set("/bad/html.json", { headers: { "content-type": "text/html" }, body: "<html>" });
    publish("/bad/other-id.json", { client_id: url("/clients/desktop.json") });
    publish("/bad/secret.json", { client_secret: "s3cret", token_endpoint_auth_method: "client_secret_post" });
    publish("/bad/redirect.json", { redirect_uris: ["http://evil.example/cb"] });
    docs.set("/bad/huge.json", { headers: { "content-type": "application/json" }, body: JSON.stringify({ pad: "x".repeat(MAX_DOCUMENT_BYTES + 10) }) });
    const cases: [string, string][] = [
      [url("/bad/missing.json"), "could not be fetched (status 404)"],
      [url("/bad/moved.json"), "answered with a redirect (302), which is not followed"],
      [url("/bad/html.json"), "is not served as application/json"],
      [url("/bad/other-id.json"), "names a different client_id than its own URL"],
      [url("/bad/secret.json"), "contains a client secret"],
      [url("/bad/redirect.json"), "http is allowed only on a loopback host"],
      [url("/bad/huge.json"), `could not be fetched. The answer is larger than ${MAX_DOCUMENT_BYTES} bytes.`],
      [`https://${HOST}:${host.port}/`, "The app&#39;s client_id must have a path."],
      [`https://${HOST}:${host.port}/a/../clients/desktop.json`, "must be written in its normal form"],
    ];
    const b = new PageClient(s.url);
    const { challenge } = pkce();
    for (const [clientId, message] of cases) {
      const r = await b.get(authorizePath({ client_id: clientId, code_challenge: challenge, state: "x" }));
      expect(r.status).toBe(400);
      expect(r.location).toBeNull();
      expect(r.html).toContain(message);
    }
    // the redirect was not followed, and URLs refused by their form were never fetched
    expect(fetchesOf("/clients/desktop.json")).toBe(1);
    expect(host.seen).not.toContain("/");
  });

  test("the token endpoint does not know a URL client_id that never authorized", async () => {
    const r = await tokenCall(s, {
      grant_type: "authorization_code",
      code: "code_x",
      redirect_uri: REDIRECT,
      client_id: url("/never/seen.json"),
      code_verifier: pkce().verifier,
    });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("invalid_client");
    expect(fetchesOf("/never/seen.json")).toBe(0);
  });

  test("fetching for a URL client_id counts against the address's rate limit", async () => {
    const limited = await startTestServer({ publicRateLimit: 2, fetchClientMetadata: (id) => fetchDocument(id, { lookup: toLoopback, ca: host.cert }) });
    try {
      publish("/clients/limited.json", { client_name: "Limited" });
      const b = new PageClient(limited.url);
      const path = authorizePath({ client_id: url("/clients/limited.json"), code_challenge: pkce().challenge });
      expect((await b.get(path)).status).toBe(303);
      expect((await b.get(path)).status).toBe(303);
      const third = await b.get(path);
      expect(third.status).toBe(429);
      expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
    } finally {
      await limited.stop();
    }
  });
});

describe("by default the fetch goes through the SSRF guard", () => {
  test("a URL client_id on a loopback host is refused on the page, and its server never sees a request", async () => {
    const host = serveTls("localhost", () => Response.json({}));
    const s = await startTestServer();
    try {
      const b = new PageClient(s.url);
      for (const clientId of [
        `https://localhost:${host.port}/client.json`,
        `https://127.0.0.1:${host.port}/client.json`,
        `https://[::1]:${host.port}/client.json`,
      ]) {
        const r = await b.get(authorizePath({ client_id: clientId, code_challenge: pkce().challenge }));
        expect(r.status).toBe(400);
        expect(r.location).toBeNull();
        expect(r.html).toContain("could not be fetched. The");
        // A literal address is named as written; a name is refused without saying how it resolved.
        expect(r.html).toContain(clientId.includes("localhost") ? "does not resolve to public addresses only" : "non-public address (loopback)");
      }
      expect(host.seen).toEqual([]);
    } finally {
      await s.stop();
      host.stop();
    }
  });
});
