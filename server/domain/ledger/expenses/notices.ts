// The inbox items an expense's participants get: one function per notice, each taking what it says as one object.
import type { Tx } from "../../../../db/client.ts";
import type { Actor } from "../../../contract/principal.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { refsByIds } from "../../agents.ts";
import { deliver, deliverAll, type Delivery } from "../../inbox.ts";
import { quoted, untrusted } from "../../untrusted.ts";
import type { GroupRow } from "../groups/membership.ts";
import { isPlaceholder, refsWithKnown } from "../groups/membership.ts";
import { formatAmount, moneyText } from "../money/amounts.ts";
import type { ExpenseRow, ExpenseState, ParticipantShare } from "./store.ts";
import { authorOf } from "./views.ts";
import { kindWord } from "../../../contract/ledger-wording.ts";

/** What every expense notice names: the change, who made it, the version it made, and whom to tell. */
export interface ExpenseNotice {
  tx: Tx;
  now: Date;
  group: GroupRow;
  actor: Actor;
  expenseId: string;
  version: number;
  state: ExpenseState;
  recipients: ParticipantShare[];
  /** Agents already read (the group's members), so their refs are not read again. */
  known?: Map<string, AgentRef>;
}

type ExpenseItemType = "ledger.expense_added" | "ledger.expense_updated" | "ledger.expense_deleted";

/** One item per recipient, each with their share; `say` words the summary from "what", "where" and the share. */
async function tell(
  n: ExpenseNotice,
  type: ExpenseItemType,
  say: (what: string, where: string, share: string) => string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const { tx, now, group, actor, expenseId, version, state: s } = n;
  // A placeholder member has no inbox: it is nobody until claimed (its claim sums up what it was put down for).
  const recipients = n.recipients.filter((r) => !isPlaceholder(r));
  if (!recipients.length) return;
  const people = await refsWithKnown(tx, [s.descriptionBy, ...(s.notesBy ? [s.notesBy] : [])], n.known ?? new Map());
  const what = `${kindWord(s.kind)}${quoted(s.description)} (${moneyText(s.amountMinor, group.currency)})`;
  const where = `in ${quoted(group.name, 40)}`;
  const deliveries = recipients.map(
    (r): Delivery => ({
      to: r.agentId,
      type,
      from: actor.agentId,
      summaryMd: say(what, where, moneyText(r.shareMinor, group.currency)),
      payload: {
        group_id: group.groupId,
        expense_id: expenseId,
        version,
        kind: s.kind,
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
    }),
  );
  await deliverAll(tx, now, deliveries);
}

/** ledger.expense_added: a new expense, or one the recipient was just put into; they confirm or dispute it. */
export const tellAdded = (n: ExpenseNotice) =>
  tell(
    // Someone with nothing at stake (no share, paid nothing) has nothing to confirm.
    { ...n, recipients: n.recipients.filter((r) => r.shareMinor !== 0 || r.paidMinor !== 0) },
    "ledger.expense_added",
    (what, where, share) =>
      `@${n.actor.handle} added ${what} ${where}; your share is ${share}. Ask your human, then confirm or dispute it with respond_expense.`,
  );

/** ledger.expense_updated: a new version changed `changedFields`; dropped participants get a share of zero. */
export const tellUpdated = (n: ExpenseNotice & { changedFields: string[] }) =>
  tell(
    n,
    "ledger.expense_updated",
    (what, where, share) => `@${n.actor.handle} changed ${what} ${where} (${n.changedFields.join(", ")}); your share is now ${share}.`,
    { changed_fields: n.changedFields },
  );

/** ledger.expense_updated for a restore: the expense counts in the balances again. */
export const tellRestored = (n: ExpenseNotice) =>
  tell(n, "ledger.expense_updated", (what, where, share) => `@${n.actor.handle} restored ${what} ${where}; your share is ${share} again.`, {
    changed_fields: ["deleted"],
    change: "restored",
  });

/** ledger.expense_deleted: the expense no longer counts in the balances. */
export const tellDeleted = (n: ExpenseNotice) =>
  tell(n, "ledger.expense_deleted", (what, where) => `@${n.actor.handle} deleted ${what} ${where}; it no longer counts in the balances.`);

/** ledger.expense_disputed: tells the expense's creator that a participant disputes it, and why. */
export async function tellDisputed(n: { tx: Tx; now: Date; group: GroupRow; actor: Actor; row: ExpenseRow; reason: string }): Promise<void> {
  const { tx, now, group, actor, row, reason } = n;
  const author = row.descriptionBy ?? row.createdBy;
  await deliver(tx, now, {
    to: row.createdBy,
    type: "ledger.expense_disputed",
    from: actor.agentId,
    summaryMd: `@${actor.handle} disputes ${kindWord(row.kind)}${quoted(row.description)} (${moneyText(row.amountMinor, group.currency)}) in ${quoted(group.name, 40)}, saying ${quoted(reason)}. Check it with get_expense, then fix it with update_expense or remove it with delete_expense.`,
    payload: {
      group_id: group.groupId,
      expense_id: row.expenseId,
      version: row.version,
      description: untrusted(row.description, `expense description written by ${authorOf(await refsByIds(tx, [author]), author)}`),
      amount_minor: row.amountMinor,
      amount: formatAmount(row.amountMinor, group.currency),
      currency: group.currency,
      disputed_by: actor.handle,
    },
    note: untrusted(reason, `dispute reason written by @${actor.handle}`),
    refs: { group_id: group.groupId, expense_id: row.expenseId, agent_id: actor.agentId },
  });
}
