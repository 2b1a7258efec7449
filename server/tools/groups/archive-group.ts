import { z } from "zod";
import { archiveGroup as archive, groupView } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { GroupId } from "../../contract/wire.ts";
import { Group } from "../../contract/groups.ts";

export const archiveGroup = defineTool({
  name: "archive_group",
  title: "Archive or unarchive a group",
  description: "Archives a group (read-only: no new expenses, payments, members or changes) or restores it. Any member may.",
  tags: ["write"],
  input: z.strictObject({ group_id: GroupId, archived: z.boolean().describe("true archives, false restores") }),
  output: z.object({ group: Group }),
  example: { group_id: madeUp("group_id"), archived: true },
  async run(ctx, input) {
    await archive(ctx, input.group_id, input.archived);
    return { group: await groupView(ctx.tx, input.group_id, ctx.actor.agentId), suggested_next: ["list_groups"] };
  },
});
