// Expenses: the rules of changing, deleting and answering an expense, and the tools' operations.
import { and, asc, desc, eq, sql } from "drizzle-orm";
import { snapshotOf, type Tx } from "../../../../db/client.ts";
import { expenseHistory, expenseResponses, expenses } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { AppError, conflict, invalid, notFound } from "../../../errors.ts";
import type { Expense, ExpenseHistoryEntry } from "../../../contract/ledger.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { agentByHandle } from "../../agents.ts";
import { resolveItems } from "../../inbox.ts";
import { quoted } from "../../untrusted.ts";
import { decodeCursor, encodeCursor, paginate } from "../../../contract/cursor.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import { expensesAddedToday, requireExpenseBudget } from "../../quotas.ts";
import {
  assertWritable,
  labelsOf,
  lookupMember,
  memberGroup,
  membersByHandle,
  refsOfMembers,
  requireMember,
  withMemberKeys,
  writableGroupMembers,
  type GroupRow,
  type Member,
  type MemberRefInput,
} from "../groups/membership.ts";
import { resolveClaimWhenAnswered } from "../groups/placeholders.ts";
import type { Payer, SplitParticipant } from "../money/splits.ts";
import type { SplitMode } from "../../../contract/ledger.ts";
import { requireHomeHere } from "../events/home.ts";
import { logActivity } from "../groups/activity.ts";
import {
  checkRefs,
  compute,
  createExpense,
  newExpenseState,
  replaceVersion,
  setDeleted as setDeletedVersion,
  sharesOf,
  storedState,
  type ExpenseInput,
  type ExpenseRow,
  type ExpenseState,
  type MoneyDraft,
  type ParticipantShare,
} from "./store.ts";
import { tellAdded, tellDeleted, tellDisputed, tellRestored, tellUpdated } from "./notices.ts";
import { checkSeries } from "./recurring.ts";
import { knownRate } from "../money/rates.ts";
import { today } from "./repeat-dates.ts";
import { expenseViews, expenseWire, historyEntries } from "./views.ts";

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
  await requireHomeHere(tx, group.groupId);
  return { row, group: assertWritable(group) };
}

// ---------- the tools' domain ----------

/** add_expense's and update_expense's fields as the tools take them: payers and participants by handle or member_id. */
export type ExpenseToolInput = Omit<ExpenseInput, "paid_by" | "split"> & {
  paid_by?: (Omit<Payer, "handle"> & MemberRefInput)[] | undefined;
  split?: { mode: SplitMode; among?: (Omit<SplitParticipant, "handle"> & MemberRefInput)[] | undefined } | undefined;
};

/** The fields with each payer and participant named by the members map's key (placeholders by member_id). */
const keyed = <T extends ExpenseToolInput>(members: Map<string, Member>, input: T) =>
  withMemberKeys(members, input) as Omit<T, "paid_by" | "split"> & ExpenseInput;

export async function addExpense(ctx: DomainContext, input: ExpenseToolInput & { group_id: string; description: string }): Promise<Expense> {
  return (await addExpenseCounted(ctx, input)).expense;
}

/** add_expense: the expense, and how many past occurrences of its series the next job run makes. */
export async function addExpenseCounted(
  ctx: DomainContext,
  toolInput: ExpenseToolInput & { group_id: string; description: string },
): Promise<{ expense: Expense; past_occurrences: number }> {
  const { tx, now, actor } = ctx;
  // Read together (one round trip on a remote primary); membership is judged first, so a caller who is not a member
  // learns only that.
  const [{ group, members }, added] = await Promise.all([
    writableGroupMembers(tx, toolInput.group_id, actor.agentId),
    expensesAddedToday(ctx, toolInput.group_id),
  ]);
  await requireExpenseBudget(ctx, toolInput.group_id, added);
  const input = keyed(members, toolInput);
  // Another currency without a rate: the fetched reference rate of the expense's date, if one is known.
  const fetched =
    input.currency !== undefined && input.currency !== group.currency && input.exchange_rate === undefined
      ? await knownRate(tx, input.currency, group.currency, input.date ?? today(now))
      : null;
  const state = newExpenseState(group, members, actor, fetched ? { ...input, exchange_rate: fetched.rate } : input, now);
  state.rateSource = fetched?.source ?? null;
  const pastOccurrences = checkSeries(state, state.date, now);
  const row = await createExpense(tx, now, group, actor, state);
  const recipients = state.shares.filter((s) => s.agentId !== actor.agentId);
  await tellAdded({ tx, now, group, actor, expenseId: row.expenseId, version: 1, state, recipients, known: refsOfMembers(members) });
  // Just written, by a member, with no responses yet: nothing to read back.
  return { expense: expenseWire(row, state.shares, [], refsOfMembers(members), group.currency), past_occurrences: pastOccurrences };
}

