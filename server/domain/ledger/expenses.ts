// Expenses: shares computed from what the caller gives, stored with their history, told to the participants.
import { and, asc, desc, eq, inArray, isNull, sql } from "drizzle-orm";
import type { Tx } from "../../../db/client.ts";
import { agents, expenseHistory, expenseResponses, expenseShares, expenses, groupMembers } from "../../../db/schema/index.ts";
import { iso } from "../../clock.ts";
import { conflict, invalid, notFound } from "../../errors.ts";
import type { Category, Expense, ExpenseContent, ExpenseHistoryEntry, Repeat } from "../../contract/ledger.ts";
import type { AgentRef } from "../../contract/wire.ts";
import { agentByHandle, refsByIds } from "../agents.ts";
import { deliver, deliverAll, resolveItems, type Delivery } from "../inbox.ts";
import { quoted, untrusted } from "../untrusted.ts";
import { decodeCursor, encodeCursor, paginate } from "../../contract/cursor.ts";
import type { Actor, DomainContext } from "../../contract/principal.ts";
import { applyDebts, expenseDebts, reversed } from "./ledger-pairs.ts";
import { checkLimits } from "./limits.ts";
import { assertWritable, memberGroup, refsOfMembers, refsWithKnown, requireMember, writableGroupMembers, type GroupRow } from "./membership.ts";
import { logActivity } from "./activity.ts";
import { formatAmount, inGroupCurrency, originalColumns, originalOfRow, originalWire, type Original } from "./money.ts";
import { nextOccurrenceAfter, today } from "./repeat-dates.ts";
import { allocate, compareText, computeShares, splitPayers, type Payer, type Share, type SplitParticipant } from "./splits.ts";
import type { SplitMode } from "../../contract/ledger.ts";

export type ExpenseRow = typeof expenses.$inferSelect;

/** A current member of a group, as the ledger names them. */
export interface Member {
  agentId: string;
  handle: string;
  displayName: string;
}

/** What one participant paid and owes for one expense, in the group's currency. */
export interface ParticipantShare {
  agentId: string;
  handle: string;
  paidMinor: number;
  shareMinor: number;
}

export interface StoredSplit {
  mode: SplitMode;
  among: { handle: string; value?: string | number }[];
}

/** Everything an expense says at one version; stored as the snapshot of each history entry. */
export interface ExpenseState {
  description: string;
  descriptionBy: string;
  /** In the group's currency. */
  amountMinor: number;
  /** The amount as given in another currency, converted once at exchangeRate. */
  original: Original | null;
  date: string;
  category: Category;
  /** As given: in the original currency when there is one. */
  paidBy: Share[];
  /** As given: exact and adjustment values are in the original currency when there is one. */
  split: StoredSplit;
  /** Split participants in split order, then payers outside the split. */
  shares: ParticipantShare[];
  notes: string | null;
  notesBy: string | null;
  repeat: Repeat;
  refs: Record<string, string>;
  recurringOf: string | null;
  deleted: boolean;
  state: "active" | "disputed";
}

/** The columns of an expense row that hold what add_expense and update_expense set. */
function stateColumns(s: ExpenseState) {
  return {
    description: s.description,
    descriptionBy: s.descriptionBy,
    amountMinor: s.amountMinor,
    ...originalColumns(s.original),
    date: s.date,
    category: s.category,
    split: s.split,
    paidBy: s.paidBy,
    notes: s.notes,
    notesBy: s.notesBy,
    repeat: s.repeat,
    refs: s.refs,
  };
}

/** Fields of add_expense and update_expense. */
export interface ExpenseInput {
  description?: string;
  amount?: string;
  amount_minor?: number;
  currency?: string;
  exchange_rate?: string;
  date?: string;
  category?: Category;
  paid_by?: Payer[];
  split?: { mode: SplitMode; among?: SplitParticipant[] };
  notes?: string | null;
  repeat?: Repeat;
  refs?: Record<string, string>;
}

