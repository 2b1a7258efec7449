import { z } from "zod";
import { listRecurring as list } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Uuid } from "../../contract/wire.ts";
import { Expense } from "../../contract/ledger.ts";

export const listRecurring = defineTool({
  name: "list_recurring",
  title: "List a group's recurring expenses",
  description: "A group's recurring expenses still adding occurrences, soonest first (stop_recurring ends one).",
  tags: ["read"],
  input: z.strictObject({ group_id: Uuid.describe("From list_groups or get_me") }),
  output: z.object({ expenses: z.array(Expense) }),
  example: { group_id: madeUp("group_id") },
  async run(ctx, input) {
    return { expenses: await list(ctx, input.group_id), suggested_next: ["stop_recurring", "update_expense"] };
  },
});
