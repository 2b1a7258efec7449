import { z } from "zod";
import { updateExpense as update } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { plainText, Uuid } from "../../contract/wire.ts";
import { Expense, expenseFields, Notes } from "../../contract/ledger.ts";

export const updateExpense = defineTool({
  name: "update_expense",
  title: "Change an expense",
  description:
    "Changes any fields of an expense (same rules as add_expense); fields left out keep their value, shares are computed again. Needs expected_version, the version you read: when someone changed it since, the answer is CONFLICT with details.current_version; read it again. Each change makes a new version in its history and answers any dispute of the old one. A single payer keeps paying the whole new amount; several payers, exact splits and a new currency must be given again. Participants get ledger.expense_updated (new participants ledger.expense_added). notes: null clears them.",
  tags: ["write"],
  input: z
    .strictObject({
      expense_id: Uuid,
      expected_version: z.number().int().min(1),
      ...expenseFields,
      description: plainText(1, 140).optional(),
      notes: Notes.nullable().optional(),
    })
    .superRefine((v, ctx) => {
      const fields = Object.keys(v).filter((k) => !["expense_id", "expected_version", "idempotency_key"].includes(k));
      if (!fields.length) ctx.addIssue({ code: "custom", path: [], message: "give at least one field to change" });
    }),
  output: z.object({ expense: Expense, changed_fields: z.array(z.string()) }),
  async run(ctx, input) {
    return { ...(await update(ctx, input)), suggested_next: ["get_expense", "get_balances"] };
  },
});
