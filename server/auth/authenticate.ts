import type { Tx } from "../../db/client.ts";
import { authenticateApiKey } from "../domain/credentials.ts";
import type { Principal } from "../tools/define.ts";

/** Extracts the bearer token of an Authorization header, or null. */
export function bearerToken(header: string | null | undefined): string | null {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1] ?? null;
}

/** The one place a credential becomes a principal; null means missing, invalid, revoked or expired. */
export async function authenticate(tx: Tx, token: string, now: Date): Promise<Principal | null> {
  return authenticateApiKey(tx, token, now);
}
