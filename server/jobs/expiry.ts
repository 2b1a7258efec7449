// Housekeeping: rows whose time is over are deleted. Reads already ignore them, so a late or repeated
// run changes nothing a caller can see; the jobs only keep the database from growing without bound.
import { and, inArray, isNotNull, lte } from "drizzle-orm";
import { deleteCounted } from "../../db/client.ts";
import { apiKeys, idempotencyRecords, inboxCounts, inboxItems, platformInvites } from "../../db/schema/index.ts";
import { DAY, MINUTE, iso } from "../clock.ts";
import type { Job } from "./index.ts";

/** A retry with the same idempotency key is honoured for this long; after it the key is forgotten. */
export const IDEMPOTENCY_RETENTION_MS = DAY;

/** Inbox items past expires_at (30 days; kept envelopes a year, set when they are kept). */
export const expireInboxItems: Job = {
  name: "expire_inbox_items",
  everyMs: 10 * MINUTE,
  async run(tx, now) {
    // Agent by agent through (agent_id, expires_at): every agent with items has a counters row.
    const owners = tx.select({ agentId: inboxCounts.agentId }).from(inboxCounts);
    return deleteCounted(tx, inboxItems, and(inArray(inboxItems.agentId, owners), lte(inboxItems.expiresAt, iso(now))));
  },
};

export const expireIdempotencyRecords: Job = {
  name: "expire_idempotency_records",
  everyMs: 10 * MINUTE,
  async run(tx, now) {
    const cutoff = iso(new Date(now.getTime() - IDEMPOTENCY_RETENTION_MS));
    return deleteCounted(tx, idempotencyRecords, lte(idempotencyRecords.createdAt, cutoff));
  },
};

/** Keys replaced by rotate_api_key, once their grace period is over. */
export const expireApiKeys: Job = {
  name: "expire_api_keys",
  everyMs: 10 * MINUTE,
  async run(tx, now) {
    return deleteCounted(tx, apiKeys, and(isNotNull(apiKeys.expiresAt), lte(apiKeys.expiresAt, iso(now))));
  },
};

export const expirePlatformInvites: Job = {
  name: "expire_platform_invites",
  everyMs: 60 * MINUTE,
  async run(tx, now) {
    return deleteCounted(tx, platformInvites, and(isNotNull(platformInvites.expiresAt), lte(platformInvites.expiresAt, iso(now))));
  },
};
