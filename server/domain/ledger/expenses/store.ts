// The expense store: an expense's state computed from what the caller gives, and its one write path (create, replace
// a version, set deleted) that keeps the row and every table derived from it (shares, pair ledger, history, activity)
// together; read back. Tools, recurring occurrences and the Splitwise import all write through it.
import { and, eq, getTableColumns, sql } from "drizzle-orm";
import { guard, guardChanged, jsonEach, jsonList, preparedInsert, prepared, preparedWrite, type Tx } from "../../../../db/client.ts";
import { agents, expenseHistory, expenseShares, expenses, groupMembers } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { invalid } from "../../../errors.ts";
import type { Category, ExpenseHistoryEntry, ExpenseKind, Repeat } from "../../../contract/ledger.ts";
import { readExpenseSnapshot, upgradeExpenseSnapshotV0, type ExpenseSnapshot } from "../../../contract/expense-snapshot.ts";
import { quoted } from "../../untrusted.ts";
import { kindWord } from "../../../contract/ledger-wording.ts";
import type { Actor } from "../../../contract/principal.ts";
import { applyDebts, expenseDebts, reversed } from "../balances/pairs.ts";
import { checkLimits } from "../balances/limits.ts";
import { labelsOf, memberLabel, requireParticipant, type GroupRow, type Member } from "../groups/membership.ts";
import { toRef } from "../../agents.ts";
import { logActivity } from "../groups/activity.ts";
import { inGroupCurrency, moneyText, originalColumns, originalOfRow, type Original } from "../money/amounts.ts";
import { nextOccurrenceAfter, today } from "./repeat-dates.ts";
import { allocate, compareText, computeShares, splitPayers, type Payer, type Share, type SplitParticipant } from "../money/splits.ts";
import type { SplitMode } from "../../../contract/ledger.ts";

export type ExpenseRow = typeof expenses.$inferSelect;

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
  /** A refund moves the balances the other way: its debts are the same expense's, reversed. */
  kind: ExpenseKind;
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
  /** A series' last date (inclusive); null: no end. */
  repeatUntil: string | null;
  /** Where exchangeRate came from when the service looked it up (--rates-url); null when the caller gave it. */
  rateSource: string | null;
  refs: Record<string, string>;
  recurringOf: string | null;
  deleted: boolean;
  state: "active" | "disputed";
}

/** The columns of an expense row that hold what add_expense and update_expense set. */
export function stateColumns(s: ExpenseState) {
  return {
    kind: s.kind,
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
    repeatUntil: s.repeatUntil,
    rateSource: s.rateSource,
    refs: s.refs,
  };
}

/** Fields of add_expense and update_expense. */
export interface ExpenseInput {
  kind?: ExpenseKind;
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
  repeat_until?: string | null;
  refs?: Record<string, string>;
}

// ---------- computing an expense from what the caller gives ----------

