import { MINUTE } from "../clock.ts";
import { createDueOccurrences } from "../domain/ledger/expenses/recurring.ts";
import type { Job } from "./index.ts";

/** Adds the due occurrences of recurring expenses; running it late or twice makes each occurrence once. */
export const createRecurringExpenses: Job = {
  name: "recurring_expenses",
  everyMs: 15 * MINUTE,
  run: createDueOccurrences,
};
