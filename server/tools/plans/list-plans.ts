import { z } from "zod";
import { listPlans as list } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import { Cursor, Limit } from "../../contract/wire.ts";
import { Plan, PLAN_STATES } from "../../contract/plans.ts";

export const listPlans = defineTool({
  name: "list_plans",
  title: "List plans",
  description:
    "Lists plans you organise or were invited to. when: upcoming (default; not over yet, soonest first) or past (over, most recent first); a plan is over once its chosen option (or, before one is chosen, its last option) has ended. Optional state filter (proposed, scheduled, cancelled); paged with limit (1-100, default 50) and cursor.",
  tags: ["read"],
  input: z.strictObject({
    when: z.enum(["upcoming", "past"]).optional(),
    state: z.enum(PLAN_STATES).optional(),
    limit: Limit.optional(),
    cursor: Cursor.optional(),
  }),
  output: z.object({ plans: z.array(Plan), next_cursor: z.string().nullable() }),
  example: { when: "upcoming" },
  async run(ctx, input) {
    const res = await list(ctx, input);
    return { ...res, suggested_next: res.plans.length ? ["get_plan", "create_plan"] : ["create_plan"] };
  },
});
