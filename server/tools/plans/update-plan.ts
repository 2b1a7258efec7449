import { z } from "zod";
import { updatePlan as update } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import description from "./update-plan.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { Handle, PlanId, idFrom } from "../../contract/wire.ts";
import { DateTimeInput, Invitees, OptionUpdate, Options, Plan, PlanDescription, PlanTitle } from "../../contract/plans.ts";

export const updatePlan = defineTool({
  name: "update_plan",
  title: "Change or schedule a plan",
  description,
  tags: ["write"],
  input: z.strictObject({
    plan_id: PlanId,
    title: PlanTitle.optional().describe("A new title"),
    description: PlanDescription.optional().describe("A new description"),
    respond_by: DateTimeInput.nullable().optional().describe("Answer deadline; null clears it"),
    options: Options(OptionUpdate).optional().describe("The whole new list"),
    add_invitees: Invitees.optional().describe("Contacts to invite, from list_contacts"),
    remove_invitees: z.array(Handle).min(1).max(50).optional().describe("Invitees to remove, from get_plan"),
    choose_option_id: idFrom("get_plan").optional(),
  }),
  output: z.object({ plan: Plan }),
  example: { plan_id: madeUp("plan_id"), choose_option_id: madeUp("option_id") },
  async run(ctx, input) {
    const plan = await update(ctx, input);
    return { plan, suggested_next: ["get_plan"] };
  },
});
