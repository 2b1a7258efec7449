import type { Tool } from "../define.ts";
import { addExpense } from "./add-expense.ts";
import { deleteExpense } from "./delete-expense.ts";
import { exportGroup } from "./export-group.ts";
import { getActivity } from "./get-activity.ts";
import { getBalances } from "./get-balances.ts";
import { getExpense } from "./get-expense.ts";
import { listExpenses } from "./list-expenses.ts";
import { listPayments } from "./list-payments.ts";
import { recordPayment } from "./record-payment.ts";
import { respondExpense } from "./respond-expense.ts";
import { respondPayment } from "./respond-payment.ts";
import { restoreExpense } from "./restore-expense.ts";
import { updateExpense } from "./update-expense.ts";

/** Expenses, payments, balances and history. */
export const EXPENSE_TOOLS: Tool[] = [
  addExpense,
  listExpenses,
  getExpense,
  updateExpense,
  deleteExpense,
  restoreExpense,
  respondExpense,
  recordPayment,
  respondPayment,
  listPayments,
  getBalances,
  getActivity,
  exportGroup,
];
