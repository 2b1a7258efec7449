import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { guard, prepared, type Tx } from "../../db/client.ts";
import { agents, apiKeys, clients, emailAddresses, oidcIdentities, passkeys, passwords, resetLinks, signinCodes } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { AppError, conflict, notFound } from "../errors.ts";
import type { Actor, DomainContext, Principal } from "../contract/principal.ts";
import { newSecret, sha256 } from "./secrets.ts";
import { decodeCursor, encodeCursor, paginate } from "../contract/cursor.ts";

export const ROTATION_GRACE_MS = 10 * MINUTE;
const API_KEY_SCOPES = "svc:read svc:write";
// last_used_at is a hint for humans; writing it on every call would turn every read into a write.
const LAST_USED_RESOLUTION_MS = MINUTE;

export type ClientKind = "api_key" | "oauth" | "web";

/**
 * Every client is made here. `parent`: the client it was obtained through (see revokeClient), null when the human
 * proved the handle by other means (creating it, a provider login). An API-key client counts against the agent's
 * cap on live keys (`maxKeys`, the keys quota): each key is one more credential to write with. OAuth sessions and
 * browsers are not counted: each is a human's consent or sign-in.
 */
export async function createClient(
  tx: Tx,
  agentId: string,
  name: string,
  kind: ClientKind,
  now: Date,
  opts: { parent?: string | null; maxKeys?: number } = {},
) {
  if (kind === "api_key") {
    if (opts.maxKeys === undefined) throw new Error("createClient: an API-key client needs maxKeys");
    await requireRoomForKey(tx, agentId, opts.maxKeys);
  }
  const parent = opts.parent ?? null;
  const clientId = crypto.randomUUID();
  await tx.insert(clients).values({ clientId, agentId, name, kind, createdAt: iso(now), parentClientId: parent });
  return clientId;
}

async function requireRoomForKey(tx: Tx, agentId: string, max: number): Promise<void> {
  const live = await tx
    .select({ n: sql<number>`count(*)` })
    .from(clients)
    .where(and(eq(clients.agentId, agentId), eq(clients.kind, "api_key"), isNull(clients.revokedAt)))
    .get();
  if (live!.n < max) return;
  throw new AppError(
    "CONFLICT",
    `This handle already has ${live!.n} connected API keys, the most it may have (the limit is ${max}).`,
    { limit: max, live: live!.n },
    undefined,
    "Disconnect a key you no longer use first: on the account page (/account), or with disconnect_client (list_clients shows them). rotate_api_key still replaces a key.",
  );
}

/**
 * Issues a key for a client; only its hash is kept, so this is the one moment it can be shown. `scopes`: those of
 * the credential it is obtained through, when that holds fewer than a key's full set.
 */
export async function issueApiKey(tx: Tx, clientId: string, now: Date, scopes = API_KEY_SCOPES): Promise<string> {
  const key = newSecret("svc");
  await tx.insert(apiKeys).values({ keyHash: sha256(key), clientId, scopes: narrowScopes(API_KEY_SCOPES, scopes), createdAt: iso(now) });
  return key;
}

/** The scopes of `wanted` that `holder` also has: what is obtained through a credential never exceeds it. */
export function narrowScopes(wanted: string, holder: string): string {
  const held = new Set(holder.split(" "));
  return wanted
    .split(" ")
    .filter((s) => held.has(s))
    .join(" ");
}

/** Whether a credential may read sign-in codes: an API key that can write and is not in its rotation grace. */
export const readsSigninCodes = (p: Principal) => p.kind === "api_key" && p.scopes.has("svc:write") && !p.graceUntil;

/**
 * Guards a write call's batch with its credential: the client it was authenticated as is still connected, its agent
 * not disabled, and an API key (keyHash) as it was read: not revoked, and in a rotation's grace only if it was then.
 * A credential changed while the call ran (on a replica, since its file last synced) writes nothing: the call runs
 * again, and is judged on what holds now.
 */
