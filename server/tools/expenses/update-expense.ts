import { z } from "zod";
import { updateExpense as update } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import description from "./update-expense.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { ExpenseId, plainText } from "../../contract/wire.ts";
import { Expense, expenseFields, Notes } from "../../contract/ledger.ts";

export const updateExpense = defineTool({
  name: "update_expense",
  title: "Change an expense",
  description,
  tags: ["write"],
  input: z
    .strictObject({
      expense_id: ExpenseId,
      expected_version: z.number().int().min(1).describe("From get_expense; CONFLICT if it changed"),
      ...expenseFields,
      description: plainText(1, 140).optional().describe('e.g. "Dinner at Rosa\'s"'),
      notes: Notes.nullable().optional().describe("Longer notes; null clears them"),
    })
    .superRefine((v, ctx) => {
      const fields = Object.keys(v).filter((k) => !["expense_id", "expected_version", "idempotency_key"].includes(k));
      if (!fields.length) ctx.addIssue({ code: "custom", path: [], message: "give at least one field to change" });
    }),
  output: z.object({ expense: Expense, changed_fields: z.array(z.string()) }),
  example: { expense_id: madeUp("expense_id"), expected_version: 1, description: "Dinner at Rosa's, tip included", notes: "Receipt in the shared folder." },
  async run(ctx, input) {
    return { ...(await update(ctx, input)), suggested_next: ["get_expense", "get_balances"] };
  },
});
