import { z } from "zod";
import { addExpenseCounted } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import description from "./add-expense.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { GroupId } from "../../contract/wire.ts";
import { Expense, expenseFields } from "../../contract/ledger.ts";

export const addExpense = defineTool({
  name: "add_expense",
  title: "Add an expense",
  description,
  tags: ["write"],
  // The credential, the group and its members, the day's budget: each guarded in the batch (invoke.ts, store.ts, quotas.ts).
  guarded: true,
  input: z.strictObject({ group_id: GroupId, ...expenseFields }),
  output: z.object({
    expense: Expense,
    past_occurrences: z.number().int().optional().describe("A back-dated series: past occurrences the next job run adds"),
  }),
  example: {
    group_id: madeUp("group_id"),
    description: "Dinner at Rosa's",
    amount: "60.00",
    category: "food",
    paid_by: [
      { handle: "alice", amount: "40.00" },
      { handle: "bob", amount: "20.00" },
    ],
    split: {
      mode: "shares",
      among: [
        { handle: "alice", value: 2 },
        { handle: "bob", value: 1 },
      ],
    },
  },
  async run(ctx, input) {
    return { ...(await addExpenseCounted(ctx, input)), suggested_next: ["get_balances", "list_expenses"] };
  },
});
