// Payments between two members: pending until the payee confirms (unless the payee recorded it); only confirmed ones count.
import { and, eq, sql } from "drizzle-orm";
import { guard, guardChanged, jsonEach, jsonList, prepared, type Tx } from "../../../../db/client.ts";
import { payments } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { AppError, conflict, invalid, notFound } from "../../../errors.ts";
import type { Payment } from "../../../contract/ledger.ts";
import { refsByIds, toRef } from "../../agents.ts";
import { deliver, resolveItems } from "../../inbox.ts";
import { quoted, untrusted } from "../../untrusted.ts";
import { decodeCursor, encodeCursor, paginate } from "../../../contract/cursor.ts";
import type { Actor, DomainContext } from "../../../contract/principal.ts";
import { requireHomeHere } from "../events/home.ts";
import { applyDebts, paymentDebt, reversed } from "../balances/pairs.ts";
import {
  assertWritable,
  isMember,
  isPlaceholder,
  memberGroup,
  memberLabel,
  memberRef,
  keyOfMemberId,
  refsOfMembers,
  requireMember,
  requireParticipant,
  resolveMember,
  writableGroupMembers,
  type GroupRow,
  type Member,
} from "../groups/membership.ts";
import { logActivity } from "../groups/activity.ts";
import { formatAmount, inGroupCurrency, moneyText, originalColumns, originalOfRow, originalWire, type Original } from "../money/amounts.ts";
import { checkLimits } from "../balances/limits.ts";
import { owedBetween } from "../balances/settlement.ts";

export type PaymentRow = typeof payments.$inferSelect;
export type PaymentState = PaymentRow["state"];

/** Payments as the wire shows them, with the agents they name. */
export async function paymentViews(tx: Tx, rows: PaymentRow[], currencyOf: (groupId: string) => string): Promise<Payment[]> {
  const people = await refsByIds(
    tx,
    rows.flatMap((r) => [r.fromId, r.toId, r.createdBy, ...(r.voidedBy === null ? [] : [r.voidedBy])]),
  );
  return rows.map((r) => ({
    payment_id: r.paymentId,
    group_id: r.groupId,
    from: people.get(r.fromId)!,
    to: people.get(r.toId)!,
    from_member: memberRef(people.get(r.fromId)!),
    to_member: memberRef(people.get(r.toId)!),
    amount_minor: r.amountMinor,
    amount: formatAmount(r.amountMinor, currencyOf(r.groupId)),
    currency: currencyOf(r.groupId),
    original: originalWire(originalOfRow(r)),
    state: r.state,
    note: r.note === null ? null : untrusted(r.note, `payment note written by @${people.get(r.createdBy)!.handle}`),
    created_by: people.get(r.createdBy)!,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    voided_by: r.voidedBy === null ? null : people.get(r.voidedBy)!,
    voided_at: r.voidedAt,
    batch_id: r.batchId,
  }));
}

const viewOne = async (tx: Tx, row: PaymentRow, group: GroupRow) => (await paymentViews(tx, [row], () => group.currency))[0]!;

/** A payment as the group's event chain carries it (events/chain.ts): the row as it is after the event. */
export const paymentData = (r: PaymentRow) => ({
  payment: {
    payment_id: r.paymentId,
    from_id: r.fromId,
    to_id: r.toId,
    amount_minor: r.amountMinor,
    original_currency: r.originalCurrency,
    original_amount_minor: r.originalAmountMinor,
    exchange_rate: r.exchangeRate,
    state: r.state,
    note: r.note,
    created_by: r.createdBy,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    voided_by: r.voidedBy,
    voided_at: r.voidedAt,
    batch_id: r.batchId,
  },
});

