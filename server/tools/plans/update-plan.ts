import { z } from "zod";
import { updatePlan as update } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Handle, Uuid } from "../../contract/wire.ts";
import { DateTimeInput, Invitees, OptionUpdate, Options, Plan, PlanDescription, PlanTitle } from "../../contract/plans.ts";

export const updatePlan = defineTool({
  name: "update_plan",
  title: "Change or schedule a plan",
  description:
    "Organiser only (FORBIDDEN otherwise; CONFLICT once cancelled). Changes any of: title, description, respond_by (null clears it), options (the whole new list, 1-10; an entry with an existing option_id keeps that option and its votes, one without is new; votes for dropped options are dropped; the chosen option cannot be dropped), add_invitees (accepted contacts; each gets a plan.invitation), remove_invitees (each is told and loses sight of the plan). choose_option_id schedules the plan on that option (state scheduled; choosing again moves it). Give at least one change. Current invitees get a plan.changed item.",
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
