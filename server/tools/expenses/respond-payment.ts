import { z } from "zod";
import { respondPayment as respond } from "../../domain/ledger/payments/payments.ts";
import { defineTool } from "../define.ts";
import description from "./respond-payment.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { PaymentId } from "../../contract/wire.ts";
import { Payment } from "../../contract/ledger.ts";

export const respondPayment = defineTool({
  name: "respond_payment",
  title: "Confirm, reject or void a payment",
  description,
  tags: ["write"],
  input: z.strictObject({
    payment_id: PaymentId,
    action: z.enum(["confirm", "reject", "void"]).describe("confirm or reject (the payee), void (payer or payee, undoes it)"),
  }),
  output: z.object({ payment: Payment }),
  example: { payment_id: madeUp("payment_id"), action: "confirm" },
  async run(ctx, input) {
    return { payment: await respond(ctx, input), suggested_next: ["get_balances"] };
  },
});
