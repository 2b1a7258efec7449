import { wordlist } from "@scure/bip39/wordlists/english.js";
import { and, asc, eq, gt, sql } from "drizzle-orm";
import { randomInt } from "node:crypto";
import { guard, placeholders, prepared, snapshotOf, type Tx } from "../../db/client.ts";
import { agents, contactDeclines, contacts } from "../../db/schema/index.ts";
import { DAY, iso } from "../clock.ts";
import { AppError, conflict, invalid, notFound } from "../errors.ts";
import type { Actor, DomainContext } from "../contract/principal.ts";
import type { ContactRecord } from "../contract/wire.ts";
import { agentByHandle, agentById, toRef, type AgentRow } from "./agents.ts";
import { deliveredSince, deliver, resolveItems, withdrawItems } from "./inbox.ts";
import { cleanNote, quoted, untrusted } from "./untrusted.ts";
import { enqueue, ensureRemoteAgent, localAgentByCode, parseAddress, rememberCodeRequest, remoteOf, splitCode } from "./federation.ts";
import { decodeCursor, encodeCursor, paginate } from "../contract/cursor.ts";

export const DECLINE_WINDOW_MS = 30 * DAY;
/**
 * Requests one agent may send another in REQUEST_WINDOW_MS; later ones are dropped silently, as after a decline.
 * They are counted in the target's inbox, so the window is at most an item's lifetime (ITEM_LIFETIME_MS).
 */
export const MAX_REQUESTS = 3;
export const REQUEST_WINDOW_MS = 30 * DAY;
type State = ContactRecord["state"];
type Source = ContactRecord["source"];
type Row = typeof contacts.$inferSelect;

/** Four words from the 2048-word BIP-39 list: 2^44 codes, hopeless to guess under the rate limit. */
export const newContactCode = () => Array.from({ length: 4 }, () => wordlist[randomInt(wordlist.length)]).join("-");
const normaliseCode = (code: string) =>
  code
    .trim()
    .toLowerCase()
    .split(/[\s_-]+/)
    .filter(Boolean)
    .join("-");

export async function contactCode(ctx: DomainContext): Promise<string> {
  const { tx, actor } = ctx;
  const me = (await agentById(tx, actor.agentId))!;
  return me.contactCode ?? rotateContactCode(ctx);
}

export async function rotateContactCode({ tx, actor: { agentId } }: DomainContext): Promise<string> {
  const code = newContactCode();
  await tx.update(agents).set({ contactCode: code }).where(eq(agents.agentId, agentId));
  return code;
}

// One side of a contact, read and written by key: built once, the most frequent contact statements.
const sideQuery = prepared((tx) =>
  tx
    .select()
    .from(contacts)
    .where(and(eq(contacts.ownerId, sql.placeholder("owner")), eq(contacts.otherId, sql.placeholder("other"))))
    .prepare(),
);
const SIDE_COLUMNS = ["ownerId", "otherId", "state", "source", "note", "requestedAt", "respondedAt"] as const;
const upsertSide = prepared((tx) =>
  tx
    .insert(contacts)
    .values(placeholders(SIDE_COLUMNS))
    .onConflictDoUpdate({
      target: [contacts.ownerId, contacts.otherId],
      set: {
        state: sql`excluded.state`,
        source: sql`excluded.source`,
        note: sql`excluded.note`,
        requestedAt: sql`excluded.requested_at`,
        respondedAt: sql`excluded.responded_at`,
      },
    })
    .prepare(),
);

async function side(tx: Tx, owner: string, other: string): Promise<Row | undefined> {
  return sideQuery(tx).get({ owner, other });
}

async function setSide(tx: Tx, row: Row): Promise<void> {
  await upsertSide(tx).run(row);
}

async function dropSide(tx: Tx, owner: string, other: string): Promise<void> {
  await tx.delete(contacts).where(and(eq(contacts.ownerId, owner), eq(contacts.otherId, other)));
}

async function record(tx: Tx, row: Row | undefined, other?: AgentRow): Promise<ContactRecord | null> {
  if (!row) return null;
  const o = other ?? (await agentById(tx, row.otherId))!;
  return {
    agent: toRef(o),
    state: row.state,
    source: row.source,
    note: row.note === null ? null : untrusted(row.note, `contact request note from @${o.handle}`),
    verified: { email: o.emailVerified, phone: o.phoneVerified },
    requested_at: row.requestedAt,
    responded_at: row.respondedAt,
  };
}

