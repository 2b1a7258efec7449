// One payment to a friend across the groups both are in (record_payment without group_id): it pays the payee what
// the payer owes them in those groups, oldest group first, as one part per group with the same batch_id, recorded in
// one transaction and confirmed, rejected or voided by one answer (respond_payment on any part).
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { Tx } from "../../../../db/client.ts";
import { groupMembers, groups, payments } from "../../../../db/schema/index.ts";
import type { Payment } from "../../../contract/ledger.ts";
import type { Actor, DomainContext } from "../../../contract/principal.ts";
import { conflict, invalid } from "../../../errors.ts";
import { agentByHandle } from "../../agents.ts";
import { deliver } from "../../inbox.ts";
import { quoted, untrusted } from "../../untrusted.ts";
import { owedBetween } from "../balances/settlement.ts";
import { memberGroup, memberRefsByGroup, membersByHandle, type GroupRow } from "../groups/membership.ts";
import { formatAmount, inGroupCurrency, moneyText } from "../money/amounts.ts";
import { compareText } from "../money/splits.ts";
import {
  answerPayment,
  insertPayment,
  paymentPayload,
  paymentViews,
  respondPayment,
  visiblePayment,
  type Answered,
  type PaymentRow,
  type RecordPaymentInput,
} from "./payments.ts";

/** One group's part of a payment across groups. */
export interface PaymentPart {
  group_id: string;
  name: string;
  /** What the payer owed the payee in the group before it. */
  owed_minor: number;
  owed: string;
  payment: Payment;
}

/** The groups of this server both agents are in now and that accept changes, oldest first (their debts are the oldest). */
async function sharedGroups(tx: Tx, a: string, b: string): Promise<GroupRow[]> {
  const other = sql`EXISTS (SELECT 1 FROM group_members o WHERE o.group_id = ${groups.groupId} AND o.agent_id = ${b} AND o.left_at IS NULL)`;
  const rows = await tx
    .select({ g: groups })
    .from(groups)
    .innerJoin(groupMembers, and(eq(groupMembers.groupId, groups.groupId), eq(groupMembers.agentId, a), isNull(groupMembers.leftAt)))
    // A group kept on another server is paid there, one group at a time (record_payment with its group_id).
    .where(and(eq(groups.archived, false), other, sql`NOT EXISTS (SELECT 1 FROM group_homes h WHERE h.group_id = ${groups.groupId})`))
    .orderBy(groups.createdAt, sql`groups.rowid`);
  return rows.map((r) => r.g);
}

/**
 * record_payment without group_id. The amount (default: all of it) goes to the groups in which the payer owes the
 * payee, oldest group first, each part at most what is owed there (settlement.owedBetween, as an overpayment is
 * measured); in one currency, the groups' own (`currency` chooses when the debts are in several). Refused when
 * nothing is owed, or when the amount is more than the total owed (which the message names).
 */
