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

export async function setPassword(tx: Tx, agentId: string, password: string, now: Date): Promise<void> {
  const problem = passwordProblem(password);
  if (problem) throw new AppError("VALIDATION_ERROR", problem);
  const hash = await Bun.password.hash(password, ARGON);
  await tx
    .insert(passwords)
    .values({ agentId, hash, updatedAt: iso(now) })
    .onConflictDoUpdate({ target: passwords.agentId, set: { hash, updatedAt: iso(now) } });
}

export async function hasPassword(tx: Tx, agentId: string): Promise<boolean> {
  return (await tx.select({ a: passwords.agentId }).from(passwords).where(eq(passwords.agentId, agentId)).get()) !== undefined;
}

// Checked against when the handle has no password, so an unknown handle costs the same work as a wrong password.
let dummy: Promise<string> | null = null;

/** Whether `password` is the agent's; agentId null (no such handle) is checked against a dummy all the same. */
export async function verifyPassword(tx: Tx, agentId: string | null, password: string): Promise<boolean> {
  const row = agentId ? await tx.select({ hash: passwords.hash }).from(passwords).where(eq(passwords.agentId, agentId)).get() : undefined;
  dummy ??= Bun.password.hash("not anyone's password", ARGON);
  const matches = await Bun.password.verify(password, row?.hash ?? (await dummy)).catch(() => false);
  return row !== undefined && matches;
}
