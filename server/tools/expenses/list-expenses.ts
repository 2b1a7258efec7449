import { AsOf } from "../../contract/ledger.ts";
import { asOf } from "../../domain/ledger/events/home.ts";
import { z } from "zod";
import { listExpenses as list } from "../../domain/ledger/expenses/expenses.ts";
import { defineTool } from "../define.ts";
import description from "./list-expenses.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { Cursor, GroupId, Limit } from "../../contract/wire.ts";
import { DateOnly, Expense, MEMBER_NAME_HELP, MemberName } from "../../contract/ledger.ts";

export const listExpenses = defineTool({
  name: "list_expenses",
  title: "List a group's expenses",
  description,
  tags: ["read"],
  input: z.strictObject({
    group_id: GroupId,
    limit: Limit.optional(),
    cursor: Cursor.optional(),
    since_date: DateOnly.optional().describe("Earliest date, YYYY-MM-DD (inclusive)"),
    until_date: DateOnly.optional().describe("Latest date, YYYY-MM-DD (inclusive)"),
    involving: MemberName.optional().describe(`Only those of this member: ${MEMBER_NAME_HELP}`),
    include_deleted: z.boolean().optional().describe("Also deleted expenses"),
  }),
  output: z.object({ expenses: z.array(Expense), next_cursor: z.string().nullable(), ...AsOf }),
  example: { group_id: madeUp("group_id"), involving: "bob", limit: 10 },
  async run(ctx, input) {
    return { ...(await list(ctx, input)), ...(await asOf(ctx.tx, input.group_id, ctx.now)), suggested_next: ["get_expense", "get_balances"] };
  },
});
