import { z } from "zod";
import { recordPayment as record } from "../../domain/ledger/payments/payments.ts";
import { recordAcrossGroups } from "../../domain/ledger/payments/across-groups.ts";
import { defineTool } from "../define.ts";
import description from "./record-payment.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { GroupId, Uuid } from "../../contract/wire.ts";
import { amountFields, CurrencyInput, ExchangeRate, MEMBER_NAME_HELP, MemberName, Notes, Payment } from "../../contract/ledger.ts";

export const recordPayment = defineTool({
  name: "record_payment",
  title: "Record a payment",
  description,
  tags: ["write"],
  input: z
    .strictObject({
      group_id: GroupId.optional().describe("From list_groups; omitted: across all groups you share"),
      from: MemberName.optional().describe(`Payer (default you): ${MEMBER_NAME_HELP}`),
      to: MemberName.optional().describe(`Payee (default you): ${MEMBER_NAME_HELP}`),
      from_member_id: Uuid.optional().describe("Payer's member_id (get_group)"),
      to_member_id: Uuid.optional().describe("Payee's member_id (get_group)"),
      ...amountFields,
      currency: CurrencyInput.optional().describe("ISO 4217; default the group's"),
      exchange_rate: ExchangeRate.optional(),
      note: Notes.optional().describe("A note for the other side"),
      second_payment: z
        .boolean()
        .optional()
        .describe(
          "true: another payment of the same amount between the same two while one is pending; without it that is refused as recorded twice (CONFLICT)",
        ),
    })
    .superRefine((v, ctx) => {
      if (v.from !== undefined && v.from_member_id !== undefined)
        ctx.addIssue({ code: "custom", path: ["from_member_id"], message: "give from or from_member_id, not both" });
      if (v.to !== undefined && v.to_member_id !== undefined)
        ctx.addIssue({ code: "custom", path: ["to_member_id"], message: "give to or to_member_id, not both" });
      // A member_id belongs to one group: a payment across groups names people by handle.
      for (const k of ["from_member_id", "to_member_id"] as const)
        if (v.group_id === undefined && v[k] !== undefined) ctx.addIssue({ code: "custom", path: [k], message: `${k} goes with group_id` });
      // Across groups only what is still owed is paid, pending payments counted: a second payment names its group.
      if (v.group_id === undefined && v.second_payment !== undefined)
        ctx.addIssue({ code: "custom", path: ["second_payment"], message: "second_payment goes with group_id" });
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
    batch_id: Uuid.optional().describe("Without group_id: the id every part of the payment carries"),
    currency: z.string().optional().describe("Without group_id: the currency of the groups paid"),
    total_minor: z.number().int().optional().describe("Without group_id: the whole payment"),
    total: z.string().optional(),
    parts: z
      .array(
        z.object({
          group_id: Uuid,
          name: z.string(),
          owed_minor: z.number().int().describe("What the payer owed the payee in this group before it"),
          owed: z.string(),
          payment: Payment,
        }),
      )
      .optional()
      .describe("Without group_id: each group's part, oldest group first; payment is the first part"),
  }),
  example: { group_id: madeUp("group_id"), to: "alice", amount: "20.00", note: "Bank transfer" },
  async run(ctx, input) {
    const { group_id, ...rest } = input;
    const answer = group_id === undefined ? await recordAcrossGroups(ctx, rest) : await record(ctx, { ...rest, group_id });
    return { ...answer, suggested_next: ["get_balances", "list_payments"] };
  },
});
