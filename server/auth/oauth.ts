// The OAuth 2.1 authorization server for MCP clients: public clients (RFC 7591), authorization code with
// PKCE S256 only, exact redirect URIs, resource indicators (RFC 8707) naming this server, short-lived JWT
// access tokens, refresh tokens (offline_access) rotated with reuse detection, and revocation (RFC 7009).
// Each authorization that yields tokens is a session: a clients row of kind oauth, listed and disconnectable
// like any client; its tokens stop the moment that row is revoked.
import { and, eq, isNull } from "drizzle-orm";
import { createHash } from "node:crypto";
import type { Tx } from "../../db/client.ts";
import { agents, clients, oauthClients, oauthCodes, oauthRefreshTokens } from "../../db/schema/index.ts";
import { DAY, MINUTE, iso, later } from "../clock.ts";
import { ACCESS_TOKEN_TTL_SECONDS, looksLikeJwt, signAccessToken, verifyAccessToken } from "./jwt.ts";
import { createClient, revokeClient, touchDue, type Authenticated } from "./credentials.ts";
import { newSecret, sha256 } from "./secrets.ts";
import { hasVisible, NO_CONTROL } from "../contract/text.ts";
import { OAuthError } from "../errors.ts";

export const SUPPORTED_SCOPES = ["svc:read", "svc:write", "offline_access"] as const;
const DEFAULT_SCOPE = "svc:read svc:write";
export const GRANT_TYPES = ["authorization_code", "refresh_token"] as const;
const CODE_TTL_MS = 2 * MINUTE;
const REFRESH_TTL_MS = 30 * DAY;
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);
const FORBIDDEN_SCHEMES = new Set(["javascript:", "data:", "file:", "vbscript:", "blob:", "about:", "ftp:", "ws:", "wss:"]);

export type OAuthClientRow = typeof oauthClients.$inferSelect;

/** Why a redirect URI cannot be registered, or null: https, http on loopback only, or a native app's private scheme. */
export function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== "string" || uri.length > 2000) return "must be a string of at most 2000 characters";
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "must be an absolute URI";
  }
  if (url.hash || uri.includes("#")) return "must not contain a fragment";
  // Hosts are echoed into the consent page's Content-Security-Policy: only plain names and IP literals.
  if ((url.protocol === "https:" || url.protocol === "http:") && !/^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/i.test(url.hostname)) {
    return "must name a plain host";
  }
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:") return LOOPBACK_HOSTS.has(url.hostname) ? null : "http is allowed only on a loopback host";
  return FORBIDDEN_SCHEMES.has(url.protocol) ? `the ${url.protocol} scheme is not allowed` : null;
}

const metadataError = (message: string) => new OAuthError("invalid_client_metadata", message);

/**
 * OpenID Connect's application_type, which MCP clients send since 2026-07-28: "native" for a desktop or CLI app
 * (loopback or private-scheme redirects), "web" (the default) for one served from a web host. svc accepts the
 * same redirect URIs for both (the OIDC rule that sets them apart is about the implicit grant, which svc lacks).
 */
const APPLICATION_TYPES = ["web", "native"];

/** What a public client declares about itself, whether posted (RFC 7591) or published (a client ID metadata document). */
export interface ClientFields {
  clientName: string | null;
  redirectUris: string[];
  grantTypes: string[];
  scope: string | null;
}

