import { z } from "zod";
import { groupView, removeMember } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Handle, Uuid } from "../../contract/wire.ts";
import { Group } from "../../contract/groups.ts";

export const removeGroupMember = defineTool({
  name: "remove_group_member",
  title: "Remove a member from a group",
  description:
    "The group's owner removes a member (exact handle, or member_id from get_group for a placeholder member); only a member whose balance is zero (else CONFLICT naming it); a removed placeholder's claim link stops working. Others get FORBIDDEN. Ask your human first.",
  tags: ["write", "destructive"],
  input: z
    .strictObject({
      group_id: Uuid,
      handle: Handle.optional(),
      member_id: Uuid.optional().describe("The member's member_id from get_group (how a placeholder is named); instead of handle"),
    })
    .superRefine((v, ctx) => {
      if ((v.handle === undefined) === (v.member_id === undefined))
        ctx.addIssue({ code: "custom", path: ["handle"], message: "give exactly one of handle and member_id" });
    }),
  output: z.object({ group: Group }),
  example: { group_id: madeUp("group_id"), handle: "dave" },
  async run(ctx, input) {
    await removeMember(ctx, input.group_id, { handle: input.handle, memberId: input.member_id });
    return { group: await groupView(ctx.tx, input.group_id, ctx.actor.agentId), suggested_next: ["get_group"] };
  },
});
