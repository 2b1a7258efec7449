import { z } from "zod";
import { counterpartyBalances, groupBalanceView } from "../../domain/ledger/balances.ts";
import { defineTool } from "../define.ts";
import { Uuid } from "../schemas.ts";
import { Counterparty, MemberBalance, Payment, Transfer } from "./shapes.ts";

export const getBalances = defineTool({
  name: "get_balances",
  title: "Get balances and how to settle up",
  description:
    "With group_id: each member's balance (positive: the others owe them; the balances sum to zero), pending payments (not counted until confirmed) and settle_up, the transfers that settle the group (fewest transfers when the group simplifies debts, each pair's own debts otherwise). Without group_id: your net with each counterparty per currency across all your groups (positive: they owe you), your total per currency and your pending payments.",
  tags: ["read"],
  input: z.strictObject({ group_id: Uuid.optional() }),
  output: z.object({
    group_id: Uuid.optional(),
    currency: z.string().optional(),
    simplify_debts: z.boolean().optional(),
    members: z.array(MemberBalance).optional(),
    settle_up: z.array(Transfer).optional(),
    counterparties: z.array(Counterparty).optional(),
    totals: z.array(z.object({ currency: z.string(), balance_minor: z.number().int(), balance: z.string() })).optional(),
    pending_payments: z.array(Payment),
  }),
  async run(ctx, input) {
    const data =
      input.group_id === undefined
        ? await counterpartyBalances(ctx.tx, ctx.principal.agentId, ctx.now)
        : await groupBalanceView(ctx.tx, ctx.principal.agentId, input.group_id, ctx.now);
    return { ...data, suggested_next: ["record_payment", "list_expenses"] };
  },
});
