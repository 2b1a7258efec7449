import type { Tool } from "../define.ts";
import { finishJoin } from "./finish-join.ts";
import { getSettingsLink } from "./get-settings-link.ts";
import { joinNetwork } from "./join-network.ts";

/** Joining an existing handle from another agent, and the human's settings link. */
export const JOIN_TOOLS: Tool[] = [joinNetwork, finishJoin, getSettingsLink];
