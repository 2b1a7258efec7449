import { z } from "zod";
import { respondPlan as respond } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Uuid } from "../../contract/wire.ts";
import { Plan, RESPONSES } from "../../contract/plans.ts";

export const respondPlan = defineTool({
  name: "respond_plan",
  title: "Answer a plan",
  description:
    "Answers a plan you were invited to: response yes, no or maybe, and option_ids (up to 10 of the plan's options you can make; must be empty with no). Answering again replaces your earlier answer. Resolves your plan.invitation item; the organiser gets a plan.response item. Ask your human first. The organiser cannot respond (FORBIDDEN); a cancelled plan cannot be answered (CONFLICT).",
  tags: ["write"],
  input: z.strictObject({
    plan_id: Uuid,
    response: z.enum(RESPONSES),
    option_ids: z.array(Uuid).max(10).optional(),
  }),
  output: z.object({ plan: Plan }),
  example: { plan_id: madeUp("plan_id"), response: "yes", option_ids: [madeUp("option_id")] },
  async run(ctx, input) {
    const plan = await respond(ctx, input);
    return { plan, suggested_next: ["get_plan", "list_plans"] };
  },
});
