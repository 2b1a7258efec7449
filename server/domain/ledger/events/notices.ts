// The inbox items a group's event brings this server's own agents in a copy: the same a local member gets (an
// expense to confirm, a payment to confirm, a dispute, ...), and the ones it resolves when the agent answered. Agents
// of other servers get theirs from their own server.
import { eq } from "drizzle-orm";
import { snapshotOf, type Tx } from "../../../../db/client.ts";
import { groups } from "../../../../db/schema/index.ts";
import type { Actor } from "../../../contract/principal.ts";
import { remoteAddresses } from "../../federation.ts";
import { deliver, resolveItems } from "../../inbox.ts";
import { quoted } from "../../untrusted.ts";
import { tellAdded, tellDeleted, tellDisputed, tellRestored, tellUpdated } from "../expenses/notices.ts";
import type { ExpenseRow, ExpenseState } from "../expenses/store.ts";
import type { PaymentRow } from "../payments/payments.ts";
import { paymentPayload, paymentText } from "../payments/payments.ts";

/** Which of these agents are this server's own. */
async function ownOf(tx: Tx, ids: string[]): Promise<Set<string>> {
  const remote = await remoteAddresses(tx, ids);
  return new Set(ids.filter((id) => !remote.has(id)));
}

const groupOf = async (tx: Tx, groupId: string) => (await snapshotOf(tx).select().from(groups).where(eq(groups.groupId, groupId)).get())!;

export async function tellOfExpense(
  tx: Tx,
  now: Date,
  c: { groupId: string; actor: Actor; expenseId: string; version: number; action: string; state: ExpenseState; changed: string[] },
): Promise<void> {
  const own = await ownOf(
    tx,
    c.state.shares.map((s) => s.agentId),
  );
  const recipients = c.state.shares.filter((s) => own.has(s.agentId) && s.agentId !== c.actor.agentId);
  if (!recipients.length) return;
  const n = { tx, now, group: await groupOf(tx, c.groupId), actor: c.actor, expenseId: c.expenseId, version: c.version, state: c.state, recipients };
  if (c.action === "created") await tellAdded(n);
  else if (c.action === "updated") await tellUpdated({ ...n, changedFields: c.changed });
  else if (c.action === "deleted") await tellDeleted(n);
  else if (c.action === "restored") await tellRestored(n);
}

/** A response to an expense: the answering agent's item resolved here, and a dispute told to its creator here. */
export async function tellOfResponse(tx: Tx, now: Date, c: { actor: Actor; row: ExpenseRow; action: string; reason: string | null }): Promise<void> {
  const own = await ownOf(tx, [c.actor.agentId, c.row.createdBy]);
  if (own.has(c.actor.agentId)) await resolveItems(tx, c.actor.agentId, "ledger.expense_added", { expense_id: c.row.expenseId });
  if (c.action === "dispute" && own.has(c.row.createdBy) && c.row.createdBy !== c.actor.agentId) {
    await tellDisputed({ tx, now, group: await groupOf(tx, c.row.groupId), actor: c.actor, row: c.row, reason: c.reason ?? "" });
  }
}

/** A payment recorded or answered: the payee asked to confirm, the payer told of the answer, as on one server. */
export async function tellOfPayment(
  tx: Tx,
  now: Date,
  c: { actor: Actor; row: PaymentRow; before: PaymentRow | undefined; handles: { from: string; to: string } },
): Promise<void> {
  const { row, actor } = c;
  const own = await ownOf(tx, [row.fromId, row.toId]);
  const group = await groupOf(tx, row.groupId);
  const refs = { group_id: row.groupId, payment_id: row.paymentId };
  const payload = paymentPayload(row, group, c.handles.from, c.handles.to);
  const amount = paymentText(row, group);
  const where = `in ${quoted(group.name, 40)}`;
  const other = actor.agentId === row.fromId ? row.toId : row.fromId;
  if (!c.before) {
    if (row.state === "pending" && own.has(row.toId)) {
      await deliver(tx, now, {
        to: row.toId,
        type: "ledger.payment_to_confirm",
        from: actor.agentId,
        summaryMd: `@${c.handles.from} says they paid you ${amount} ${where}. Confirm with respond_payment once your human has received it, or reject it.`,
        payload,
        refs,
      });
    } else if (row.state === "confirmed" && own.has(row.fromId) && actor.agentId !== row.fromId) {
      await deliver(tx, now, {
        to: row.fromId,
        type: "ledger.payment_confirmed",
        from: actor.agentId,
        summaryMd: `@${c.handles.to} recorded your payment of ${amount} ${where}; it counts in the balances.`,
        payload,
        refs,
      });
    }
    return;
  }
  // An answer: nothing is left to confirm, and the other party hears of it.
  if (own.has(row.toId)) await resolveItems(tx, row.toId, "ledger.payment_to_confirm", { payment_id: row.paymentId });
  if (!own.has(other)) return;
  const type = row.state === "confirmed" ? "ledger.payment_confirmed" : row.state === "rejected" ? "ledger.payment_rejected" : "ledger.payment_voided";
  await deliver(tx, now, {
    to: other,
    type,
    from: actor.agentId,
    summaryMd: `@${actor.handle} ${row.state} the payment of ${amount} from @${c.handles.from} to @${c.handles.to} ${where}.`,
    payload,
    refs,
  });
}
