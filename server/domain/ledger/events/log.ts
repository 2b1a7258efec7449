// The home server's side of a group's event chain (chain.ts): every ledger change of a group appends one event in the
// same batch as the change.
// - A group no other server follows (no member there): its events are numbered as the batch commits (the next seq in
//   SQL), so calls changing it at the same moment do not conflict, and hashed later (sealPending: by the job, or by the
//   first event another server must be sent). Nothing outside this server reads an event before it is sealed.
// - A group other servers follow: each event is sealed at once, numbered after the last one the call read; two calls
//   taking the same seq fail one batch whole on the key (group_id, seq), and that call runs again, so the chain never
//   forks. A call that makes several events (an import) numbers them on from its own.
import { and, asc, desc, eq, gt, isNull, ne, sql } from "drizzle-orm";
import { batchOf, guard, guardChanged, snapshotOf, type Tx } from "../../../../db/client.ts";
import { agents, groupEvents, groupMembers, groups, remoteAgents } from "../../../../db/schema/index.ts";
import { enqueue, parseAddress, remoteOf } from "../../federation.ts";
import { iso } from "../../../clock.ts";
import type { Debt } from "../money/fewest-transfers.ts";
import { homeOf } from "./home.ts";
import { oncePerCall } from "./per-call.ts";
import { GENESIS, seal, type GroupEvent, type GroupEventBody } from "./chain.ts";
import { eventsFromState } from "./from-state.ts";

interface CallState {
  /** The last event of each group as this call has it: read once, then its own. */
  heads: Map<string, { seq: number; hash: string }>;
  /** Balance changes made since the group's last event of this call, by member (what the next event carries). */
  deltas: Map<string, Map<string, bigint>>;
  /** Groups this call numbered events of as its batch commits (unsealed). */
  unsealed: Set<string>;
}

/** The hash of an event not sealed yet. */
const UNSEALED = "";

// By the batch the call is collecting (a call run again has a new one, and reads the chain again).
const calls = new WeakMap<object, CallState>();
const stateOf = (tx: Tx): CallState => {
  const key = batchOf(tx) ?? tx;
  let s = calls.get(key);
  if (!s) calls.set(key, (s = { heads: new Map(), deltas: new Map(), unsealed: new Set() }));
  return s;
};

/** The last sealed event of a group: seq 0 and the genesis hash when it has none. */
export async function headOf(tx: Tx, groupId: string): Promise<{ seq: number; hash: string }> {
  const row = await snapshotOf(tx)
    .select({ seq: groupEvents.seq, hash: groupEvents.hash })
    .from(groupEvents)
    .where(and(eq(groupEvents.groupId, groupId), ne(groupEvents.hash, UNSEALED)))
    .orderBy(desc(groupEvents.seq))
    .limit(1)
    .get();
  return row ?? { seq: 0, hash: GENESIS };
}

/**
 * Seals a group's events numbered as their batches committed, in order, in the call's batch (each guarded: sealed once);
 * returns the group's head after them.
 */
export async function sealPending(tx: Tx, groupId: string): Promise<{ seq: number; hash: string }> {
  const view = snapshotOf(tx);
  const [head, pending] = await Promise.all([
    headOf(tx, groupId),
    view
      .select({ seq: groupEvents.seq, body: groupEvents.body })
      .from(groupEvents)
      .where(and(eq(groupEvents.groupId, groupId), eq(groupEvents.hash, UNSEALED)))
      .orderBy(asc(groupEvents.seq)),
  ]);
  let at = head;
  for (const p of pending) {
    if (p.seq !== at.seq + 1) throw new Error(`group ${groupId}: event ${p.seq} follows ${at.seq}`);
    const sealed = seal({ ...(JSON.parse(p.body) as GroupEventBody), seq: p.seq, prev_hash: at.hash });
    await tx
      .update(groupEvents)
      .set({ body: sealed.body, hash: sealed.hash })
      .where(and(eq(groupEvents.groupId, groupId), eq(groupEvents.seq, p.seq), eq(groupEvents.hash, UNSEALED)));
    await guardChanged(tx, "event sealed once");
    at = { seq: p.seq, hash: sealed.hash };
  }
  return at;
}

/** Groups with events not sealed yet, at most `limit` (the job seals them). */
export async function groupsUnsealed(tx: Tx, limit: number): Promise<string[]> {
  const rows = await tx.selectDistinct({ groupId: groupEvents.groupId }).from(groupEvents).where(eq(groupEvents.hash, UNSEALED)).limit(limit);
  return rows.map((r) => r.groupId);
}

