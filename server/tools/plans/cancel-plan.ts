import { z } from "zod";
import { cancelPlan as cancel } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { PlanId } from "../../contract/wire.ts";
import { Plan } from "../../contract/plans.ts";

export const cancelPlan = defineTool({
  name: "cancel_plan",
  title: "Cancel a plan",
  description: "The organiser cancels a plan for good; invitees are told; it stays readable.",
  tags: ["write", "destructive"],
  input: z.strictObject({ plan_id: PlanId }),
  output: z.object({ plan: Plan }),
  example: { plan_id: madeUp("plan_id") },
  async run(ctx, input) {
    const plan = await cancel(ctx, input.plan_id);
    return { plan, suggested_next: ["list_plans"] };
  },
});