/** Current members of a group by handle. */
export async function membersByHandle(tx: Tx, groupId: string): Promise<Map<string, Member>> {
  const rows = await tx
    .select({ agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
    .from(groupMembers)
    .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
    .where(and(eq(groupMembers.groupId, groupId), isNull(groupMembers.leftAt)));
  return new Map(rows.map((r) => [r.handle, r]));
}

export function requireParticipant(members: Map<string, Member>, handle: string, path: string): Member {
  const m = members.get(handle);
  if (!m) throw invalid(path, `@${handle} is not a member of this group`);
  return m;
}

// ---------- computing an expense from what the caller gives ----------

/** What fixes the money of an expense: the amount as given (not yet checked), its currency, payers and split. */
interface MoneyDraft {
  currency: string;
  amount?: string | undefined;
  amount_minor?: number | undefined;
  exchangeRate: string | null;
  /** null: defaultPayer paid it all. */
  paidBy: Payer[] | null;
  defaultPayer: string;
  /** null: an equal split among every current member. */
  split: { mode: SplitMode; among?: SplitParticipant[] | undefined } | null;
}

type Computed = Pick<ExpenseState, "amountMinor" | "original" | "paidBy" | "split" | "shares">;

/**
 * Amount, payers and shares in the group's currency. Another currency is converted once, for the total
 * (money.convert: half away from zero); payers' amounts and shares are then that total divided in
 * proportion to their amounts as given (largest remainder), so they still sum to it exactly.
 */
function compute(group: GroupRow, members: Map<string, Member>, d: MoneyDraft): Computed {
  const { given, amountMinor, original } = inGroupCurrency(d, group.currency);
  const foreign = original !== null;
  const payers = splitPayers(given, d.paidBy ?? [{ handle: d.defaultPayer, amount_minor: given }], d.currency);
  const split = d.split ?? { mode: "equal" as const };
  const among: SplitParticipant[] = split.among ?? (split.mode === "equal" ? [...members.keys()].sort(compareText).map((handle) => ({ handle })) : []);
  const shares = computeShares(given, split.mode, among, d.currency);
  payers.forEach((p, i) => requireParticipant(members, p.handle, `paid_by[${i}].handle`));
  shares.forEach((s, i) => requireParticipant(members, s.handle, `split.among[${i}].handle`));

  const converted = (list: Share[]) =>
    foreign
      ? allocate(
          BigInt(amountMinor),
          list.map((s) => BigInt(s.amount_minor)),
          list.map((s) => s.handle),
        ).map(Number)
      : list.map((s) => s.amount_minor);
  const byHandle = new Map<string, ParticipantShare>();
  const entry = (handle: string) => {
    let e = byHandle.get(handle);
    if (!e) byHandle.set(handle, (e = { agentId: members.get(handle)!.agentId, handle, paidMinor: 0, shareMinor: 0 }));
    return e;
  };
  const shareAmounts = converted(shares);
  shares.forEach((s, i) => (entry(s.handle).shareMinor = shareAmounts[i]!));
  const paidAmounts = converted(payers);
  payers.forEach((p, i) => (entry(p.handle).paidMinor = paidAmounts[i]!));
  return {
    amountMinor,
    original,
    paidBy: payers,
    split: {
      mode: split.mode,
      among: among.map((p) => (p.value === undefined || p.value === null ? { handle: p.handle } : { handle: p.handle, value: p.value })),
    },
    shares: [...byHandle.values()],
  };
}

function checkRefs(refs: Record<string, string>): Record<string, string> {
  if (Object.hasOwn(refs, "recurring_of")) throw invalid("refs.recurring_of", "is set by the service on occurrences of a recurring expense");
  return refs;
}

/** Validates and computes a new expense of the group (current `members` by handle) from add_expense's fields. */
export function newExpenseState(
  group: GroupRow,
  members: Map<string, Member>,
  actor: Actor,
  input: ExpenseInput & { description: string },
  now: Date,
): ExpenseState {
  const computed = compute(group, members, {
    currency: input.currency ?? group.currency,
    amount: input.amount,
    amount_minor: input.amount_minor,
    exchangeRate: input.exchange_rate ?? null,
    paidBy: input.paid_by ?? null,
    defaultPayer: actor.handle,
    split: input.split ?? null,
  });
  const notes = input.notes || null;
  return {
    ...computed,
    description: input.description,
    descriptionBy: actor.agentId,
    date: input.date ?? today(now),
    category: input.category ?? "general",
    notes,
    notesBy: notes === null ? null : actor.agentId,
    repeat: input.repeat ?? "none",
    refs: checkRefs(input.refs ?? {}),
    recurringOf: null,
    deleted: false,
    state: "active",
  };
}

// ---------- storing ----------

async function insertShares(tx: Tx, expenseId: string, groupId: string, shares: readonly ParticipantShare[]): Promise<void> {
  await tx.insert(expenseShares).values(shares.map((s) => ({ expenseId, groupId, agentId: s.agentId, paidMinor: s.paidMinor, shareMinor: s.shareMinor })));
}

async function replaceShares(tx: Tx, expenseId: string, groupId: string, shares: readonly ParticipantShare[]): Promise<void> {
  await tx.delete(expenseShares).where(eq(expenseShares.expenseId, expenseId));
  await insertShares(tx, expenseId, groupId, shares);
}

type HistoryAction = ExpenseHistoryEntry["action"];

async function recordHistory(
  tx: Tx,
  expenseId: string,
  version: number,
  action: HistoryAction,
  by: string,
  at: string,
  state: ExpenseState,
  changed: string[],
) {
  await tx.insert(expenseHistory).values({ expenseId, version, action, changedBy: by, changedAt: at, snapshot: { ...state, changed_fields: changed } });
}

export interface InsertOptions {
  /** Tell the other participants (ledger.expense_added). */
  notify: boolean;
  /** Appended to the activity summary, e.g. " (recurring)". */
  activityNote?: string;
}

/**
 * Stores a computed expense as a new row with its shares, first history entry and activity, telling the other
 * participants if asked. `members`: the group's current members, so the authors they name are not read again.
 * Returns the row as a read would give it back.
 */
export async function insertExpense(
  tx: Tx,
  now: Date,
  group: GroupRow,
  members: Map<string, Member>,
  actor: Actor,
  state: ExpenseState,
  opts: InsertOptions,
): Promise<ExpenseRow> {
  await checkLimits(tx, group, expenseDebts(state.shares));
  const expenseId = crypto.randomUUID();
  const at = iso(now);
  const row: ExpenseRow = {
    expenseId,
    groupId: group.groupId,
    ...stateColumns(state),
    nextOccurrence: nextOccurrenceAfter(state.date, state.repeat, state.date),
    recurringOf: state.recurringOf,
    state: "active",
    deleted: false,
    version: 1,
    createdBy: actor.agentId,
    createdAt: at,
    updatedAt: at,
  };
  await tx.insert(expenses).values(row);
  await insertShares(tx, expenseId, group.groupId, state.shares);
  await applyDebts(tx, group.groupId, expenseDebts(state.shares), 1);
  await recordHistory(tx, expenseId, 1, "created", actor.agentId, at, state, []);
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: "expense_added",
    summary: `@${actor.handle} added ${quoted(state.description)}: ${moneyText(state.amountMinor, group.currency)}, paid by ${state.paidBy.map((p) => `@${p.handle}`).join(", ")}, split ${state.split.mode} among ${state.split.among.length}${opts.activityNote ?? ""}`,
    refs: { expense_id: expenseId },
  });
  if (opts.notify) {
    const others = state.shares.filter((s) => s.agentId !== actor.agentId);
    await notify(tx, now, group, actor, expenseId, 1, state, others, "ledger.expense_added", {}, refsOfMembers(members));
  }
  // SQLite keeps text as UTF-8, where a lone surrogate becomes U+FFFD (JSON columns escape it and keep it).
  return { ...row, description: row.description.toWellFormed(), notes: row.notes?.toWellFormed() ?? null };
}