/** Stores a payment, counts it when confirmed, and logs it; notifications are the caller's. */
export async function insertPayment(
  tx: Tx,
  now: Date,
  group: GroupRow,
  p: {
    from: Member;
    to: Member;
    amountMinor: number;
    original: Original | null;
    state: "pending" | "confirmed";
    note: string | null;
    createdBy: string;
    /** One part of a payment across groups. */
    batchId?: string;
  },
): Promise<PaymentRow> {
  const at = iso(now);
  const row: PaymentRow = {
    paymentId: crypto.randomUUID(),
    groupId: group.groupId,
    fromId: p.from.agentId,
    toId: p.to.agentId,
    amountMinor: p.amountMinor,
    ...originalColumns(p.original),
    state: p.state,
    note: p.note,
    createdBy: p.createdBy,
    createdAt: at,
    updatedAt: at,
    voidedBy: null,
    voidedAt: null,
    batchId: p.batchId ?? null,
  };
  if (row.state === "confirmed") await checkLimits(tx, group, [paymentDebt(row)]);
  await tx.insert(payments).values(row);
  if (row.state === "confirmed") await applyDebts(tx, group.groupId, [paymentDebt(row)], 1);
  const amount = paymentText(row, group);
  const part = row.batchId === null ? "" : ", this group's part of one payment across groups";
  const [from, to] = [memberLabel(toRef(p.from)), memberLabel(toRef(p.to))];
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: p.createdBy,
    action: "payment_recorded",
    summary:
      row.state === "pending"
        ? `${from} paid ${to} ${amount} (waiting for ${to} to confirm${part})`
        : `${to} received ${amount} from ${from}${part ? ` (${part.slice(2)})` : ""}`,
    refs: { payment_id: row.paymentId },
    data: paymentData(row),
  });
  return row;
}

/** "12.00 GBP (10.37 EUR)" for a payment given in another currency, else "10.37 EUR". */
export function paymentText(row: PaymentRow, group: GroupRow): string {
  const inGroup = moneyText(row.amountMinor, group.currency);
  const original = originalOfRow(row);
  return original ? `${moneyText(original.amountMinor, original.currency)} (${inGroup})` : inGroup;
}

export interface RecordPaymentInput {
  group_id: string;
  from?: string;
  to?: string;
  /** A placeholder member (no account yet), or any member, by member_id instead of from or to. */
  from_member_id?: string;
  to_member_id?: string;
  amount?: string;
  amount_minor?: number;
  currency?: string;
  exchange_rate?: string;
  note?: string;
  /** The caller says this repeats a pending payment on purpose: a second payment, not the same one recorded twice. */
  second_payment?: boolean;
}

/** A payment beyond what the payer owed the payee, in the group's currency. */
export interface Overpayment {
  owed_minor: number;
  owed: string;
  excess_minor: number;
  excess: string;
}

/**
 * Recorded by the payee it is confirmed at once; recorded by the payer it waits for the payee. A payment larger
 * than what the payer owed the payee before it (settlement.owedBetween) is recorded all the same, and said so.
 */
