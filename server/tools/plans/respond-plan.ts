import { z } from "zod";
import { respondPlan as respond } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import description from "./respond-plan.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { PlanId, Uuid } from "../../contract/wire.ts";
import { Plan, RESPONSES } from "../../contract/plans.ts";

export const respondPlan = defineTool({
  name: "respond_plan",
  title: "Answer a plan",
  description,
  tags: ["write"],
  input: z.strictObject({
    plan_id: PlanId,
    response: z.enum(RESPONSES).describe("Your human's answer"),
    option_ids: z.array(Uuid).max(10).optional().describe("Options you can make, from get_plan"),
  }),
  output: z.object({ plan: Plan }),
  example: { plan_id: madeUp("plan_id"), response: "yes", option_ids: [madeUp("option_id")] },
  async run(ctx, input) {
    const plan = await respond(ctx, input);
    return { plan, suggested_next: ["get_plan", "list_plans"] };
  },
});
