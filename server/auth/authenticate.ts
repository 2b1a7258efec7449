import type { Tx } from "../../db/client.ts";
import { authenticateApiKey } from "../domain/credentials.ts";
import { authenticateAccessToken } from "../domain/oauth.ts";
import type { Principal } from "../tools/define.ts";
import { looksLikeJwt } from "./jwt.ts";

/** Extracts the bearer token of an Authorization header, or null. */
export function bearerToken(header: string | null | undefined): string | null {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1] ?? null;
}

/**
 * The one place a credential becomes a principal; null means missing, invalid, revoked or expired.
 * A JWT is an OAuth access token (scopes from the token); anything else is an API key.
 */
export async function authenticate(tx: Tx, token: string, now: Date): Promise<Principal | null> {
  return looksLikeJwt(token) ? authenticateAccessToken(tx, token, now) : authenticateApiKey(tx, token, now);
}