// ---------- reading ----------

/** "12.50 EUR": an amount as summaries and messages show it. */
export const moneyText = (minor: number | bigint, currency: string) => `${formatAmount(minor, currency)} ${currency}`;

async function sharesOf(tx: Tx, expenseIds: string[]): Promise<Map<string, ParticipantShare[]>> {
  const rows = expenseIds.length
    ? await tx
        .select({
          expenseId: expenseShares.expenseId,
          agentId: expenseShares.agentId,
          handle: agents.handle,
          paidMinor: expenseShares.paidMinor,
          shareMinor: expenseShares.shareMinor,
        })
        .from(expenseShares)
        .innerJoin(agents, eq(agents.agentId, expenseShares.agentId))
        .where(inArray(expenseShares.expenseId, expenseIds))
    : [];
  const byExpense = new Map<string, ParticipantShare[]>();
  for (const { expenseId, ...s } of rows) {
    const list = byExpense.get(expenseId) ?? [];
    list.push(s);
    byExpense.set(expenseId, list);
  }
  return byExpense;
}

/** The stored state of a row; shares ordered as the split lists them, then payers outside it. */
function stateOfRow(row: ExpenseRow, shares: ParticipantShare[]): ExpenseState {
  const order = [...row.split.among.map((p) => p.handle), ...row.paidBy.map((p) => p.handle)];
  const rank = (h: string) => order.indexOf(h);
  return {
    description: row.description,
    descriptionBy: row.descriptionBy ?? row.createdBy,
    amountMinor: row.amountMinor,
    original: originalOfRow(row),
    date: row.date,
    category: (row.category ?? "general") as Category,
    paidBy: row.paidBy,
    split: row.split as StoredSplit,
    shares: [...shares].sort((a, b) => rank(a.handle) - rank(b.handle)),
    notes: row.notes,
    notesBy: row.notesBy,
    repeat: row.repeat,
    refs: row.refs,
    recurringOf: row.recurringOf,
    deleted: row.deleted,
    state: row.state,
  };
}

