import { z } from "zod";
import { setDeleted } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { ExpenseId } from "../../contract/wire.ts";
import { Expense } from "../../contract/ledger.ts";

export const deleteExpense = defineTool({
  name: "delete_expense",
  title: "Delete an expense",
  description:
    "Soft-deletes an expense: it stops counting in balances at once but stays readable (list_expenses with include_deleted) and can be brought back with restore_expense. Participants get ledger.expense_deleted. CONFLICT if it is already deleted or the group is archived.",
  tags: ["write", "destructive"],
  input: z.strictObject({ expense_id: ExpenseId }),
  output: z.object({ expense: Expense }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    return { expense: await setDeleted(ctx, input.expense_id, true), suggested_next: ["restore_expense", "get_balances"] };
  },
});
