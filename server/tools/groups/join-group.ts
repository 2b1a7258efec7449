import { z } from "zod";
import { HOUR } from "../../clock.ts";
import { groupView } from "../../domain/ledger/groups/groups.ts";
import { joinByCode } from "../../domain/ledger/groups/invites.ts";
import { defineTool } from "../define.ts";
import { splitCode } from "../../domain/federation.ts";
import { ToHome } from "../../domain/ledger/events/home.ts";
import { selfHost } from "../../federation/scope.ts";
import { madeUp } from "../made-up.ts";
import { InviteCode } from "../../contract/wire.ts";
import { Group } from "../../contract/groups.ts";

export const joinGroup = defineTool({
  name: "join_group",
  title: "Join a group with an invite code",
  description:
    "Joins the group of an invite code (joined false: already in it); a claim code (claim-...) takes over its placeholder. code@host: a group on another server.",
  tags: ["write"],
  attempts: { limit: 20, windowMs: HOUR, guess: () => "code" },
  input: z.strictObject({ invite_code: InviteCode.describe("Invite or claim code from your human") }),
  output: z.object({ group: Group, joined: z.boolean() }),
  example: { invite_code: madeUp("invite_code") },
  async run(ctx, input) {
    // A code with another server's host (code@host): the group is kept there, and the call goes there.
    const { host } = splitCode(input.invite_code);
    if (host !== null && ctx.config.federation && ctx.config.federation.mode !== "off" && host !== selfHost(ctx.config)) throw new ToHome(host, null);
    const res = await joinByCode(ctx, input.invite_code);
    return { group: await groupView(ctx.tx, res.groupId, ctx.actor.agentId), joined: res.joined, suggested_next: ["get_group", "add_expense"] };
  },
});