/** The stored state of one expense. */
export async function storedState(tx: Tx, row: ExpenseRow): Promise<ExpenseState> {
  return stateOfRow(row, (await sharesOf(tx, [row.expenseId])).get(row.expenseId) ?? []);
}

const authorOf = (people: Map<string, AgentRef>, id: string | null) => `@${(id && people.get(id)?.handle) || "a group member"}`;

function contentWire(s: ExpenseState, currency: string, people: Map<string, AgentRef>): ExpenseContent {
  const amounts = (minor: number) => ({ amount_minor: minor, amount: formatAmount(minor, currency) });
  const of = new Map(s.shares.map((p) => [p.handle, p]));
  return {
    description: untrusted(s.description, `expense description written by ${authorOf(people, s.descriptionBy)}`),
    ...amounts(s.amountMinor),
    currency,
    original: originalWire(s.original),
    date: s.date,
    category: s.category,
    paid_by: s.paidBy.map((p) => ({ handle: p.handle, ...amounts(of.get(p.handle)?.paidMinor ?? 0) })),
    split: s.split,
    shares: s.split.among.map((p) => ({ handle: p.handle, ...amounts(of.get(p.handle)?.shareMinor ?? 0) })),
    notes: s.notes === null ? null : untrusted(s.notes, `expense notes written by ${authorOf(people, s.notesBy)}`),
    repeat: s.repeat,
    refs: s.recurringOf ? { ...s.refs, recurring_of: s.recurringOf } : s.refs,
    deleted: s.deleted,
    state: s.state,
  };
}

type ResponseRow = typeof expenseResponses.$inferSelect;

/** One expense as the wire shows it; `people` names every agent the row, its shares and its responses mention. */
function expenseWire(r: ExpenseRow, shares: ParticipantShare[], responses: ResponseRow[], people: Map<string, AgentRef>, currency: string): Expense {
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

/** Expenses of one group as the wire shows them, with shares, responses and the agents they name. */
export async function expenseViews(tx: Tx, group: GroupRow, rows: ExpenseRow[]): Promise<Expense[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.expenseId);
  const shares = await sharesOf(tx, ids);
  const responses = await tx
    .select()
    .from(expenseResponses)
    .where(inArray(expenseResponses.expenseId, ids))
    .orderBy(asc(expenseResponses.respondedAt), sql`expense_responses.rowid`);
  const people = await refsByIds(tx, [
    ...rows.flatMap((r) => [r.createdBy, r.descriptionBy ?? r.createdBy, ...(r.notesBy ? [r.notesBy] : [])]),
    ...responses.map((r) => r.agentId),
  ]);
  return rows.map((r) =>
    expenseWire(
      r,
      shares.get(r.expenseId) ?? [],
      responses.filter((x) => x.expenseId === r.expenseId),
      people,
      group.currency,
    ),
  );
}

async function expenseView(tx: Tx, group: GroupRow, expenseId: string): Promise<Expense> {
  const row = (await tx.select().from(expenses).where(eq(expenses.expenseId, expenseId)).get())!;
  return (await expenseViews(tx, group, [row]))[0]!;
}

/** The expense and its group if the caller is a current member; anyone else learns nothing (NOT_FOUND). */
async function visibleExpense(tx: Tx, expenseId: string, agentId: string): Promise<{ row: ExpenseRow; group: GroupRow }> {
  const row = await tx.select().from(expenses).where(eq(expenses.expenseId, expenseId)).get();
  const group = row && (await memberGroup(tx, row.groupId, agentId));
  if (!row || !group) throw notFound("Expense");
  return { row, group };
}

/** As visibleExpense, and the group accepts changes (archived -> CONFLICT). */
async function changeableExpense(tx: Tx, expenseId: string, agentId: string) {
  const { row, group } = await visibleExpense(tx, expenseId, agentId);
  return { row, group: assertWritable(group) };
}

// ---------- the tools' domain ----------

export async function addExpense({ tx, now, actor }: DomainContext, input: ExpenseInput & { group_id: string; description: string }): Promise<Expense> {
  const { group, members } = await writableGroupMembers(tx, input.group_id, actor.agentId);
  const state = newExpenseState(group, members, actor, input, now);
  const row = await insertExpense(tx, now, group, members, actor, state, { notify: true });
  // Just written, by a member, with no responses yet: nothing to read back.
  return expenseWire(row, state.shares, [], refsOfMembers(members), group.currency);
}

