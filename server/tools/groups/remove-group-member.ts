import { z } from "zod";
import { groupView, removeMember } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { GroupId, Uuid } from "../../contract/wire.ts";
import { MEMBER_NAME_HELP, MemberName } from "../../contract/ledger.ts";
import { Group } from "../../contract/groups.ts";

export const removeGroupMember = defineTool({
  name: "remove_group_member",
  title: "Remove a member from a group",
  description: "The owner removes a member whose balance is zero (else CONFLICT). Ask your human first.",
  tags: ["write", "destructive"],
  input: z
    .strictObject({
      group_id: GroupId,
      handle: MemberName.optional().describe(MEMBER_NAME_HELP),
      member_id: Uuid.optional().describe("Or member_id"),
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
