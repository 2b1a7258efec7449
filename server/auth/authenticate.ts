import type { Tx } from "../../db/client.ts";
import { authenticateApiKey, touchClient, type Authenticated } from "./credentials.ts";
import { authenticateAccessToken } from "./oauth.ts";
import { sha256 } from "./secrets.ts";
import { looksLikeJwt } from "./jwt.ts";

export type { Authenticated };

/** Extracts the bearer token of an Authorization header, or null. */
export function bearerToken(header: string | null | undefined): string | null {
  // String operations rather than a regular expression: this runs on every request.
  if (!header || header.length < 8 || header.slice(0, 6).toLowerCase() !== "bearer" || !/\s/.test(header[6]!)) return null;
  const token = header.slice(7).trim();
  return token && !/\s/.test(token) ? token : null;
}

/**
 * The one place a credential becomes a principal; null means missing, invalid, revoked or expired.
 * A JWT is an OAuth access token (scopes from the token); anything else is an API key.
 * It only reads, so it runs in read transactions too; recordUse writes the client's last use. tokenHash: sha256(token).
 */
export async function authenticate(tx: Tx, token: string, now: Date, tokenHash = sha256(token)): Promise<Authenticated | null> {
  return looksLikeJwt(token) ? authenticateAccessToken(tx, token, now) : authenticateApiKey(tx, tokenHash, now);
}

/** Sets the client's last_used_at when it is due (at most once a minute); needs a write transaction. */
export async function recordUse(tx: Tx, auth: Authenticated, now: Date): Promise<void> {
  if (auth.touchDue) await touchClient(tx, auth.principal.clientId, now);
}
