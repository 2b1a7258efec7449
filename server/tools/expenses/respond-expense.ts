import { z } from "zod";
import { respondExpense as respond, respondExpenses } from "../../domain/ledger/expenses/expenses.ts";
import { invalid } from "../../errors.ts";
import { defineTool } from "../define.ts";
import description from "./respond-expense.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { ExpenseId, plainText } from "../../contract/wire.ts";
import { Expense } from "../../contract/ledger.ts";

export const respondExpense = defineTool({
  name: "respond_expense",
  title: "Confirm or dispute an expense",
  description,
  tags: ["write"],
  input: z.strictObject({
    expense_id: ExpenseId.optional(),
    expense_ids: z.array(ExpenseId).min(1).max(100).optional().describe("Several to answer alike (or with expense_id)"),
    action: z.enum(["confirm", "dispute"]).describe("Your human's answer"),
    reason: plainText(1, 500).optional().describe("Why, shown to the others"),
  }),
  output: z.object({
    expense: Expense.optional(),
    results: z
      .array(
        z.object({
          expense_id: z.string(),
          ok: z.boolean(),
          state: z.enum(["active", "disputed"]).optional(),
          error: z.object({ code: z.string(), message: z.string() }).optional(),
        }),
      )
      .optional()
      .describe("With expense_ids: each one's outcome"),
  }),
  example: { expense_id: madeUp("expense_id"), action: "dispute", reason: "I only had a starter; my share is 15.00." },
  async run(ctx, input) {
    const next = input.action === "confirm" ? ["get_balances", "get_inbox"] : ["get_expense", "get_inbox"];
    const { expense_id, expense_ids, ...rest } = input;
    if (expense_id === undefined && expense_ids === undefined) throw invalid("expense_id", "give expense_id, or expense_ids to answer several");
    // expense_id is answered as ever (a refusal refuses the call); expense_ids each in results.
    const expense = expense_id === undefined ? undefined : await respond(ctx, { ...rest, expense_id });
    const others = expense_ids?.filter((id) => id !== expense_id);
    const results = others === undefined ? undefined : await respondExpenses(ctx, { ...rest, expense_ids: others });
    return { ...(expense ? { expense } : {}), ...(results ? { results } : {}), suggested_next: next };
  },
});
