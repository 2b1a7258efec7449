import { z } from "zod";
import { setDeleted } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { ExpenseId } from "../../contract/wire.ts";
import { Expense } from "../../contract/ledger.ts";

export const deleteExpense = defineTool({
  name: "delete_expense",
  title: "Delete an expense",
  description: "Deletes an expense: it stops counting and stays readable; restore_expense undoes it.",
  tags: ["write", "destructive"],
  input: z.strictObject({ expense_id: ExpenseId }),
  output: z.object({ expense: Expense }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    return { expense: await setDeleted(ctx, input.expense_id, true), suggested_next: ["restore_expense", "get_balances"] };
  },
});
