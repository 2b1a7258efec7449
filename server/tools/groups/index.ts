import type { Tool } from "../define.ts";

/** Groups and invitations (the ledger's membership side). */
export const GROUP_TOOLS: Tool[] = [];
