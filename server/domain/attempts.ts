// Limits on attempts to guess a secret, kept in the database: unlike the per-instance rate limiter,
// they hold across every instance that shares the database, and a failed attempt still counts.
import { eq } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { attemptCounters } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { AppError } from "../errors.ts";

export interface AttemptLimit {
  limit: number;
  windowMs: number;
}

const windowStart = (now: Date, windowMs: number) => iso(new Date(now.getTime() - (now.getTime() % windowMs)));

/** RATE_LIMITED once `key` has used up its attempts in the current window. */
export async function checkAttempts(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<void> {
  const row = await tx.select().from(attemptCounters).where(eq(attemptCounters.key, key)).get();
  const start = windowStart(now, l.windowMs);
  if (row && row.windowStart === start && row.count >= l.limit) {
    const retryAfter = Math.ceil((Date.parse(start) + l.windowMs - now.getTime()) / 1000);
    throw new AppError("RATE_LIMITED", "Too many attempts; try again later.", { limit: l.limit, window_seconds: l.windowMs / 1000 }, retryAfter);
  }
}

export async function recordAttempt(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<void> {
  const start = windowStart(now, l.windowMs);
  const row = await tx.select().from(attemptCounters).where(eq(attemptCounters.key, key)).get();
  const count = row && row.windowStart === start ? row.count + 1 : 1;
  await tx
    .insert(attemptCounters)
    .values({ key, windowStart: start, count })
    .onConflictDoUpdate({ target: attemptCounters.key, set: { windowStart: start, count } });
}

/**
 * Gives back one attempt recorded in this window: an attempt counted before its (slow) check, as a password guess is
 * so that guesses checked at once cannot pass the limit together, turned out to be right.
 */
export async function forgetAttempt(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<void> {
  const start = windowStart(now, l.windowMs);
  const row = await tx.select().from(attemptCounters).where(eq(attemptCounters.key, key)).get();
  if (!row || row.windowStart !== start || row.count <= 0) return;
  await tx
    .update(attemptCounters)
    .set({ count: row.count - 1 })
    .where(eq(attemptCounters.key, key));
}