export async function guardCredential(tx: Tx, p: Principal, keyHash: string | null): Promise<void> {
  const key =
    p.kind === "api_key" && keyHash
      ? sql` AND EXISTS (SELECT 1 FROM ${apiKeys} WHERE ${apiKeys.keyHash} = ${keyHash} AND ${apiKeys.revokedAt} IS NULL AND ${apiKeys.expiresAt} IS ${p.graceUntil})`
      : sql``;
  await guard(
    tx,
    "credential",
    sql`EXISTS (SELECT 1 FROM ${clients} JOIN ${agents} ON ${agents.agentId} = ${clients.agentId} WHERE ${clients.clientId} = ${p.clientId} AND ${clients.revokedAt} IS NULL AND ${agents.disabledAt} IS NULL)${key}`,
  );
}

/** A resolved credential; touchDue: its client's last_used_at is due an update, which the caller notes (server/auth/last-use.ts). */
export interface Authenticated {
  principal: Principal;
  touchDue: boolean;
}

// Every authenticated call runs this: built and prepared once per connection.
const keyLookup = prepared((tx) =>
  tx
    .select({
      agentId: agents.agentId,
      handle: agents.handle,
      displayName: agents.displayName,
      clientId: clients.clientId,
      scopes: apiKeys.scopes,
      expiresAt: apiKeys.expiresAt,
      revokedAt: apiKeys.revokedAt,
      clientRevokedAt: clients.revokedAt,
      lastUsedAt: clients.lastUsedAt,
      disabledAt: agents.disabledAt,
    })
    .from(apiKeys)
    .innerJoin(clients, eq(clients.clientId, apiKeys.clientId))
    .innerJoin(agents, eq(agents.agentId, clients.agentId))
    .where(eq(apiKeys.keyHash, sql.placeholder("keyHash")))
    .prepare(),
);

/**
 * Resolves an API key (by its sha256) to its principal, or null when it is unknown, revoked, expired, its client is
 * disconnected or its agent disabled (svc users disable). Writes nothing.
 */
export async function authenticateApiKey(tx: Tx, keyHash: string, now: Date): Promise<Authenticated | null> {
  const row = await keyLookup(tx).get({ keyHash });
  if (!row || row.revokedAt || row.clientRevokedAt || row.disabledAt) return null;
  if (row.expiresAt && row.expiresAt <= iso(now)) return null;
  return {
    principal: {
      agentId: row.agentId,
      handle: row.handle,
      displayName: row.displayName,
      clientId: row.clientId,
      kind: "api_key",
      scopes: new Set(row.scopes.split(" ")),
      graceUntil: row.expiresAt,
    },
    touchDue: touchDue(row.lastUsedAt, now),
  };
}

/** Whether a client last used at lastUsedAt is due a new last_used_at: at most one write per minute. */
export function touchDue(lastUsedAt: string | null, now: Date): boolean {
  return !lastUsedAt || Date.parse(lastUsedAt) + LAST_USED_RESOLUTION_MS <= now.getTime();
}

/** New key for this client only; the keys it replaces keep working for the grace period. `accountUrl`: where keys are managed. */
export async function rotateApiKey({ tx, now, actor }: DomainContext<Principal>, accountUrl: string): Promise<string> {
  if (actor.kind !== "api_key") {
    // Not a missing scope: no OAuth token can hold or rotate an API key.
    throw new AppError(
      "FORBIDDEN",
      "This credential is an OAuth access token, and rotate_api_key rotates the API key of the client that calls it; OAuth sessions never receive API keys.",
      undefined,
      undefined,
      `Nothing to rotate here: to end this OAuth session, revoke its token or disconnect the app. To replace an API key, call rotate_api_key with that API key, or let your human manage keys at ${accountUrl}.`,
    );
  }
  await tx
    .update(apiKeys)
    .set({ expiresAt: later(now, ROTATION_GRACE_MS) })
    .where(and(eq(apiKeys.clientId, actor.clientId), isNull(apiKeys.expiresAt), isNull(apiKeys.revokedAt)));
  return issueApiKey(tx, actor.clientId, now);
}

