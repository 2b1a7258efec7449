// A member's server's read copy of a group kept on another server (its home): the home's events, taken only from
// the home, each checked against the one before it (chain.ts) and applied in order to the same tables a local group
// uses, so every read tool works here as for a local group. Applying one event is one write call: what it writes
// (the group, members, the expense and its shares, the payment, the pair ledger, the activity line, the event) goes
// as one batch, and reads are of the snapshot only. An event whose data does not make the balance changes it
// declares is refused, as one that breaks the chain.
import { and, eq, or, sql } from "drizzle-orm";
import { snapshotOf, type Tx } from "../../../../db/client.ts";
import {
  agents,
  expenseHistory,
  expenseResponses,
  expenses,
  groupEvents,
  groupHomeAgents,
  groupHomes,
  groupBalances,
  groupMembers,
  groupPlaceholders,
  groups,
  expenseShares,
  ledgerActivity,
  ledgerPairs,
  ledgerTotals,
  payments,
} from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { ensureRemoteAgent, localAgentByHandle, parseAddress } from "../../federation.ts";
import type { Debt } from "../money/fewest-transfers.ts";
import { applyDebts, expenseDebts, markBuilt, paymentDebt } from "../balances/pairs.ts";
import { replaceShares, stateColumns, stateOfSnapshot, storedState, toSnapshot, type ExpenseState } from "../expenses/store.ts";
import { eventProblem, type GroupEvent, type GroupEventBody } from "./chain.ts";
import { headOf } from "./log.ts";
import { directKeyOf } from "../groups/membership.ts";
import { tellOfExpense, tellOfPayment, tellOfResponse } from "./notices.ts";
import type { PaymentRow } from "../payments/payments.ts";
import type { GroupData, MemberData } from "./members.ts";

/** Why an event was not applied: the chain or its sums do not hold, or it names what the copy cannot place. */
export class EventRefused extends Error {}

interface Apply {
  tx: Tx;
  now: Date;
  groupId: string;
  /** The home's host: its own agents' addresses are their handles there. */
  home: string;
  selfHost: string;
  /** The home's agent ids as this server's agents (id and handle). */
  agents: Map<string, { agentId: string; handle: string }>;
  /** The balance changes this event made here, by local agent. */
  moved: Map<string, bigint>;
}

/**
 * Applies the next event of a copy, in the caller's write call: "old" when the copy has it already, "gap" when events
 * before it are missing (the caller asks the home for them), "applied"; EventRefused when it does not hold.
 */
export async function applyNext(tx: Tx, now: Date, selfHost: string, groupId: string, home: string, e: GroupEvent): Promise<"old" | "gap" | "applied"> {
  const head = await headOf(tx, groupId);
  let seq: number;
  try {
    seq = Number((JSON.parse(e.body) as GroupEventBody).seq);
  } catch {
    throw new EventRefused("its body is not JSON");
  }
  if (!Number.isSafeInteger(seq)) throw new EventRefused("it has no seq");
  if (seq <= head.seq) return "old";
  if (seq > head.seq + 1) return "gap";
  const problem = eventProblem(groupId, head, e);
  if (problem) throw new EventRefused(problem);
  const body = JSON.parse(e.body) as GroupEventBody;
  const a: Apply = { tx, now, groupId, home, selfHost, agents: await knownAgents(tx, groupId), moved: new Map() };
  await applyBody(a, body);
  // The balance changes the event declares are what its data made here, member by member.
  const declared = new Map<string, bigint>();
  for (const [homeId, v] of Object.entries(body.deltas)) {
    const local = a.agents.get(homeId);
    if (!local) throw new EventRefused("it moves the balance of someone the copy does not know");
    declared.set(local.agentId, (declared.get(local.agentId) ?? 0n) + BigInt(v));
  }
  for (const id of new Set([...declared.keys(), ...a.moved.keys()])) {
    if ((declared.get(id) ?? 0n) !== (a.moved.get(id) ?? 0n)) throw new EventRefused("its balance changes are not what its data makes them");
  }
  await tx.insert(groupEvents).values({ groupId, seq, type: body.type, body: e.body, hash: e.hash });
  await tx
    .update(groupHomes)
    .set({ syncedAt: iso(now) })
    .where(eq(groupHomes.groupId, groupId));
  return "applied";
}

