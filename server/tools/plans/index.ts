import type { Tool } from "../define.ts";
import { cancelPlan } from "./cancel-plan.ts";
import { createPlan } from "./create-plan.ts";
import { getPlan } from "./get-plan.ts";
import { listPlans } from "./list-plans.ts";
import { respondPlan } from "./respond-plan.ts";
import { updatePlan } from "./update-plan.ts";

/** Plans: things to do together. */
export const PLAN_TOOLS: Tool[] = [createPlan, getPlan, listPlans, respondPlan, updatePlan, cancelPlan];