/** Checks a public client's metadata; unknown members are ignored. Throws OAuthError. */
export function clientFields(body: unknown): ClientFields {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw metadataError("The body must be a JSON object.");
  const m = body as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (!Array.isArray(uris) || uris.length < 1 || uris.length > 10) throw new OAuthError("invalid_redirect_uri", "redirect_uris must list 1 to 10 URIs.");
  for (const u of uris) {
    const problem = redirectUriProblem(u);
    if (problem) throw new OAuthError("invalid_redirect_uri", `Redirect URI ${JSON.stringify(u).slice(0, 200)} ${problem}.`);
  }
  if (m.token_endpoint_auth_method !== undefined && m.token_endpoint_auth_method !== "none") {
    throw metadataError("Only public clients are registered: token_endpoint_auth_method must be none (use PKCE).");
  }
  const grantTypes = m.grant_types ?? ["authorization_code", "refresh_token"];
  if (!Array.isArray(grantTypes) || !grantTypes.includes("authorization_code") || grantTypes.some((g) => !(GRANT_TYPES as readonly unknown[]).includes(g))) {
    throw metadataError(`grant_types must include authorization_code and may add refresh_token; nothing else is supported.`);
  }
  const responseTypes = m.response_types ?? ["code"];
  if (!Array.isArray(responseTypes) || responseTypes.length !== 1 || responseTypes[0] !== "code") throw metadataError('response_types must be ["code"].');
  const name = m.client_name;
  if (name !== undefined && (typeof name !== "string" || name.length < 1 || name.length > 100 || !NO_CONTROL.test(name) || !hasVisible(name))) {
    throw metadataError("client_name must be 1-100 characters, something visible, without control or invisible characters.");
  }
  if (m.application_type !== undefined && !APPLICATION_TYPES.includes(m.application_type as string)) {
    throw metadataError('application_type must be "web" or "native".');
  }
  const scope = m.scope;
  if (scope !== undefined && (typeof scope !== "string" || scope.split(" ").some((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s)))) {
    throw metadataError(`scope may name only ${SUPPORTED_SCOPES.join(", ")}.`);
  }
  return {
    clientName: (name as string | undefined)?.normalize("NFC") ?? null,
    redirectUris: uris as string[],
    grantTypes: grantTypes as string[],
    scope: (scope as string | undefined) ?? null,
  };
}

/** RFC 7591 dynamic registration of a public client. */
export async function registerClient(tx: Tx, body: unknown, now: Date) {
  const row: OAuthClientRow = { clientId: `mcp_${newSecret("c").slice(2, 26)}`, ...clientFields(body), createdAt: iso(now), metadataExpiresAt: null };
  const applicationType = (body as { application_type?: string }).application_type ?? "web";
  await tx.insert(oauthClients).values(row);
  return {
    client_id: row.clientId,
    client_id_issued_at: Math.floor(now.getTime() / 1000),
    ...(row.clientName ? { client_name: row.clientName } : {}),
    redirect_uris: row.redirectUris,
    grant_types: row.grantTypes,
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    application_type: applicationType,
    ...(row.scope ? { scope: row.scope } : {}),
  };
}

export async function oauthClientById(tx: Tx, clientId: string): Promise<OAuthClientRow | undefined> {
  return tx.select().from(oauthClients).where(eq(oauthClients.clientId, clientId)).get();
}

/** A validated authorization request, kept in the browser session while the human signs in and consents. */
export interface AuthorizationRequest {
  client_id: string;
  client_name: string;
  /** The host that publishes the client's metadata document, for a client known by one. */
  client_host?: string;
  redirect_uri: string;
  code_challenge: string;
  scope: string;
  resource: string;
  state?: string;
}

export type AuthorizationCheck =
  | { kind: "ok"; request: AuthorizationRequest }
  /** The client or its redirect URI cannot be trusted: tell the human, never redirect. */
  | { kind: "fatal"; message: string }
  | { kind: "redirect"; redirectUri: string; error: string; description: string; state?: string };

/** Whether a resource indicator names this server (its base URL or a path under it). */
export function isThisServer(resource: string, baseUrl: string): boolean {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    return false;
  }
  if (url.hash || url.search) return false;
  const bare = `${url.origin}${url.pathname}`.replace(/\/+$/, "");
  return bare === baseUrl || bare.startsWith(`${baseUrl}/`);
}