async function knownAgents(tx: Tx, groupId: string): Promise<Apply["agents"]> {
  const rows = await snapshotOf(tx)
    .select({ homeId: groupHomeAgents.homeAgentId, agentId: agents.agentId, handle: agents.handle })
    .from(groupHomeAgents)
    .innerJoin(agents, eq(agents.agentId, groupHomeAgents.agentId))
    .where(eq(groupHomeAgents.groupId, groupId));
  return new Map(rows.map((r) => [r.homeId, { agentId: r.agentId, handle: r.handle }]));
}

/** The local agent for a member the home names: this server's own agent by handle, or the row for another server's. */
async function placeMember(a: Apply, m: MemberData): Promise<string> {
  const known = a.agents.get(m.agent_id);
  if (known) return known.agentId;
  const address = parseAddress(m.address ?? `${m.handle}@${a.home}`);
  if (!address) throw new EventRefused("it names a member without an address");
  const row =
    address.host === a.selfHost
      ? await localAgentByHandle(a.tx, address.handle)
      : await ensureRemoteAgent(a.tx, a.now, `${address.handle}@${address.host}`, m.display_name ?? undefined);
  if (!row) throw new EventRefused("it names an agent of this server that does not exist");
  a.agents.set(m.agent_id, { agentId: row.agentId, handle: row.handle });
  await a.tx.insert(groupHomeAgents).values({ groupId: a.groupId, homeAgentId: m.agent_id, agentId: row.agentId }).onConflictDoNothing();
  return row.agentId;
}

function local(a: Apply, homeId: string): string {
  const l = a.agents.get(homeId);
  if (!l) throw new EventRefused("it names someone who is not a member of the copy");
  return l.agentId;
}

async function move(a: Apply, debts: readonly Debt[], sign: 1 | -1): Promise<void> {
  for (const d of debts) {
    a.moved.set(d.from, (a.moved.get(d.from) ?? 0n) - d.amount * BigInt(sign));
    a.moved.set(d.to, (a.moved.get(d.to) ?? 0n) + d.amount * BigInt(sign));
  }
  await applyDebts(a.tx, a.groupId, debts, sign);
}

async function applyBody(a: Apply, b: GroupEventBody): Promise<void> {
  const { tx, now, groupId } = a;
  const data = (b.data ?? {}) as Record<string, any>;
  const at = b.at;
  switch (b.type) {
    case "group_created": {
      const g = data.group as GroupData;
      const creator = await placeMember(a, data.member as MemberData);
      await tx.insert(groups).values({
        groupId,
        name: g.name,
        description: g.description,
        currency: g.currency,
        kind: g.kind,
        directKey: null,
        simplifyDebts: g.simplify_debts,
        archived: g.archived,
        createdBy: creator,
        createdAt: g.created_at,
        updatedAt: at,
      });
      await markBuilt(tx, now, groupId);
      await tx.insert(groupMembers).values({ groupId, agentId: creator, role: "owner", joinedAt: at });
      break;
    }
    case "member_joined": {
      const m = data.member as MemberData;
      const id = await placeMember(a, m);
      await tx
        .insert(groupMembers)
        .values({ groupId, agentId: id, role: m.role, joinedAt: at })
        .onConflictDoUpdate({ target: [groupMembers.groupId, groupMembers.agentId], set: { leftAt: null, joinedAt: at } });
      await keyDirectCopy(a, id);
      break;
    }
    case "placeholder_added": {
      // A friend without an account: nobody here either, under the home's member_id (ids are unique everywhere).
      const p = data.placeholder as { member_id: string; name: string };
      await tx.insert(agents).values({ agentId: p.member_id, handle: p.member_id, displayName: p.name, createdAt: at, retiredAt: at });
      await tx.insert(groupPlaceholders).values({ memberId: p.member_id, groupId, name: p.name, createdBy: local(a, b.actor_id), createdAt: at });
      await tx.insert(groupMembers).values({ groupId, agentId: p.member_id, role: "member", joinedAt: at });
      await tx.insert(groupHomeAgents).values({ groupId, homeAgentId: p.member_id, agentId: p.member_id });
      a.agents.set(p.member_id, { agentId: p.member_id, handle: p.member_id });
      break;
    }
    case "placeholder_claimed":
      await applyClaim(a, b, String(data.placeholder), data.member as MemberData);
      break;
    case "member_left":
    case "member_removed": {
      await tx
        .update(groupMembers)
        .set({ leftAt: at })
        .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, local(a, String(data.left)))));
      if (data.owner) {
        await tx
          .update(groupMembers)
          .set({ role: "owner" })
          .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, local(a, String(data.owner)))));
      }
      break;
    }
    case "group_updated":
    case "group_archived":
    case "group_unarchived": {
      const g = data.group as GroupData;
      await tx
        .update(groups)
        .set({ name: g.name, description: g.description, currency: g.currency, simplifyDebts: g.simplify_debts, archived: g.archived, updatedAt: at })
        .where(eq(groups.groupId, groupId));
      break;
    }
    case "expense_added":
    case "expense_updated":
    case "expense_deleted":
    case "expense_restored":
      await applyExpense(a, b, data.expense);
      break;
    case "expense_confirmed":
    case "expense_disputed":
      await applyResponse(a, b, data.response);
      break;
    case "payment_recorded":
    case "payment_confirmed":
    case "payment_rejected":
    case "payment_voided":
      await applyPayment(a, b, data.payment);
      break;
  }
  const actor = a.agents.get(b.actor_id);
  // What happened, as the home said it; its lines name agents by the home's handles.
  if (actor) {
    const refs = { ...b.refs, ...(b.refs.agent_id && a.agents.get(b.refs.agent_id) ? { agent_id: a.agents.get(b.refs.agent_id)!.agentId } : {}) };
    await tx.insert(ledgerActivity).values({ groupId, actorId: actor.agentId, action: b.type, summary: b.summary, refs, createdAt: at });
  }
}

