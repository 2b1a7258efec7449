import { z } from "zod";
import { listPlans as list } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import description from "./list-plans.description.md" with { type: "text" };
import { Cursor, Limit } from "../../contract/wire.ts";
import { Plan, PLAN_STATES } from "../../contract/plans.ts";

export const listPlans = defineTool({
  name: "list_plans",
  title: "List plans",
  description,
  tags: ["read"],
  input: z.strictObject({
    when: z.enum(["upcoming", "past"]).optional().describe("Only upcoming or only past plans"),
    state: z.enum(PLAN_STATES).optional().describe("Only plans in this state"),
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
