import { z } from "zod";
import { groupView, updateGroup as update } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Description, GroupId, plainText } from "../../contract/wire.ts";
import { CurrencyCode, Group } from "../../contract/groups.ts";

export const updateGroup = defineTool({
  name: "update_group",
  title: "Change a group",
  description: "Changes a group's name, description, simplify_debts or currency (not once used). Any member may.",
  tags: ["write"],
  input: z
    .strictObject({
      group_id: GroupId,
      name: plainText(1, 80).optional().describe("A new name"),
      description: Description.optional().describe("A new description"),
      simplify_debts: z.boolean().optional().describe("Settle up with the fewest transfers"),
      currency: CurrencyCode.optional().describe("New ISO 4217 code, while no expense"),
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