/**
 * A direct ledger's copy, once its second person joined, is found by its pair here too (open_direct_ledger from this
 * server), unless this server keeps one of its own for the pair.
 */
async function keyDirectCopy(a: Apply, joined: string): Promise<void> {
  const view = snapshotOf(a.tx);
  const g = await view.select({ kind: groups.kind, createdBy: groups.createdBy }).from(groups).where(eq(groups.groupId, a.groupId)).get();
  if (g?.kind !== "direct" || g.createdBy === joined) return;
  const key = directKeyOf(g.createdBy, joined);
  if (await view.select({ id: groups.groupId }).from(groups).where(eq(groups.directKey, key)).get()) return;
  await a.tx.update(groups).set({ directKey: key }).where(eq(groups.groupId, a.groupId));
}

/** An expense's state as the home stored it, its members as this server's agents. */
function localState(a: Apply, s: ExpenseState): ExpenseState {
  const handles = new Map(s.shares.map((p) => [p.handle, a.agents.get(p.agentId)?.handle ?? ""]));
  const handle = (h: string) => {
    const l = handles.get(h);
    if (!l) throw new EventRefused("its expense names someone who is not a member of the copy");
    return l;
  };
  return {
    ...s,
    descriptionBy: local(a, s.descriptionBy),
    notesBy: s.notesBy === null ? null : local(a, s.notesBy),
    paidBy: s.paidBy.map((p) => ({ ...p, handle: handle(p.handle) })),
    split: { ...s.split, among: s.split.among.map((p) => ({ ...p, handle: handle(p.handle) })) },
    shares: s.shares.map((p) => ({ ...p, agentId: local(a, p.agentId), handle: handle(p.handle) })),
  };
}

const counted = (s: ExpenseState | null) => (s && !s.deleted ? expenseDebts(s.shares, s.kind) : []);

