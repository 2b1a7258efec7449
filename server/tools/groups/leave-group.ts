import { z } from "zod";
import { leaveGroup as leave } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { GroupId, Uuid } from "../../contract/wire.ts";

export const leaveGroup = defineTool({
  name: "leave_group",
  title: "Leave a group",
  description: "Leaves a group, only at a zero balance (else CONFLICT: settle up first); not a direct ledger.",
  tags: ["write"],
  input: z.strictObject({ group_id: GroupId }),
  output: z.object({ left: z.boolean(), group_id: Uuid }),
  example: { group_id: madeUp("group_id") },
  async run(ctx, input) {
    await leave(ctx, input.group_id);
    return { left: true, group_id: input.group_id, suggested_next: ["list_groups"] };
  },
});
