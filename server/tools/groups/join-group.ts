import { z } from "zod";
import { HOUR } from "../../clock.ts";
import { groupView } from "../../domain/ledger/groups/groups.ts";
import { joinByCode } from "../../domain/ledger/groups/invites.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { InviteCode } from "../../contract/wire.ts";
import { Group } from "../../contract/groups.ts";

export const joinGroup = defineTool({
  name: "join_group",
  title: "Join a group with an invite code",
  description:
    "Joins the group of a shareable invite code (8-64 chars) someone gave your human; the other members are told. joined is false when you already were a member (no use of the code is spent). Expired or used-up codes and archived groups are a CONFLICT. A placeholder's claim code (claim-...) takes that placeholder over: its expenses and balance become yours (refused while you are already a member).",
  tags: ["write"],
  attempts: { limit: 20, windowMs: HOUR, guess: () => "code" },
  input: z.strictObject({ invite_code: InviteCode }),
  output: z.object({ group: Group, joined: z.boolean() }),
  example: { invite_code: madeUp("invite_code") },
  async run(ctx, input) {
    const res = await joinByCode(ctx, input.invite_code);
    return { group: await groupView(ctx.tx, res.groupId, ctx.actor.agentId), joined: res.joined, suggested_next: ["get_group", "add_expense"] };
  },
});
