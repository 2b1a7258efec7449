import { z } from "zod";
import { respondExpense as respond } from "../../domain/ledger/expenses/expenses.ts";
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
    expense_id: ExpenseId,
    action: z.enum(["confirm", "dispute"]).describe("Your human's answer"),
    reason: plainText(1, 500).optional().describe("Why it is disputed, shown to the others"),
  }),
  output: z.object({ expense: Expense }),
  example: { expense_id: madeUp("expense_id"), action: "dispute", reason: "I only had a starter; my share is 15.00." },
  async run(ctx, input) {
    const expense = await respond(ctx, input);
    return { expense, suggested_next: input.action === "confirm" ? ["get_balances", "get_inbox"] : ["get_expense", "get_inbox"] };
  },
});