export async function getExpense({ tx, actor: { agentId } }: DomainContext, expenseId: string): Promise<{ expense: Expense; history: ExpenseHistoryEntry[] }> {
  const { row, group } = await visibleExpense(tx, expenseId, agentId);
  const entries = await tx.select().from(expenseHistory).where(eq(expenseHistory.expenseId, expenseId)).orderBy(asc(expenseHistory.version));
  const snapshots = entries.map((e) => e.snapshot as unknown as ExpenseState & { changed_fields: string[] });
  const people = await refsByIds(tx, [...entries.map((e) => e.changedBy), ...snapshots.flatMap((s) => [s.descriptionBy, ...(s.notesBy ? [s.notesBy] : [])])]);
  return {
    expense: (await expenseViews(tx, group, [row]))[0]!,
    history: entries.map((e, i) => ({
      version: e.version,
      action: e.action as HistoryAction,
      changed_by: people.get(e.changedBy)!,
      changed_at: e.changedAt,
      changed_fields: snapshots[i]!.changed_fields,
      expense: contentWire(snapshots[i]!, group.currency, people),
    })),
  };
}

export interface ListExpensesInput {
  group_id: string;
  limit?: number;
  cursor?: string;
  since_date?: string;
  until_date?: string;
  involving?: string;
  include_deleted?: boolean;
}

/** Newest first: by date, then by the order they were added in (rowid). */
export async function listExpenses(
  { tx, actor: { agentId } }: DomainContext,
  input: ListExpensesInput,
): Promise<{ expenses: Expense[]; next_cursor: string | null }> {
  const group = await requireMember(tx, input.group_id, agentId);
  const limit = input.limit ?? 50;
  let involving: string | undefined;
  if (input.involving !== undefined) {
    const agent = await agentByHandle(tx, input.involving);
    if (!agent) throw invalid("involving", `no agent has the handle ${input.involving}`);
    involving = agent.agentId;
  }
  const after = input.cursor === undefined ? undefined : decodeCursor(input.cursor, ["string", "number"] as const);
  const query = tx
    .select({ e: expenses, seq: sql<number>`expenses.rowid` })
    .from(expenses)
    .where(
      and(
        eq(expenses.groupId, group.groupId),
        input.include_deleted ? undefined : eq(expenses.deleted, false),
        input.since_date === undefined ? undefined : sql`${expenses.date} >= ${input.since_date}`,
        input.until_date === undefined ? undefined : sql`${expenses.date} <= ${input.until_date}`,
        involving === undefined
          ? undefined
          : sql`EXISTS (SELECT 1 FROM expense_shares s WHERE s.expense_id = ${expenses.expenseId} AND s.agent_id = ${involving})`,
        after === undefined ? undefined : sql`(${expenses.date}, expenses.rowid) < (${after[0]}, ${after[1]})`,
      ),
    )
    .orderBy(desc(expenses.date), sql`expenses.rowid DESC`);
  const { page, next_cursor } = await paginate(
    limit,
    (n) => query.limit(n),
    (last) => encodeCursor([last.e.date, last.seq]),
  );
  return {
    expenses: await expenseViews(
      tx,
      group,
      page.map((r) => r.e),
    ),
    next_cursor,
  };
}

const FIELD_NAMES: [keyof ExpenseState, string][] = [
  ["description", "description"],
  ["amountMinor", "amount"],
  ["original", "original"],
  ["date", "date"],
  ["category", "category"],
  ["paidBy", "paid_by"],
  ["split", "split"],
  ["shares", "shares"],
  ["notes", "notes"],
  ["repeat", "repeat"],
  ["refs", "refs"],
];

function changedFields(before: ExpenseState, after: ExpenseState): string[] {
  return FIELD_NAMES.filter(([k]) => JSON.stringify(before[k]) !== JSON.stringify(after[k])).map(([, name]) => name);
}

/** update_expense's money: the stored amount, currency, payers and split with the given ones replacing them. */
function moneyForUpdate(before: ExpenseState, group: GroupRow, input: ExpenseInput): MoneyDraft {
  const currency = before.original?.currency ?? group.currency;
  const newAmount = input.amount !== undefined || input.amount_minor !== undefined;
  const newCurrency = input.currency !== undefined && input.currency !== currency;
  if (newCurrency && !newAmount) throw invalid("amount", "give the amount again when changing the currency");
  const singlePayer = before.paidBy.length === 1 ? before.paidBy[0]!.handle : null;
  return {
    currency: input.currency ?? currency,
    ...(newAmount ? { amount: input.amount, amount_minor: input.amount_minor } : { amount_minor: before.original?.amountMinor ?? before.amountMinor }),
    exchangeRate: input.exchange_rate ?? (newCurrency ? null : (before.original?.exchangeRate ?? null)),
    // A single payer keeps paying it all when the amount changes; several payers must be given again.
    paidBy: input.paid_by ?? (singlePayer === null ? before.paidBy : null),
    defaultPayer: singlePayer ?? before.paidBy[0]!.handle,
    split: input.split ?? before.split,
  };
}

