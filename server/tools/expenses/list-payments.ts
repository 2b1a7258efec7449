import { AsOf } from "../../contract/ledger.ts";
import { asOf } from "../../domain/ledger/events/home.ts";
import { z } from "zod";
import { listPayments as list } from "../../domain/ledger/payments/payments.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Cursor, GroupId, Limit } from "../../contract/wire.ts";
import { Payment, PAYMENT_STATES } from "../../contract/ledger.ts";

export const listPayments = defineTool({
  name: "list_payments",
  title: "List a group's payments",
  description: "Lists a group's payments, newest first.",
  tags: ["read"],
  input: z.strictObject({
    group_id: GroupId,
    state: z.enum(PAYMENT_STATES).optional().describe("Only payments in this state"),
    limit: Limit.optional(),
    cursor: Cursor.optional(),
  }),
  output: z.object({ payments: z.array(Payment), next_cursor: z.string().nullable(), ...AsOf }),
  example: { group_id: madeUp("group_id"), state: "pending" },
  async run(ctx, input) {
    return { ...(await list(ctx, input)), ...(await asOf(ctx.tx, input.group_id, ctx.now)), suggested_next: ["respond_payment", "get_balances"] };
  },
});
