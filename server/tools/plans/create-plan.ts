import { z } from "zod";
import { createPlan as create } from "../../domain/plans/plans.ts";
import { defineTool } from "../define.ts";
import description from "./create-plan.description.md" with { type: "text" };
import { GroupId } from "../../contract/wire.ts";
import { DateTimeInput, Invitees, OptionInput, Options, Plan, PlanDescription, PlanTitle } from "../../contract/plans.ts";

export const createPlan = defineTool({
  name: "create_plan",
  title: "Propose a plan",
  description,
  tags: ["write"],
  input: z.strictObject({
    title: PlanTitle.describe('e.g. "Dinner on Friday"'),
    description: PlanDescription.optional().describe("Details (several lines)"),
    options: Options(OptionInput).describe("Times to choose from"),
    invitees: Invitees.describe("Handles, from list_contacts"),
    group_id: GroupId.optional(),
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