export async function recordPayment(
  { tx, now, actor }: DomainContext,
  input: RecordPaymentInput,
): Promise<{ payment: Payment; overpayment: Overpayment | null }> {
  const { group, members } = await writableGroupMembers(tx, input.group_id, actor.agentId);
  // A handle, a member_id or a placeholder's name in from and to; a member_id in from_member_id and to_member_id.
  const named = (given: string | undefined, memberId: string | undefined, path: string) =>
    memberId !== undefined ? keyOfMemberId(members, memberId, `${path}_member_id`) : given === undefined ? undefined : resolveMember(members, given, path);
  const fromGiven = named(input.from, input.from_member_id, "from");
  const toGiven = named(input.to, input.to_member_id, "to");
  if (fromGiven === undefined && toGiven === undefined) throw invalid("to", "name the payee with to, or the payer with from; you are the other one");
  const fromHandle = fromGiven ?? actor.handle;
  const toHandle = toGiven ?? actor.handle;
  if (fromHandle !== actor.handle && toHandle !== actor.handle) throw invalid("from", "you must be the payer (from) or the payee (to)");
  if (fromHandle === toHandle) throw invalid("to", "the payer and the payee must be two different members");
  const from = requireParticipant(members, fromHandle, "from");
  const to = requireParticipant(members, toHandle, "to");
  const { amountMinor, original } = inGroupCurrency(
    { currency: input.currency ?? group.currency, amount: input.amount, amount_minor: input.amount_minor, exchangeRate: input.exchange_rate ?? null },
    group.currency,
  );
  if (!input.second_payment) await refuseRecordedTwice(tx, group, from, to, actor, amountMinor, original);
  const owed = await owedBetween(tx, now, group, refsOfMembers(members), from.agentId, to.agentId);
  const overpayment =
    amountMinor > owed
      ? {
          owed_minor: owed,
          owed: formatAmount(owed, group.currency),
          excess_minor: amountMinor - owed,
          excess: formatAmount(amountMinor - owed, group.currency),
        }
      : null;
  const state = to.agentId === actor.agentId ? "confirmed" : "pending";
  const row = await insertPayment(tx, now, group, { from, to, amountMinor, original, state, note: input.note || null, createdBy: actor.agentId });
  const amount = paymentText(row, group);
  const note = row.note === null ? null : untrusted(row.note, `payment note written by @${actor.handle}`);
  const payload = paymentPayload(row, group, from.handle, to.handle);
  const where = `in ${quoted(group.name, 40)}`;
  // A placeholder member (no account yet) has no inbox; a payment to one waits for whoever claims it.
  if (isPlaceholder(row.state === "pending" ? to : from)) return { payment: await viewOne(tx, row, group), overpayment };
  if (row.state === "pending") {
    const beyond = overpayment ? ` That is ${moneyText(overpayment.excess_minor, group.currency)} more than they owed you.` : "";
    await deliver(tx, now, {
      to: to.agentId,
      type: "ledger.payment_to_confirm",
      from: actor.agentId,
      summaryMd: `@${from.handle} says they paid you ${amount} ${where}.${beyond} Confirm with respond_payment once your human has received it, or reject it.`,
      payload,
      note,
      refs: { group_id: group.groupId, payment_id: row.paymentId },
    });
  } else {
    await deliver(tx, now, {
      to: from.agentId,
      type: "ledger.payment_confirmed",
      from: actor.agentId,
      summaryMd: `@${to.handle} recorded your payment of ${amount} ${where}; it counts in the balances.`,
      payload,
      note,
      refs: { group_id: group.groupId, payment_id: row.paymentId },
    });
  }
  return { payment: await viewOne(tx, row, group), overpayment };
}

// A pending payment between the same payer and payee of the same amount as given: in the same currency (another one
// with whatever rate, or the group's own), the same minor units of it.
const samePending = prepared((tx) =>
  tx
    .select()
    .from(payments)
    .where(
      and(
        eq(payments.groupId, sql.placeholder("groupId")),
        eq(payments.fromId, sql.placeholder("fromId")),
        eq(payments.toId, sql.placeholder("toId")),
        eq(payments.state, "pending"),
        sql`${payments.originalCurrency} IS ${sql.placeholder("originalCurrency")}`,
        sql`coalesce(${payments.originalAmountMinor}, ${payments.amountMinor}) = ${sql.placeholder("amountMinor")}`,
      ),
    )
    .orderBy(sql`payments.rowid`)
    .limit(1)
    .prepare(),
);

/**
 * A payment that repeats one still pending (same group, payer, payee, amount and currency) is most often the same
 * money recorded twice: pressed again, retried with a new key, or recorded by the payee too while the payer's waits.
 * Both would count once confirmed, and the debt would flip to the other side. Refused (CONFLICT) unless the caller
 * says it is a second payment. A retry with the same idempotency key never gets here: invoke() replays it.
 */