/** What fixes the money of an expense: the amount as given (not yet checked), its currency, payers and split. */
export interface MoneyDraft {
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
export function compute(group: GroupRow, members: Map<string, Member>, d: MoneyDraft): Computed {
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

export function checkRefs(refs: Record<string, string>): Record<string, string> {
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
    kind: input.kind ?? "expense",
    description: input.description,
    descriptionBy: actor.agentId,
    date: input.date ?? today(now),
    category: input.category ?? "general",
    notes,
    notesBy: notes === null ? null : actor.agentId,
    repeat: input.repeat ?? "none",
    repeatUntil: input.repeat_until ?? null,
    rateSource: null,
    refs: checkRefs(input.refs ?? {}),
    recurringOf: null,
    deleted: false,
    state: "active",
  };
}

// ---------- storing ----------

// Rows as [agent_id, paid_minor, share_minor], in the table's column order after the expense and group.
const insertSharesQuery = preparedWrite((tx) =>
  tx
    .insert(expenseShares)
    .select(sql`SELECT ${sql.placeholder("expenseId")}, ${sql.placeholder("groupId")}, value ->> 0, value ->> 1, value ->> 2 FROM ${jsonEach("rows")}`)
    .prepare(),
);

async function insertShares(tx: Tx, expenseId: string, groupId: string, shares: readonly ParticipantShare[]): Promise<void> {
  if (!shares.length) return;
  await insertSharesQuery(tx).run({ expenseId, groupId, rows: jsonList(shares.map((s) => [s.agentId, s.paidMinor, s.shareMinor])) });
}

export async function replaceShares(tx: Tx, expenseId: string, groupId: string, shares: readonly ParticipantShare[]): Promise<void> {
  await tx.delete(expenseShares).where(eq(expenseShares.expenseId, expenseId));
  await insertShares(tx, expenseId, groupId, shares);
}

export type HistoryAction = ExpenseHistoryEntry["action"];

const insertHistory = preparedInsert(expenseHistory, ["expenseId", "version", "action", "changedBy", "changedAt", "snapshot"]);

const insertRow = preparedInsert(expenses, Object.keys(getTableColumns(expenses)) as (keyof ExpenseRow)[]);

/** One version of an expense: what it was (null: new), what it is now, and how to say so in the activity log. */
interface Version {
  group: GroupRow;
  actor: Actor;
  expenseId: string;
  version: number;
  before: ExpenseState | null;
  after: ExpenseState;
  action: HistoryAction;
  changed: string[];
  activity: { action: string; summary: string };
}

/** The debts an expense state puts in the balances: none while deleted. */
const counted = (s: ExpenseState | null) => (s && !s.deleted ? expenseDebts(s.shares, s.kind) : []);

/**
 * Writes a version: the limits are judged first, then `writeRow` stores the expense's own row, and the tables
 * derived from it (shares, pair ledger, history, activity) follow from before and after here, and only here,
 * so a new derived table is one edit.
 */
async function writeVersion(tx: Tx, now: Date, v: Version, writeRow: (at: string) => Promise<void>): Promise<void> {
  // The old version leaves the balances and the new one comes in, judged as one change (taking an expense out can
  // raise a total too: it may have offset other debts).
  await checkLimits(tx, v.group, [...reversed(counted(v.before)), ...counted(v.after)]);
  const at = iso(now);
  await writeRow(at);
  if (!v.before) await insertShares(tx, v.expenseId, v.group.groupId, v.after.shares);
  else if (JSON.stringify(v.before.shares) !== JSON.stringify(v.after.shares)) await replaceShares(tx, v.expenseId, v.group.groupId, v.after.shares);
  await applyDebts(tx, v.group.groupId, counted(v.before), -1);
  await applyDebts(tx, v.group.groupId, counted(v.after), 1);
  await insertHistory(tx).run({
    expenseId: v.expenseId,
    version: v.version,
    action: v.action,
    changedBy: v.actor.agentId,
    changedAt: at,
    snapshot: toSnapshot(v.after, v.changed),
  });
  await logActivity(tx, now, {
    groupId: v.group.groupId,
    actorId: v.actor.agentId,
    ...v.activity,
    refs: { expense_id: v.expenseId },
    data: { expense: { expense_id: v.expenseId, version: v.version, action: v.action, snapshot: toSnapshot(v.after, v.changed) } },
  });
}

/**
 * Stores a computed expense as a new row at version 1 (`activityNote` is appended to its activity summary, e.g.
 * " (recurring)"); telling the participants is the caller's (notices.ts tellAdded). Returns the row as a read
 * would give it back.
 */
export async function createExpense(
  tx: Tx,
  now: Date,
  group: GroupRow,
  actor: Actor,
  state: ExpenseState,
  { activityNote = "", members }: { activityNote?: string; members?: Map<string, Member> } = {},
): Promise<ExpenseRow> {
  const expenseId = crypto.randomUUID();
  // Each person it names is still a member as the batch commits: one who left, or a placeholder claimed, since the
  // call read the members makes it run again, and be refused naming them.
  const ids = [...new Set(state.shares.map((s) => s.agentId))];
  await guard(
    tx,
    "expense members",
    sql`(SELECT count(*) FROM ${groupMembers} WHERE ${groupMembers.groupId} = ${group.groupId} AND ${groupMembers.leftAt} IS NULL AND ${groupMembers.agentId} IN ${ids}) = ${ids.length}`,
  );
  // A placeholder payer by its name (its handle is its member_id): from the members the caller has, else read, only
  // when one pays.
  const payerIds = state.shares.filter((s) => s.paidMinor !== 0 && s.handle === s.agentId).map((s) => s.agentId);
  const named = members
    ? new Map(payerIds.map((id) => [id, memberLabel(toRef(members.get(id)!))]))
    : payerIds.length
      ? await labelsOf(tx, payerIds)
      : new Map<string, string>();
  const payers = state.paidBy.map((p) => named.get(p.handle) ?? `@${p.handle}`).join(", ");
  const summary = `@${actor.handle} added ${kindWord(state.kind)}${quoted(state.description)}: ${moneyText(state.amountMinor, group.currency)}, ${state.kind === "refund" ? "received" : "paid"} by ${payers}, split ${state.split.mode} among ${state.split.among.length}${activityNote}`;
  let row: ExpenseRow | undefined;
  const version: Version = {
    group,
    actor,
    expenseId,
    version: 1,
    before: null,
    after: state,
    action: "created",
    changed: [],
    activity: { action: "expense_added", summary },
  };
  await writeVersion(tx, now, version, async (at) => {
    row = {
      expenseId,
      groupId: group.groupId,
      ...stateColumns(state),
      nextOccurrence: nextOccurrenceAfter(state.date, state.repeat, state.date, state.repeatUntil),
      recurringOf: state.recurringOf,
      state: "active",
      deleted: false,
      version: 1,
      createdBy: actor.agentId,
      createdAt: at,
      updatedAt: at,
    };
    await insertRow(tx).run(row);
  });
  // SQLite keeps text as UTF-8, where a lone surrogate becomes U+FFFD (JSON columns escape it and keep it).
  return { ...row!, description: row!.description.toWellFormed(), notes: row!.notes?.toWellFormed() ?? null };
}

/** A series' next date after its start and after every occurrence already made. */
async function nextAfterGenerated(tx: Tx, expenseId: string, s: ExpenseState): Promise<string | null> {
  const made = await tx
    .select({ last: sql<string | null>`max(${expenses.date})` })
    .from(expenses)
    .where(eq(expenses.recurringOf, expenseId))
    .get();
  const last = made?.last && made.last > s.date ? made.last : s.date;
  return nextOccurrenceAfter(s.date, s.repeat, last, s.repeatUntil);
}

/**
 * The expense row still at the version the call read: a version written since (another change at the same moment)
 * fails the batch's guard, and the call runs again on the new one.
 */
const sameVersion = (row: ExpenseRow) => and(eq(expenses.expenseId, row.expenseId), eq(expenses.version, row.version));

/** update_expense's write: `after` replaces `before` (the stored state of `row`) as the next version; the row it writes. */
export async function replaceVersion(
  tx: Tx,
  now: Date,
  c: { group: GroupRow; actor: Actor; row: ExpenseRow; before: ExpenseState; after: ExpenseState; changed: string[] },
): Promise<ExpenseRow> {
  const { group, actor, row, before, after, changed } = c;
  const version = row.version + 1;
  const summary = `@${actor.handle} changed ${kindWord(after.kind)}${quoted(after.description)}: ${changed.join(", ")}`;
  let written = row;
  await writeVersion(
    tx,
    now,
    { group, actor, expenseId: row.expenseId, version, before, after, action: "updated", changed, activity: { action: "expense_updated", summary } },
    async (updatedAt) => {
      const moved = changed.includes("repeat") || changed.includes("date") || changed.includes("repeat_until");
      const nextOccurrence = moved ? await nextAfterGenerated(tx, row.expenseId, after) : row.nextOccurrence;
      const set = { ...stateColumns(after), nextOccurrence, state: after.state, version, updatedAt };
      await tx.update(expenses).set(set).where(sameVersion(row));
      await guardChanged(tx, "expense version");
      written = { ...row, ...set };
    },
  );
  return written;
}

/** delete_expense (deleted true) and restore_expense (false): the next version, out of or back in the balances. */
export async function setDeleted(
  tx: Tx,
  now: Date,
  c: { group: GroupRow; actor: Actor; row: ExpenseRow; state: ExpenseState; deleted: boolean },
): Promise<{ version: number; after: ExpenseState; written: ExpenseRow }> {
  const { row, deleted } = c;
  const after = { ...c.state, deleted };
  const version = row.version + 1;
  const verb = deleted ? "deleted" : "restored";
  const summary = `@${c.actor.handle} ${verb} ${kindWord(after.kind)}${quoted(after.description)} (${moneyText(after.amountMinor, c.group.currency)})`;
  await writeVersion(
    tx,
    now,
    {
      group: c.group,
      actor: c.actor,
      expenseId: row.expenseId,
      version,
      before: c.state,
      after,
      action: verb,
      changed: ["deleted"],
      activity: { action: `expense_${verb}`, summary },
    },
    async (updatedAt) => {
      await tx.update(expenses).set({ deleted, version, updatedAt }).where(sameVersion(row));
      await guardChanged(tx, "expense version");
    },
  );
  return { version, after, written: { ...row, deleted, version, updatedAt: iso(now) } };
}

// ---------- history snapshots ----------

/**
 * A state as expense_history stores it: the contract's latest version. ExpenseState still has version 0's fields, so
 * the upgrade from it writes them; renaming one stops this compiling until it gets its own mapping, so the stored
 * shape never follows the domain's by accident.
 */
export const toSnapshot = ({ repeatUntil, rateSource, ...s }: ExpenseState, changed: string[]): ExpenseSnapshot => ({
  ...upgradeExpenseSnapshotV0({ ...s, changed_fields: changed }),
  kind: s.kind,
  repeat_until: repeatUntil,
  rate_source: rateSource,
});

/** A stored history snapshot of any version as a state, with the fields its version changed. */
export function stateOfSnapshot(stored: unknown): { state: ExpenseState; changed: string[] } {
  // Fields named alike pass through; the others are named one by one.
  const {
    v: _,
    description_by,
    amount_minor,
    original,
    paid_by,
    shares,
    notes_by,
    recurring_of,
    changed_fields,
    repeat_until,
    rate_source,
    ...alike
  } = readExpenseSnapshot(stored);
  const state: ExpenseState = {
    ...alike,
    descriptionBy: description_by,
    amountMinor: amount_minor,
    original: original && { currency: original.currency, amountMinor: original.amount_minor, exchangeRate: original.exchange_rate },
    paidBy: paid_by,
    shares: shares.map((p) => ({ agentId: p.agent_id, handle: p.handle, paidMinor: p.paid_minor, shareMinor: p.share_minor })),
    notesBy: notes_by,
    recurringOf: recurring_of,
    repeatUntil: repeat_until ?? null,
    rateSource: rate_source ?? null,
  };
  return { state, changed: changed_fields };
}

// ---------- reading ----------

// The shares of a list of expenses (a page, an export batch), the list bound as one value: however long it is.
const sharesOfList = prepared((tx) =>
  tx
    .select({
      expenseId: expenseShares.expenseId,
      agentId: expenseShares.agentId,
      handle: agents.handle,
      paidMinor: expenseShares.paidMinor,
      shareMinor: expenseShares.shareMinor,
    })
    .from(expenseShares)
    .innerJoin(agents, eq(agents.agentId, expenseShares.agentId))
    .where(sql`${expenseShares.expenseId} IN (SELECT value FROM ${jsonEach("ids")})`)
    .prepare(),
);

export async function sharesOf(tx: Tx, expenseIds: string[]): Promise<Map<string, ParticipantShare[]>> {
  const rows = expenseIds.length ? await sharesOfList(tx).all({ ids: jsonList(expenseIds) }) : [];
  const byExpense = new Map<string, ParticipantShare[]>();
  for (const { expenseId, ...s } of rows) {
    const list = byExpense.get(expenseId) ?? [];
    list.push(s);
    byExpense.set(expenseId, list);
  }
  return byExpense;
}

/** The stored state of a row; shares ordered as the split lists them, then payers outside it. */
export function stateOfRow(row: ExpenseRow, shares: ParticipantShare[]): ExpenseState {
  const order = [...row.split.among.map((p) => p.handle), ...row.paidBy.map((p) => p.handle)];
  const rank = (h: string) => order.indexOf(h);
  return {
    kind: row.kind,
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
    repeatUntil: row.repeatUntil,
    rateSource: row.rateSource,
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
