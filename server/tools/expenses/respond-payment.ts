import { z } from "zod";
import { respondPayment as respond } from "../../domain/ledger/payments.ts";
import { defineTool } from "../define.ts";
import { Uuid } from "../schemas.ts";
import { Payment } from "./shapes.ts";

export const respondPayment = defineTool({
  name: "respond_payment",
  title: "Confirm or reject a payment",
  description:
    "The payee's answer to a pending payment, after asking their human whether the money arrived: confirm (it starts counting in balances) or reject. The payer is told (ledger.payment_confirmed or ledger.payment_rejected). Resolves your ledger.payment_to_confirm item. CONFLICT if you are not the payee or it is no longer pending.",
  tags: ["write"],
  input: z.strictObject({ payment_id: Uuid, action: z.enum(["confirm", "reject"]) }),
  output: z.object({ payment: Payment }),
  async run(ctx, input) {
    return { payment: await respond(ctx.tx, ctx.principal, input, ctx.now), suggested_next: ["get_balances"] };
  },
});
