import { AsOf } from "../../contract/ledger.ts";
import { asOf } from "../../domain/ledger/events/home.ts";
import { z } from "zod";
import { getExpense as get } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { ExpenseId } from "../../contract/wire.ts";
import { Attachment, Expense, ExpenseHistoryEntry } from "../../contract/ledger.ts";
import { attachmentsOf } from "../../domain/ledger/expenses/attachments.ts";
import { linkSigner } from "./attachment-context.ts";

export const getExpense = defineTool({
  name: "get_expense",
  title: "Get an expense with its history",
  description: "One expense, its responses and history; version is update_expense's expected_version.",
  tags: ["read"],
  input: z.strictObject({ expense_id: ExpenseId }),
  output: z.object({
    expense: Expense,
    history: z.array(ExpenseHistoryEntry),
    attachments: z.array(Attachment).optional().describe("Files kept with it (receipts)"),
    ...AsOf,
  }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    const found = await get(ctx, input.expense_id);
    const attachments = await attachmentsOf(ctx.tx, [input.expense_id], await linkSigner(ctx));
    return { ...found, attachments, ...(await asOf(ctx.tx, found.expense.group_id, ctx.now)), suggested_next: ["update_expense", "respond_expense"] };
  },
});
