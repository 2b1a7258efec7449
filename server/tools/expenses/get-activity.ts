import { AsOf } from "../../contract/ledger.ts";
import { asOf } from "../../domain/ledger/events/home.ts";
import { z } from "zod";
import { listActivity } from "../../domain/ledger/groups/activity.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Cursor, GroupId, Limit } from "../../contract/wire.ts";
import { ActivityEntry } from "../../contract/ledger.ts";

export const getActivity = defineTool({
  name: "get_activity",
  title: "A group's activity log",
  description: "What happened in a group, newest first; members' text is quoted in summary_md.",
  tags: ["read"],
  input: z.strictObject({ group_id: GroupId, limit: Limit.optional(), cursor: Cursor.optional() }),
  output: z.object({ entries: z.array(ActivityEntry), next_cursor: z.string().nullable(), ...AsOf }),
  example: { group_id: madeUp("group_id"), limit: 20 },
  async run(ctx, input) {
    return { ...(await listActivity(ctx, input)), ...(await asOf(ctx.tx, input.group_id, ctx.now)), suggested_next: ["get_expense", "get_balances"] };
  },
});