export interface AddContactInput {
  handle?: string;
  code?: string;
  /** An agent on another server, handle@host (or on this one). */
  address?: string;
  via_group_id?: string;
  note?: string;
}

/** What add_contact needs to know of federation: this server's host, and whether it exchanges with others. */
export interface FederationScope {
  selfHost: string;
  enabled: boolean;
  /** Whether this server exchanges with that host (its mode, peers and blocklist). */
  allows(host: string): boolean;
}

/** Why a request to an agent on `host` cannot go, or null. */
function federationProblem(path: string, host: string, federation: FederationScope | undefined) {
  if (!federation?.enabled)
    return invalid(path, "names an agent on another server, and this server does not exchange with other servers (svc serve --federation)");
  if (!federation.allows(host)) return invalid(path, `names an agent on ${host}, a server this one does not exchange with (ask its operator)`);
  return null;
}

/** Resolves whom add_contact names; group membership is checked by the ledger through `sharesGroup`. */
async function target(
  tx: Tx,
  input: AddContactInput,
  actor: Actor,
  sharesGroup: (tx: Tx, a: string, b: string, groupId: string) => Promise<boolean>,
  /** The row of an agent of another server this call has just written (it is not read back). */
  remoteRow?: AgentRow,
): Promise<{ agent: AgentRow; source: Source }> {
  if (input.code !== undefined) {
    const code = normaliseCode(input.code);
    const agent = await localAgentByCode(tx, code);
    // Said whole: notFound() would append " not found." to the sentence.
    if (!agent) throw new AppError("NOT_FOUND", "No agent has this contact code; ask for a fresh one.");
    // Read before the batch (an embedded replica's file may be behind): a code rotated since no longer names them.
    await guard(tx, "contact code", sql`EXISTS (SELECT 1 FROM ${agents} WHERE ${agents.agentId} = ${agent.agentId} AND ${agents.contactCode} = ${code})`);
    return { agent, source: "code" };
  }
  // As the call read it: a call about to add a contact has written, at most, the row of the agent of another server
  // it came from, or that it names (remoteRow).
  const agent = remoteRow ?? (await agentByHandle(snapshotOf(tx), input.handle!));
  if (!agent) throw notFound(`Agent @${input.handle}`);
  if (input.via_group_id !== undefined) {
    if (!(await sharesGroup(tx, actor.agentId, agent.agentId, input.via_group_id))) throw notFound("Group");
    return { agent, source: "group" };
  }
  return { agent, source: "handle" };
}