export async function getExpense({ tx, actor: { agentId } }: DomainContext, expenseId: string): Promise<{ expense: Expense; history: ExpenseHistoryEntry[] }> {
  const { row, group } = await visibleExpense(tx, expenseId, agentId);
  const entries = await tx.select().from(expenseHistory).where(eq(expenseHistory.expenseId, expenseId)).orderBy(asc(expenseHistory.version));
  return { expense: (await expenseViews(tx, group, [row]))[0]!, history: await historyEntries(tx, group, entries) };
}

export interface ListExpensesInput {
  group_id: string;
  limit?: number;
  cursor?: string;
  since_date?: string;
  until_date?: string;
  involving?: string;
  include_deleted?: boolean;
  /** Words the description or the notes contain, any case (the group page's search; not a tool argument). */
  search?: string;
  /** Like involving, by member_id: also a placeholder member, who has no handle (the group page's filter). */
  involving_member?: string;
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
    // A current member by handle, member_id or a placeholder's name; a former member by handle still.
    const members = await membersByHandle(tx, group.groupId);
    const found = lookupMember(members, input.involving);
    const former = "error" in found ? await agentByHandle(tx, input.involving.trim().replace(/^@/, "")) : undefined;
    if ("error" in found && !former) throw invalid("involving", found.error);
    involving = "key" in found ? members.get(found.key)!.agentId : former!.agentId;
  }
  if (input.involving_member !== undefined) involving = input.involving_member;
  const after = input.cursor === undefined ? undefined : decodeCursor(input.cursor, ["string", "number"] as const);
  const search = input.search?.trim() || undefined;
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
        // Both sides folded by SQLite's lower() alike (ASCII letters only).
        search === undefined
          ? undefined
          : sql`(instr(lower(${expenses.description}), lower(${search})) > 0 OR instr(lower(coalesce(${expenses.notes}, '')), lower(${search})) > 0)`,
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
  ["kind", "kind"],
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
  ["repeatUntil", "repeat_until"],
  ["rateSource", "exchange_rate_source"],
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
  toolInput: ExpenseToolInput & { expense_id: string; expected_version: number },
): Promise<{ expense: Expense; changed_fields: string[] }> {
  let input = toolInput as ExpenseInput & { expense_id: string; expected_version: number };
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
  input = keyed(members, toolInput);
  const money = moneyForUpdate(before, group, input);
  const fetched =
    money.currency !== group.currency && money.exchangeRate === null ? await knownRate(tx, money.currency, group.currency, input.date ?? before.date) : null;
  if (fetched) money.exchangeRate = fetched.rate;
  const computed = compute(group, members, money);
  const after: ExpenseState = {
    ...before,
    ...computed,
    kind: input.kind ?? before.kind,
    description: input.description ?? before.description,
    date: input.date ?? before.date,
    category: input.category ?? before.category,
    notes: input.notes === undefined ? before.notes : input.notes || null,
    repeat: input.repeat ?? before.repeat,
    // The rate's source: the fetched one, none for a rate given (or none needed), else as it was.
    rateSource: fetched ? fetched.source : input.exchange_rate !== undefined || money.currency === group.currency ? null : before.rateSource,
    // A series made to not repeat has no end date left either.
    repeatUntil: input.repeat_until !== undefined ? input.repeat_until : input.repeat === "none" ? null : before.repeatUntil,
    refs: input.refs === undefined ? before.refs : checkRefs(input.refs),
  };
  const changed = changedFields(before, after);
  if (changed.includes("date") || changed.includes("repeat") || changed.includes("repeat_until")) {
    checkSeries(after, (await lastOccurrence(tx, row.expenseId)) ?? after.date, now);
  }
  if (!changed.length) return { expense: (await expenseViews(tx, group, [row]))[0]!, changed_fields: [] };
  if (changed.includes("description")) after.descriptionBy = actor.agentId;
  if (changed.includes("notes")) after.notesBy = after.notes === null ? null : actor.agentId;
  // A change answers any dispute of the old version: the participants judge the new one.
  after.state = "active";
  const written = await replaceVersion(tx, now, { group, actor, row, before, after, changed });
  const version = written.version;
  await resolveItems(tx, row.createdBy, "ledger.expense_disputed", { expense_id: row.expenseId });
  const was = new Set(before.shares.map((s) => s.agentId));
  const is = new Set(after.shares.map((s) => s.agentId));
  const others = (list: ParticipantShare[]) => list.filter((s) => s.agentId !== actor.agentId);
  const notice = { tx, now, group, actor, expenseId: row.expenseId, version, state: after, known: refsOfMembers(members) };
  await tellAdded({ ...notice, recipients: others(after.shares.filter((s) => !was.has(s.agentId))) });
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
  await tellUpdated({ ...notice, recipients: told, changedFields: changed });
  return { expense: (await expenseViews(tx, group, [written], { shares: new Map([[written.expenseId, after.shares]]) }))[0]!, changed_fields: changed };
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
    if (gone) {
      const who = (await labelsOf(tx, [gone.agentId])).get(gone.agentId);
      throw conflict(`${who} is no longer a member of the group, so the expense cannot count in its balances again.`);
    }
    known = refsOfMembers(members);
  }
  const { version, after, written } = await setDeletedVersion(tx, now, { group, actor, row, state, deleted });
  const notice = {
    tx,
    now,
    group,
    actor,
    expenseId: row.expenseId,
    version,
    state: after,
    recipients: state.shares.filter((s) => s.agentId !== actor.agentId),
  };
  if (deleted) {
    // Nothing is left to confirm or to fix.
    await resolveItems(
      tx,
      state.shares.map((s) => s.agentId),
      "ledger.expense_added",
      { expense_id: row.expenseId },
    );
    await resolveItems(tx, row.createdBy, "ledger.expense_disputed", { expense_id: row.expenseId });
    await tellDeleted(notice);
  } else {
    await tellRestored({ ...notice, known });
  }
  return (await expenseViews(tx, group, [written], { shares: new Map([[row.expenseId, state.shares]]) }))[0]!;
}

