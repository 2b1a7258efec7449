import { z } from "zod";
import { recordPayment as record } from "../../domain/ledger/payments/payments.ts";
import { defineTool } from "../define.ts";
import description from "./record-payment.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { Handle, Uuid } from "../../contract/wire.ts";
import { amountFields, CurrencyInput, ExchangeRate, Notes, Payment } from "../../contract/ledger.ts";

export const recordPayment = defineTool({
  name: "record_payment",
  title: "Record a payment",
  description,
  tags: ["write"],
  input: z
    .strictObject({
      group_id: Uuid,
      from: Handle.optional(),
      to: Handle.optional(),
      from_member_id: Uuid.optional().describe("The payer by member_id (get_group), e.g. a placeholder member; instead of from"),
      to_member_id: Uuid.optional().describe("The payee by member_id (get_group), e.g. a placeholder member; instead of to"),
      ...amountFields,
      currency: CurrencyInput.optional().describe("Currency of the amount given; default the group's. Another currency needs exchange_rate."),
      exchange_rate: ExchangeRate.optional(),
      note: Notes.optional(),
    })
    .superRefine((v, ctx) => {
      if (v.from !== undefined && v.from_member_id !== undefined)
        ctx.addIssue({ code: "custom", path: ["from_member_id"], message: "give from or from_member_id, not both" });
      if (v.to !== undefined && v.to_member_id !== undefined)
        ctx.addIssue({ code: "custom", path: ["to_member_id"], message: "give to or to_member_id, not both" });
    }),
  output: z.object({
    payment: Payment,
    overpayment: z
      .object({ owed_minor: z.number().int(), owed: z.string(), excess_minor: z.number().int(), excess: z.string() })
      .nullable()
      .optional()
      .describe(
        "Set when the payment is more than the payer owed the payee in this group before it (the larger of the settle-up transfer between them and their own debt), in the group's currency; null otherwise (absent only in an answer stored by svc 0.9.0 and replayed)",
      ),
  }),
  example: { group_id: madeUp("group_id"), to: "alice", amount: "20.00", note: "Bank transfer" },
  async run(ctx, input) {
    return { ...(await record(ctx, input)), suggested_next: ["get_balances", "list_payments"] };
  },
});
