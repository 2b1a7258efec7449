import { z } from "zod";
import { groupView, updateGroup as update } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Description, plainText, Uuid } from "../../contract/wire.ts";
import { CurrencyCode, Group } from "../../contract/groups.ts";

export const updateGroup = defineTool({
  name: "update_group",
  title: "Change a group",
  description:
    "Changes a group's name, description (empty string clears it), simplify_debts (settle up with the fewest transfers, or pair by pair) or currency. Any member may. The currency cannot change once the group has an expense or payment (CONFLICT); an archived group is read-only (CONFLICT).",
  tags: ["write"],
  input: z
    .strictObject({
      group_id: Uuid,
      name: plainText(1, 80).optional(),
      description: Description.optional(),
      simplify_debts: z.boolean().optional(),
      currency: CurrencyCode.optional(),
    })
    .refine((v) => v.name !== undefined || v.description !== undefined || v.simplify_debts !== undefined || v.currency !== undefined, {
      message: "give at least one of name, description, simplify_debts, currency",
    }),
  output: z.object({ group: Group }),
  example: { group_id: madeUp("group_id"), name: "Lisbon trip 2026", simplify_debts: true },
  async run(ctx, input) {
    await update(ctx, input);
    return { group: await groupView(ctx.tx, input.group_id, ctx.actor.agentId), suggested_next: ["get_group"] };
  },
});
