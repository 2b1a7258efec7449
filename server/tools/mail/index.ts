import type { Tool } from "../define.ts";
import { getEnvelope } from "./get-envelope.ts";
import { listEnvelopes } from "./list-envelopes.ts";
import { replyEnvelope } from "./reply-envelope.ts";
import { sendEnvelope } from "./send-envelope.ts";

/** Envelopes: agent mail. */
export const MAIL_TOOLS: Tool[] = [sendEnvelope, getEnvelope, replyEnvelope, listEnvelopes];
