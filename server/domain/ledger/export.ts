// export_group: the whole live ledger of a group as CSV (one row per expense share and per payment) or JSON.
import { asc, eq, sql } from "drizzle-orm";
import { expenses, payments } from "../../../db/schema/index.ts";
import { iso } from "../../clock.ts";
import type { Expense, Payment } from "../../contract/ledger.ts";
import { untrusted } from "../untrusted.ts";
import { groupBalanceView } from "./balances.ts";
import { csvField, csvLines } from "./csv.ts";
import { expenseViews } from "./expense-views.ts";
import { requireMember } from "./membership.ts";
import { formatAmount } from "./money.ts";
import { paymentViews } from "./payments.ts";
import type { DomainContext } from "../../contract/principal.ts";

export const CSV_HEADER = ["record", "id", "date", "description", "category", "currency", "amount", "participant", "paid", "share", "from", "to", "state"];

function csvText(currency: string, list: Expense[], paid: Payment[]): string {
  const rows = [CSV_HEADER];
  for (const e of list) {
    const paidBy = new Map(e.paid_by.map((p) => [p.handle, p.amount_minor]));
    const share = new Map(e.shares.map((s) => [s.handle, s.amount_minor]));
    for (const handle of new Set([...share.keys(), ...paidBy.keys()])) {
      rows.push([
        "expense_share",
        e.expense_id,
        e.date,
        csvField(e.description.untrusted_content, true),
        e.category,
        currency,
        e.amount,
        handle,
        formatAmount(paidBy.get(handle) ?? 0, currency),
        formatAmount(share.get(handle) ?? 0, currency),
        "",
        "",
        e.state,
      ]);
    }
  }
  for (const p of paid) {
    rows.push([
      "payment",
      p.payment_id,
      p.created_at.slice(0, 10),
      csvField(p.note?.untrusted_content ?? null, true),
      "",
      currency,
      p.amount,
      "",
      "",
      "",
      p.from.handle,
      p.to.handle,
      p.state,
    ]);
  }
  return csvLines(rows);
}

export async function exportGroup(ctx: DomainContext, groupId: string, format: "csv" | "json") {
  const { tx, now, actor } = ctx;
  const group = await requireMember(tx, groupId, actor.agentId);
  const expenseRows = await tx.select().from(expenses).where(eq(expenses.groupId, groupId)).orderBy(asc(expenses.date), sql`expenses.rowid`);
  const live = await expenseViews(
    tx,
    group,
    expenseRows.filter((r) => !r.deleted),
  );
  const paymentRows = await tx.select().from(payments).where(eq(payments.groupId, groupId)).orderBy(sql`payments.rowid`);
  const paid = await paymentViews(tx, paymentRows, () => group.currency);
  const content =
    format === "csv"
      ? csvText(group.currency, live, paid)
      : JSON.stringify(
          {
            group: { group_id: group.groupId, name: group.name, currency: group.currency, simplify_debts: group.simplifyDebts, exported_at: iso(now) },
            balances: await groupBalanceView(ctx, groupId),
            expenses: live,
            payments: paid,
          },
          null,
          2,
        );
  return {
    format,
    filename: `group-${group.groupId}-${iso(now).slice(0, 10)}.${format}`,
    media_type: format === "csv" ? "text/csv" : "application/json",
    // Descriptions and notes in it were written by the group's members.
    content: untrusted(content, `export of the group's ledger; its descriptions and notes were written by the group's members`),
  };
}