async function applyExpense(a: Apply, b: GroupEventBody, e: { expense_id: string; version: number; action: string; snapshot: unknown }): Promise<void> {
  const { tx, groupId } = a;
  const after = localState(a, stateOfSnapshot(e.snapshot).state);
  const actor = local(a, b.actor_id);
  const row = await snapshotOf(tx).select().from(expenses).where(eq(expenses.expenseId, e.expense_id)).get();
  if (row && row.groupId !== groupId) throw new EventRefused("its expense belongs to another group");
  if (e.action === "created") {
    if (row) throw new EventRefused("its expense exists already");
    await tx.insert(expenses).values({
      expenseId: e.expense_id,
      groupId,
      ...stateColumns(after),
      nextOccurrence: null, // occurrences of a series are the home's to make
      recurringOf: after.recurringOf,
      state: after.state,
      deleted: after.deleted,
      version: e.version,
      createdBy: actor,
      createdAt: b.at,
      updatedAt: b.at,
    });
    await replaceShares(tx, e.expense_id, groupId, after.shares);
    await move(a, counted(after), 1);
  } else {
    if (!row || row.version !== e.version - 1) throw new EventRefused("its expense is not at the version before it");
    const before = await storedState(snapshotOf(tx), row);
    await tx
      .update(expenses)
      .set({ ...stateColumns(after), state: after.state, deleted: after.deleted, version: e.version, updatedAt: b.at })
      .where(eq(expenses.expenseId, e.expense_id));
    await replaceShares(tx, e.expense_id, groupId, after.shares);
    await move(a, counted(before), -1);
    await move(a, counted(after), 1);
  }
  const { changed } = stateOfSnapshot(e.snapshot);
  await tx
    .insert(expenseHistory)
    .values({ expenseId: e.expense_id, version: e.version, action: e.action, changedBy: actor, changedAt: b.at, snapshot: toSnapshot(after, changed) })
    .onConflictDoNothing();
  await tellOfExpense(tx, a.now, { groupId, actor: actorOf(a, b), expenseId: e.expense_id, version: e.version, action: e.action, state: after, changed });
}

const actorOf = (a: Apply, b: GroupEventBody) => {
  const l = a.agents.get(b.actor_id);
  if (!l) throw new EventRefused("it names someone who is not a member of the copy");
  return { agentId: l.agentId, handle: l.handle };
};
const handleOf = (a: Apply, localId: string) => [...a.agents.values()].find((l) => l.agentId === localId)?.handle ?? localId;

async function applyResponse(
  a: Apply,
  b: GroupEventBody,
  r: { expense_id: string; action: "confirm" | "dispute"; reason: string | null; version: number },
): Promise<void> {
  const { tx } = a;
  const agentId = local(a, b.actor_id);
  const response = { action: r.action, reason: r.reason, version: r.version, respondedAt: b.at };
  await tx
    .insert(expenseResponses)
    .values({ expenseId: r.expense_id, agentId, ...response })
    .onConflictDoUpdate({ target: [expenseResponses.expenseId, expenseResponses.agentId], set: response });
  // As the home judges it: disputed while any response to the current version disputes it.
  const judged = sql`CASE WHEN EXISTS (SELECT 1 FROM ${expenseResponses} WHERE ${expenseResponses.expenseId} = ${r.expense_id} AND ${expenseResponses.version} = ${r.version} AND ${expenseResponses.action} = 'dispute') THEN 'disputed' ELSE 'active' END`;
  await tx
    .update(expenses)
    .set({ state: judged })
    .where(and(eq(expenses.expenseId, r.expense_id), eq(expenses.version, r.version)));
  const row = await snapshotOf(tx).select().from(expenses).where(eq(expenses.expenseId, r.expense_id)).get();
  if (!row || row.groupId !== a.groupId) throw new EventRefused("it answers an expense the copy does not have");
  await tellOfResponse(tx, a.now, { actor: actorOf(a, b), row, action: r.action, reason: r.reason });
}

