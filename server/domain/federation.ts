// Agents of other svc servers as the domain sees them: a local agents row (its handle an alias such as
// bob-bexample) with an address handle@host, and the events for other servers, written to the outbox in the
// transaction of the tool call that made them. Nothing here knows HTTP: server/federation/ sends and receives.
import { and, asc, eq, gt, inArray, lt, sql } from "drizzle-orm";
import { batchOf, snapshotOf, type Tx } from "../../db/client.ts";
import { agents, federationOutbox, federationRequests, federationSettings, remoteAgents } from "../../db/schema/index.ts";
import { DAY, iso } from "../clock.ts";
import type { DomainContext } from "../contract/principal.ts";
import { invalid } from "../errors.ts";
import { requireRoomForHost } from "./quotas.ts";
import { agentByHandle, agentById, type AgentRow } from "./agents.ts";
import { cleanNote } from "./untrusted.ts";

export const ACCEPTS = ["code", "address", "none"] as const;
export type AcceptFromServers = (typeof ACCEPTS)[number];

/** `handle@host` split, or null: handle as svc's handles, host an authority (name or address, optional port). */
export function parseAddress(text: string): { handle: string; host: string } | null {
  const m = /^@?([a-z0-9][a-z0-9_-]{2,31})@([a-z0-9.-]+(?::\d{1,5})?|\[[0-9a-f:.]+\](?::\d{1,5})?)$/.exec(text.trim().toLowerCase());
  return m ? { handle: m[1]!, host: m[2]! } : null;
}

/** A contact code with its host, `amber-falcon-river-seven@b.example`: the code and the host. */
export function splitCode(code: string): { code: string; host: string | null } {
  const at = code.lastIndexOf("@");
  if (at < 0) return { code, host: null };
  return {
    code: code.slice(0, at),
    host: code
      .slice(at + 1)
      .trim()
      .toLowerCase(),
  };
}

type Remote = { address: string; host: string; handle: string };

// The rows for agents of other servers a write call has made (ensureRemoteAgent), by its batch: read back as the call
// wrote them, and every other from the snapshot as the call read it.
const madeInCall = new WeakMap<object, Map<string, Remote>>();
const made = (tx: Tx) => {
  const batch = batchOf(tx);
  return batch && (madeInCall.get(batch) ?? madeInCall.set(batch, new Map()).get(batch)!);
};

/** The agent's address on another server, or null for a local agent. */
export async function remoteOf(tx: Tx, agentId: string): Promise<Remote | null> {
  return made(tx)?.get(agentId) ?? (await snapshotOf(tx).select().from(remoteAgents).where(eq(remoteAgents.agentId, agentId)).get()) ?? null;
}

/** The addresses of those of `agentIds` that stand for agents of other servers, by agent id. */
export async function remoteAddresses(tx: Tx, agentIds: string[]): Promise<Map<string, string>> {
  if (!agentIds.length) return new Map();
  const rows = await snapshotOf(tx)
    .select({ agentId: remoteAgents.agentId, address: remoteAgents.address })
    .from(remoteAgents)
    .where(inArray(remoteAgents.agentId, agentIds));
  const found = new Map(rows.map((r) => [r.agentId, r.address]));
  for (const [id, r] of made(tx) ?? []) if (agentIds.includes(id)) found.set(id, r.address);
  return found;
}

/** The longest alias before a number is added on a clash (handles are at most 32 characters). */
const ALIAS_MAX = 28;
/** The most of the host's letters and digits an alias keeps. */
const ALIAS_HOST_MAX = 12;

/**
 * A free handle for an agent of another server: its handle (shortened if need be), a dash and its host's letters and
 * digits, then a number on a clash. The host part is never cut away, so an alias never passes for a local handle
 * (a long remote handle must not become that handle here, or the handle alone, and keep a local person from it).
 */
async function freeAlias(tx: Tx, handle: string, host: string, taken: ReadonlySet<string> = new Set()): Promise<string> {
  const hostPart = host.replace(/[^a-z0-9]/g, "").slice(0, ALIAS_HOST_MAX) || "remote";
  const handlePart = handle.slice(0, ALIAS_MAX - 1 - hostPart.length).replace(/[-_]+$/, "");
  const base = `${handlePart}-${hostPart}`;
  let alias = base;
  for (let n = 2; taken.has(alias) || (await agentByHandle(tx, alias)); n++) alias = `${base}${n}`;
  return alias;
}

const remoteName = (address: { handle: string; host: string }, displayName?: string) =>
  `${(cleanNote(displayName ?? "") || address.handle).slice(0, 60)} (${address.handle}@${address.host})`;

/** Writes the local row for an agent of another server under a free alias; the call reads it back as written. */
async function insertRemoteAgent(tx: Tx, now: Date, address: { handle: string; host: string }, handle: string, name: string): Promise<AgentRow> {
  const canonical = `${address.handle}@${address.host}`;
  const row: AgentRow = {
    agentId: crypto.randomUUID(),
    handle,
    displayName: name,
    description: null,
    contactCode: null,
    email: null,
    emailVerified: false,
    phoneVerified: false,
    createdAt: iso(now),
    retiredAt: null,
    mergedInto: null,
    disabledAt: null,
    phone: null,
    phoneSetThroughClientId: null,
    deletedAt: null,
  };
  await tx.insert(agents).values(row);
  await tx.insert(remoteAgents).values({ agentId: row.agentId, address: canonical, host: address.host, handle: address.handle, createdAt: iso(now) });
  made(tx)?.set(row.agentId, { address: canonical, host: address.host, handle: address.handle });
  return row;
}

