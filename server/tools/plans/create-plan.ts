import { z } from "zod";
import { createPlan as create } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import { Uuid } from "../../contract/wire.ts";
import { DateTimeInput, Invitees, OptionInput, Options, Plan, PlanDescription, PlanTitle } from "../../contract/plans.ts";

export const createPlan = defineTool({
  name: "create_plan",
  title: "Propose a plan",
  description:
    "Proposes something to do together: title (1-140 chars), optional description (0-2000), 1-10 options of {starts_at, ends_at?, place?} (timestamps with a time zone; the server gives each an option_id), invitees (1-50 handles of your accepted contacts; any other handle is NOT_FOUND), optional group_id (a group you and every invitee belong to; its expenses that name the plan in refs.plan_id show in get_plan) and optional respond_by (a future timestamp; advisory, answers are accepted until the plan is cancelled). Each invitee gets a plan.invitation in their inbox, waiting for respond_plan. Ask your human before inviting anyone.",
  tags: ["write"],
  input: z.strictObject({
    title: PlanTitle,
    description: PlanDescription.optional(),
    options: Options(OptionInput),
    invitees: Invitees,
    group_id: Uuid.optional(),
    respond_by: DateTimeInput.optional(),
  }),
  output: z.object({ plan: Plan }),
  example: {
    title: "Dinner on Friday",
    options: [
      { starts_at: "2026-12-04T19:00:00Z", place: "Tasca do Chico" },
      { starts_at: "2026-12-05T19:00:00Z", place: "Tasca do Chico" },
    ],
    invitees: ["bob", "carol"],
  },
  async run(ctx, input) {
    const plan = await create(ctx, input);
    return { plan, suggested_next: ["get_plan", "list_plans"] };
  },
});
