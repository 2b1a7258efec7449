// Sign-in through a configured OpenID Connect provider: authorization code with PKCE, state and nonce,
// a confidential client (client_secret_basic), the ID token verified against the provider's JWKS.
import { createRemoteJWKSet, jwtVerify } from "jose";
import type { ProviderLogin } from "../../db/schema/index.ts";
import { newSecret } from "./secrets.ts";
import { pkceChallenge } from "./oauth.ts";

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
}

/** What the browser session keeps between leaving for the provider and coming back. */
export interface OidcFlow {
  state: string;
  nonce: string;
  verifier: string;
  /** Where the human goes afterwards: a fixed page, never an address from the request. */
  flow: string;
  /** A return path of this server the sign-in started with (checked again by returnPath on the way back). */
  next?: string;
}

export type OidcIdentity = ProviderLogin;

const discoveries = new Map<string, Promise<Discovery>>();
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

async function fetchDiscovery(issuer: string): Promise<Discovery> {
  const res = await fetch(`${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`OpenID discovery at ${issuer} answered ${res.status}`);
  const d = (await res.json()) as Discovery;
  if (d.issuer !== issuer) throw new Error(`OpenID discovery issuer ${d.issuer} differs from the configured ${issuer}`);
  for (const k of ["authorization_endpoint", "token_endpoint", "jwks_uri"] as const) {
    if (typeof d[k] !== "string") throw new Error(`OpenID discovery of ${issuer} lacks ${k}`);
  }
  return d;
}

/** The provider's metadata, fetched once per process; a failed fetch is retried on the next sign-in. */
function discover(issuer: string): Promise<Discovery> {
  let d = discoveries.get(issuer);
  if (!d) {
    d = fetchDiscovery(issuer);
    discoveries.set(issuer, d);
    d.catch(() => discoveries.delete(issuer));
  }
  return d;
}

export const oidcRedirectUri = (baseUrl: string) => `${baseUrl}/account/oidc/callback`;

/** Where to send the browser, and what to remember until it returns. */
export async function startOidc(cfg: OidcConfig, baseUrl: string, flow: string): Promise<{ url: string; state: OidcFlow }> {
  const d = await discover(cfg.issuer);
  const state: OidcFlow = { state: newSecret("st"), nonce: newSecret("n"), verifier: newSecret("v").slice(2), flow };
  const url = new URL(d.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: cfg.clientId,
    redirect_uri: oidcRedirectUri(baseUrl),
    scope: "openid email",
    state: state.state,
    nonce: state.nonce,
    code_challenge: pkceChallenge(state.verifier),
    code_challenge_method: "S256",
  }).toString();
  return { url: url.toString(), state };
}

/** Exchanges the code and verifies the ID token (signature, issuer, audience, expiry, nonce). */
export async function finishOidc(cfg: OidcConfig, baseUrl: string, flow: OidcFlow, code: string, now: Date): Promise<OidcIdentity> {
  const d = await discover(cfg.issuer);
  const res = await fetch(d.token_endpoint, {
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Authorization: `Basic ${btoa(`${encodeURIComponent(cfg.clientId)}:${encodeURIComponent(cfg.clientSecret)}`)}`,
    },
    body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: oidcRedirectUri(baseUrl), code_verifier: flow.verifier }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`The provider refused the code (${res.status})`);
  const body = (await res.json()) as { id_token?: unknown; access_token?: unknown };
  if (typeof body.id_token !== "string") throw new Error("The provider sent no ID token");
  let keys = keySets.get(d.jwks_uri);
  if (!keys) {
    keys = createRemoteJWKSet(new URL(d.jwks_uri));
    keySets.set(d.jwks_uri, keys);
  }
  const { payload } = await jwtVerify(body.id_token, keys, { issuer: cfg.issuer, audience: cfg.clientId, currentDate: now, requiredClaims: ["sub", "nonce"] });
  if (payload.nonce !== flow.nonce) throw new Error("The ID token's nonce differs from this sign-in's");
  // Many providers put scope claims such as email only in the userinfo answer, not in the ID token.
  let claims: Record<string, unknown> = payload;
  if (payload.email === undefined && d.userinfo_endpoint && typeof body.access_token === "string") {
    const info = await fetch(d.userinfo_endpoint, { headers: { Authorization: `Bearer ${body.access_token}` }, signal: AbortSignal.timeout(10_000) });
    if (!info.ok) throw new Error(`The provider's userinfo answered ${info.status}`);
    const answer = (await info.json()) as Record<string, unknown>;
    if (answer.sub !== payload.sub) throw new Error("The userinfo subject differs from the ID token's");
    claims = answer;
  }
  return {
    issuer: cfg.issuer,
    subject: payload.sub!,
    email: typeof claims.email === "string" ? claims.email.toLowerCase() : null,
    emailVerified: claims.email_verified === true,
  };
}