/** Notes the debts a change adds (sign 1) or takes away (-1), as balance changes the group's next event carries. */
export function noteDebts(tx: Tx, groupId: string, debts: readonly Debt[], sign: 1 | -1): void {
  const all = stateOf(tx).deltas;
  const m = all.get(groupId) ?? all.set(groupId, new Map()).get(groupId)!;
  const add = (id: string, v: bigint) => m.set(id, (m.get(id) ?? 0n) + v);
  for (const d of debts) {
    // `from` owes `to`: the debtor's balance goes down, the creditor's up.
    add(d.from, -d.amount * BigInt(sign));
    add(d.to, d.amount * BigInt(sign));
  }
}

/**
 * Guards, where it stands in the batch, that the group has had no event since the call read it: a change computed from
 * the ledger as read (a placeholder's debts moved to who claims it) is never made over a change committed meanwhile.
 */
export async function guardLedgerAsRead(tx: Tx, groupId: string): Promise<void> {
  const last = sql<number>`coalesce(max(${groupEvents.seq}), 0)`;
  const read = await snapshotOf(tx).select({ seq: last }).from(groupEvents).where(eq(groupEvents.groupId, groupId)).get();
  await guard(tx, "ledger as read", sql`(SELECT ${last} FROM ${groupEvents} WHERE ${groupEvents.groupId} = ${groupId}) = ${read?.seq ?? 0}`);
}

/** Appends a group's next event, in the call's batch; returns it once sealed (null: unsealed, or a group kept elsewhere). */
export async function appendEvent(
  tx: Tx,
  now: Date,
  e: { groupId: string; type: string; actorId: string; summary: string; refs: Record<string, string>; data?: unknown },
): Promise<(GroupEvent & { seq: number }) | null> {
  const s = stateOf(tx);
  // A copy's chain is its home's alone: a change made here to a copy (an account deleted here) is not one of its events.
  const known = s.heads.has(e.groupId) || s.unsealed.has(e.groupId);
  const [home, servers] = await Promise.all([known ? undefined : homeOf(tx, e.groupId), serversOf(tx, e)]);
  if (home) return null;
  const moved = s.deltas.get(e.groupId) ?? new Map<string, bigint>();
  s.deltas.delete(e.groupId);
  const deltas = Object.fromEntries([...moved].filter(([, v]) => v !== 0n).map(([id, v]) => [id, v.toString()]));
  const body: GroupEventBody = {
    v: 1,
    group_id: e.groupId,
    seq: 0,
    prev_hash: UNSEALED,
    type: e.type,
    actor_id: e.actorId,
    at: iso(now),
    refs: e.refs,
    summary: e.summary,
    deltas,
    data: e.data ?? null,
  };
  // A new group's first event is sealed at once: nothing else can change the group yet.
  if (!servers.hosts.size && !s.heads.has(e.groupId) && e.type !== "group_created") {
    await tx.run(
      sql`INSERT INTO ${groupEvents} (group_id, seq, type, body, hash) SELECT ${e.groupId}, coalesce(max(seq), 0) + 1, ${e.type}, ${JSON.stringify(body)}, ${UNSEALED} FROM ${groupEvents} WHERE group_id = ${e.groupId}`,
    );
    s.unsealed.add(e.groupId);
    return null;
  }
  if (s.unsealed.has(e.groupId)) throw new Error(`group ${e.groupId}: a call that numbered its events as they commit cannot seal one`);
  const prev = s.heads.get(e.groupId) ?? (await sealPending(tx, e.groupId));
  const sealed = seal({ ...body, seq: prev.seq + 1, prev_hash: prev.hash });
  const seq = prev.seq + 1;
  await tx.insert(groupEvents).values({ groupId: e.groupId, seq, type: e.type, body: sealed.body, hash: sealed.hash });
  s.heads.set(e.groupId, { seq, hash: sealed.hash });
  await shareWithMemberServers(tx, now, servers, e, seq, sealed);
  return { ...sealed, seq };
}

/** A page of a group's events after `afterSeq`, in order. */
export async function eventsAfter(tx: Tx, groupId: string, afterSeq: number, limit: number): Promise<(GroupEvent & { seq: number })[]> {
  return tx
    .select({ seq: groupEvents.seq, body: groupEvents.body, hash: groupEvents.hash })
    .from(groupEvents)
    .where(and(eq(groupEvents.groupId, groupId), gt(groupEvents.seq, afterSeq), ne(groupEvents.hash, UNSEALED)))
    .orderBy(asc(groupEvents.seq))
    .limit(limit);
}

