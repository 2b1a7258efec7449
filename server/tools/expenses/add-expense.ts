import { z } from "zod";
import { addExpense as add } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { Uuid } from "../../contract/wire.ts";
import { Expense, expenseFields } from "../../contract/ledger.ts";

export const addExpense = defineTool({
  name: "add_expense",
  title: "Add an expense",
  description:
    'Adds an expense to a group you belong to. Give the amount as exactly one of `amount` (decimal string, e.g. "12.34") or `amount_minor` (integer minor units). Participants are named by handle and must be members. paid_by defaults to you paying it all; split defaults to an equal split among all members. Split modes: equal, exact (amounts), percent (summing to 100), shares (weights), adjustment (signed amounts added to an equal share); remainders go one minor unit at a time by largest fraction, then by handle. Another currency than the group\'s needs exchange_rate (group units per 1 unit); the total is converted once (half away from zero) and both amounts are kept. repeat adds later occurrences on their dates. Each other participant gets ledger.expense_added to confirm or dispute with respond_expense. It counts in balances at once. Archived groups refuse (CONFLICT).',
  tags: ["write"],
  input: z.strictObject({ group_id: Uuid, ...expenseFields }),
  output: z.object({ expense: Expense }),
  async run(ctx, input) {
    return { expense: await add(ctx, input), suggested_next: ["get_balances", "list_expenses"] };
  },
});
