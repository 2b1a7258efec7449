import { asOf } from "../../domain/ledger/events/home.ts";
import { AsOf } from "../../contract/ledger.ts";
import { z } from "zod";
import { SPENDING_BY, spending } from "../../domain/ledger/spending/spending.ts";
import { DateOnly } from "../../contract/ledger.ts";
import { MemberRef } from "../../contract/groups.ts";
import { AgentRef, Uuid } from "../../contract/wire.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import description from "./get-spending.description.md" with { type: "text" };

const Row = z.object({
  key: z.string().describe("The category, the month (YYYY-MM) or the member's handle (a placeholder's member_id)"),
  agent: AgentRef.optional().describe("By member, v1 field: read member"),
  member: MemberRef.optional().describe("By member: the member"),
  amount_minor: z.number().int().describe("Spent, net of refunds; by member, their shares"),
  amount: z.string(),
  paid_minor: z.number().int().optional().describe("By member: what they paid, net of refunds they received"),
  paid: z.string().optional(),
  count: z.number().int().describe("Expenses and refunds counted; by member, those they are in"),
});

export const getSpending = defineTool({
  name: "get_spending",
  title: "Spending totals by category, month or member",
  description,
  tags: ["read"],
  input: z.strictObject({
    group_id: Uuid.optional().describe("From list_groups; omitted: all your groups"),
    by: z.enum(SPENDING_BY).optional().describe("Default: category"),
    since_date: DateOnly.optional().describe("First date counted, YYYY-MM-DD"),
    until_date: DateOnly.optional().describe("Last date counted, YYYY-MM-DD"),
  }),
  output: z.object({
    group_id: Uuid.optional(),
    by: z.enum(SPENDING_BY),
    since_date: z.string().nullable(),
    until_date: z.string().nullable(),
    currencies: z.array(
      z.object({
        currency: z.string(),
        groups: z.array(z.object({ group_id: Uuid, name: z.string() })).describe("The groups counted in this currency"),
        total_minor: z.number().int(),
        total: z.string(),
        count: z.number().int().describe("Expenses and refunds counted"),
        rows: z.array(Row),
      }),
    ),
    ...AsOf,
  }),
  example: { group_id: madeUp("group_id"), by: "category", since_date: "2026-01-01" },
  async run(ctx, input) {
    const fresh = input.group_id === undefined ? {} : await asOf(ctx.tx, input.group_id, ctx.now);
    return { ...(await spending(ctx, input)), ...fresh, suggested_next: ["list_expenses", "get_balances"] };
  },
});
