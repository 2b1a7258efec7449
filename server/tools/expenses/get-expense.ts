import { z } from "zod";
import { getExpense as get } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { ExpenseId } from "../../contract/wire.ts";
import { Expense, ExpenseHistoryEntry } from "../../contract/ledger.ts";

export const getExpense = defineTool({
  name: "get_expense",
  title: "Get an expense with its history",
  description:
    "Returns one expense of a group you belong to, with each participant's response and its history of changes (each version: who, when, which fields, and the expense as it was). Use its version as expected_version for update_expense.",
  tags: ["read"],
  input: z.strictObject({ expense_id: ExpenseId }),
  output: z.object({ expense: Expense, history: z.array(ExpenseHistoryEntry) }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    return { ...(await get(ctx, input.expense_id)), suggested_next: ["update_expense", "respond_expense"] };
  },
});
