import { z } from "zod";
import { recordPayment as record } from "../../domain/ledger/payments.ts";
import { defineTool } from "../define.ts";
import { Handle, Uuid } from "../schemas.ts";
import { amountFields, Notes, Payment } from "./shapes.ts";

export const recordPayment = defineTool({
  name: "record_payment",
  title: "Record a payment",
  description:
    "Records money paid from one member to another in a group, in the group's currency: `from` (payer) and `to` (payee) are handles, and you must be one of them (an omitted one is you). Give exactly one of amount (decimal string) or amount_minor. Recorded by the payee it is confirmed at once; recorded by the payer it is pending until the payee confirms it with respond_payment (they get ledger.payment_to_confirm). Only confirmed payments count in balances. The optional note reaches the other side as untrusted text.",
  tags: ["write"],
  input: z.strictObject({ group_id: Uuid, from: Handle.optional(), to: Handle.optional(), ...amountFields, note: Notes.optional() }),
  output: z.object({ payment: Payment }),
  async run(ctx, input) {
    return { payment: await record(ctx.tx, ctx.principal, input, ctx.now), suggested_next: ["get_balances", "list_payments"] };
  },
});
