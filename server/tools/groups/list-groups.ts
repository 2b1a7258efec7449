import { z } from "zod";
import { listGroups as list } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { Cursor, GroupSummary, Limit } from "../../contract/wire.ts";

export const listGroups = defineTool({
  name: "list_groups",
  title: "List groups",
  description: "Lists your groups and direct ledgers with your balance in each, oldest first.",
  tags: ["read"],
  input: z.strictObject({
    include_archived: z.boolean().optional().describe("Also archived groups"),
    limit: Limit.optional(),
    cursor: Cursor.optional(),
  }),
  output: z.object({ groups: z.array(GroupSummary), next_cursor: z.string().nullable() }),
  example: { include_archived: true },
  async run(ctx, input) {
    const res = await list(ctx, input.include_archived ?? false, input.limit ?? 50, input.cursor);
    return { ...res, suggested_next: ["get_group", "get_balances", "create_group"] };
  },
});
