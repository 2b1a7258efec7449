import type { Tool } from "../define.ts";

/** Plans: things to do together. */
export const PLAN_TOOLS: Tool[] = [];