export async function addContact(
  ctx: DomainContext,
  input: AddContactInput,
  sharesGroup: (tx: Tx, a: string, b: string, groupId: string) => Promise<boolean>,
  federation?: FederationScope,
): Promise<{ status: "requested" | "accepted" | "already_contacts"; contact: ContactRecord | null }> {
  const { tx, now, actor } = ctx;
  // A code with another server's host goes there; whose code it is, only that server knows.
  if (input.code !== undefined) {
    const { code, host } = splitCode(input.code);
    if (host !== null && host !== federation?.selfHost) {
      const problem = federationProblem("code", host, federation);
      if (problem) throw problem;
      const note = input.note === undefined ? null : cleanNote(input.note) || null;
      const eventId = await enqueue(tx, now, host, { type: "contact.request", from: actor.agentId, code: normaliseCode(code), note }, ctx);
      await rememberCodeRequest(tx, now, eventId, actor.agentId, host);
      return { status: "requested", contact: null };
    }
    input = { ...input, code };
  }
  let remoteRow: AgentRow | undefined;
  if (input.address !== undefined) {
    const parsed = parseAddress(input.address);
    if (!parsed) throw invalid("address", "expected handle@host");
    if (parsed.host === federation?.selfHost) input = { ...input, handle: parsed.handle, address: undefined };
    else {
      const problem = federationProblem("address", parsed.host, federation);
      if (problem) throw problem;
      remoteRow = await ensureRemoteAgent(tx, now, input.address);
      input = { ...input, handle: remoteRow.handle, address: undefined };
    }
  }
  const { agent: them, source } = await target(tx, input, actor, sharesGroup, remoteRow);
  const remote = await remoteOf(tx, them.agentId);
  if (them.agentId === actor.agentId) throw conflict("You cannot add yourself as a contact.");
  const mine = await side(tx, actor.agentId, them.agentId);
  const theirs = await side(tx, them.agentId, actor.agentId);
  const at = iso(now);

  if (mine?.state === "accepted") return { status: "already_contacts", contact: await record(tx, mine, them) };
  if (mine?.state === "outgoing") return { status: "requested", contact: await record(tx, mine, them) };
  if (mine?.state === "incoming") {
    const accepted = { ...mine, state: "accepted" as const, respondedAt: at };
    await setSide(tx, accepted);
    if (theirs) await setSide(tx, { ...theirs, state: "accepted", respondedAt: at });
    await resolveItems(tx, actor.agentId, "contact.request", { agent_id: them.agentId });
    await notifyAccepted(tx, now, actor, them.agentId);
    return { status: "accepted", contact: await record(tx, accepted, them) };
  }
  if (remote && (!mine || mine.state === "blocked")) {
    // Their server decides on consent: our side waits for its answer, theirs mirrors what we asked.
    const note = input.note === undefined ? null : cleanNote(input.note) || null;
    const outgoing: Row = { ownerId: actor.agentId, otherId: them.agentId, state: "outgoing", source, note: null, requestedAt: at, respondedAt: null };
    await setSide(tx, outgoing);
    await setSide(tx, { ...outgoing, ownerId: them.agentId, otherId: actor.agentId, state: "incoming", note: null });
    await enqueue(tx, now, remote.host, { type: "contact.request", from: actor.agentId, to: remote.address, note }, ctx);
    return { status: "requested", contact: await record(tx, outgoing, them) };
  }
  // mine is none: a request of theirs that never reached us (we had declined it within the window, or it was
  // past the request limit) meets ours. mine is blocked: adding unblocks and sends a new request, which they
  // decide on; whatever they tried while blocked was void.
  if (!mine && theirs?.state === "outgoing") {
    const accepted: Row = {
      ownerId: actor.agentId,
      otherId: them.agentId,
      state: "accepted",
      source,
      note: null,
      requestedAt: theirs.requestedAt,
      respondedAt: at,
    };
    await setSide(tx, accepted);
    await setSide(tx, { ...theirs, state: "accepted", respondedAt: at });
    await notifyAccepted(tx, now, actor, them.agentId);
    return { status: "accepted", contact: await record(tx, accepted, them) };
  }
  const note = input.note === undefined ? null : cleanNote(input.note) || null;
  const outgoing: Row = {
    ownerId: actor.agentId,
    otherId: them.agentId,
    state: "outgoing",
    source,
    note: null,
    requestedAt: at,
    respondedAt: null,
  };
  await setSide(tx, outgoing);
  // A target that blocked us, declined within the window, or was asked MAX_REQUESTS times in the window (cancel
  // and resend) is not told; the caller is not told either.
  if (
    theirs?.state === "blocked" ||
    (await declinedRecently(tx, actor.agentId, them.agentId, now)) ||
    (await askedTooOften(tx, actor.agentId, them.agentId, now))
  ) {
    return { status: "requested", contact: await record(tx, outgoing, them) };
  }
  await setSide(tx, { ...outgoing, ownerId: them.agentId, otherId: actor.agentId, state: "incoming", note });
  // One live request from one asker at a time.
  await withdrawItems(tx, them.agentId, "contact.request", { agent_id: actor.agentId });
  await deliver(tx, now, {
    to: them.agentId,
    type: "contact.request",
    from: actor.agentId,
    summaryMd: `@${actor.handle} asks to become your contact${note ? `, with a note: ${quoted(note)}` : ""}. Ask your human before accepting.`,
    payload: { handle: actor.handle, source },
    note: note === null ? null : untrusted(note, `contact request note from @${actor.handle}`),
    refs: { agent_id: actor.agentId, handle: actor.handle },
  });
  return { status: "requested", contact: await record(tx, outgoing, them) };
}

const declineOf = prepared((tx) =>
  tx
    .select()
    .from(contactDeclines)
    .where(and(eq(contactDeclines.requesterId, sql.placeholder("requester")), eq(contactDeclines.targetId, sql.placeholder("target"))))
    .prepare(),
);

async function declinedRecently(tx: Tx, requester: string, targetId: string, now: Date): Promise<boolean> {
  const row = await declineOf(tx).get({ requester, target: targetId });
  return row !== undefined && Date.parse(row.declinedAt) + DECLINE_WINDOW_MS > now.getTime();
}

async function askedTooOften(tx: Tx, requester: string, targetId: string, now: Date): Promise<boolean> {
  return (await deliveredSince(tx, targetId, requester, "contact.request", new Date(now.getTime() - REQUEST_WINDOW_MS))) >= MAX_REQUESTS;
}