export async function updateExpense(
  { tx, now, actor }: DomainContext,
  input: ExpenseInput & { expense_id: string; expected_version: number },
): Promise<{ expense: Expense; changed_fields: string[] }> {
  const { row, group } = await changeableExpense(tx, input.expense_id, actor.agentId);
  if (row.deleted) throw conflict("The expense is deleted; restore it with restore_expense before changing it.");
  if (row.version !== input.expected_version) {
    throw conflict(
      `The expense changed since you read it: it is at version ${row.version}, not ${input.expected_version}. Read it again with get_expense and apply your change to the current version.`,
      { current_version: row.version },
    );
  }
  const before = await storedState(tx, row);
  const members = await membersByHandle(tx, group.groupId);
  const computed = compute(group, members, moneyForUpdate(before, group, input));
  const after: ExpenseState = {
    ...before,
    ...computed,
    description: input.description ?? before.description,
    date: input.date ?? before.date,
    category: input.category ?? before.category,
    notes: input.notes === undefined ? before.notes : input.notes || null,
    repeat: input.repeat ?? before.repeat,
    refs: input.refs === undefined ? before.refs : checkRefs(input.refs),
  };
  const changed = changedFields(before, after);
  if (!changed.length) return { expense: (await expenseViews(tx, group, [row]))[0]!, changed_fields: [] };
  if (changed.includes("description")) after.descriptionBy = actor.agentId;
  if (changed.includes("notes")) after.notesBy = after.notes === null ? null : actor.agentId;
  // The old version leaves the balances and the new one comes in, judged as one change.
  await checkLimits(tx, group, [...reversed(expenseDebts(before.shares)), ...expenseDebts(after.shares)]);
  // A change answers any dispute of the old version: the participants judge the new one.
  after.state = "active";
  const version = row.version + 1;
  const at = iso(now);
  await tx
    .update(expenses)
    .set({
      ...stateColumns(after),
      nextOccurrence: changed.includes("repeat") || changed.includes("date") ? await nextAfterGenerated(tx, row.expenseId, after) : row.nextOccurrence,
      state: after.state,
      version,
      updatedAt: at,
    })
    .where(eq(expenses.expenseId, row.expenseId));
  await replaceShares(tx, row.expenseId, group.groupId, after.shares);
  await applyDebts(tx, group.groupId, expenseDebts(before.shares), -1);
  await applyDebts(tx, group.groupId, expenseDebts(after.shares), 1);
  await recordHistory(tx, row.expenseId, version, "updated", actor.agentId, at, after, changed);
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: "expense_updated",
    summary: `@${actor.handle} changed ${quoted(after.description)}: ${changed.join(", ")}`,
    refs: { expense_id: row.expenseId },
  });
  await resolveItems(tx, row.createdBy, "ledger.expense_disputed", { expense_id: row.expenseId });
  const was = new Set(before.shares.map((s) => s.agentId));
  const is = new Set(after.shares.map((s) => s.agentId));
  const others = (list: ParticipantShare[]) => list.filter((s) => s.agentId !== actor.agentId);
  const known = refsOfMembers(members);
  await notify(
    tx,
    now,
    group,
    actor,
    row.expenseId,
    version,
    after,
    others(after.shares.filter((s) => !was.has(s.agentId))),
    "ledger.expense_added",
    {},
    known,
  );
  const dropped = others(before.shares.filter((s) => !is.has(s.agentId)));
  if (dropped.length)
    await resolveItems(
      tx,
      dropped.map((s) => s.agentId),
      "ledger.expense_added",
      { expense_id: row.expenseId },
    );
  // Those still in it see their new share; those dropped from it see a share of zero.
  const told = [...others(after.shares.filter((s) => was.has(s.agentId))), ...dropped.map((s) => ({ ...s, paidMinor: 0, shareMinor: 0 }))];
  await notify(tx, now, group, actor, row.expenseId, version, after, told, "ledger.expense_updated", { changed_fields: changed }, known);
  return { expense: await expenseView(tx, group, row.expenseId), changed_fields: changed };
}

/** A series' next date after its start and after every occurrence already made. */
async function nextAfterGenerated(tx: Tx, expenseId: string, s: ExpenseState): Promise<string | null> {
  const made = await tx
    .select({ last: sql<string | null>`max(${expenses.date})` })
    .from(expenses)
    .where(eq(expenses.recurringOf, expenseId))
    .get();
  const last = made?.last && made.last > s.date ? made.last : s.date;
  return nextOccurrenceAfter(s.date, s.repeat, last);
}

