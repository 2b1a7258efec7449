// Driving the authorization server as a client would: registration, PKCE, the pages, the token endpoint.
import { expect } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthClientProvider, OAuthDiscoveryState, OAuthTokens } from "@modelcontextprotocol/client";
import type { Agent, TestServer } from "../harness.ts";
import { type PageClient, signInWithCode } from "../web/page-client.ts";

export const REDIRECT = "http://127.0.0.1:9/callback";

export function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

export async function registerClient(s: TestServer, body: Record<string, unknown> = {}) {
  const res = await s.raw("/oauth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "Test Client", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none", ...body }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

export async function tokenCall(s: TestServer, params: Record<string, string>) {
  const res = await s.raw("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

export async function revokeCall(s: TestServer, params: Record<string, string>) {
  const res = await s.raw("/oauth/revoke", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params),
  });
  return res.status;
}

export function authorizePath(params: Record<string, string>) {
  return `/oauth/authorize?${new URLSearchParams({ response_type: "code", code_challenge_method: "S256", redirect_uri: REDIRECT, ...params })}`;
}

/** Where the browser is sent back to, parsed. */
export const callback = (location: string | null) => {
  expect(location).not.toBeNull();
  const url = new URL(location!);
  expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
  return url.searchParams;
};

/**
 * A human in a browser approves the authorization at `path`: signs in with a code from their agent's inbox
 * if needed, then presses Allow on the consent page. Returns the query the client is sent back with.
 */
export async function approve(s: TestServer, b: PageClient, path: string, human: Agent, decision: "approve" | "deny" = "approve"): Promise<URLSearchParams> {
  const start = await b.get(path);
  expect(start.status).toBe(303);
  expect(start.location).toBe("/oauth/consent");
  let consent = await b.get("/oauth/consent");
  if (consent.html.includes("Send me a code")) consent = await signInWithCode(s, b, "authorize", human.handle, human.key);
  expect(consent.html).toContain("It will be able to");
  const requestId = consent.html.match(/name="request_id" value="([^"]+)"/)![1]!;
  const answer = await b.post("/oauth/consent", { request_id: requestId, decision });
  expect(answer.status).toBe(303);
  return callback(answer.location);
}

/** Registration, consent and code exchange in one go; returns the tokens and the client. */
export async function grant(s: TestServer, b: PageClient, human: Agent, scope = "svc:read svc:write offline_access") {
  const client = (await registerClient(s)).body;
  const { verifier, challenge } = pkce();
  const back = await approve(s, b, authorizePath({ client_id: client.client_id, code_challenge: challenge, scope, state: "st-1", resource: s.url }), human);
  const t = await tokenCall(s, {
    grant_type: "authorization_code",
    code: back.get("code")!,
    redirect_uri: REDIRECT,
    client_id: client.client_id,
    code_verifier: verifier,
  });
  expect(t.status).toBe(200);
  return { client, tokens: t.body, code: back.get("code")!, verifier };
}

/**
 * The MCP SDK's client-side OAuth state, kept in memory; the authorization URL is captured, not opened. It serves
 * the SDK 1.x client too (the same interface, less the 2026 additions: the discovery state that the RFC 9207 iss
 * check compares against).
 */
export class MemoryProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  discovery?: OAuthDiscoveryState;

  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "SDK Test Client",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    return "sdk-state";
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery") {
    if (scope === "all" || scope === "tokens") this.saved = undefined;
    if (scope === "all" || scope === "client") this.info = undefined;
    if (scope === "all" || scope === "discovery") this.discovery = undefined;
  }
}