/** Scopes as a set: unknown ones and scopes beyond the client's registration are refused. */
function parseScope(requested: string | null, client: OAuthClientRow): string | OAuthError {
  const names = (requested ?? client.scope ?? DEFAULT_SCOPE).split(" ").filter(Boolean);
  const unknown = names.filter((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s));
  if (unknown.length || !names.length)
    return new OAuthError("invalid_scope", `Unknown scope: ${unknown.join(" ") || "(empty)"}; supported: ${SUPPORTED_SCOPES.join(" ")}.`);
  const allowed = client.scope?.split(" ");
  if (allowed && names.some((s) => !allowed.includes(s))) return new OAuthError("invalid_scope", "The scope exceeds what this client registered.");
  // Refresh tokens only for clients registered for the refresh_token grant.
  const kept = names.filter((s) => s !== "offline_access" || client.grantTypes.includes("refresh_token"));
  return [...new Set(kept)].join(" ");
}

export async function checkAuthorizationRequest(tx: Tx, q: URLSearchParams, baseUrl: string): Promise<AuthorizationCheck> {
  const clientId = q.get("client_id");
  const client = clientId ? await oauthClientById(tx, clientId) : undefined;
  if (!client) return { kind: "fatal", message: "This app is not registered with this server (unknown client_id)." };
  const redirectUri = q.get("redirect_uri");
  if (!redirectUri || !client.redirectUris.includes(redirectUri) || q.getAll("redirect_uri").length > 1) {
    return { kind: "fatal", message: "The app asked to send you to an address it did not register (redirect_uri mismatch)." };
  }
  const state = q.get("state") ?? undefined;
  const fail = (error: string, description: string): AuthorizationCheck => ({ kind: "redirect", redirectUri, error, description, state });
  for (const name of ["response_type", "code_challenge", "code_challenge_method", "scope", "state", "client_id"]) {
    if (q.getAll(name).length > 1) return fail("invalid_request", `The parameter ${name} appears more than once.`);
  }
  if (q.get("response_type") !== "code") return fail("unsupported_response_type", "Only response_type=code is supported.");
  if (q.get("code_challenge_method") !== "S256") return fail("invalid_request", "PKCE is required with code_challenge_method=S256 (plain is refused).");
  const challenge = q.get("code_challenge");
  if (!challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge))
    return fail("invalid_request", "code_challenge must be the base64url SHA-256 of the code verifier.");
  if (state !== undefined && state.length > 1000) return fail("invalid_request", "state is longer than 1000 characters.");
  const scope = parseScope(q.get("scope"), client);
  if (scope instanceof OAuthError) return fail(scope.error, scope.message);
  const resources = q.getAll("resource");
  if (resources.some((r) => !isThisServer(r, baseUrl))) return fail("invalid_target", `Tokens are issued only for this server, ${baseUrl}.`);
  const publisher = client.metadataExpiresAt === null ? undefined : new URL(client.clientId).host;
  return {
    kind: "ok",
    request: {
      client_id: client.clientId,
      client_name: client.clientName ?? (publisher ? `An app from ${publisher}` : "An unnamed app"),
      ...(publisher ? { client_host: publisher } : {}),
      redirect_uri: redirectUri,
      code_challenge: challenge,
      scope,
      resource: baseUrl,
      ...(state !== undefined ? { state } : {}),
    },
  };
}

/** The human approved: a single-use code bound to the client, redirect URI, PKCE challenge and scope. */
export async function issueCode(tx: Tx, r: AuthorizationRequest, agentId: string, parentClientId: string | null, now: Date): Promise<string> {
  const code = newSecret("code");
  await tx.insert(oauthCodes).values({
    codeHash: sha256(code),
    oauthClientId: r.client_id,
    agentId,
    parentClientId,
    redirectUri: r.redirect_uri,
    codeChallenge: r.code_challenge,
    scope: r.scope,
    resource: r.resource,
    createdAt: iso(now),
    expiresAt: later(now, CODE_TTL_MS),
  });
  return code;
}

export const pkceChallenge = (verifier: string) => createHash("sha256").update(verifier).digest("base64url");

interface Grant {
  clientId: string;
  oauthClientId: string;
  agentId: string;
  scope: string;
  resource: string;
}