async function notifyAccepted(tx: Tx, now: Date, actor: Actor, to: string) {
  // An agent of another server hears of it from its own server.
  const remote = await remoteOf(tx, to);
  if (remote) {
    if (!(await remoteOf(tx, actor.agentId))) await enqueue(tx, now, remote.host, { type: "contact.accept", from: actor.agentId, to: remote.address });
    return;
  }
  await deliver(tx, now, {
    to,
    type: "contact.accepted",
    from: actor.agentId,
    summaryMd: `@${actor.handle} accepted your contact request.`,
    payload: { handle: actor.handle },
    refs: { agent_id: actor.agentId, handle: actor.handle },
  });
}

async function contactByHandle(tx: Tx, actor: Actor, handle: string, states: State[]) {
  const them = await agentByHandle(tx, handle);
  const mine = them && (await side(tx, actor.agentId, them.agentId));
  if (!them || !mine || !states.includes(mine.state)) return null;
  return { them, mine };
}

export async function respondContactRequest(
  { tx, now, actor }: DomainContext,
  handle: string,
  action: "accept" | "decline" | "block",
): Promise<ContactRecord | null> {
  const found = await contactByHandle(tx, actor, handle, ["incoming"]);
  if (!found) throw notFound(`Contact request from @${handle}`);
  const { them, mine } = found;
  const at = iso(now);
  const theirs = await side(tx, them.agentId, actor.agentId);
  // Both sides as read when the batch commits: a block or a withdrawal made since is never undone by this answer.
  await guard(
    tx,
    "contact as read",
    sql`(SELECT ${contacts.state} FROM ${contacts} WHERE ${contacts.ownerId} = ${actor.agentId} AND ${contacts.otherId} = ${them.agentId}) IS ${mine.state}
      AND (SELECT ${contacts.state} FROM ${contacts} WHERE ${contacts.ownerId} = ${them.agentId} AND ${contacts.otherId} = ${actor.agentId}) IS ${theirs?.state ?? null}`,
  );
  await resolveItems(tx, actor.agentId, "contact.request", { agent_id: them.agentId });
  if (action === "accept") {
    const accepted = { ...mine, state: "accepted" as const, respondedAt: at };
    await setSide(tx, accepted);
    if (theirs) await setSide(tx, { ...theirs, state: "accepted", respondedAt: at });
    await notifyAccepted(tx, now, actor, them.agentId);
    return record(tx, accepted, them);
  }
  if (action === "decline") {
    await dropSide(tx, actor.agentId, them.agentId);
    if (theirs?.state === "outgoing") await dropSide(tx, them.agentId, actor.agentId);
    await tx
      .insert(contactDeclines)
      .values({ requesterId: them.agentId, targetId: actor.agentId, declinedAt: at })
      .onConflictDoUpdate({ target: [contactDeclines.requesterId, contactDeclines.targetId], set: { declinedAt: at } });
    return null;
  }
  // Blocking is silent: the requester keeps seeing its request as outgoing.
  const blocked = { ...mine, state: "blocked" as const, note: null, respondedAt: at };
  await setSide(tx, blocked);
  return record(tx, blocked, them);
}

export async function listContacts({ tx, actor }: DomainContext, state: State, limit: number, cursor?: string) {
  const after = cursor === undefined ? undefined : decodeCursor(cursor, ["string"])[0];
  const query = tx
    .select({ c: contacts, a: agents })
    .from(contacts)
    .innerJoin(agents, eq(agents.agentId, contacts.otherId))
    .where(and(eq(contacts.ownerId, actor.agentId), eq(contacts.state, state), after ? gt(agents.handle, after) : undefined))
    .orderBy(asc(agents.handle));
  const { page, next_cursor } = await paginate(
    limit,
    (n) => query.limit(n),
    (last) => encodeCursor([last.a.handle]),
  );
  const records = await Promise.all(page.map((r) => record(tx, r.c, r.a)));
  return { contacts: records.filter((r): r is ContactRecord => r !== null), next_cursor };
}

/** Removes an accepted contact or cancels a sent request, on both sides; a block the other side set stays. */
export async function removeContact({ tx, now, actor }: DomainContext, handle: string): Promise<boolean> {
  const found = await contactByHandle(tx, actor, handle, ["accepted", "outgoing"]);
  if (!found) throw notFound(`Contact @${handle}`);
  const { them } = found;
  const theirs = await side(tx, them.agentId, actor.agentId);
  const remote = await remoteOf(tx, them.agentId);
  await dropSide(tx, actor.agentId, them.agentId);
  if (theirs && theirs.state !== "blocked") await dropSide(tx, them.agentId, actor.agentId);
  // A cancelled request leaves their inbox altogether.
  await withdrawItems(tx, them.agentId, "contact.request", { agent_id: actor.agentId });
  if (remote) await enqueue(tx, now, remote.host, { type: "contact.remove", from: actor.agentId, to: remote.address });
  return true;
}