async function refuseRecordedTwice(tx: Tx, group: GroupRow, from: Member, to: Member, actor: Actor, amountMinor: number, original: Original | null) {
  const same = {
    groupId: group.groupId,
    fromId: from.agentId,
    toId: to.agentId,
    originalCurrency: original?.currency ?? null,
    amountMinor: original?.amountMinor ?? amountMinor,
  };
  const row = await samePending(tx).get(same);
  if (!row) {
    // Still none when this payment commits: the same one pressed twice at once, with two keys, is recorded once.
    await guard(
      tx,
      "payment recorded twice",
      sql`NOT EXISTS (SELECT 1 FROM payments WHERE group_id = ${same.groupId} AND from_id = ${same.fromId} AND to_id = ${same.toId}
        AND state = 'pending' AND original_currency IS ${same.originalCurrency} AND coalesce(original_amount_minor, amount_minor) = ${same.amountMinor})`,
    );
    return;
  }
  const who = (m: Member) => (isPlaceholder(m) ? quoted(m.displayName, 40) : `@${m.handle}`);
  const recorder = row.createdBy === from.agentId ? from : to;
  const amount = paymentText(row, group);
  const since = row.createdAt.slice(0, 10);
  const byPayee = to.agentId === actor.agentId;
  const message =
    `${who(from)} already has a pending payment of ${amount} to ${who(to)} in ${quoted(group.name, 40)}, ` +
    `recorded by ${who(recorder)} on ${since} (payment_id ${row.paymentId}); nothing was recorded now. ` +
    (byPayee
      ? "If it is the same money, confirm that payment with respond_payment instead. "
      : `If it is the same money, there is nothing to do: ${who(to)} confirms it. `) +
    "If it is a second payment, record it again with second_payment: true.";
  throw new AppError(
    "CONFLICT",
    message,
    { pending_payment_id: row.paymentId },
    undefined,
    byPayee
      ? "Confirm the pending payment (respond_payment action confirm), or call again with second_payment: true for a second payment."
      : "Wait for the payee to confirm the pending payment, or call again with second_payment: true for a second payment.",
  );
}

export function paymentPayload(row: PaymentRow, group: GroupRow, from: string, to: string) {
  return {
    group_id: group.groupId,
    payment_id: row.paymentId,
    from,
    to,
    amount_minor: row.amountMinor,
    amount: formatAmount(row.amountMinor, group.currency),
    currency: group.currency,
    original: originalWire(originalOfRow(row)),
    state: row.state,
  };
}

/** The payment and its group if the caller is a current member; anyone else learns nothing (NOT_FOUND). */
export async function visiblePayment(tx: Tx, paymentId: string, agentId: string): Promise<{ row: PaymentRow; group: GroupRow }> {
  const row = await tx.select().from(payments).where(eq(payments.paymentId, paymentId)).get();
  const group = row && (await memberGroup(tx, row.groupId, agentId));
  if (!row || !group) throw notFound("Payment");
  return { row, group };
}

/** What a payment's answer changed, for telling the other party. */
export interface Answered {
  row: PaymentRow;
  updated: PaymentRow;
  group: GroupRow;
  action: "confirm" | "reject" | "void";
  payer: string;
  payee: string;
  /** Who is told: the payer (confirm, reject) or the other party (void). */
  otherId: string;
}

/**
 * The payee confirms (it starts counting) or rejects a pending payment; the payer is told. Either party voids a
 * pending or confirmed one (answerPayment).
 */
export async function respondPayment(
  { tx, now, actor }: DomainContext,
  input: { payment_id: string; action: "confirm" | "reject" | "void" },
): Promise<Payment> {
  const { row, group } = await visiblePayment(tx, input.payment_id, actor.agentId);
  const answered = await answerPayment(tx, now, actor, row, group, input.action);
  await tellAnswered(tx, now, actor, answered);
  return viewOne(tx, answered.updated, group);
}

/**
 * One payment's answer, without telling anyone: the payee confirms or rejects a pending payment; the payer or the
 * payee voids a mistaken one: it stays listed as voided (with who and when), and a confirmed one leaves the
 * balances in the same transaction. A confirmed payment with someone who has left the group is not voided: it
 * would give a former member a balance again.
 */
