import { z } from "zod";
import { stopRecurring as stop } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Uuid } from "../../contract/wire.ts";
import { Expense } from "../../contract/ledger.ts";

export const stopRecurring = defineTool({
  name: "stop_recurring",
  title: "Stop a recurring expense",
  description: "Ends a recurring expense after the occurrences already made (they stay).",
  tags: ["write"],
  input: z.strictObject({ expense_id: Uuid.describe("From list_recurring") }),
  output: z.object({ expense: Expense }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    return { expense: await stop(ctx, input.expense_id), suggested_next: ["list_recurring"] };
  },
});