/** Soft delete (deleted true) or restore (false): the expense leaves or rejoins the balances; a new version either way. */
export async function setDeleted({ tx, now, actor }: DomainContext, expenseId: string, deleted: boolean): Promise<Expense> {
  const { row, group } = await changeableExpense(tx, expenseId, actor.agentId);
  if (row.deleted === deleted) {
    throw conflict(deleted ? "The expense is already deleted." : "The expense is not deleted; there is nothing to restore.");
  }
  const state = await storedState(tx, row);
  let known = new Map<string, AgentRef>();
  if (!deleted) {
    const members = await membersByHandle(tx, group.groupId);
    const gone = state.shares.find((s) => !members.has(s.handle));
    if (gone) throw conflict(`@${gone.handle} is no longer a member of the group, so the expense cannot count in its balances again.`);
    known = refsOfMembers(members);
  }
  // Taking an expense out can raise a total as well as putting it back: it may have offset other debts.
  await checkLimits(tx, group, deleted ? reversed(expenseDebts(state.shares)) : expenseDebts(state.shares));
  const version = row.version + 1;
  const at = iso(now);
  await tx.update(expenses).set({ deleted, version, updatedAt: at }).where(eq(expenses.expenseId, row.expenseId));
  await applyDebts(tx, group.groupId, expenseDebts(state.shares), deleted ? -1 : 1);
  const after = { ...state, deleted };
  await recordHistory(tx, row.expenseId, version, deleted ? "deleted" : "restored", actor.agentId, at, after, ["deleted"]);
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: deleted ? "expense_deleted" : "expense_restored",
    summary: `@${actor.handle} ${deleted ? "deleted" : "restored"} ${quoted(after.description)} (${moneyText(after.amountMinor, group.currency)})`,
    refs: { expense_id: row.expenseId },
  });
  const others = state.shares.filter((s) => s.agentId !== actor.agentId);
  if (deleted) {
    // Nothing is left to confirm or to fix.
    await resolveItems(
      tx,
      state.shares.map((s) => s.agentId),
      "ledger.expense_added",
      { expense_id: row.expenseId },
    );
    await resolveItems(tx, row.createdBy, "ledger.expense_disputed", { expense_id: row.expenseId });
    await notify(tx, now, group, actor, row.expenseId, version, after, others, "ledger.expense_deleted");
  } else {
    await notify(
      tx,
      now,
      group,
      actor,
      row.expenseId,
      version,
      after,
      others,
      "ledger.expense_updated",
      { changed_fields: ["deleted"], change: "restored" },
      known,
    );
  }
  return expenseView(tx, group, row.expenseId);
}