/**
 * The human's live clients, oldest first; paged when `page.limit` is given (list_clients), all of them otherwise.
 * Each says until when a key it replaced (rotate_api_key) still works, if one does.
 */
export async function listClients({ tx, now, actor }: DomainContext<Actor & { clientId?: string }>, page: { limit?: number; cursor?: string } = {}) {
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, ["string", "string"]);
  const graceUntil = sql<string | null>`(SELECT max(k.expires_at) FROM api_keys k
    WHERE k.client_id = clients.client_id AND k.revoked_at IS NULL AND k.expires_at > ${iso(now)})`;
  const query = tx
    .select({ c: clients, graceUntil })
    .from(clients)
    .where(
      and(
        eq(clients.agentId, actor.agentId),
        isNull(clients.revokedAt),
        // A browser whose session expired is no longer connected.
        sql`(${clients.kind} <> 'web' OR EXISTS (SELECT 1 FROM web_sessions s WHERE s.client_id = ${clients.clientId} AND s.expires_at > ${iso(now)}))`,
        after ? sql`(${clients.createdAt}, ${clients.clientId}) > (${after[0]}, ${after[1]})` : undefined,
      ),
    )
    .orderBy(asc(clients.createdAt), asc(clients.clientId));
  const { page: shown, next_cursor } =
    page.limit === undefined
      ? { page: await query, next_cursor: null }
      : await paginate(
          page.limit,
          (n) => query.limit(n),
          (last) => encodeCursor([last.c.createdAt, last.c.clientId]),
        );
  return {
    clients: shown.map(({ c, graceUntil }) => ({
      client_id: c.clientId,
      name: c.name,
      kind: c.kind,
      created_at: c.createdAt,
      // The calling client is in use now; its stored last use is written in batches (server/auth/last-use.ts).
      last_used_at: c.clientId === actor.clientId && touchDue(c.lastUsedAt, now) ? iso(now) : c.lastUsedAt,
      current: c.clientId === actor.clientId,
      obtained_through: c.parentClientId,
      old_key_until: graceUntil,
    })),
    next_cursor,
  };
}

/** Revokes one client of the caller's human at once: its keys stop immediately. */
export async function disconnectClient({ tx, now, actor }: DomainContext<Principal>, clientId: string) {
  const c = await tx
    .select()
    .from(clients)
    .where(and(eq(clients.clientId, clientId), eq(clients.agentId, actor.agentId), isNull(clients.revokedAt)))
    .get();
  if (!c) throw notFound("Client");
  if (c.clientId === actor.clientId) throw conflict("A client cannot disconnect itself; use rotate_api_key to replace its key.");
  await revokeClient(tx, clientId, now);
}

/**
 * Revokes a client and every client obtained through it, however deep (a web session signed in with a code it read,
 * the keys made in that session, ...): what a credential obtained never outlives it. The walk passes through clients
 * already ended (a browser signed out), so what they obtained ends too. That includes the sign-in factors set in those
 * browsers (a password, a passkey, a phone: their set_through_client_id, see server/web/session.ts factorOrigin) and
 * the sign-in codes the family read but no browser has typed yet: neither can sign anyone in once the client is gone.
 */
