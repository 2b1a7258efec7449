import { z } from "zod";
import { respondAnyPayment } from "../../domain/ledger/payments/across-groups.ts";
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
    action: z.enum(["confirm", "reject", "void"]).describe("Payee: confirm or reject; either: void"),
  }),
  output: z.object({
    payment: Payment,
    parts: z.array(Payment).optional().describe("A payment across groups: every part, answered together"),
  }),
  example: { payment_id: madeUp("payment_id"), action: "confirm" },
  async run(ctx, input) {
    return { ...(await respondAnyPayment(ctx, input)), suggested_next: ["get_balances"] };
  },
});
