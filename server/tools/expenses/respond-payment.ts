import { z } from "zod";
import { respondAnyPayment } from "../../domain/ledger/payments/across-groups.ts";
import { defineTool } from "../define.ts";
import description from "./respond-payment.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { Uuid } from "../../contract/wire.ts";
import { Payment } from "../../contract/ledger.ts";

export const respondPayment = defineTool({
  name: "respond_payment",
  title: "Confirm, reject or void a payment",
  description,
  tags: ["write"],
  input: z.strictObject({ payment_id: Uuid, action: z.enum(["confirm", "reject", "void"]) }),
  output: z.object({
    payment: Payment,
    parts: z.array(Payment).optional().describe("When the payment is one part of a payment across groups: every part, all answered together"),
  }),
  example: { payment_id: madeUp("payment_id"), action: "confirm" },
  async run(ctx, input) {
    return { ...(await respondAnyPayment(ctx, input)), suggested_next: ["get_balances"] };
  },
});