export async function recordAcrossGroups(ctx: DomainContext, input: Omit<RecordPaymentInput, "group_id">) {
  const { tx, now, actor } = ctx;
  if (input.from === undefined && input.to === undefined) throw invalid("to", "name the payee with to, or the payer with from; you are the other one");
  if (input.exchange_rate !== undefined)
    throw invalid("exchange_rate", "a payment across groups is in the groups' own currency; give group_id to pay one group in another currency");
  // Across groups only an agent is named, by handle (an @ and capitals forgiven): a member without an account is in
  // one group only, and is paid there.
  const handleOf = (given: string | undefined) => (given === undefined ? actor.handle : given.trim().replace(/^@/, "").toLowerCase());
  const fromHandle = handleOf(input.from);
  const toHandle = handleOf(input.to);
  if (fromHandle !== actor.handle && toHandle !== actor.handle) throw invalid("from", "you must be the payer (from) or the payee (to)");
  if (fromHandle === toHandle) throw invalid("to", "the payer and the payee must be two different members");
  const otherPath = fromHandle === actor.handle ? "to" : "from";
  const other = await agentByHandle(tx, otherPath === "to" ? toHandle : fromHandle);
  if (!other) {
    throw invalid(
      otherPath,
      `no agent has the handle ${otherPath === "to" ? toHandle : fromHandle}; a member without an account is paid in its own group: give group_id, and its name or member_id (get_group)`,
    );
  }
  const [fromId, toId] = fromHandle === actor.handle ? [actor.agentId, other.agentId] : [other.agentId, actor.agentId];
  const [payer, payee] = [`@${fromHandle}`, `@${toHandle}`];

  const shared = await sharedGroups(tx, actor.agentId, other.agentId);
  const refs = await memberRefsByGroup(
    tx,
    shared.map((g) => g.groupId),
  );
  const owing: { group: GroupRow; owed: number }[] = [];
  for (const group of shared) {
    const owed = await owedBetween(tx, now, group, refs.get(group.groupId)!, fromId, toId);
    if (owed > 0) owing.push({ group, owed });
  }
  const currencies = [...new Set(owing.map((o) => o.group.currency))].sort(compareText);
  if (!currencies.length)
    throw conflict(`${payer} owes ${payee} nothing in the groups they share, so there is nothing to pay across groups.`, { groups: shared.length });
  const currency = input.currency ?? (currencies.length === 1 ? currencies[0]! : undefined);
  if (currency === undefined)
    throw invalid("currency", `${payer} owes ${payee} in ${currencies.join(" and ")}; name the currency to pay with currency, one payment per currency`);
  const parts = owing.filter((o) => o.group.currency === currency);
  const total = parts.reduce((t, o) => t + o.owed, 0);
  if (!parts.length) throw conflict(`${payer} owes ${payee} nothing in ${currency} in the groups they share (only in ${currencies.join(", ")}).`);
  const given = input.amount !== undefined || input.amount_minor !== undefined;
  const amountMinor = given
    ? inGroupCurrency({ currency, amount: input.amount, amount_minor: input.amount_minor, exchangeRate: null }, currency).amountMinor
    : total;
  if (amountMinor > total) {
    throw invalid(
      input.amount !== undefined ? "amount" : "amount_minor",
      `is more than the ${moneyText(total, currency)} ${payer} owes ${payee} across the groups they share; pay at most that, or give group_id to pay one group more`,
    );
  }

  const batchId = crypto.randomUUID();
  const state = toId === actor.agentId ? "confirmed" : "pending";
  const note = input.note || null;
  const written: { group: GroupRow; owed: number; row: PaymentRow }[] = [];
  let left = amountMinor;
  for (const { group, owed } of parts) {
    if (left === 0) break;
    const part = Math.min(left, owed);
    left -= part;
    const members = await membersByHandle(tx, group.groupId);
    const row = await insertPayment(tx, now, group, {
      from: members.get(fromHandle)!,
      to: members.get(toHandle)!,
      amountMinor: part,
      original: null,
      state,
      note,
      createdBy: actor.agentId,
      batchId,
    });
    written.push({ group, owed, row });
  }
  await tellBatch(tx, now, actor, {
    type: state === "pending" ? "ledger.payment_to_confirm" : "ledger.payment_confirmed",
    to: state === "pending" ? toId : fromId,
    rows: written.map((w) => ({ row: w.row, group: w.group })),
    fromHandle,
    toHandle,
    say: (amount, where) =>
      state === "pending"
        ? `@${fromHandle} says they paid you ${amount} across your groups (${where}). Confirm once your human has received it, or reject it: respond_payment on any of its payment ids answers all of them.`
        : `@${toHandle} recorded your payment of ${amount} across your groups (${where}); it counts in the balances.`,
    note,
  });
  const views = await paymentViews(
    tx,
    written.map((w) => w.row),
    () => currency,
  );
  return {
    payment: views[0]!,
    overpayment: null,
    batch_id: batchId,
    currency,
    total_minor: amountMinor,
    total: formatAmount(amountMinor, currency),
    parts: written.map(
      (w, i): PaymentPart => ({ group_id: w.group.groupId, name: w.group.name, owed_minor: w.owed, owed: formatAmount(w.owed, currency), payment: views[i]! }),
    ),
  };
}