export async function respondExpense(
  { tx, now, actor }: DomainContext,
  input: { expense_id: string; action: "confirm" | "dispute"; reason?: string },
  /** The expenses answered so far in the same call (respondExpenses), which its reads of the snapshot do not show. */
  answered: string[] = [],
): Promise<Expense> {
  if (input.action === "dispute" && !input.reason?.trim()) throw invalid("reason", "say why you dispute the expense");
  if (input.action === "confirm" && input.reason !== undefined) throw invalid("reason", "give a reason only with action dispute");
  // Each expense is answered once a call, and read before: the snapshot has it as it is.
  const view = snapshotOf(tx);
  const { row, group } = await changeableExpense(view, input.expense_id, actor.agentId);
  if (row.deleted) throw conflict("The expense is deleted; there is nothing to confirm or dispute.");
  const shares = (await sharesOf(view, [row.expenseId])).get(row.expenseId) ?? [];
  if (!shares.some((s) => s.agentId === actor.agentId)) {
    throw conflict("Only the expense's participants (those who paid or share it) can confirm or dispute it.");
  }
  const at = iso(now);
  const reason = input.action === "dispute" ? input.reason!.trim() : null;
  const response = { action: input.action, reason, version: row.version, respondedAt: at };
  // As a read after the upsert would list them: by time, then by row (the caller's keeps its row when it answers again).
  const mine = { expenseId: row.expenseId, agentId: actor.agentId, ...response };
  const before = await view
    .select()
    .from(expenseResponses)
    .where(eq(expenseResponses.expenseId, row.expenseId))
    .orderBy(asc(expenseResponses.respondedAt), sql`expense_responses.rowid`);
  const responses = (before.some((r) => r.agentId === actor.agentId) ? before.map((r) => (r.agentId === actor.agentId ? mine : r)) : [...before, mine]).sort(
    (a, b) => (a.respondedAt < b.respondedAt ? -1 : a.respondedAt > b.respondedAt ? 1 : 0),
  );
  await tx
    .insert(expenseResponses)
    .values({ expenseId: row.expenseId, agentId: actor.agentId, ...response })
    .onConflictDoUpdate({ target: [expenseResponses.expenseId, expenseResponses.agentId], set: response });
  const disputed = responses.some((r) => r.version === row.version && r.action === "dispute");
  const state = disputed ? ("disputed" as const) : ("active" as const);
  // Judged again as the batch commits, from every response then: a response given at the same moment counts too.
  const judged = sql`CASE WHEN EXISTS (SELECT 1 FROM ${expenseResponses} WHERE ${expenseResponses.expenseId} = ${row.expenseId} AND ${expenseResponses.version} = ${row.version} AND ${expenseResponses.action} = 'dispute') THEN 'disputed' ELSE 'active' END`;
  await tx
    .update(expenses)
    .set({ state: judged, updatedAt: at })
    .where(and(eq(expenses.expenseId, row.expenseId), eq(expenses.version, row.version), sql`${expenses.state} <> ${judged}`));
  await resolveItems(tx, actor.agentId, "ledger.expense_added", { expense_id: row.expenseId });
  answered.push(row.expenseId);
  await resolveClaimWhenAnswered(tx, actor.agentId, group.groupId, answered);
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: input.action === "confirm" ? "expense_confirmed" : "expense_disputed",
    summary:
      input.action === "confirm"
        ? `@${actor.handle} confirmed ${quoted(row.description)}`
        : `@${actor.handle} disputed ${quoted(row.description)}: ${quoted(reason!)}`,
    refs: { expense_id: row.expenseId },
    data: { response: { expense_id: row.expenseId, action: input.action, reason, version: row.version } },
  });
  if (input.action === "confirm") {
    await resolveItems(tx, row.createdBy, "ledger.expense_disputed", { expense_id: row.expenseId, agent_id: actor.agentId });
  } else if (row.createdBy !== actor.agentId) {
    await tellDisputed({ tx, now, group, actor, row, reason: reason! });
  }
  const respondedRow = { ...row, state, updatedAt: state === row.state ? row.updatedAt : at };
  return (await expenseViews(tx, group, [respondedRow], { shares: new Map([[row.expenseId, shares]]), responses }))[0]!;
}

