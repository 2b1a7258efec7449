import type { Tool } from "../define.ts";

/** Expenses, payments, balances and history. */
export const EXPENSE_TOOLS: Tool[] = [];