export async function respondExpense(
  { tx, now, actor }: DomainContext,
  input: { expense_id: string; action: "confirm" | "dispute"; reason?: string },
): Promise<Expense> {
  if (input.action === "dispute" && !input.reason?.trim()) throw invalid("reason", "say why you dispute the expense");
  if (input.action === "confirm" && input.reason !== undefined) throw invalid("reason", "give a reason only with action dispute");
  const { row, group } = await changeableExpense(tx, input.expense_id, actor.agentId);
  if (row.deleted) throw conflict("The expense is deleted; there is nothing to confirm or dispute.");
  const shares = (await sharesOf(tx, [row.expenseId])).get(row.expenseId) ?? [];
  if (!shares.some((s) => s.agentId === actor.agentId)) {
    throw conflict("Only the expense's participants (those who paid or share it) can confirm or dispute it.");
  }
  const at = iso(now);
  const reason = input.action === "dispute" ? input.reason!.trim() : null;
  const response = { action: input.action, reason, version: row.version, respondedAt: at };
  await tx
    .insert(expenseResponses)
    .values({ expenseId: row.expenseId, agentId: actor.agentId, ...response })
    .onConflictDoUpdate({ target: [expenseResponses.expenseId, expenseResponses.agentId], set: response });
  const disputes = await tx
    .select({ n: sql<number>`count(*)` })
    .from(expenseResponses)
    .where(and(eq(expenseResponses.expenseId, row.expenseId), eq(expenseResponses.version, row.version), eq(expenseResponses.action, "dispute")))
    .get();
  const state = Number(disputes?.n ?? 0) > 0 ? "disputed" : "active";
  if (state !== row.state) await tx.update(expenses).set({ state, updatedAt: at }).where(eq(expenses.expenseId, row.expenseId));
  await resolveItems(tx, actor.agentId, "ledger.expense_added", { expense_id: row.expenseId });
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: input.action === "confirm" ? "expense_confirmed" : "expense_disputed",
    summary:
      input.action === "confirm"
        ? `@${actor.handle} confirmed ${quoted(row.description)}`
        : `@${actor.handle} disputed ${quoted(row.description)}: ${quoted(reason!)}`,
    refs: { expense_id: row.expenseId },
  });
  if (input.action === "confirm") {
    await resolveItems(tx, row.createdBy, "ledger.expense_disputed", { expense_id: row.expenseId, agent_id: actor.agentId });
  } else if (row.createdBy !== actor.agentId) {
    await deliver(tx, now, {
      to: row.createdBy,
      type: "ledger.expense_disputed",
      app: "ledger",
      from: actor.agentId,
      summaryMd: `@${actor.handle} disputes ${quoted(row.description)} (${moneyText(row.amountMinor, group.currency)}) in ${quoted(group.name, 40)}, saying ${quoted(reason!)}. Check it with get_expense, then fix it with update_expense or remove it with delete_expense.`,
      payload: {
        group_id: group.groupId,
        expense_id: row.expenseId,
        version: row.version,
        description: untrusted(
          row.description,
          `expense description written by ${authorOf(await refsByIds(tx, [row.descriptionBy ?? row.createdBy]), row.descriptionBy ?? row.createdBy)}`,
        ),
        amount_minor: row.amountMinor,
        amount: formatAmount(row.amountMinor, group.currency),
        currency: group.currency,
        disputed_by: actor.handle,
      },
      note: untrusted(reason!, `dispute reason written by @${actor.handle}`),
      refs: { group_id: group.groupId, expense_id: row.expenseId, agent_id: actor.agentId },
      requiresAction: true,
      suggestedTools: ["get_expense", "update_expense", "delete_expense"],
    });
  }
  return expenseView(tx, group, row.expenseId);
}

// ---------- telling participants ----------

type ExpenseItemType = "ledger.expense_added" | "ledger.expense_updated" | "ledger.expense_deleted";

async function notify(
  tx: Tx,
  now: Date,
  group: GroupRow,
  actor: Actor,
  expenseId: string,
  version: number,
  s: ExpenseState,
  recipients: ParticipantShare[],
  type: ExpenseItemType,
  extra: Record<string, unknown> = {},
  known: Map<string, AgentRef> = new Map(),
): Promise<void> {
  if (!recipients.length) return;
  const people = await refsWithKnown(tx, [s.descriptionBy, ...(s.notesBy ? [s.notesBy] : [])], known);
  const what = `${quoted(s.description)} (${moneyText(s.amountMinor, group.currency)})`;
  const where = `in ${quoted(group.name, 40)}`;
  const deliveries = recipients.map((r): Delivery => {
    const share = moneyText(r.shareMinor, group.currency);
    const summaryMd =
      type === "ledger.expense_added"
        ? `@${actor.handle} added ${what} ${where}; your share is ${share}. Ask your human, then confirm or dispute it with respond_expense.`
        : type === "ledger.expense_deleted"
          ? `@${actor.handle} deleted ${what} ${where}; it no longer counts in the balances.`
          : extra.change === "restored"
            ? `@${actor.handle} restored ${what} ${where}; your share is ${share} again.`
            : `@${actor.handle} changed ${what} ${where} (${(extra.changed_fields as string[]).join(", ")}); your share is now ${share}.`;
    return {
      to: r.agentId,
      type,
      app: "ledger",
      from: actor.agentId,
      summaryMd,
      payload: {
        group_id: group.groupId,
        expense_id: expenseId,
        version,
        description: untrusted(s.description, `expense description written by ${authorOf(people, s.descriptionBy)}`),
        amount_minor: s.amountMinor,
        amount: formatAmount(s.amountMinor, group.currency),
        currency: group.currency,
        date: s.date,
        your_share_minor: r.shareMinor,
        your_share: formatAmount(r.shareMinor, group.currency),
        you_paid_minor: r.paidMinor,
        you_paid: formatAmount(r.paidMinor, group.currency),
        ...extra,
      },
      note: s.notes === null ? null : untrusted(s.notes, `expense notes written by ${authorOf(people, s.notesBy)}`),
      refs: { group_id: group.groupId, expense_id: expenseId },
      requiresAction: type === "ledger.expense_added",
      suggestedTools:
        type === "ledger.expense_added" ? ["respond_expense"] : type === "ledger.expense_deleted" ? ["get_balances"] : ["get_expense", "respond_expense"],
    };
  });
  await deliverAll(tx, now, deliveries);
}
