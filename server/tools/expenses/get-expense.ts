import { z } from "zod";
import { getExpense as get } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { ExpenseId } from "../../contract/wire.ts";
import { Expense, ExpenseHistoryEntry } from "../../contract/ledger.ts";

export const getExpense = defineTool({
  name: "get_expense",
  title: "Get an expense with its history",
  description: "One expense with each participant's response and its history; version is update_expense's expected_version.",
  tags: ["read"],
  input: z.strictObject({ expense_id: ExpenseId }),
  output: z.object({ expense: Expense, history: z.array(ExpenseHistoryEntry) }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    return { ...(await get(ctx, input.expense_id)), suggested_next: ["update_expense", "respond_expense"] };
  },
});