/** Events go to member servers in pages of at most this many (a page of history, a gap filled). */
export const EVENTS_PAGE = 20;

interface Followers {
  hosts: Set<string>;
  from: string | null;
}

/**
 * The servers of the group's members of other servers, read once a call: a write to a group reads it beside the group
 * (one round trip on a remote primary), for the event it will append.
 */
export const followersOf = (tx: Tx, groupId: string): Promise<Followers> => oncePerCall(tx, `followers ${groupId}`, () => readFollowers(tx, groupId));

async function readFollowers(tx: Tx, groupId: string): Promise<Followers> {
  const view = snapshotOf(tx);
  const rows = await view
    .selectDistinct({ host: remoteAgents.host })
    .from(groupMembers)
    .innerJoin(remoteAgents, eq(remoteAgents.agentId, groupMembers.agentId))
    .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
    // A member whose account was deleted on its server (account.deleted) stays, retired: its server is not sent to.
    .where(and(eq(groupMembers.groupId, groupId), isNull(groupMembers.leftAt), isNull(agents.retiredAt)));
  const group = rows.length ? await view.select({ createdBy: groups.createdBy }).from(groups).where(eq(groups.groupId, groupId)).get() : undefined;
  return { hosts: new Set(rows.map((r) => r.host)), from: group?.createdBy ?? null };
}

/** The group's followers with the server of a member joining in this event. */
async function serversOf(tx: Tx, e: { groupId: string; data?: unknown }): Promise<Followers> {
  const servers = await followersOf(tx, e.groupId);
  const joining = (e.data as { member?: { address?: string | null } } | null)?.member?.address;
  const joiningHost = joining ? parseAddress(joining)?.host : undefined;
  if (joiningHost && !servers.hosts.has(joiningHost)) {
    servers.hosts.add(joiningHost);
    servers.from ??= (await snapshotOf(tx).select({ createdBy: groups.createdBy }).from(groups).where(eq(groups.groupId, e.groupId)).get())?.createdBy ?? null;
  }
  return servers;
}

/** Sends a sealed event to those servers (through the outbox, in order per server). */
async function shareWithMemberServers(
  tx: Tx,
  now: Date,
  servers: Followers,
  e: { groupId: string; type: string; actorId: string },
  seq: number,
  event: GroupEvent,
): Promise<void> {
  if (!servers.from) return;
  // An agent of another server changes the group only by a call its server sent here (forward.ts), whose answer
  // carries the event: its server is not sent it again. A join is sent, as its server may have asked by invitation.
  const joins = e.type === "member_joined" || e.type === "placeholder_claimed";
  const actorHost = joins ? undefined : (await remoteOf(tx, e.actorId))?.host;
  for (const host of servers.hosts) {
    if (host === actorHost) continue;
    await enqueue(tx, now, host, {
      type: "group.events",
      from: servers.from,
      group_id: e.groupId,
      head_seq: seq,
      events: [{ body: event.body, hash: event.hash }],
    });
  }
}

/**
 * Before an agent of another server joins a group, its chain must start with the group's creation, for its server to
 * build a copy from the events. A group made before svc kept chains (from-state.ts) gets one now, in this call's
 * batch, built from what it holds: no other server has seen its events, and the call runs again if the group changed
 * since it was read.
 */
export async function chainFromStart(tx: Tx, groupId: string): Promise<void> {
  const s = stateOf(tx);
  // Created by this very call (create_group with members): its chain starts now.
  if (s.heads.has(groupId) && !(await headOf(tx, groupId)).seq) return;
  const first = await snapshotOf(tx)
    .select({ type: groupEvents.type })
    .from(groupEvents)
    .where(and(eq(groupEvents.groupId, groupId), eq(groupEvents.seq, 1)))
    .get();
  if (first?.type === "group_created") return;
  await guardLedgerAsRead(tx, groupId);
  const bodies = await eventsFromState(tx, groupId);
  await tx.delete(groupEvents).where(eq(groupEvents.groupId, groupId));
  let head = { seq: 0, hash: GENESIS };
  for (const b of bodies) {
    const sealed = seal({ ...b, seq: head.seq + 1, prev_hash: head.hash });
    head = { seq: head.seq + 1, hash: sealed.hash };
    await tx.insert(groupEvents).values({ groupId, seq: head.seq, type: b.type, body: sealed.body, hash: sealed.hash });
  }
  s.heads.set(groupId, head);
  s.unsealed.delete(groupId);
}