/** The local row standing for a remote agent, made the first time one is met; its display name shows the address. */
export async function ensureRemoteAgent(tx: Tx, now: Date, address: string, displayName?: string): Promise<AgentRow> {
  const parsed = parseAddress(address);
  if (!parsed) throw invalid("address", "expected handle@host");
  const canonical = `${parsed.handle}@${parsed.host}`;
  const known = await snapshotOf(tx).select().from(remoteAgents).where(eq(remoteAgents.address, canonical)).get();
  const name = remoteName(parsed, displayName);
  // The row as this call writes it: it reads nothing back.
  if (known) {
    const row = (await agentById(tx, known.agentId))!;
    if (displayName === undefined) return row;
    await tx.update(agents).set({ displayName: name }).where(eq(agents.agentId, known.agentId));
    return { ...row, displayName: name };
  }
  return insertRemoteAgent(tx, now, parsed, await freeAlias(tx, parsed.handle, parsed.host), name);
}

/**
 * ensureRemoteAgent for several addresses at once (no display names: the agents only are named): every read comes
 * before the first write, as a write call must (a read of a table it wrote sends its batch, and then it may not
 * write: db/connections.ts), so call it before the call has written agents. The rows by address handle@host;
 * addresses that do not parse are left out.
 */
export async function ensureRemoteAgents(tx: Tx, now: Date, addresses: readonly string[]): Promise<Map<string, AgentRow>> {
  const rows = new Map<string, AgentRow>();
  const fresh = new Map<string, { address: { handle: string; host: string }; alias: string }>();
  for (const text of addresses) {
    const address = parseAddress(text);
    const canonical = address && `${address.handle}@${address.host}`;
    if (!address || !canonical || rows.has(canonical) || fresh.has(canonical)) continue;
    const known = await snapshotOf(tx).select().from(remoteAgents).where(eq(remoteAgents.address, canonical)).get();
    const row = known && (await agentById(tx, known.agentId));
    if (row) rows.set(canonical, row);
    else if (!known) {
      const alias = await freeAlias(tx, address.handle, address.host, new Set([...fresh.values()].map((f) => f.alias)));
      fresh.set(canonical, { address, alias });
    }
  }
  for (const [canonical, f] of fresh) rows.set(canonical, await insertRemoteAgent(tx, now, f.address, f.alias, remoteName(f.address)));
  return rows;
}

/** What a local agent accepts from other servers (default: contact requests that carry its code). */
export async function acceptsFromServers(tx: Tx, agentId: string): Promise<AcceptFromServers> {
  return (await tx.select().from(federationSettings).where(eq(federationSettings.agentId, agentId)).get())?.accept ?? "code";
}

export async function setAcceptsFromServers(tx: Tx, agentId: string, accept: AcceptFromServers): Promise<void> {
  await tx.insert(federationSettings).values({ agentId, accept }).onConflictDoUpdate({ target: federationSettings.agentId, set: { accept } });
}

/**
 * An event for another server. `from` is the local agent it speaks for: the sender writes its address when it builds
 * the transaction, so a server only ever speaks for its own agents.
 */
export interface OutboundEvent {
  type: string;
  from: string;
  [field: string]: unknown;
}

/**
 * Writes an event to the outbox, in the caller's transaction; returns its id. With `room`, the call of the agent that
 * starts something on that server (a request, an envelope, a plan's news): refused past its pending_hosts quota. An
 * answer, a removal or a cancellation is never refused.
 */
export async function enqueue(tx: Tx, now: Date, destination: string, event: OutboundEvent, room?: DomainContext): Promise<string> {
  if (room) await requireRoomForHost(room, destination);
  const eventId = crypto.randomUUID();
  await tx.insert(federationOutbox).values({ destination, eventId, event: { ...event, id: eventId }, createdAt: iso(now), senderId: event.from });
  return eventId;
}

/** A contact request sent by code to `host`: remembered so that the answer can be matched. */
export async function rememberCodeRequest(tx: Tx, now: Date, eventId: string, agentId: string, host: string): Promise<void> {
  await tx.insert(federationRequests).values({ eventId, agentId, host, createdAt: iso(now) });
  // An answer later than an inbox item's lifetime no longer counts.
  await tx
    .delete(federationRequests)
    .where(and(eq(federationRequests.agentId, agentId), lt(federationRequests.createdAt, iso(new Date(now.getTime() - CODE_REQUEST_MS)))));
}

/** How long a request by code waits for its answer. */
export const CODE_REQUEST_MS = 30 * DAY;

/** Takes the oldest pending code request of `agentId` to `host`, if any. */
export async function takeCodeRequest(tx: Tx, now: Date, agentId: string, host: string): Promise<boolean> {
  const since = iso(new Date(now.getTime() - CODE_REQUEST_MS));
  const row = await tx
    .select()
    .from(federationRequests)
    .where(and(eq(federationRequests.agentId, agentId), eq(federationRequests.host, host), gt(federationRequests.createdAt, since)))
    .orderBy(asc(federationRequests.createdAt))
    .get();
  if (!row) return false;
  await tx.delete(federationRequests).where(eq(federationRequests.eventId, row.eventId));
  return true;
}

/** Local agents by handle only: a remote agent's alias never answers for a local one. */
export async function localAgentByHandle(tx: Tx, handle: string): Promise<AgentRow | undefined> {
  const a = await agentByHandle(tx, handle);
  if (!a || a.disabledAt || (await remoteOf(tx, a.agentId))) return undefined;
  return a;
}

/** Local agent by contact code (remote rows have none). */
export async function localAgentByCode(tx: Tx, code: string): Promise<AgentRow | undefined> {
  // As the call read them: it may have just written a row for an agent of another server, never a local one.
  return snapshotOf(tx)
    .select()
    .from(agents)
    .where(and(eq(agents.contactCode, code), sql`${agents.agentId} NOT IN (SELECT agent_id FROM remote_agents)`))
    .get();
}
