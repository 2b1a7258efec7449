// Federation housekeeping: what a transaction stored for an origin that never proved itself, and counts whose time
// is over. Anyone can name any host in a transaction; nothing it leaves behind may stay for good.
import { and, isNull, lt } from "drizzle-orm";
import { deleteCounted } from "../../db/client.ts";
import { federationEnvelopeBytes, federationLimits, federationPeerKeys } from "../../db/schema/index.ts";
import { DAY, HOUR, MINUTE, iso } from "../clock.ts";
import type { Job } from "./index.ts";

/** A host's keys fetched this long ago and never used to verify a transaction are deleted. */
export const UNVERIFIED_KEYS_MS = HOUR;
/** Windows of the limits per host are at most an hour long: older counts are deleted. */
export const LIMIT_WINDOWS_KEPT_MS = 2 * HOUR;

export const cleanFederation: Job = {
  name: "clean_federation",
  everyMs: 10 * MINUTE,
  async run(tx, now) {
    const before = (ms: number) => iso(new Date(now.getTime() - ms));
    const keys = await deleteCounted(
      tx,
      federationPeerKeys,
      and(isNull(federationPeerKeys.verifiedAt), lt(federationPeerKeys.fetchedAt, before(UNVERIFIED_KEYS_MS))),
    );
    const limits = await deleteCounted(tx, federationLimits, lt(federationLimits.windowStart, before(LIMIT_WINDOWS_KEPT_MS)));
    // The envelope quota of agents of other servers counts a rolling day.
    const bytes = await deleteCounted(tx, federationEnvelopeBytes, lt(federationEnvelopeBytes.receivedAt, before(DAY)));
    return keys + limits + bytes;
  },
};
