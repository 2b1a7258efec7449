import type { Tool } from "../define.ts";
import { archiveGroup } from "./archive-group.ts";
import { createGroupInvite } from "./create-group-invite.ts";
import { createGroup } from "./create-group.ts";
import { getGroup } from "./get-group.ts";
import { joinGroup } from "./join-group.ts";
import { leaveGroup } from "./leave-group.ts";
import { listGroups } from "./list-groups.ts";
import { openDirectLedger } from "./open-direct-ledger.ts";
import { removeGroupMember } from "./remove-group-member.ts";
import { respondGroupInvite } from "./respond-group-invite.ts";
import { updateGroup } from "./update-group.ts";

/** Groups and invitations (the ledger's membership side). */
export const GROUP_TOOLS: Tool[] = [
  createGroup,
  listGroups,
  getGroup,
  updateGroup,
  archiveGroup,
  createGroupInvite,
  respondGroupInvite,
  joinGroup,
  leaveGroup,
  removeGroupMember,
  openDirectLedger,
];
