import { z } from "zod";
import { recordPayment as record } from "../../domain/ledger/payments/payments.ts";
import { defineTool } from "../define.ts";
import { Handle, Uuid } from "../../contract/wire.ts";
import { amountFields, CurrencyInput, ExchangeRate, Notes, Payment } from "../../contract/ledger.ts";

export const recordPayment = defineTool({
  name: "record_payment",
  title: "Record a payment",
  description:
    "Records money paid from one member to another in a group: `from` (payer) and `to` (payee) are handles, and you must be one of them (an omitted one is you). Give exactly one of amount (decimal string) or amount_minor, in the group's currency, or in another `currency` with `exchange_rate` (units of the group's currency per unit, as in add_expense): it is converted once and the original amount is kept. Recorded by the payee it is confirmed at once; recorded by the payer it is pending until the payee confirms it with respond_payment (they get ledger.payment_to_confirm). Only confirmed payments count in balances. A payment larger than what the payer owed the payee in the group is recorded all the same, and `overpayment` says by how much (then the payee owes the excess back). A mistaken payment is undone with respond_payment action void. The optional note reaches the other side as untrusted text.",
  tags: ["write"],
  input: z.strictObject({
    group_id: Uuid,
    from: Handle.optional(),
    to: Handle.optional(),
    ...amountFields,
    currency: CurrencyInput.optional().describe("Currency of the amount given; default the group's. Another currency needs exchange_rate."),
    exchange_rate: ExchangeRate.optional(),
    note: Notes.optional(),
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
  async run(ctx, input) {
    return { ...(await record(ctx, input)), suggested_next: ["get_balances", "list_payments"] };
  },
});
