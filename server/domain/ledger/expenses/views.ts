// How expenses are shown: rows, stored states and history as the wire's shapes.
import { asc, sql } from "drizzle-orm";
import { jsonEach, jsonList, prepared, type Tx } from "../../../../db/client.ts";
import { type expenseHistory, expenseResponses } from "../../../../db/schema/index.ts";
import type { Expense, ExpenseContent, ExpenseHistoryEntry } from "../../../contract/ledger.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { refsByIds } from "../../agents.ts";
import { untrusted } from "../../untrusted.ts";
import { memberRef, type GroupRow } from "../groups/membership.ts";
import { formatAmount, originalWire } from "../money/amounts.ts";
import { sharesOf, stateOfRow, stateOfSnapshot, type ExpenseRow, type ExpenseState, type HistoryAction, type ParticipantShare } from "./store.ts";

export const authorOf = (people: Map<string, AgentRef>, id: string | null) => `@${(id && people.get(id)?.handle) || "a group member"}`;

function contentWire(s: ExpenseState, currency: string, people: Map<string, AgentRef>): ExpenseContent {
  const amounts = (minor: number) => ({ amount_minor: minor, amount: formatAmount(minor, currency) });
  const of = new Map(s.shares.map((p) => [p.handle, p]));
  // Each entry's member: member_id (an agent's agent_id, or a placeholder's own id, which its handle field holds too
  // for v1 clients), name and agent (null for a placeholder). `people` names every participant.
  const memberOf = (handle: string) => {
    const id = of.get(handle)?.agentId;
    const ref = id === undefined ? undefined : people.get(id);
    return { ...(id === undefined ? {} : { member_id: id }), ...(ref ? { member: memberRef(ref) } : {}) };
  };
  const memberOnly = (handle: string) => {
    const { member } = memberOf(handle);
    return member ? { member } : {};
  };
  return {
    kind: s.kind,
    description: untrusted(s.description, `expense description written by ${authorOf(people, s.descriptionBy)}`),
    ...amounts(s.amountMinor),
    currency,
    original: originalWire(s.original),
    date: s.date,
    category: s.category,
    paid_by: s.paidBy.map((p) => ({ handle: p.handle, ...memberOf(p.handle), ...amounts(of.get(p.handle)?.paidMinor ?? 0) })),
    split: { ...s.split, among: s.split.among.map((p) => ({ ...p, ...memberOnly(p.handle) })) },
    shares: s.split.among.map((p) => ({ handle: p.handle, ...memberOf(p.handle), ...amounts(of.get(p.handle)?.shareMinor ?? 0) })),
    notes: s.notes === null ? null : untrusted(s.notes, `expense notes written by ${authorOf(people, s.notesBy)}`),
    repeat: s.repeat,
    repeat_until: s.repeatUntil,
    exchange_rate_source: s.rateSource,
    refs: s.recurringOf ? { ...s.refs, recurring_of: s.recurringOf } : s.refs,
    deleted: s.deleted,
    state: s.state,
  };
}

export type ResponseRow = typeof expenseResponses.$inferSelect;

/** One expense as the wire shows it; `people` names every agent the row, its shares and its responses mention. */
export function expenseWire(r: ExpenseRow, shares: ParticipantShare[], responses: ResponseRow[], people: Map<string, AgentRef>, currency: string): Expense {
  return {
    expense_id: r.expenseId,
    group_id: r.groupId,
    ...contentWire(stateOfRow(r, shares), currency, people),
    next_occurrence: r.nextOccurrence,
    created_by: people.get(r.createdBy)!,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    version: r.version,
    responses: responses.map((x) => ({
      agent: people.get(x.agentId)!,
      action: x.action,
      reason: x.reason === null ? null : untrusted(x.reason, `dispute reason written by @${people.get(x.agentId)!.handle}`),
      version: x.version,
      responded_at: x.respondedAt,
    })),
  };
}

// The list of expenses bound as one value, however long it is (an export's batch, a page).
const responsesOf = prepared((tx) =>
  tx
    .select()
    .from(expenseResponses)
    .where(sql`${expenseResponses.expenseId} IN (SELECT value FROM ${jsonEach("ids")})`)
    .orderBy(asc(expenseResponses.respondedAt), sql`expense_responses.rowid`)
    .prepare(),
);

/**
 * Expenses of one group as the wire shows them, with shares, responses and the agents they name. `known`: what a
 * write call has just written of them (it answers with what it wrote, not with a read that would not see it).
 */
export async function expenseViews(
  tx: Tx,
  group: GroupRow,
  rows: ExpenseRow[],
  known: { shares?: Map<string, ParticipantShare[]>; responses?: ResponseRow[] } = {},
): Promise<Expense[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.expenseId);
  const shares = known.shares ?? (await sharesOf(tx, ids));
  const responses = known.responses ?? (await responsesOf(tx).all({ ids: jsonList(ids) }));
  const people = await refsByIds(tx, [
    ...rows.flatMap((r) => [r.createdBy, r.descriptionBy ?? r.createdBy, ...(r.notesBy ? [r.notesBy] : [])]),
    ...responses.map((r) => r.agentId),
    ...[...shares.values()].flatMap((list) => list.map((p) => p.agentId)),
  ]);
  // By expense in one pass: filtering the list for each row took time of rows times responses.
  const responsesBy = Map.groupBy(responses, (x) => x.expenseId);
  return rows.map((r) => expenseWire(r, shares.get(r.expenseId) ?? [], responsesBy.get(r.expenseId) ?? [], people, group.currency));
}

type HistoryRow = typeof expenseHistory.$inferSelect;

/** get_expense's history: each stored version as the wire shows it, with who changed what. */
export async function historyEntries(tx: Tx, group: GroupRow, entries: HistoryRow[]): Promise<ExpenseHistoryEntry[]> {
  const snapshots = entries.map((e) => stateOfSnapshot(e.snapshot));
  const people = await refsByIds(tx, [
    ...entries.map((e) => e.changedBy),
    ...snapshots.flatMap(({ state: s }) => [s.descriptionBy, ...(s.notesBy ? [s.notesBy] : []), ...s.shares.map((p) => p.agentId)]),
  ]);
  return entries.map((e, i) => ({
    version: e.version,
    action: e.action as HistoryAction,
    changed_by: people.get(e.changedBy)!,
    changed_at: e.changedAt,
    changed_fields: snapshots[i]!.changed,
    expense: contentWire(snapshots[i]!.state, group.currency, people),
  }));
}
