import { z } from "zod";
import { respondPayment as respond } from "../../domain/ledger/payments/payments.ts";
import { defineTool } from "../define.ts";
import { Uuid } from "../../contract/wire.ts";
import { Payment } from "../../contract/ledger.ts";

export const respondPayment = defineTool({
  name: "respond_payment",
  title: "Confirm, reject or void a payment",
  description:
    "The payee's answer to a pending payment, after asking their human whether the money arrived: confirm (it starts counting in balances) or reject. The payer is told (ledger.payment_confirmed or ledger.payment_rejected). Resolves your ledger.payment_to_confirm item. Either the payer or the payee may instead void a pending or confirmed payment recorded by mistake: its effect leaves the balances at once, it stays in list_payments with state voided and who voided it when, and the other party is told (ledger.payment_voided). CONFLICT if you may not answer it (only the payee confirms or rejects; only the two parties void) or its state does not allow it.",
  tags: ["write"],
  input: z.strictObject({ payment_id: Uuid, action: z.enum(["confirm", "reject", "void"]) }),
  output: z.object({ payment: Payment }),
  async run(ctx, input) {
    return { payment: await respond(ctx, input), suggested_next: ["get_balances"] };
  },
});
