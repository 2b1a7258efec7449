// Limits on attempts to guess a secret (and on other costly asks, such as text messages), kept in the database:
// unlike the per-instance rate limiter, they hold across every instance that shares the database, and a failed
// attempt still counts. Each is a sliding window: at most `limit` attempts in any `windowMs`, so no clock edge lets
// twice the limit through (a fixed clock hour did: ten guesses before the hour turned and ten after).
import { eq, sql } from "drizzle-orm";
import { batchOf, guard, snapshotOf, type Tx } from "../../db/client.ts";
import { attemptTimes } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { AppError } from "../errors.ts";

export interface AttemptLimit {
  limit: number;
  windowMs: number;
}

// The stored times of each key a write call has read or written, by its batch: a key counted twice in one call (a
// guess counted, then given back) reads what the call left, and a read of another key goes to the snapshot.
const callKeys = new WeakMap<object, Map<string, string | null>>();

async function stored(tx: Tx, key: string): Promise<string | null> {
  const batch = batchOf(tx);
  const keys = batch && (callKeys.get(batch) ?? callKeys.set(batch, new Map()).get(batch)!);
  if (keys?.has(key)) return keys.get(key)!;
  // The call has not written this key (it would be in keys): the snapshot has it as it is.
  const row = await snapshotOf(tx).select({ times: attemptTimes.times }).from(attemptTimes).where(eq(attemptTimes.key, key)).get();
  keys?.set(key, row?.times ?? null);
  return row?.times ?? null;
}

/**
 * Stores a key's times, counted only if they are still what the call read (a guard: attempts counted at once by
 * several calls each run again and count on the others').
 */
async function store(tx: Tx, key: string, times: string, expiresAt?: string): Promise<void> {
  const was = await stored(tx, key);
  await guard(tx, `attempts ${key}`, sql`(SELECT ${attemptTimes.times} FROM ${attemptTimes} WHERE ${attemptTimes.key} = ${key}) IS ${was}`);
  if (expiresAt === undefined) await tx.update(attemptTimes).set({ times }).where(eq(attemptTimes.key, key));
  else await tx.insert(attemptTimes).values({ key, times, expiresAt }).onConflictDoUpdate({ target: attemptTimes.key, set: { times, expiresAt } });
  const batch = batchOf(tx);
  if (batch) callKeys.get(batch)!.set(key, times);
}

/** The key's attempts still inside the window ending now, oldest first. */
async function recent(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<number[]> {
  const times = await stored(tx, key);
  const since = now.getTime() - l.windowMs;
  return times ? (JSON.parse(times) as number[]).filter((t) => t > since) : [];
}

/** RATE_LIMITED once `key` has used up its attempts in the window ending now; retry_after: when the oldest of them leaves it. */
export async function checkAttempts(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<void> {
  const times = await recent(tx, now, key, l);
  if (times.length < l.limit) return;
  const frees = times[times.length - l.limit]! + l.windowMs;
  const retryAfter = Math.max(1, Math.ceil((frees - now.getTime()) / 1000));
  throw new AppError("RATE_LIMITED", "Too many attempts; try again later.", { limit: l.limit, window_seconds: l.windowMs / 1000 }, retryAfter);
}

/** Counts one attempt now. Only the newest `limit` are kept: older ones can no longer decide a refusal. */
export async function recordAttempt(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<void> {
  const times = JSON.stringify([...(await recent(tx, now, key, l)), now.getTime()].slice(-Math.max(1, l.limit)));
  await store(tx, key, times, iso(new Date(now.getTime() + l.windowMs)));
}

/** checkAttempts, then recordAttempt: for asks that count whether or not they succeed (a text message sent). */
export async function takeAttempt(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<void> {
  await checkAttempts(tx, now, key, l);
  await recordAttempt(tx, now, key, l);
}

/**
 * Gives back one attempt recorded in this window: an attempt counted before its (slow) check, as a password guess is
 * so that guesses checked at once cannot pass the limit together, turned out to be right.
 */
export async function forgetAttempt(tx: Tx, now: Date, key: string, l: AttemptLimit): Promise<void> {
  const times = await recent(tx, now, key, l);
  if (!times.length) return;
  // The newest goes: the guess just counted for this check.
  await store(tx, key, JSON.stringify(times.slice(0, -1)));
}
