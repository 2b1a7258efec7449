// Passwords of people, as NIST SP 800-63B advises: at least 8 characters, up to 256, any characters (spaces and
// unicode included), no composition rules, refused when common; stored as argon2id (Bun.password). The pages limit
// guesses per handle and per address (GUESSES_PER_*, counted by domain/attempts.ts in the database).
import { eq } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { passwords } from "../../db/schema/index.ts";
import { MINUTE, iso } from "../clock.ts";
import { AppError } from "../errors.ts";
import common from "./common-passwords.txt" with { type: "text" };

export const MIN_PASSWORD = 8;
export const MAX_PASSWORD = 256;
/** Wrong guesses allowed per handle and per address in an hour (a person mistyping stays far below either). */
export const GUESSES_PER_HANDLE = { limit: 10, windowMs: 60 * MINUTE };
export const GUESSES_PER_ADDRESS = { limit: 30, windowMs: 60 * MINUTE };
/** The attempt keys a password guess counts against (domain/attempts.ts): the handle's, then the address's. */
export const passwordGuessKeys = (handle: string, address: string) => [`password:handle:${handle}`, `password:address:${address}`] as const;

const COMMON = new Set(
  common
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#")),
);
const ARGON = { algorithm: "argon2id" } as const;

/** What is wrong with a new password, or null when it may be used. */
export function passwordProblem(password: string): string | null {
  const length = [...password].length;
  if (length < MIN_PASSWORD) return `The password must be at least ${MIN_PASSWORD} characters.`;
  if (length > MAX_PASSWORD) return `The password must be at most ${MAX_PASSWORD} characters.`;
  if (COMMON.has(password.toLowerCase())) return "That password is one of the most common ones, which are guessed first; choose another.";
  return null;
}

/**
 * The argon2id hash of an acceptable new password (VALIDATION_ERROR otherwise). Slow on purpose (a quarter of a second
 * and more): never called inside a transaction, so no write waits for it (server/web/framework.ts slowForm).
 */
export async function hashPassword(password: string): Promise<string> {
  const problem = passwordProblem(password);
  if (problem) throw new AppError("VALIDATION_ERROR", problem);
  return Bun.password.hash(password, ARGON);
}

/** Stores a hash made by hashPassword. `setThrough`: the client it is tied to (server/web/session.ts factorOrigin). */
export async function storePassword(tx: Tx, agentId: string, hash: string, setThrough: string | null, now: Date): Promise<void> {
  const row = { hash, updatedAt: iso(now), setThroughClientId: setThrough };
  await tx
    .insert(passwords)
    .values({ agentId, ...row })
    .onConflictDoUpdate({ target: passwords.agentId, set: row });
}

/** The agent's stored hash and the client the password is tied to, if it has one. */
export async function passwordOf(tx: Tx, agentId: string): Promise<{ hash: string; setThrough: string | null } | undefined> {
  return tx.select({ hash: passwords.hash, setThrough: passwords.setThroughClientId }).from(passwords).where(eq(passwords.agentId, agentId)).get();
}

// Checked against when the handle has no password, so an unknown handle costs the same work as a wrong password.
let dummy: Promise<string> | null = null;

/**
 * Whether `password` matches `hash`, read beforehand (passwordOf); with no hash (no such handle, or no password) a
 * dummy is checked all the same, so every answer costs the same work. Slow: never inside a transaction.
 */
export async function passwordMatches(hash: string | undefined, password: string): Promise<boolean> {
  dummy ??= Bun.password.hash("not anyone's password", ARGON);
  const matches = await Bun.password.verify(password, hash ?? (await dummy)).catch(() => false);
  return hash !== undefined && matches;
}
