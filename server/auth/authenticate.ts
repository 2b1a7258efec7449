import type { Tx } from "../../db/client.ts";
import { eq } from "drizzle-orm";
import { agents, clients, webSessions } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { authenticateApiKey, touchDue, type Authenticated } from "./credentials.ts";
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
 * It only reads, so it runs in read transactions too; the client's last use is written in batches (LastUse). tokenHash: sha256(token).
 */
export async function authenticate(tx: Tx, token: string, now: Date, tokenHash = sha256(token), from: { page?: boolean } = {}): Promise<Authenticated | null> {
  // A browser's session secret is a credential only for the pages that act for it, never as a bearer token.
  if (token.startsWith(WEB_SESSION_PREFIX)) return from.page ? authenticateWebSession(tx, tokenHash, now) : null;
  return looksLikeJwt(token) ? authenticateAccessToken(tx, token, now) : authenticateApiKey(tx, tokenHash, now);
}

/** The cookie value of a browser session starts so (server/web/session.ts). */
export const WEB_SESSION_PREFIX = "ws_";

/** A signed-in browser as a principal: its client of kind web, with the scopes it was given; null when signed out or ended. */
async function authenticateWebSession(tx: Tx, sessionHash: string, now: Date): Promise<Authenticated | null> {
  const row = await tx
    .select({ s: webSessions, c: clients, handle: agents.handle, displayName: agents.displayName, disabledAt: agents.disabledAt })
    .from(webSessions)
    .innerJoin(clients, eq(clients.clientId, webSessions.clientId))
    .innerJoin(agents, eq(agents.agentId, clients.agentId))
    .where(eq(webSessions.sessionHash, sessionHash))
    .get();
  if (!row || row.disabledAt || row.s.expiresAt <= iso(now) || row.c.revokedAt || row.c.kind !== "web" || row.s.agentId !== row.c.agentId) return null;
  return {
    principal: {
      agentId: row.c.agentId,
      handle: row.handle,
      displayName: row.displayName,
      clientId: row.c.clientId,
      kind: "web",
      scopes: new Set((row.s.scopes ?? "").split(" ").filter(Boolean)),
      graceUntil: null,
    },
    touchDue: touchDue(row.c.lastUsedAt, now),
  };
}