/** One expense's outcome in respond_expense with expense_ids. */
export interface ResponseOutcome {
  expense_id: string;
  ok: boolean;
  state?: "active" | "disputed";
  error?: { code: string; message: string };
}

/**
 * respond_expense with expense_ids: the same answer to each expense, in the call's one transaction. An expense that
 * refuses (not found, deleted, not a participant) is reported beside its id; the others are answered all the same.
 * Each check runs before its expense's first write, so a refusal leaves nothing half done.
 */
export async function respondExpenses(
  ctx: DomainContext,
  input: { expense_ids: string[]; action: "confirm" | "dispute"; reason?: string },
): Promise<ResponseOutcome[]> {
  const out: ResponseOutcome[] = [];
  const answered: string[] = [];
  for (const expense_id of [...new Set(input.expense_ids)]) {
    try {
      const e = await respondExpense(ctx, { expense_id, action: input.action, ...(input.reason === undefined ? {} : { reason: input.reason }) }, answered);
      out.push({ expense_id, ok: true, state: e.state });
    } catch (err) {
      if (!(err instanceof AppError) || err.code === "VALIDATION_ERROR") throw err;
      out.push({ expense_id, ok: false, error: { code: err.code, message: err.message } });
    }
  }
  return out;
}

/** The date of a series' latest occurrence made so far, or null. */
async function lastOccurrence(tx: Tx, seriesId: string): Promise<string | null> {
  const made = await tx
    .select({ last: sql<string | null>`max(${expenses.date})` })
    .from(expenses)
    .where(eq(expenses.recurringOf, seriesId))
    .get();
  return made?.last ?? null;
}

/** list_recurring: a group's series that still make occurrences, by their next date. */
export async function listRecurring({ tx, actor: { agentId } }: DomainContext, groupId: string): Promise<Expense[]> {
  const group = await requireMember(tx, groupId, agentId);
  const rows = await tx
    .select()
    .from(expenses)
    .where(and(eq(expenses.groupId, group.groupId), eq(expenses.deleted, false), sql`${expenses.nextOccurrence} IS NOT NULL`))
    .orderBy(asc(expenses.nextOccurrence), asc(expenses.expenseId))
    .limit(MAX_SERIES_LISTED);
  return expenseViews(tx, group, rows);
}
export const MAX_SERIES_LISTED = 500;

/**
 * stop_recurring: the series ends with the occurrences already made (repeat_until becomes the last one's date, or the
 * series' own), as an update_expense of repeat_until would; its participants are told.
 */
export async function stopRecurring(ctx: DomainContext, expenseId: string): Promise<Expense> {
  const { row } = await changeableExpense(ctx.tx, expenseId, ctx.actor.agentId);
  if (row.deleted || row.nextOccurrence === null) throw conflict("The expense is not an active recurring series; list_recurring lists those of a group.");
  const last = (await lastOccurrence(ctx.tx, row.expenseId)) ?? row.date;
  return (await updateExpense(ctx, { expense_id: row.expenseId, expected_version: row.version, repeat_until: last > row.date ? last : row.date })).expense;
}