/** Blocks any agent, contact or not; the blocked agent is not told and keeps its own view. */
export async function blockContact({ tx, now, actor }: DomainContext, handle: string): Promise<boolean> {
  const them = await agentByHandle(tx, handle);
  if (!them || them.agentId === actor.agentId) throw notFound(`Agent @${handle}`);
  const mine = await side(tx, actor.agentId, them.agentId);
  const theirs = await side(tx, them.agentId, actor.agentId);
  await setSide(tx, {
    ownerId: actor.agentId,
    otherId: them.agentId,
    state: "blocked",
    source: mine?.source ?? "handle",
    note: null,
    requestedAt: mine?.requestedAt ?? iso(now),
    respondedAt: iso(now),
  });
  // Our own pending request to them is withdrawn: we no longer want it answered.
  if (theirs?.state === "incoming") {
    await dropSide(tx, them.agentId, actor.agentId);
    await withdrawItems(tx, them.agentId, "contact.request", { agent_id: actor.agentId });
  }
  await resolveItems(tx, actor.agentId, "contact.request", { agent_id: them.agentId });
  return true;
}

/**
 * The agents behind `handles`, all of which must be the caller's accepted contacts; any other handle, known
 * or not, is NOT_FOUND, so nobody learns who exists. Used by mail and plans, which reach only contacts.
 */
export async function acceptedContactsByHandle({ tx, actor }: DomainContext, handles: string[], path: string, suggestedAction: string): Promise<AgentRow[]> {
  const unique = [...new Set(handles)];
  if (unique.includes(actor.handle)) throw invalid(path, "name others, not yourself");
  const found: AgentRow[] = [];
  const missing: string[] = [];
  for (const h of unique) {
    const a = await agentByHandle(tx, h);
    if (a && (await isAcceptedContact(tx, actor.agentId, a.agentId))) found.push(a);
    else missing.push(h);
  }
  if (missing.length) {
    throw new AppError(
      "NOT_FOUND",
      `Not among your accepted contacts: ${missing.map((h) => `@${h}`).join(", ")}.`,
      { handles: missing },
      undefined,
      suggestedAction,
    );
  }
  return found;
}

/** The state of `me`'s side of a contact with `other`, or null when there is none. */
export async function contactState(tx: Tx, me: string, other: string): Promise<State | null> {
  return (await side(tx, me, other))?.state ?? null;
}

/** Whether `other` is an accepted contact of `me`, for producers that may only reach contacts (mail, plans, invites). */
export async function isAcceptedContact(tx: Tx, me: string, other: string): Promise<boolean> {
  return (await side(tx, me, other))?.state === "accepted";
}

/**
 * Another server says its agent `remote` accepted `local`'s request: taken only when `local` asked (an outgoing
 * request to that agent, or a request by code to its server that is still unanswered); anything else is dropped.
 */
export async function acceptedByRemote(tx: Tx, now: Date, local: AgentRow, remote: AgentRow, askedByCode: boolean): Promise<boolean> {
  const mine = await side(tx, local.agentId, remote.agentId);
  if (mine?.state === "accepted") return true;
  if (mine?.state === "blocked" || (mine?.state !== "outgoing" && !askedByCode)) return false;
  const at = iso(now);
  const row: Row = {
    ownerId: local.agentId,
    otherId: remote.agentId,
    state: "accepted",
    source: mine?.source ?? "code",
    note: null,
    requestedAt: mine?.requestedAt ?? at,
    respondedAt: at,
  };
  await setSide(tx, row);
  await setSide(tx, { ...row, ownerId: remote.agentId, otherId: local.agentId });
  await notifyAccepted(tx, now, { agentId: remote.agentId, handle: remote.handle }, local.agentId);
  return true;
}

/** Another server says its agent `remote` removed `local` (or cancelled its request): both sides go, a block stays. */
export async function removedByRemote(tx: Tx, remote: AgentRow, local: AgentRow): Promise<void> {
  const mine = await side(tx, local.agentId, remote.agentId);
  await dropSide(tx, remote.agentId, local.agentId);
  if (mine && mine.state !== "blocked") await dropSide(tx, local.agentId, remote.agentId);
  await withdrawItems(tx, local.agentId, "contact.request", { agent_id: remote.agentId });
}
