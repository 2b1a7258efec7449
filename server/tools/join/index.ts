import type { Tool } from "../define.ts";

/** Joining an existing handle from another agent, and the human's settings link. */
export const JOIN_TOOLS: Tool[] = [];
