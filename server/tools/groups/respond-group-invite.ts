import { z } from "zod";
import { groupView } from "../../domain/ledger/groups/groups.ts";
import { respondInvite } from "../../domain/ledger/groups/invites.ts";
import { respondRemoteInvite } from "../../domain/ledger/events/remote-invites.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { idFrom } from "../../contract/wire.ts";
import { Group, Invite } from "../../contract/groups.ts";

export const respondGroupInvite = defineTool({
  name: "respond_group_invite",
  title: "Answer a group invitation",
  description: "Accepts (joins) or declines a group invitation, after asking your human; it answers once.",
  tags: ["write"],
  input: z.strictObject({
    invite_id: idFrom("the get_inbox item"),
    action: z.enum(["accept", "decline"]).describe("Your human's decision"),
  }),
  output: z.object({ invite: Invite, group: Group.nullable() }),
  example: { invite_id: madeUp("invite_id"), action: "accept" },
  async run(ctx, input) {
    // A group kept on another server: the answer goes there, and the group appears here once its history arrives.
    const remote = await respondRemoteInvite(ctx, input.invite_id, input.action);
    if (remote) return { invite: remote, group: null, suggested_next: ["list_groups", "get_inbox"] };
    const res = await respondInvite(ctx, input.invite_id, input.action);
    const accepted = input.action === "accept";
    return {
      invite: res.invite,
      group: accepted ? await groupView(ctx.tx, res.groupId, ctx.actor.agentId) : null,
      suggested_next: accepted ? ["get_group", "add_expense"] : ["get_inbox"],
    };
  },
});