export async function revokeClient(tx: Tx, clientId: string, now: Date) {
  const family = sql`(WITH RECURSIVE family(id) AS (SELECT ${clientId} UNION SELECT c.client_id FROM clients c JOIN family f ON c.parent_client_id = f.id) SELECT id FROM family)`;
  // A family is one handle's: its factors and codes are found through the handle's own indexes.
  const agent = sql`(SELECT agent_id FROM clients WHERE client_id = ${clientId})`;
  await tx
    .update(clients)
    .set({ revokedAt: iso(now) })
    .where(and(sql`${clients.clientId} IN ${family}`, isNull(clients.revokedAt)));
  await tx
    .update(apiKeys)
    .set({ revokedAt: iso(now) })
    .where(and(sql`${apiKeys.clientId} IN ${family}`, isNull(apiKeys.revokedAt)));
  await tx.delete(passwords).where(and(sql`${passwords.agentId} = ${agent}`, sql`${passwords.setThroughClientId} IN ${family}`));
  await tx.delete(passkeys).where(and(sql`${passkeys.agentId} = ${agent}`, sql`${passkeys.setThroughClientId} IN ${family}`));
  await tx
    .update(agents)
    .set({ phone: null, phoneVerified: false, phoneSetThroughClientId: null })
    .where(and(sql`${agents.agentId} = ${agent}`, sql`${agents.phoneSetThroughClientId} IN ${family}`));
  await tx
    .update(signinCodes)
    .set({ usedAt: iso(now) })
    .where(and(sql`${signinCodes.agentId} = ${agent}`, sql`${signinCodes.readByClientId} IN ${family}`, isNull(signinCodes.usedAt)));
  // An e-mail address added through the family signs in no more, and the links already sent to it end.
  await tx.delete(emailAddresses).where(and(sql`${emailAddresses.agentId} = ${agent}`, sql`${emailAddresses.setThroughClientId} IN ${family}`));
  await tx
    .update(emailAddresses)
    .set({ pendingAddress: null, pendingHash: null, pendingExpiresAt: null, pendingSetThrough: null })
    .where(and(sql`${emailAddresses.agentId} = ${agent}`, sql`${emailAddresses.pendingSetThrough} IN ${family}`));
  await tx
    .update(resetLinks)
    .set({ usedAt: iso(now) })
    .where(and(sql`${resetLinks.setThroughClientId} IN ${family}`, isNull(resetLinks.usedAt)));
  const linkedThrough = and(sql`${oidcIdentities.agentId} = ${agent}`, sql`${oidcIdentities.setThroughClientId} IN ${family}`);
  const unlinked = await tx.select({ agentId: oidcIdentities.agentId }).from(oidcIdentities).where(linkedThrough);
  await tx.delete(oidcIdentities).where(linkedThrough);
  // The verified e-mail came from the provider logins (auth/identities.ts): what the remaining ones verify, or none.
  // The statement reads oidc_identities as the batch has changed it.
  if (unlinked.length) {
    const verified = sql`(SELECT i.email FROM oidc_identities i WHERE i.agent_id = ${unlinked[0]!.agentId} AND i.email_verified = 1 AND i.email IS NOT NULL ORDER BY i.created_at LIMIT 1)`;
    await tx
      .update(agents)
      .set({ email: verified, emailVerified: sql`${verified} IS NOT NULL` })
      .where(eq(agents.agentId, unlinked[0]!.agentId));
  }
}

/** Ends one client alone (a browser signing out); what it obtained stays, tied to it (revokeClient still reaches it). */
export async function endClient(tx: Tx, clientId: string, now: Date) {
  await tx
    .update(clients)
    .set({ revokedAt: iso(now) })
    .where(and(eq(clients.clientId, clientId), isNull(clients.revokedAt)));
}

/** An operator's emergency stop (svc keys revoke): one client of an agent, or all of them, revoked at once. */
export async function revokeAgentClients(tx: Tx, agentId: string, clientId: string | undefined, now: Date) {
  const live = await tx
    .select({ client_id: clients.clientId, name: clients.name, kind: clients.kind })
    .from(clients)
    .where(and(eq(clients.agentId, agentId), isNull(clients.revokedAt), clientId === undefined ? undefined : eq(clients.clientId, clientId)));
  if (clientId !== undefined && !live.length) throw notFound("Client");
  for (const c of live) await revokeClient(tx, c.client_id, now);
  return live;
}
