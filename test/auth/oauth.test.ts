import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, importJWK, jwtVerify } from "jose";
import { Client, StreamableHTTPClientTransport, UnauthorizedError, auth, extractWWWAuthenticateParams } from "@modelcontextprotocol/client";
import { UnauthorizedError as LegacyUnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MINUTE } from "../../server/clock.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { MemoryProvider, REDIRECT, approve, authorizePath, callback, grant, pkce, registerClient, revokeCall, tokenCall } from "./oauth-helpers.ts";

let s: TestServer;
let human: Agent;
let b: PageClient;
beforeAll(async () => {
  s = await startTestServer();
  human = await s.register("oa-human");
  b = new PageClient(s.url);
});
afterAll(() => s.stop());

const bearer = (token: string, tool = "get_me", args: Record<string, unknown> = {}) => s.call(tool, args, token);

describe("discovery", () => {
  test("the metadata documents name the endpoints that answer", async () => {
    const as = (await (await s.raw("/.well-known/oauth-authorization-server")).json()) as any;
    expect(as).toMatchObject({
      issuer: s.url,
      authorization_endpoint: `${s.url}/oauth/authorize`,
      token_endpoint: `${s.url}/oauth/token`,
      registration_endpoint: `${s.url}/oauth/register`,
      revocation_endpoint: `${s.url}/oauth/revoke`,
      jwks_uri: `${s.url}/.well-known/jwks.json`,
      code_challenge_methods_supported: ["S256"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      token_endpoint_auth_methods_supported: ["none"],
    });
    // offline_access is offered by the authorization server, never asked for by the resource (SEP-2207)
    expect(as.scopes_supported).toEqual(["svc:read", "svc:write", "offline_access"]);
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    expect(as.agent_auth.register_uri).toBe(`${s.url}/v1/agents`);
    const prm = (await (await s.raw("/.well-known/oauth-protected-resource")).json()) as any;
    expect(prm).toMatchObject({ resource: s.url, authorization_servers: [s.url], scopes_supported: ["svc:read", "svc:write"] });
    // RFC 9728 §3.3: the metadata at a path names exactly the resource at that path
    const mcp = (await (await s.raw("/.well-known/oauth-protected-resource/mcp")).json()) as any;
    expect(mcp).toMatchObject({ resource: `${s.url}/mcp`, authorization_servers: [s.url], scopes_supported: ["svc:read", "svc:write"] });
    expect((await s.raw("/.well-known/oauth-protected-resource/elsewhere")).status).toBe(404);
    const jwks = (await (await s.raw("/.well-known/jwks.json")).json()) as any;
    expect(jwks.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    expect(jwks.keys[0].d).toBeUndefined();
  });

  test("the token endpoint answers CORS preflight and refuses GET", async () => {
    const pre = await s.raw("/oauth/token", { method: "OPTIONS" });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect((await s.raw("/oauth/token")).status).toBe(405);
  });
});

describe("the MCP SDK client (v2, on 2026-07-28) runs the whole flow", () => {
  test("over MCP: 401, discovery, registration as a native app, PKCE through the pages, iss checked, token, a refresh, revocation", async () => {
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${s.url}/mcp`);
    const connect = async () => {
      const client = new Client({ name: "oauth-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
      const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
      await client.connect(transport);
      return { client, transport };
    };
    // discovery and tools/list are public; the first call that needs identity gets 401 and starts OAuth
    const first = await connect();
    await expect(first.client.callTool({ name: "get_me", arguments: {} })).rejects.toThrow(UnauthorizedError);
    // registered as what it is: a native app with a loopback redirect (SEP-837)
    expect(provider.info).toMatchObject({ application_type: "native", redirect_uris: [REDIRECT] });
    const url = provider.authorizationUrl!;
    // offline_access is asked for because the authorization server offers it, not because the resource needs it
    expect(url.searchParams.get("scope")).toBe("svc:read svc:write offline_access");
    expect(url.searchParams.get("resource")).toBe(s.url);
    const back = await approve(s, b, `${url.pathname}${url.search}`, human);
    expect(back.get("iss")).toBe(s.url);
    // the SDK checks iss against the issuer it discovered before it redeems the code (RFC 9207)
    await first.transport.finishAuth(back);
    await first.client.close();
    const { client } = await connect();
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain("get_settings_link");
    const me = await client.callTool({ name: "get_me", arguments: {} });
    expect(me.isError).toBeFalsy();
    expect((me.structuredContent as any).agent.handle).toBe("oa-human");

    // the access token expires; the SDK refreshes it by itself on the 401 and retries
    const saved = provider.saved!;
    expect(saved.refresh_token).toStartWith("rt_");
    s.clock.advance(16 * MINUTE);
    const later = await client.callTool({ name: "list_clients", arguments: {} });
    expect((later.structuredContent as any).clients.find((c: any) => c.current)).toMatchObject({ kind: "oauth", name: "SDK Test Client" });
    expect(provider.saved!.refresh_token).not.toBe(saved.refresh_token);

    // revocation: every later call fails, and the token is answered 401 at the HTTP level
    expect(await revokeCall(s, { token: provider.saved!.refresh_token!, client_id: provider.info!.client_id })).toBe(200);
    const revoked = provider.saved!.access_token;
    provider.authorizationUrl = undefined;
    await expect(client.callTool({ name: "get_me", arguments: {} })).rejects.toThrow(UnauthorizedError);
    // the refresh token was refused too, so the client is sent to sign in again
    expect(provider.authorizationUrl).toBeDefined();
    const raw = await s.raw("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${revoked}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get("www-authenticate")).toContain("resource_metadata=");
    await client.close();
  }, 30_000);

  test("over REST: the SDK's OAuth client gets a token from the 401 challenge of GET /v1", async () => {
    const unauth = await s.raw("/v1");
    expect(unauth.status).toBe(401);
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(unauth);
    expect(resourceMetadataUrl?.toString()).toBe(`${s.url}/.well-known/oauth-protected-resource`);
    const provider = new MemoryProvider();
    const serverUrl = `${s.url}/mcp`;
    expect(await auth(provider, { serverUrl, resourceMetadataUrl })).toBe("REDIRECT");
    expect(provider.info?.client_id).toStartWith("mcp_");
    const url = provider.authorizationUrl!;
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("resource")).toBe(s.url);
    expect(url.searchParams.get("scope")).toBe("svc:read svc:write offline_access");
    const back = await approve(s, b, `${url.pathname}${url.search}`, human);
    expect(back.get("state")).toBe("sdk-state");
    expect(back.get("iss")).toBe(s.url);
    // without iss the SDK refuses the code, as the metadata promises iss (RFC 9207 §2.4)
    await expect(auth(provider, { serverUrl, resourceMetadataUrl, authorizationCode: back.get("code")! })).rejects.toThrow();
    expect(await auth(provider, { serverUrl, resourceMetadataUrl, authorizationCode: back.get("code")!, iss: back.get("iss")! })).toBe("AUTHORIZED");
    const first = provider.saved!;
    expect(first).toMatchObject({ token_type: "Bearer", expires_in: 900, scope: "svc:read svc:write offline_access" });
    expect(first.refresh_token).toStartWith("rt_");

    const me = await bearer(first.access_token);
    expect(me.status).toBe(200);
    expect(me.body.data.agent.handle).toBe("oa-human");
    const clients = (await bearer(first.access_token, "list_clients")).body.data.clients;
    expect(clients.find((c: any) => c.current)).toMatchObject({ kind: "oauth", name: "SDK Test Client" });

    // a refresh: the SDK uses the stored refresh token, and gets a new pair
    expect(await auth(provider, { serverUrl, resourceMetadataUrl })).toBe("AUTHORIZED");
    const second = provider.saved!;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    expect((await bearer(second.access_token)).status).toBe(200);

    // revocation ends the session: every token of it stops at once
    expect(await revokeCall(s, { token: second.refresh_token!, token_type_hint: "refresh_token", client_id: provider.info!.client_id })).toBe(200);
    const after = await bearer(second.access_token);
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain("resource_metadata=");
    expect((await bearer(first.access_token)).status).toBe(401);
    const refreshed = await tokenCall(s, { grant_type: "refresh_token", refresh_token: second.refresh_token!, client_id: provider.info!.client_id });
    expect(refreshed.body.error).toBe("invalid_grant");
  }, 30_000);

  test("a 2025-era client (SDK 1.x) signs in over MCP too: it asks only for what the resource lists, and needs no refresh token", async () => {
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${s.url}/mcp`);
    const client = new LegacyClient({ name: "oauth-test-1x", version: "1.0.0" });
    await client.connect(new LegacyTransport(mcpUrl, { authProvider: provider }));
    await expect(client.callTool({ name: "get_me", arguments: {} })).rejects.toThrow(LegacyUnauthorizedError);
    const url = provider.authorizationUrl!;
    expect(url.searchParams.get("scope")).toBe("svc:read svc:write");
    const back = await approve(s, b, `${url.pathname}${url.search}`, human);
    const transport = new LegacyTransport(mcpUrl, { authProvider: provider });
    await transport.finishAuth(back.get("code")!);
    await client.close();
    await client.connect(transport);
    expect(provider.saved).toMatchObject({ scope: "svc:read svc:write" });
    expect(provider.saved!.refresh_token).toBeUndefined();
    const me = await client.callTool({ name: "get_me", arguments: {} });
    expect((me.structuredContent as any).agent.handle).toBe("oa-human");
    await client.close();
  }, 30_000);
});

describe("sign-up from an MCP client", () => {
  test("a person with no handle creates one on the sign-in page, comes back to consent, and the client acts as it", async () => {
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${s.url}/mcp`);
    const connect = async () => {
      const client = new Client({ name: "signup-test", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
      await client.connect(transport);
      return { client, transport };
    };
    const first = await connect();
    await expect(first.client.callTool({ name: "get_me", arguments: {} })).rejects.toThrow(UnauthorizedError);
    const url = provider.authorizationUrl!;
    const browser = new PageClient(s.url);
    expect((await browser.get(`${url.pathname}${url.search}`)).location).toBe("/oauth/consent");
    const signin = await browser.get("/oauth/consent");
    expect(signin.html).toContain("Sign in to continue to SDK Test Client");
    expect(signin.html).toContain("I am new here");
    // The sign-in form and the new-handle form each label their own handle input.
    const ids = [...signin.html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]);
    expect(ids.length).toBe(new Set(ids).size);

    const taken = await browser.post("/oauth/signup", { handle: "oa-human", display_name: "Newcomer" });
    expect(taken.status).toBe(409);
    expect(taken.html).toContain("That handle is taken");
    expect(taken.html).toContain('value="Newcomer"');
    const created = await browser.post("/oauth/signup", { handle: "oa-newcomer", display_name: "Newcomer", description: "Came by MCP" });
    expect(created.location).toBe("/oauth/consent");
    const consent = await browser.follow(created);
    expect(consent.html).toContain("Allow SDK Test Client?");
    expect(consent.html).toContain("<strong>@oa-newcomer</strong> (Newcomer)");
    const requestId = consent.html.match(/name="request_id" value="([^"]+)"/)![1]!;
    const back = callback((await browser.post("/oauth/consent", { request_id: requestId, decision: "approve" })).location);

    await first.transport.finishAuth(back);
    await first.client.close();
    const { client } = await connect();
    const me = await client.callTool({ name: "get_me", arguments: {} });
    expect((me.structuredContent as any).agent).toMatchObject({ handle: "oa-newcomer", display_name: "Newcomer", description: "Came by MCP" });
    await client.close();
  }, 30_000);

  test("without an app waiting for approval, the sign-up form makes no handle", async () => {
    const stray = new PageClient(s.url);
    // A page of this site with a form gives the browser its CSRF token; no app is waiting in this session.
    await stray.get("/account");
    const r = await stray.post("/oauth/signup", { handle: "oa-stray", display_name: "Stray" });
    expect(r.status).toBe(400);
    expect((await s.call("register_agent", { handle: "oa-stray", display_name: "Stray" })).status).toBe(200);
  });

  test("on an invite-only server the new handle needs a platform invite code", async () => {
    // A second instance on s's database: a remote test database would otherwise be emptied under s.
    const closed = await startTestServer({ inviteOnly: true, ...s.database });
    try {
      const client = (await registerClient(closed)).body;
      const browser = new PageClient(closed.url);
      await browser.get(authorizePath({ client_id: client.client_id, code_challenge: pkce().challenge, scope: "svc:read", state: "s", resource: closed.url }));
      expect((await browser.get("/oauth/consent")).html).toContain("Invite code for this server");
      const refused = await browser.post("/oauth/signup", { handle: "oa-uninvited", display_name: "Uninvited", platform_invite_code: "wrong-code" });
      expect(refused.status).toBe(403);
      expect((await closed.call("register_agent", { handle: "oa-uninvited", display_name: "U", platform_invite_code: "wrong-code" })).status).toBe(403);
    } finally {
      await closed.stop();
    }
  });
});

describe("tokens and sessions", () => {
  test("the access token is a JWT for this server, verifiable with the JWKS, and expires after 15 minutes", async () => {
    const { tokens, client } = await grant(s, b, human);
    const jwks = createLocalJWKSet((await (await s.raw("/.well-known/jwks.json")).json()) as any);
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, { issuer: s.url, audience: s.url, currentDate: s.clock.now() });
    expect(protectedHeader).toMatchObject({ alg: "ES256", typ: "at+jwt" });
    expect(payload).toMatchObject({ sub: human.agent_id, client_id: client.client_id, scope: "svc:read svc:write offline_access" });
    expect(payload.exp! - payload.iat!).toBe(900);
    s.clock.advance(15 * MINUTE);
    expect((await bearer(tokens.access_token)).status).toBe(401);
    const fresh = await tokenCall(s, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(fresh.status).toBe(200);
    expect((await bearer(fresh.body.access_token)).status).toBe(200);
  });

  test("scopes bound what a token may do: FORBIDDEN names the missing scope; no refresh token without offline_access", async () => {
    const { tokens } = await grant(s, b, human, "svc:read");
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.scope).toBe("svc:read");
    expect((await bearer(tokens.access_token)).status).toBe(200);
    const write = await bearer(tokens.access_token, "update_me", { display_name: "Nope", idempotency_key: "scope-test-1" });
    expect(write.status).toBe(403);
    expect(write.body.error).toMatchObject({ code: "FORBIDDEN", details: { required_scope: "svc:write" } });
    // the challenge a client steps up from (RFC 6750 §3.1), never asking for offline_access
    expect(write.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="svc:write", resource_metadata="${s.url}/.well-known/oauth-protected-resource", error_description="This credential lacks the scope svc:write."`,
    );
    expect(extractWWWAuthenticateParams(new Response(null, { headers: write.headers }))).toMatchObject({ error: "insufficient_scope", scope: "svc:write" });
  });

  test("a FORBIDDEN that is not about a scope carries no scope challenge", async () => {
    const { tokens } = await grant(s, b, human);
    const r = await bearer(tokens.access_token, "rotate_api_key", { idempotency_key: "oauth-rotate-challenge" });
    expect(r.status).toBe(403);
    expect(r.headers.get("www-authenticate")).toBeNull();
  });

  test("OAuth sessions never receive API keys", async () => {
    const { tokens } = await grant(s, b, human);
    const r = await bearer(tokens.access_token, "rotate_api_key", { idempotency_key: "oauth-rotate-1" });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("FORBIDDEN");
    // what is wrong is the kind of credential, not a scope (the token has svc:write)
    expect(r.body.error.details).toBeUndefined();
    expect(r.body.error.message).toContain("OAuth access token");
    expect(r.body.error.suggested_action).not.toContain("scope");
    expect(r.body.error.suggested_action).toContain("API key");
    expect(r.body.error.suggested_action).toContain(`${s.url}/account`);
  });

  test("an OAuth session is listed as kind oauth and disconnecting it stops its tokens at once", async () => {
    const { tokens, client } = await grant(s, b, human);
    const mine = (await bearer(tokens.access_token, "list_clients")).body.data.clients.find((c: any) => c.current);
    expect(mine.kind).toBe("oauth");
    const gone = await s.call("disconnect_client", { client_id: mine.client_id, idempotency_key: "disc-oauth-1" }, human.key);
    expect(gone.status).toBe(200);
    expect((await bearer(tokens.access_token)).status).toBe(401);
    const r = await tokenCall(s, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(r.body.error).toBe("invalid_grant");
  });

  test("revoking the access token ends the session; unknown tokens and other clients' tokens change nothing", async () => {
    const one = await grant(s, b, human);
    const two = await grant(s, b, human);
    expect(await revokeCall(s, { token: "rt_unknown", client_id: one.client.client_id })).toBe(200);
    expect(await revokeCall(s, { token: one.tokens.access_token, client_id: two.client.client_id })).toBe(200);
    expect((await bearer(one.tokens.access_token)).status).toBe(200);
    expect(await revokeCall(s, { token: one.tokens.access_token, client_id: one.client.client_id })).toBe(200);
    expect((await bearer(one.tokens.access_token)).status).toBe(401);
    expect((await bearer(two.tokens.access_token)).status).toBe(200);
    expect(await revokeCall(s, { client_id: one.client.client_id })).toBe(400);
  });

  test("the human can deny: the client is sent back with access_denied and its state", async () => {
    const client = (await registerClient(s)).body;
    const back = await approve(s, b, authorizePath({ client_id: client.client_id, code_challenge: pkce().challenge, state: "deny-state" }), human, "deny");
    expect(back.get("error")).toBe("access_denied");
    expect(back.get("state")).toBe("deny-state");
    expect(back.get("iss")).toBe(s.url);
    expect(back.get("code")).toBeNull();
  });

  test("RFC 9207: every answer of the authorization endpoint names the issuer, the errors it redirects with too", async () => {
    const client = (await registerClient(s)).body;
    const { challenge } = pkce();
    const errors: [Record<string, string>, string][] = [
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
      [{ scope: "admin" }, "invalid_scope"],
      [{ resource: "https://elsewhere.example" }, "invalid_target"],
    ];
    for (const [params, error] of errors) {
      const start = await b.get(authorizePath({ client_id: client.client_id, code_challenge: challenge, state: "iss-1", ...params }));
      expect(start.status).toBe(303);
      const back = callback(start.location);
      expect({ params, error: back.get("error"), iss: back.get("iss"), state: back.get("state") }).toEqual({ params, error, iss: s.url, state: "iss-1" });
    }
  });
});

describe("dynamic client registration", () => {
  test("registers public clients with exact redirect URIs", async () => {
    const r = await registerClient(s, { redirect_uris: ["https://app.example/cb", "http://localhost:3000/cb", "com.example.app:/oauth"] });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      client_name: "Test Client",
      token_endpoint_auth_method: "none",
      response_types: ["code"],
      grant_types: ["authorization_code", "refresh_token"],
    });
    expect(r.body.client_secret).toBeUndefined();
  });

  test("application_type: a native app with a loopback redirect registers as one; web is the default", async () => {
    const native = await registerClient(s, { application_type: "native", redirect_uris: ["http://127.0.0.1:43123/callback", "http://[::1]:43123/callback"] });
    expect(native.status).toBe(201);
    expect(native.body).toMatchObject({ application_type: "native", redirect_uris: ["http://127.0.0.1:43123/callback", "http://[::1]:43123/callback"] });
    const web = await registerClient(s, { redirect_uris: ["https://app.example/cb"] });
    expect(web.body.application_type).toBe("web");
    // a client that says nothing keeps registering as before, loopback included
    expect((await registerClient(s)).status).toBe(201);
  });

  test.each([
    ["an unknown application_type", { application_type: "desktop" }, "invalid_client_metadata"],
    ["no redirect_uris", { redirect_uris: undefined }, "invalid_redirect_uri"],
    ["http on a public host", { redirect_uris: ["http://evil.example/cb"] }, "invalid_redirect_uri"],
    ["a javascript: URI", { redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri"],
    ["a fragment", { redirect_uris: ["https://app.example/cb#x"] }, "invalid_redirect_uri"],
    ["a host that could break out of a header", { redirect_uris: ["https://a;script-src/cb"] }, "invalid_redirect_uri"],
    ["a confidential client", { token_endpoint_auth_method: "client_secret_basic" }, "invalid_client_metadata"],
    ["the implicit grant", { grant_types: ["implicit"] }, "invalid_client_metadata"],
    ["a token response type", { response_types: ["token"] }, "invalid_client_metadata"],
    ["an unknown scope", { scope: "admin" }, "invalid_client_metadata"],
    ["a control character in the name", { client_name: "bad\u0000name" }, "invalid_client_metadata"],
  ])("refuses %s", async (_name, body, error) => {
    const r = await registerClient(s, body);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(error);
  });
});

describe("attacks, each refused", () => {
  test("PKCE downgrade: plain, a missing method or a missing challenge never yields a code", async () => {
    const client = (await registerClient(s)).body;
    const { challenge } = pkce();
    const downgrades: Record<string, string>[] = [
      { code_challenge: challenge, code_challenge_method: "plain" },
      { code_challenge: challenge, code_challenge_method: "" },
      { code_challenge_method: "S256" },
    ];
    for (const params of downgrades) {
      const q = new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT, state: "pk", ...params });
      if (!params.code_challenge_method) q.delete("code_challenge_method");
      const r = await b.get(`/oauth/authorize?${q}`);
      expect(r.status).toBe(303);
      const back = callback(r.location);
      expect(back.get("error")).toBe("invalid_request");
      expect(back.get("state")).toBe("pk");
      expect(back.get("code")).toBeNull();
    }
  });

  test("PKCE at the token endpoint: a missing or wrong verifier is refused", async () => {
    const client = (await registerClient(s)).body;
    const { challenge, verifier } = pkce();
    const back = await approve(s, b, authorizePath({ client_id: client.client_id, code_challenge: challenge }), human);
    const base = { grant_type: "authorization_code", code: back.get("code")!, redirect_uri: REDIRECT, client_id: client.client_id };
    const missing = await tokenCall(s, base);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe("invalid_request");
    const wrong = await tokenCall(s, { ...base, code_verifier: pkce().verifier });
    expect(wrong.body.error).toBe("invalid_grant");
    const plainAsVerifier = await tokenCall(s, { ...base, code_verifier: challenge });
    expect(plainAsVerifier.body.error).toBe("invalid_grant");
    expect((await tokenCall(s, { ...base, code_verifier: verifier })).status).toBe(200);
  });

  test("code replay: the second exchange fails and the session of the first ends", async () => {
    const { client, code, verifier, tokens } = await grant(s, b, human);
    const replay = await tokenCall(s, { grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: client.client_id, code_verifier: verifier });
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe("invalid_grant");
    expect((await bearer(tokens.access_token)).status).toBe(401);
    const r = await tokenCall(s, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(r.body.error).toBe("invalid_grant");
  });

  test("redirect URI mismatch: no redirect at all at authorize, invalid_grant at the token endpoint", async () => {
    const client = (await registerClient(s)).body;
    const { challenge, verifier } = pkce();
    for (const uri of ["http://127.0.0.1:9/callback/evil", "https://evil.example/callback", "http://127.0.0.1:9/callback?x=1"]) {
      const r = await b.get(
        `${authorizePath({ client_id: client.client_id, code_challenge: challenge })}`.replace(encodeURIComponent(REDIRECT), encodeURIComponent(uri)),
      );
      expect(r.status).toBe(400);
      expect(r.location).toBeNull();
      expect(r.html).toContain("redirect_uri mismatch");
    }
    const back = await approve(s, b, authorizePath({ client_id: client.client_id, code_challenge: challenge }), human);
    const t = await tokenCall(s, {
      grant_type: "authorization_code",
      code: back.get("code")!,
      redirect_uri: "http://127.0.0.1:9/other",
      client_id: client.client_id,
      code_verifier: verifier,
    });
    expect(t.body.error).toBe("invalid_grant");
  });

  test("an unknown client is told to the human, never redirected", async () => {
    const r = await b.get(authorizePath({ client_id: "mcp_unknown", code_challenge: pkce().challenge }));
    expect(r.status).toBe(400);
    expect(r.location).toBeNull();
  });

  test("a code is bound to its client and expires after 2 minutes", async () => {
    const a = (await registerClient(s)).body;
    const other = (await registerClient(s)).body;
    const { challenge, verifier } = pkce();
    const back = await approve(s, b, authorizePath({ client_id: a.client_id, code_challenge: challenge }), human);
    const stolen = await tokenCall(s, {
      grant_type: "authorization_code",
      code: back.get("code")!,
      redirect_uri: REDIRECT,
      client_id: other.client_id,
      code_verifier: verifier,
    });
    expect(stolen.body.error).toBe("invalid_grant");
    s.clock.advance(2 * MINUTE);
    const late = await tokenCall(s, {
      grant_type: "authorization_code",
      code: back.get("code")!,
      redirect_uri: REDIRECT,
      client_id: a.client_id,
      code_verifier: verifier,
    });
    expect(late.body.error).toBe("invalid_grant");
    const unknown = await tokenCall(s, {
      grant_type: "authorization_code",
      code: "x",
      redirect_uri: REDIRECT,
      client_id: "mcp_nobody",
      code_verifier: verifier,
    });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe("invalid_client");
    expect((await tokenCall(s, { grant_type: "password", client_id: a.client_id })).body.error).toBe("unsupported_grant_type");
  });

  test("refresh-token reuse: refused, and the whole family ends", async () => {
    const { client, tokens } = await grant(s, b, human);
    const rotated = await tokenCall(s, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(rotated.status).toBe(200);
    const reuse = await tokenCall(s, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe("invalid_grant");
    const next = await tokenCall(s, { grant_type: "refresh_token", refresh_token: rotated.body.refresh_token, client_id: client.client_id });
    expect(next.body.error).toBe("invalid_grant");
    expect((await bearer(rotated.body.access_token)).status).toBe(401);
  });

  test("a refresh may narrow the scope but never widen it", async () => {
    const { client, tokens } = await grant(s, b, human, "svc:read offline_access");
    const wider = await tokenCall(s, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id,
      scope: "svc:read svc:write",
    });
    expect(wider.body.error).toBe("invalid_scope");
    const same = await tokenCall(s, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id, scope: "svc:read" });
    expect(same.body.scope).toBe("svc:read offline_access");
  });

  test("tokens for another audience: refused at authorize, at the token endpoint, and when presented", async () => {
    const client = (await registerClient(s)).body;
    const r = await b.get(
      authorizePath({ client_id: client.client_id, code_challenge: pkce().challenge, resource: "https://other.example/mcp", state: "aud" }),
    );
    const back = callback(r.location);
    expect(back.get("error")).toBe("invalid_target");
    const { tokens, client: c2 } = await grant(s, b, human);
    const t = await tokenCall(s, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: c2.client_id,
      resource: "https://other.example",
    });
    expect(t.body.error).toBe("invalid_target");
    // Minted with this server's own signing key, but for another audience: still refused.
    const row = (await s.server.db.raw.execute("SELECT kid, private_jwk FROM oauth_signing_keys WHERE retired_at IS NULL")).rows[0]!;
    const key = await importJWK(JSON.parse(String(row.private_jwk)), "ES256");
    const claims = {
      scope: "svc:read svc:write",
      client_id: c2.client_id,
      sid: (await bearer(tokens.access_token, "list_clients")).body.data.clients.find((x: any) => x.current).client_id,
    };
    const forge = (aud: string, iss = s.url) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: String(row.kid) })
        .setIssuer(iss)
        .setAudience(aud)
        .setSubject(human.agent_id)
        .setIssuedAt(Math.floor(s.clock.now().getTime() / 1000))
        .setExpirationTime(Math.floor(s.clock.now().getTime() / 1000) + 600)
        .sign(key);
    expect((await bearer(await forge(s.url))).status).toBe(200);
    expect((await bearer(await forge("https://other.example"))).status).toBe(401);
    expect((await bearer(await forge(s.url, "https://other.example"))).status).toBe(401);
    // Signed by a key this server never made.
    const foreign = await generateKeyPair("ES256");
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: String(row.kid) })
      .setIssuer(s.url)
      .setAudience(s.url)
      .setSubject(human.agent_id)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(foreign.privateKey);
    expect((await bearer(forged)).status).toBe(401);
    // It is refused for its key: the foreign key is not one the server publishes, under the kid it claims or any other.
    const published = ((await (await s.raw("/.well-known/jwks.json")).json()) as any).keys;
    expect(published.map((k: any) => k.kid)).toContain(String(row.kid));
    const { x, y } = await exportJWK(foreign.publicKey);
    expect(published.filter((k: any) => k.x === x && k.y === y)).toEqual([]);
  });

  test("CSRF: the consent form without the session's token issues no code", async () => {
    const client = (await registerClient(s)).body;
    await b.get(authorizePath({ client_id: client.client_id, code_challenge: pkce().challenge }));
    const consent = await b.get("/oauth/consent");
    const requestId = consent.html.match(/name="request_id" value="([^"]+)"/)![1]!;
    const forged = await b.post("/oauth/consent", { request_id: requestId, decision: "approve" }, null);
    expect(forged.status).toBe(403);
    expect(forged.location).toBeNull();
    const attacker = new PageClient(s.url);
    expect((await attacker.post("/oauth/consent", { request_id: requestId, decision: "approve" }, b.csrf)).status).toBe(403);
    expect((await b.post("/oauth/consent", { request_id: "stale", decision: "approve" })).status).toBe(400);
  });

  test("the consent page names the client, where it sends you and the scopes, and allows that redirect in its CSP", async () => {
    const client = (await registerClient(s, { client_name: `Evil <script>alert(1)</script>` })).body;
    await b.get(authorizePath({ client_id: client.client_id, code_challenge: pkce().challenge }));
    const consent = await b.get("/oauth/consent");
    expect(consent.html).toContain("Evil &lt;script&gt;alert(1)&lt;/script&gt;");
    expect(consent.html).toContain("127.0.0.1:9");
    expect(consent.html).toContain("(svc:write)");
    expect(consent.headers.get("content-security-policy")).toContain("form-action 'self' http://127.0.0.1:9");
  });
});

describe("signing keys live in the database", () => {
  test("an access token keeps working after the server restarts on the same database", async () => {
    const baseUrl = "http://svc.test";
    const first = await startTestServer({ baseUrl });
    const firstHuman = await first.register("oa-restart");
    const browser = new PageClient(first.url);
    const client = (await registerClient(first)).body;
    const { verifier, challenge } = pkce();
    const back = await approve(first, browser, authorizePath({ client_id: client.client_id, code_challenge: challenge, resource: baseUrl }), firstHuman);
    const t = await tokenCall(first, {
      grant_type: "authorization_code",
      code: back.get("code")!,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
      code_verifier: verifier,
    });
    expect(t.status).toBe(200);
    await first.server.stop();
    const second = await startTestServer({ baseUrl, ...first.database });
    try {
      const me = await second.call("get_me", {}, t.body.access_token);
      expect(me.status).toBe(200);
      expect(me.body.data.agent.handle).toBe("oa-restart");
      const keys = (await (await second.raw("/.well-known/jwks.json")).json()) as any;
      expect(keys.keys).toHaveLength(1);
    } finally {
      await second.stop();
      await first.stop().catch(() => undefined);
    }
  });
});