export async function answerPayment(tx: Tx, now: Date, actor: Actor, row: PaymentRow, group: GroupRow, action: Answered["action"]): Promise<Answered> {
  await requireHomeHere(tx, group.groupId);
  assertWritable(group);
  const people = await refsByIds(tx, [row.fromId, row.toId]);
  const [payer, payee] = [people.get(row.fromId)!.handle, people.get(row.toId)!.handle];
  // In summaries a placeholder is named by its name, never by its member_id passing for a handle.
  const [payerLabel, payeeLabel] = [memberLabel(people.get(row.fromId)!), memberLabel(people.get(row.toId)!)];
  const amount = paymentText(row, group);
  const at = iso(now);
  if (action === "void") {
    if (row.fromId !== actor.agentId && row.toId !== actor.agentId) throw conflict("Only the payer or the payee can void a payment.");
    if (row.state !== "pending" && row.state !== "confirmed")
      throw conflict(`The payment is already ${row.state}; only a pending or confirmed payment can be voided.`);
    const otherId = row.fromId === actor.agentId ? row.toId : row.fromId;
    if (row.state === "confirmed" && !(await isMember(tx, group.groupId, otherId))) {
      throw conflict(`${memberLabel(people.get(otherId)!)} has left the group, so the payment cannot leave the balances; record a payment back instead.`);
    }
    const updated: PaymentRow = { ...row, state: "voided", voidedBy: actor.agentId, voidedAt: at, updatedAt: at };
    // What the payment paid off is owed again, which can raise a total as much as a new expense.
    if (row.state === "confirmed") await checkLimits(tx, group, reversed([paymentDebt(row)]));
    await tx
      .update(payments)
      .set({ state: "voided", voidedBy: actor.agentId, voidedAt: at, updatedAt: at })
      .where(and(eq(payments.paymentId, row.paymentId), eq(payments.state, row.state)));
    await guardChanged(tx, "payment state");
    if (row.state === "confirmed") await applyDebts(tx, group.groupId, [paymentDebt(row)], -1);
    // A voided payment leaves nothing to confirm.
    await resolveItems(tx, row.toId, "ledger.payment_to_confirm", { payment_id: row.paymentId });
    await logActivity(tx, now, {
      groupId: group.groupId,
      actorId: actor.agentId,
      action: "payment_voided",
      summary: `@${actor.handle} voided the ${row.state} payment of ${amount} from ${payerLabel} to ${payeeLabel}`,
      refs: { payment_id: row.paymentId },
      data: paymentData(updated),
    });
    return { row, updated, group, action, payer, payee, otherId };
  }
  if (row.toId !== actor.agentId) throw conflict("Only the payee can confirm or reject a payment.");
  if (row.state !== "pending") throw conflict(`The payment is already ${row.state}.`);
  const state: PaymentState = action === "confirm" ? "confirmed" : "rejected";
  const updated = { ...row, state, updatedAt: at };
  if (state === "confirmed") await checkLimits(tx, group, [paymentDebt(row)]);
  // Answered once, in the state it was read in: a second answer (at the same moment, or read from a replica's file
  // not caught up) runs again and is refused, so a confirmed payment never pays the debt twice.
  await tx
    .update(payments)
    .set({ state, updatedAt: updated.updatedAt })
    .where(and(eq(payments.paymentId, row.paymentId), eq(payments.state, "pending")));
  await guardChanged(tx, "payment state");
  if (state === "confirmed") await applyDebts(tx, group.groupId, [paymentDebt(row)], 1);
  await resolveItems(tx, actor.agentId, "ledger.payment_to_confirm", { payment_id: row.paymentId });
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: state === "confirmed" ? "payment_confirmed" : "payment_rejected",
    summary: `@${actor.handle} ${state} the payment of ${amount} from ${payerLabel}`,
    refs: { payment_id: row.paymentId },
    data: paymentData(updated),
  });
  return { row, updated, group, action, payer, payee, otherId: row.fromId };
}

