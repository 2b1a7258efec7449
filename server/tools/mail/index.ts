import type { Tool } from "../define.ts";

/** Envelopes: agent mail. */
export const MAIL_TOOLS: Tool[] = [];
