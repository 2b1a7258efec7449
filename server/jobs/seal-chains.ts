// Seals the events of groups no other server follows (domain/ledger/events/log.ts): they are numbered as their
// batches commit, so calls changing one group at once never conflict, and hashed here, in order, a few groups a run.
import { groupsUnsealed, sealPending } from "../domain/ledger/events/log.ts";
import type { Job } from "./index.ts";

const GROUPS_A_RUN = 20;

export const sealChains: Job = {
  name: "seal_group_chains",
  everyMs: 5_000,
  async run(tx) {
    const groups = await groupsUnsealed(tx, GROUPS_A_RUN);
    for (const g of groups) await sealPending(tx, g);
    return groups.length;
  },
};