/** One inbox item for a whole batch: the amount, each group's part, and refs to the first part and the batch. */
async function tellBatch(
  tx: Tx,
  now: Date,
  actor: Actor,
  b: {
    type: "ledger.payment_to_confirm" | "ledger.payment_confirmed" | "ledger.payment_rejected" | "ledger.payment_voided";
    to: string;
    rows: { row: PaymentRow; group: GroupRow }[];
    fromHandle: string;
    toHandle: string;
    say: (amount: string, where: string) => string;
    note: string | null;
    extra?: Record<string, unknown>;
  },
): Promise<void> {
  const first = b.rows[0]!;
  const currency = first.group.currency;
  const total = b.rows.reduce((t, r) => t + r.row.amountMinor, 0);
  const where = b.rows.map((r) => `${moneyText(r.row.amountMinor, currency)} in ${quoted(r.group.name, 40)}`).join(", ");
  await deliver(tx, now, {
    to: b.to,
    type: b.type,
    from: actor.agentId,
    summaryMd: b.say(moneyText(total, currency), where),
    payload: {
      ...paymentPayload(first.row, first.group, b.fromHandle, b.toHandle),
      amount_minor: total,
      amount: formatAmount(total, currency),
      batch_id: first.row.batchId,
      parts: b.rows.map((r) => paymentPayload(r.row, r.group, b.fromHandle, b.toHandle)),
      ...b.extra,
    },
    note: b.note === null ? null : untrusted(b.note, `payment note written by @${actor.handle}`),
    refs: { group_id: first.group.groupId, payment_id: first.row.paymentId, batch_id: first.row.batchId! },
  });
}

/**
 * respond_payment: a payment that is one part of a payment across groups is answered with all its parts, in the
 * same transaction, and the other party is told once; any other payment alone (payments.ts respondPayment).
 */
export async function respondAnyPayment(
  ctx: DomainContext,
  input: { payment_id: string; action: "confirm" | "reject" | "void" },
): Promise<{ payment: Payment; parts?: Payment[] }> {
  const { tx, now, actor } = ctx;
  const { row } = await visiblePayment(tx, input.payment_id, actor.agentId);
  if (row.batchId === null) return { payment: await respondPayment(ctx, input) };
  const rows = await tx.select().from(payments).where(eq(payments.batchId, row.batchId)).orderBy(asc(sql`payments.rowid`));
  const answered: Answered[] = [];
  for (const part of rows) {
    const group = await memberGroup(tx, part.groupId, actor.agentId);
    if (!group) throw conflict("You have left one of the groups this payment was made across, so it cannot be answered as one.");
    answered.push(await answerPayment(tx, now, actor, part, group, input.action));
  }
  const { payer, payee, otherId } = answered[0]!;
  const was = rows[0]!.state;
  await tellBatch(tx, now, actor, {
    type: input.action === "void" ? "ledger.payment_voided" : input.action === "confirm" ? "ledger.payment_confirmed" : "ledger.payment_rejected",
    to: otherId,
    rows: answered.map((a) => ({ row: a.updated, group: a.group })),
    fromHandle: payer,
    toHandle: payee,
    say: (amount, where) =>
      input.action === "void"
        ? `@${actor.handle} voided the ${was} payment of ${amount} from @${payer} to @${payee} across your groups (${where}); it does not count in the balances.`
        : input.action === "confirm"
          ? `@${actor.handle} confirmed your payment of ${amount} across your groups (${where}); it counts in the balances.`
          : `@${actor.handle} rejected your payment of ${amount} across your groups (${where}); it does not count. Ask your human what happened.`,
    note: null,
    extra: input.action === "void" ? { voided_by: actor.handle, was } : {},
  });
  const views = await paymentViews(
    tx,
    answered.map((a) => a.updated),
    () => answered[0]!.group.currency,
  );
  return { payment: views[rows.findIndex((r) => r.paymentId === row.paymentId)]!, parts: views };
}
