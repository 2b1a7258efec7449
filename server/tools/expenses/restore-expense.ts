import { z } from "zod";
import { setDeleted } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { ExpenseId } from "../../contract/wire.ts";
import { Expense } from "../../contract/ledger.ts";

export const restoreExpense = defineTool({
  name: "restore_expense",
  title: "Restore a deleted expense",
  description: "Undoes delete_expense, as a new version (CONFLICT if a participant has left).",
  tags: ["write"],
  input: z.strictObject({ expense_id: ExpenseId }),
  output: z.object({ expense: Expense }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    return { expense: await setDeleted(ctx, input.expense_id, false), suggested_next: ["get_balances"] };
  },
});
