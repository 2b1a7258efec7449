// Limits per origin host, counted in the database so that every process of the server (and a restart) applies the
// same ones: a hostile server can make any number of agents, so the budget is the host's. They are charged only once
// a transaction's signature verifies: anyone can name a host, so a request that has not proved it comes from that
// host is limited per client address instead (ADDRESS_LIMITS, in memory, before anything is fetched or written).
import { and, eq, lt, sql } from "drizzle-orm";
import { guardChanged, snapshotOf, type Tx } from "../../db/client.ts";
import { federationHosts, federationLimits } from "../../db/schema/index.ts";
import { HOUR, MINUTE, iso } from "../clock.ts";
import type { FederationLimit } from "../config.ts";
import type { RateDecision, RateLimiter } from "../rate-limit.ts";

export const HOST_LIMITS = {
  txns: { windowMs: MINUTE, limit: 120 },
  events: { windowMs: MINUTE, limit: 1200 },
  contact_requests: { windowMs: HOUR, limit: 60 },
  code_guesses: { windowMs: HOUR, limit: 30 },
} as const satisfies Partial<Record<FederationLimit, unknown>>;
export type LimitKind = keyof typeof HOST_LIMITS;

/** Per client address, a minute: every PUT /fed/v1/txn, and the key fetches (discovery) they make this server do. */
export const ADDRESS_LIMITS = {
  txns_per_address: 120,
  key_fetches_per_address: 10,
} as const satisfies Partial<Record<FederationLimit, number>>;

/** Takes one of the client address's budget of this kind (the server's in-memory limiter, shared by its processes). */
export function takeAddressBudget(
  limiter: RateLimiter,
  address: string,
  kind: keyof typeof ADDRESS_LIMITS,
  limits: Partial<Record<FederationLimit, number>> = {},
): RateDecision {
  return limiter.take(`federation:${kind}:${address}`, `federation_${kind}`, limits[kind] ?? ADDRESS_LIMITS[kind]);
}

/** In open mode a host first seen this recently may only send contact requests that carry a code. */
export const GREYLIST_MS = 24 * HOUR;

/**
 * Counts `n` against the host's budget of this kind in the current window; false (nothing counted) when it would
 * pass the limit. `limits` replaces the defaults (tests, operators).
 */
export async function takeHostBudget(
  tx: Tx,
  host: string,
  kind: LimitKind,
  now: Date,
  n = 1,
  limits: Partial<Record<LimitKind, number>> = {},
): Promise<boolean> {
  const { windowMs } = HOST_LIMITS[kind];
  const limit = limits[kind] ?? HOST_LIMITS[kind].limit;
  const windowStart = iso(new Date(Math.floor(now.getTime() / windowMs) * windowMs));
  const key = and(eq(federationLimits.host, host), eq(federationLimits.kind, kind), eq(federationLimits.windowStart, windowStart));
  // By its key: the call may have counted another kind already (that row is not this one).
  const row = await snapshotOf(tx).select().from(federationLimits).where(key).get();
  if ((row?.count ?? 0) + n > limit) return false;
  if (row) {
    // Counted while the budget allows it as the batch commits: counted at once elsewhere, this runs again.
    await tx
      .update(federationLimits)
      .set({ count: sql`${federationLimits.count} + ${n}` })
      .where(and(key, sql`${federationLimits.count} + ${n} <= ${limit}`));
    await guardChanged(tx, "federation budget");
  } else {
    await tx.insert(federationLimits).values({ host, kind, windowStart, count: n });
    await tx.delete(federationLimits).where(and(eq(federationLimits.host, host), lt(federationLimits.windowStart, iso(new Date(now.getTime() - 2 * HOUR)))));
  }
  return true;
}

/** Seconds until the current window of this kind ends (Retry-After). */
export const retryAfterSeconds = (kind: LimitKind, now: Date) => {
  const { windowMs } = HOST_LIMITS[kind];
  return Math.max(1, Math.ceil((windowMs - (now.getTime() % windowMs)) / 1000));
};

/** Whether the operator blocked this host in the database (the --federation-block list is checked apart). */
export async function hostBlocked(tx: Tx, host: string): Promise<boolean> {
  return (await tx.select().from(federationHosts).where(eq(federationHosts.host, host)).get())?.blocked ?? false;
}

/** When the host was first seen (recorded now if never): open mode greylists new hosts. */
export async function firstSeen(tx: Tx, host: string, now: Date): Promise<Date> {
  const row = await tx.select().from(federationHosts).where(eq(federationHosts.host, host)).get();
  if (row) return new Date(row.firstSeenAt);
  // Seen first now, unless another call saw it first at the same moment (then its time stays).
  await tx
    .insert(federationHosts)
    .values({ host, firstSeenAt: iso(now) })
    .onConflictDoNothing();
  return now;
}
