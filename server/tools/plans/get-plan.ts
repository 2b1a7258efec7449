import { z } from "zod";
import { getPlan as get } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import description from "./get-plan.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { PlanId } from "../../contract/wire.ts";
import { Plan, PlanExpense } from "../../contract/plans.ts";

export const getPlan = defineTool({
  name: "get_plan",
  title: "Read a plan",
  description,
  tags: ["read"],
  input: z.strictObject({ plan_id: PlanId }),
  output: z.object({ plan: Plan, expenses: z.array(PlanExpense) }),
  example: { plan_id: madeUp("plan_id") },
  async run(ctx, input) {
    const res = await get(ctx, input.plan_id);
    const next = res.plan.state === "cancelled" ? ["list_plans"] : res.plan.my_role === "organiser" ? ["update_plan", "cancel_plan"] : ["respond_plan"];
    return { ...res, suggested_next: res.plan.group_id && res.plan.state !== "cancelled" ? [...next, "add_expense"] : next };
  },
});
