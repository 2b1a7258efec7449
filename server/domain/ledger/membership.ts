import type { Tx } from "../../../db/client.ts";

/** Whether both agents belong to the group. The ledger's groups arrive with the ledger; until then no group is shared. */
export async function sharesGroup(_tx: Tx, _a: string, _b: string, _groupId: string): Promise<boolean> {
  return false;
}

/** The caller's groups as summaries with their balance; filled in by the ledger. */
export async function groupSummaries(_tx: Tx, _agentId: string): Promise<import("../../tools/schemas.ts").GroupSummary[]> {
  return [];
}

/** Group invitations waiting for the caller's answer. */
export async function pendingInvitesCount(_tx: Tx, _agentId: string): Promise<number> {
  return 0;
}
