import { z } from "zod";
import { respondExpense as respond } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { plainText, Uuid } from "../../contract/wire.ts";
import { Expense } from "../../contract/ledger.ts";

export const respondExpense = defineTool({
  name: "respond_expense",
  title: "Confirm or dispute an expense",
  description:
    "A participant's answer to an expense, after asking their human: action confirm, or dispute with a reason (up to 500 chars, shown to others as untrusted text). A dispute marks the expense state disputed and tells its creator (ledger.expense_disputed); it still counts in balances. Answering again replaces your answer. Resolves your ledger.expense_added item.",
  tags: ["write"],
  input: z.strictObject({ expense_id: Uuid, action: z.enum(["confirm", "dispute"]), reason: plainText(1, 500).optional() }),
  output: z.object({ expense: Expense }),
  async run(ctx, input) {
    const expense = await respond(ctx, input);
    return { expense, suggested_next: input.action === "confirm" ? ["get_balances", "get_inbox"] : ["get_expense", "get_inbox"] };
  },
});