async function issueTokens(tx: Tx, g: Grant, issuer: string, now: Date) {
  const accessToken = await signAccessToken(tx, issuer, g, now);
  let refreshToken: string | undefined;
  if (g.scope.split(" ").includes("offline_access")) {
    refreshToken = newSecret("rt");
    await tx.insert(oauthRefreshTokens).values({
      tokenHash: sha256(refreshToken),
      clientId: g.clientId,
      oauthClientId: g.oauthClientId,
      scope: g.scope,
      resource: g.resource,
      createdAt: iso(now),
      expiresAt: later(now, REFRESH_TTL_MS),
    });
  }
  return {
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    scope: g.scope,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
  };
}

/** Revokes a client (API key or OAuth session) and every refresh token of its family; access tokens stop with the row. */
export async function revokeClientAndTokens(tx: Tx, clientId: string, now: Date): Promise<void> {
  await revokeClient(tx, clientId, now);
  await tx
    .update(oauthRefreshTokens)
    .set({ revokedAt: iso(now) })
    .where(and(eq(oauthRefreshTokens.clientId, clientId), isNull(oauthRefreshTokens.revokedAt)));
}

const invalidGrant = (message: string) => new OAuthError("invalid_grant", message);

function requireParam(form: URLSearchParams, name: string): string {
  const v = form.getAll(name);
  if (v.length !== 1 || !v[0]) throw new OAuthError("invalid_request", `${name} is required (once).`);
  return v[0];
}

/** What the token endpoint tells of a client it connected: a code exchanged for a first token. */
export type OnConnected = (tx: Tx, now: Date, c: { agentId: string; clientId: string; name: string; kind: "oauth"; via: "oauth" }) => Promise<void>;

/** The token endpoint: authorization_code with PKCE, or refresh_token with rotation. */
export async function tokenRequest(tx: Tx, form: URLSearchParams, issuer: string, now: Date, onConnected?: OnConnected) {
  const grantType = requireParam(form, "grant_type");
  const client = await oauthClientById(tx, requireParam(form, "client_id"));
  if (!client) throw new OAuthError("invalid_client", "Unknown client_id.", 401);
  const resource = form.get("resource");
  if (resource !== null && !isThisServer(resource, issuer)) throw new OAuthError("invalid_target", `Tokens are issued only for this server, ${issuer}.`);
  if (grantType === "authorization_code") return exchangeCode(tx, form, client, issuer, now, onConnected);
  if (grantType === "refresh_token") return refresh(tx, form, client, issuer, now);
  throw new OAuthError("unsupported_grant_type", "Supported grant types: authorization_code, refresh_token.");
}

async function exchangeCode(tx: Tx, form: URLSearchParams, client: OAuthClientRow, issuer: string, now: Date, onConnected?: OnConnected) {
  const code = requireParam(form, "code");
  const redirectUri = requireParam(form, "redirect_uri");
  const verifier = requireParam(form, "code_verifier");
  const row = await tx
    .select()
    .from(oauthCodes)
    .where(eq(oauthCodes.codeHash, sha256(code)))
    .get();
  if (!row || row.oauthClientId !== client.clientId) throw invalidGrant("The authorization code is invalid.");
  if (row.usedAt) {
    // A code presented twice may have been stolen: the session it produced ends (RFC 6749 §4.1.2).
    if (row.clientId) await revokeClientAndTokens(tx, row.clientId, now);
    throw invalidGrant("The authorization code was already used.");
  }
  if (row.expiresAt <= iso(now)) throw invalidGrant("The authorization code has expired.");
  if (row.redirectUri !== redirectUri) throw invalidGrant("redirect_uri differs from the authorization request.");
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || pkceChallenge(verifier) !== row.codeChallenge) {
    throw invalidGrant("The code_verifier does not match the code_challenge.");
  }
  const name = client.clientName ?? "OAuth app";
  const clientId = await createClient(tx, row.agentId, name, "oauth", now, { parent: row.parentClientId });
  await onConnected?.(tx, now, { agentId: row.agentId, clientId, name, kind: "oauth", via: "oauth" });
  await tx
    .update(oauthCodes)
    .set({ usedAt: iso(now), clientId })
    .where(eq(oauthCodes.codeHash, row.codeHash));
  return issueTokens(tx, { clientId, oauthClientId: client.clientId, agentId: row.agentId, scope: row.scope, resource: row.resource }, issuer, now);
}

