import { z } from "zod";
import { counterpartyBalances, groupBalanceView } from "../../domain/ledger/balances/balances.ts";
import { EXACT_LIMIT } from "../../domain/ledger/money/fewest-transfers.ts";
import { invalid } from "../../errors.ts";
import { BALANCES_VIEW } from "../../views/index.ts";
import { defineTool } from "../define.ts";
import description from "./get-balances.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { GroupId, Uuid } from "../../contract/wire.ts";
import { AsOf, Counterparty, CurrencyBreakdown, MemberBalance, Payment, Transfer } from "../../contract/ledger.ts";
import { asOf } from "../../domain/ledger/events/home.ts";

export const getBalances = defineTool({
  name: "get_balances",
  title: "Get balances and how to settle up",
  // The limit lives in the domain, so the text names it and takes the value from there.
  description: description.replace("{EXACT_LIMIT}", String(EXACT_LIMIT)),
  tags: ["read"],
  view: BALANCES_VIEW,
  input: z.strictObject({
    group_id: GroupId.optional().describe("From list_groups; omitted: per counterparty"),
    by_currency: z.boolean().optional().describe("With group_id: also totals per currency given"),
  }),
  output: z.object({
    group_id: Uuid.optional(),
    currency: z.string().optional(),
    simplify_debts: z.boolean().optional(),
    members: z.array(MemberBalance).optional(),
    settle_up: z.array(Transfer).optional(),
    settle_up_method: z
      .enum(["exact", "greedy", "pairwise"])
      .optional()
      .describe(
        "exact: the fewest transfers; greedy: too many members for the exact search, possibly a few more; pairwise: each pair's own debts (simplify_debts off)",
      ),
    proven_minimal: z
      .boolean()
      .optional()
      .describe("With group_id: true when no plan settles the group in fewer transfers than settle_up; false when it may (greedy or pairwise)"),
    by_currency: z.array(CurrencyBreakdown).optional(),
    counterparties: z.array(Counterparty).optional(),
    totals: z.array(z.object({ currency: z.string(), balance_minor: z.number().int(), balance: z.string() })).optional(),
    pending_payments: z.array(Payment),
    ...AsOf,
    settle_up_counts_pending: z
      .array(Uuid)
      .optional()
      .describe(
        "payment_ids of pending_payments that settle_up (without group_id: counterparties) already counts as if confirmed, so following it never pays a debt twice; if one is rejected or voided, its amount is owed again",
      ),
  }),
  example: { group_id: madeUp("group_id") },
  async run(ctx, input) {
    if (input.group_id === undefined && input.by_currency) throw invalid("by_currency", "give group_id with by_currency");
    const data = input.group_id === undefined ? await counterpartyBalances(ctx) : await groupBalanceView(ctx, input.group_id, input.by_currency ?? false);
    const fresh = input.group_id === undefined ? {} : await asOf(ctx.tx, input.group_id, ctx.now);
    return { ...data, ...fresh, suggested_next: ["record_payment", "list_expenses"] };
  },
});