/** Tells the other party of one payment's answer: ledger.payment_confirmed, _rejected or _voided. */
async function tellAnswered(tx: Tx, now: Date, actor: Actor, a: Answered): Promise<void> {
  const { row, updated, group, payer, payee } = a;
  const amount = paymentText(row, group);
  const where = `in ${quoted(group.name, 40)}`;
  const refs = { group_id: group.groupId, payment_id: row.paymentId };
  if (a.action === "void") {
    // A placeholder member (no account yet) has no inbox.
    if (isPlaceholder({ agentId: a.otherId, handle: a.otherId === row.fromId ? payer : payee })) return;
    await deliver(tx, now, {
      to: a.otherId,
      type: "ledger.payment_voided",
      from: actor.agentId,
      summaryMd:
        row.state === "confirmed"
          ? `@${actor.handle} voided the payment of ${amount} from @${payer} to @${payee} ${where}; it no longer counts in the balances.`
          : `@${actor.handle} voided the pending payment of ${amount} from @${payer} to @${payee} ${where}; there is nothing to confirm.`,
      payload: { ...paymentPayload(updated, group, payer, payee), voided_by: actor.handle, was: row.state },
      refs,
    });
    return;
  }
  const confirmed = a.action === "confirm";
  await deliver(tx, now, {
    to: row.fromId,
    type: confirmed ? "ledger.payment_confirmed" : "ledger.payment_rejected",
    from: actor.agentId,
    summaryMd: confirmed
      ? `@${actor.handle} confirmed your payment of ${amount} ${where}; it counts in the balances.`
      : `@${actor.handle} rejected your payment of ${amount} ${where}; it does not count. Ask your human what happened.`,
    payload: paymentPayload(updated, group, payer, actor.handle),
    refs,
  });
}

export interface ListPaymentsInput {
  group_id: string;
  state?: PaymentState;
  limit?: number;
  cursor?: string;
}

/** Newest first (in the order they were recorded: rowid). */
export async function listPayments(
  { tx, actor: { agentId } }: DomainContext,
  input: ListPaymentsInput,
): Promise<{ payments: Payment[]; next_cursor: string | null }> {
  const group = await requireMember(tx, input.group_id, agentId);
  const limit = input.limit ?? 50;
  const before = input.cursor === undefined ? undefined : decodeCursor(input.cursor, ["number"] as const)[0];
  const query = tx
    .select({ p: payments, seq: sql<number>`payments.rowid` })
    .from(payments)
    .where(
      and(
        eq(payments.groupId, group.groupId),
        input.state === undefined ? undefined : eq(payments.state, input.state),
        before === undefined ? undefined : sql`payments.rowid < ${before}`,
      ),
    )
    .orderBy(sql`payments.rowid DESC`);
  const { page, next_cursor } = await paginate(
    limit,
    (n) => query.limit(n),
    (last) => encodeCursor([last.seq]),
  );
  return {
    payments: await paymentViews(
      tx,
      page.map((r) => r.p),
      () => group.currency,
    ),
    next_cursor,
  };
}

// Built once for any number of groups; without an agent (null), every pending payment of the groups.
const pending = prepared((tx) => {
  const agent = sql.placeholder("agent");
  return tx
    .select()
    .from(payments)
    .where(
      and(
        sql`${payments.groupId} IN (SELECT value FROM ${jsonEach("groups")})`,
        eq(payments.state, "pending"),
        sql`(${agent} IS NULL OR ${payments.fromId} = ${agent} OR ${payments.toId} = ${agent})`,
      ),
    )
    .orderBy(sql`payments.rowid`)
    .prepare();
});

/** Pending payments of some groups (the ones shown beside balances), oldest first; only those involving `agentId` when given. */
export async function pendingPayments(tx: Tx, groupIds: string[], agentId?: string): Promise<PaymentRow[]> {
  if (!groupIds.length) return [];
  return pending(tx).all({ groups: jsonList(groupIds), agent: agentId ?? null });
}
