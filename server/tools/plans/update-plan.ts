import { z } from "zod";
import { updatePlan as update } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import description from "./update-plan.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { Handle, Uuid } from "../../contract/wire.ts";
import { DateTimeInput, Invitees, OptionUpdate, Options, Plan, PlanDescription, PlanTitle } from "../../contract/plans.ts";

export const updatePlan = defineTool({
  name: "update_plan",
  title: "Change or schedule a plan",
  description,
  tags: ["write"],
  input: z.strictObject({
    plan_id: Uuid,
    title: PlanTitle.optional(),
    description: PlanDescription.optional(),
    respond_by: DateTimeInput.nullable().optional(),
    options: Options(OptionUpdate).optional(),
    add_invitees: Invitees.optional(),
    remove_invitees: z.array(Handle).min(1).max(50).optional(),
    choose_option_id: Uuid.optional(),
  }),
  output: z.object({ plan: Plan }),
  example: { plan_id: madeUp("plan_id"), choose_option_id: madeUp("option_id") },
  async run(ctx, input) {
    const plan = await update(ctx, input);
    return { plan, suggested_next: ["get_plan"] };
  },
});