async function applyPayment(a: Apply, b: GroupEventBody, p: Record<string, any>): Promise<void> {
  const { tx, groupId } = a;
  const row = {
    paymentId: String(p.payment_id),
    groupId,
    fromId: local(a, p.from_id),
    toId: local(a, p.to_id),
    amountMinor: Number(p.amount_minor),
    originalCurrency: p.original_currency ?? null,
    originalAmountMinor: p.original_amount_minor ?? null,
    exchangeRate: p.exchange_rate ?? null,
    state: p.state as PaymentRow["state"],
    note: p.note ?? null,
    createdBy: local(a, p.created_by),
    createdAt: String(p.created_at),
    updatedAt: String(p.updated_at),
    voidedBy: p.voided_by ? local(a, p.voided_by) : null,
    voidedAt: p.voided_at ?? null,
    batchId: p.batch_id ?? null,
  };
  const before = await snapshotOf(tx).select().from(payments).where(eq(payments.paymentId, row.paymentId)).get();
  if (before && before.groupId !== groupId) throw new EventRefused("its payment belongs to another group");
  if (before) {
    await tx
      .update(payments)
      .set({ state: row.state, updatedAt: row.updatedAt, voidedBy: row.voidedBy, voidedAt: row.voidedAt })
      .where(eq(payments.paymentId, row.paymentId));
  } else {
    await tx.insert(payments).values(row);
  }
  const was = before?.state === "confirmed";
  const is = row.state === "confirmed";
  if (was && !is) await move(a, [paymentDebt(before!)], -1);
  if (!was && is) await move(a, [paymentDebt(row)], 1);
  await tellOfPayment(tx, a.now, { actor: actorOf(a, b), row, before, handles: { from: handleOf(a, row.fromId), to: handleOf(a, row.toId) } });
}

/** A placeholder taken over, as the home did it (placeholders.ts claimPlaceholder): its balance, rows and name move. */
async function applyClaim(a: Apply, b: GroupEventBody, ph: string, m: MemberData): Promise<void> {
  const { tx, groupId } = a;
  if (a.agents.get(ph)?.agentId !== ph) throw new EventRefused("it claims a placeholder the copy does not have");
  const view = snapshotOf(tx);
  const pairs = await view
    .select()
    .from(ledgerPairs)
    .where(and(eq(ledgerPairs.groupId, groupId), or(eq(ledgerPairs.lowId, ph), eq(ledgerPairs.highId, ph))));
  const named = await view
    .select({ expenseId: expenses.expenseId, split: expenses.split, paidBy: expenses.paidBy })
    .from(expenses)
    .where(and(eq(expenses.groupId, groupId), sql`(instr(${expenses.split}, ${ph}) > 0 OR instr(${expenses.paidBy}, ${ph}) > 0)`));
  const me = await placeMember(a, m);
  const myHandle = a.agents.get(m.agent_id)!.handle;
  await tx.update(groupPlaceholders).set({ claimHash: null, claimedBy: me, claimedAt: b.at }).where(eq(groupPlaceholders.memberId, ph));
  await tx.update(agents).set({ mergedInto: me }).where(eq(agents.agentId, ph));
  await tx.delete(groupMembers).where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, me)));
  await tx
    .update(groupMembers)
    .set({ agentId: me, joinedAt: b.at })
    .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, ph)));
  const debts = pairs.map((r) =>
    r.lowOwesMinor > 0 ? { from: r.lowId, to: r.highId, amount: BigInt(r.lowOwesMinor) } : { from: r.highId, to: r.lowId, amount: BigInt(-r.lowOwesMinor) },
  );
  await move(a, debts, -1);
  await move(
    a,
    debts.map((d) => ({ from: d.from === ph ? me : d.from, to: d.to === ph ? me : d.to, amount: d.amount })),
    1,
  );
  await tx.delete(ledgerPairs).where(and(eq(ledgerPairs.groupId, groupId), or(eq(ledgerPairs.lowId, ph), eq(ledgerPairs.highId, ph))));
  await tx.delete(groupBalances).where(and(eq(groupBalances.groupId, groupId), eq(groupBalances.agentId, ph)));
  await tx.delete(ledgerTotals).where(eq(ledgerTotals.agentId, ph));
  await tx
    .update(expenseShares)
    .set({ agentId: me })
    .where(and(eq(expenseShares.groupId, groupId), eq(expenseShares.agentId, ph)));
  await tx
    .update(payments)
    .set({ fromId: me })
    .where(and(eq(payments.groupId, groupId), eq(payments.fromId, ph)));
  await tx
    .update(payments)
    .set({ toId: me })
    .where(and(eq(payments.groupId, groupId), eq(payments.toId, ph)));
  const rename = <T extends { handle: string }>(list: T[]) => list.map((x) => (x.handle === ph ? { ...x, handle: myHandle } : x));
  for (const e of named) {
    await tx
      .update(expenses)
      .set({ split: { ...e.split, among: rename(e.split.among) }, paidBy: rename(e.paidBy) })
      .where(eq(expenses.expenseId, e.expenseId));
  }
}
