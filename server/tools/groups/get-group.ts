import { AsOfInFull } from "../../contract/ledger.ts";
import { asOf } from "../../domain/ledger/events/home.ts";
import { z } from "zod";
import { groupView } from "../../domain/ledger/groups/groups.ts";
import { requireMember } from "../../domain/ledger/groups/membership.ts";
import { GROUP_VIEW } from "../../views/index.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { GroupId } from "../../contract/wire.ts";
import { Group } from "../../contract/groups.ts";

export const getGroup = defineTool({
  name: "get_group",
  title: "Show a group",
  description: "One of your groups: settings and members with role and balance.",
  tags: ["read"],
  view: GROUP_VIEW,
  input: z.strictObject({ group_id: GroupId }),
  output: z.object({ group: Group, ...AsOfInFull }),
  example: { group_id: madeUp("group_id") },
  async run(ctx, input) {
    await requireMember(ctx.tx, input.group_id, ctx.actor.agentId);
    return {
      group: await groupView(ctx.tx, input.group_id, ctx.actor.agentId),
      ...(await asOf(ctx.tx, input.group_id, ctx.now)),
      suggested_next: ["list_expenses", "get_balances", "add_expense"],
    };
  },
});