async function refresh(tx: Tx, form: URLSearchParams, client: OAuthClientRow, issuer: string, now: Date) {
  const token = requireParam(form, "refresh_token");
  const row = await tx
    .select({ rt: oauthRefreshTokens, agentId: clients.agentId, clientRevokedAt: clients.revokedAt })
    .from(oauthRefreshTokens)
    .innerJoin(clients, eq(clients.clientId, oauthRefreshTokens.clientId))
    .where(eq(oauthRefreshTokens.tokenHash, sha256(token)))
    .get();
  if (!row || row.rt.oauthClientId !== client.clientId) throw invalidGrant("The refresh token is invalid.");
  if (row.rt.revokedAt || row.clientRevokedAt) throw invalidGrant("The refresh token was revoked.");
  if (row.rt.usedAt) {
    // A rotated token came back: one of two holders is not the client, so the whole family ends.
    await revokeClientAndTokens(tx, row.rt.clientId, now);
    throw invalidGrant("The refresh token was already used; the session has been ended for safety.");
  }
  if (row.rt.expiresAt <= iso(now)) throw invalidGrant("The refresh token has expired.");
  let scope = row.rt.scope;
  const asked = form.get("scope");
  if (asked !== null) {
    const granted = scope.split(" ");
    const names = asked.split(" ").filter(Boolean);
    if (!names.length || names.some((s) => !granted.includes(s))) throw new OAuthError("invalid_scope", "A refresh may only narrow the granted scope.");
    // The family keeps offline_access, or the client could not refresh again.
    scope = [...new Set([...names, "offline_access"])].join(" ");
  }
  await tx
    .update(oauthRefreshTokens)
    .set({ usedAt: iso(now) })
    .where(eq(oauthRefreshTokens.tokenHash, row.rt.tokenHash));
  return issueTokens(tx, { clientId: row.rt.clientId, oauthClientId: client.clientId, agentId: row.agentId, scope, resource: row.rt.resource }, issuer, now);
}

/**
 * RFC 7009: revoking a refresh or access token ends its session, so every token of it stops at once.
 * Unknown tokens and tokens of another client change nothing and are not reported (the answer is always 200).
 */
export async function revokeToken(tx: Tx, form: URLSearchParams, now: Date): Promise<void> {
  const token = requireParam(form, "token");
  const clientId = requireParam(form, "client_id");
  if (looksLikeJwt(token)) {
    const claims = await verifyAccessToken(tx, token, now);
    if (claims && claims.oauthClientId === clientId) await revokeClientAndTokens(tx, claims.clientId, now);
    return;
  }
  const row = await tx
    .select()
    .from(oauthRefreshTokens)
    .where(eq(oauthRefreshTokens.tokenHash, sha256(token)))
    .get();
  if (row && row.oauthClientId === clientId) await revokeClientAndTokens(tx, row.clientId, now);
}

/** The principal of a valid access token whose session is still connected, or null. Writes nothing. */
export async function authenticateAccessToken(tx: Tx, token: string, now: Date): Promise<Authenticated | null> {
  const claims = await verifyAccessToken(tx, token, now);
  if (!claims) return null;
  const row = await tx
    .select({ client: clients, handle: agents.handle, displayName: agents.displayName, disabledAt: agents.disabledAt })
    .from(clients)
    .innerJoin(agents, eq(agents.agentId, clients.agentId))
    .where(eq(clients.clientId, claims.clientId))
    .get();
  if (!row || row.disabledAt || row.client.revokedAt || row.client.kind !== "oauth" || row.client.agentId !== claims.agentId) return null;
  return {
    principal: {
      agentId: claims.agentId,
      handle: row.handle,
      displayName: row.displayName,
      clientId: claims.clientId,
      kind: "oauth",
      scopes: new Set(claims.scope.split(" ")),
      graceUntil: null,
    },
    touchDue: touchDue(row.client.lastUsedAt, now),
  };
}
