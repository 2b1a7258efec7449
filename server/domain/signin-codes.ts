// Human sign-in by a one-time code left in the handle's own inbox (whoever can read that inbox holds the handle), or
// sent by SMS to the handle's verified phone. Codes are short-lived, bound to the browser session that asked, and
// die after a few wrong tries; both ways share the per-handle hourly limit.
import { and, count, desc, eq, gt, isNull, lt } from "drizzle-orm";
import { randomInt } from "node:crypto";
import type { Tx } from "../../db/client.ts";
import { signinCodes } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { AppError } from "../errors.ts";
import { agentByHandle, DISABLED_MESSAGE, type AgentRow } from "./agents.ts";
import { checkAttempts, recordAttempt } from "./attempts.ts";
import { deliver, JOIN_CODE_ITEM, resolveItems } from "./inbox.ts";
import { constantTimeEqual, sha256 } from "../auth/secrets.ts";
import { quoted, untrusted } from "./untrusted.ts";
import { chargeSmsSend, SMS_TEXT } from "./text-messages.ts";

export const SIGNIN_CODE_TTL_MS = 10 * MINUTE;
export const MAX_ATTEMPTS = 5;
/** Codes one handle can be sent per hour, so nobody can flood a stranger's inbox. */
export const MAX_CODES_PER_HOUR = 5;

export type Purpose = { kind: "join"; clientName: string } | { kind: "authorize"; clientName: string } | { kind: "account" };

const CODE_DIGITS = 8;
export const normaliseCode = (code: string) => code.replace(/[\s-]/g, "");
/** A fresh code of CODE_DIGITS random digits. */
export const newCode = () => String(randomInt(10 ** CODE_DIGITS)).padStart(CODE_DIGITS, "0");
/** A code as people read it: 1234-5678. */
export const spaced = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

function describe(p: Purpose): string {
  if (p.kind === "join") return `to connect a new app, ${quoted(p.clientName, 40)}, to your handle`;
  if (p.kind === "authorize") return `to let the app ${quoted(p.clientName, 40)} act as you through OAuth`;
  return "to sign in to your account page";
}

/**
 * Sends a fresh code to the handle's inbox for this browser session, replacing any earlier one.
 * Returns the agent, or null when no agent has that handle.
 */
export async function sendSigninCode(tx: Tx, now: Date, webSessionHash: string, handle: string, purpose: Purpose): Promise<AgentRow | null> {
  const agent = await agentByHandle(tx, handle);
  if (!agent) return null;
  const { code, codeId, expiresAt } = await storeCode(tx, now, webSessionHash, agent, "inbox");
  await deliver(tx, now, {
    to: agent.agentId,
    type: JOIN_CODE_ITEM,
    from: null,
    summaryMd: `Sign-in code for your human: give them payload.code only if they are signing in right now, else ignore it. Requested on the web ${describe(purpose)}.`,
    payload: {
      code: spaced(code),
      purpose: purpose.kind,
      client_name: purpose.kind === "account" ? null : untrusted(purpose.clientName, "app name, chosen by whoever started the request"),
      expires_at: expiresAt,
    },
    refs: { code_id: codeId },
    // A code works for 10 minutes: its item goes with it, not 30 days later.
    expiresAt,
  });
  return agent;
}

/**
 * Like sendSigninCode, by SMS: returns the message for the caller to send after the transaction, or null when the
 * handle has no verified phone, or its number or the server has had all the messages it may for now (text-messages.ts,
 * `smsPerHour` the server's). A code is stored either way, so the page answers alike and never tells whether the
 * handle has a phone (a code no one received can only be guessed, within MAX_ATTEMPTS).
 */
export async function sendSigninCodeBySms(
  tx: Tx,
  now: Date,
  webSessionHash: string,
  handle: string,
  smsPerHour: number,
): Promise<{ agent: AgentRow; sms: { to: string; text: string } | null } | null> {
  const agent = await agentByHandle(tx, handle);
  if (!agent) return null;
  const { code } = await storeCode(tx, now, webSessionHash, agent, "sms");
  const to = agent.phoneVerified ? agent.phone : null;
  if (!to) return { agent, sms: null };
  try {
    await chargeSmsSend(tx, now, to, smsPerHour);
  } catch (err) {
    if (err instanceof AppError && err.code === "RATE_LIMITED") return { agent, sms: null };
    throw err;
  }
  return { agent, sms: { to, text: SMS_TEXT.signin(spaced(code)) } };
}

const TOO_MANY = "Too many sign-in codes were sent to this handle in the last hour; wait and try again.";

/**
 * A handle no agent has gets what a real one gets, so a sign-in never tells whether it exists: the session's waiting
 * code ends, and the same hourly limit applies (counted in the database's attempt counters, as no code row can name
 * an agent that does not exist). Returns until when the page should ask for a code no one can have.
 */
export async function decoyCode(tx: Tx, now: Date, webSessionHash: string, handle: string): Promise<string> {
  const key = `signin-code:${handle}`;
  const limit = { limit: MAX_CODES_PER_HOUR, windowMs: 60 * MINUTE };
  try {
    await checkAttempts(tx, now, key, limit);
  } catch (err) {
    if (err instanceof AppError && err.code === "RATE_LIMITED") throw new AppError("RATE_LIMITED", TOO_MANY, undefined, 3600);
    throw err;
  }
  await recordAttempt(tx, now, key, limit);
  await tx
    .update(signinCodes)
    .set({ usedAt: iso(now) })
    .where(and(eq(signinCodes.webSessionHash, webSessionHash), isNull(signinCodes.usedAt)));
  return later(now, SIGNIN_CODE_TTL_MS);
}

/** Replaces this session's waiting code with a new one for the agent, within the hourly limit. */
async function storeCode(tx: Tx, now: Date, webSessionHash: string, agent: AgentRow, channel: "inbox" | "sms") {
  if (agent.disabledAt) throw new AppError("FORBIDDEN", DISABLED_MESSAGE);
  const recent = await tx
    .select({ n: count() })
    .from(signinCodes)
    .where(and(eq(signinCodes.agentId, agent.agentId), gt(signinCodes.createdAt, later(now, -60 * MINUTE))))
    .get();
  if ((recent?.n ?? 0) >= MAX_CODES_PER_HOUR) {
    throw new AppError("RATE_LIMITED", TOO_MANY, undefined, 3600);
  }
  await tx
    .update(signinCodes)
    .set({ usedAt: iso(now) })
    .where(and(eq(signinCodes.webSessionHash, webSessionHash), isNull(signinCodes.usedAt)));
  const code = newCode();
  const codeId = crypto.randomUUID();
  const expiresAt = later(now, SIGNIN_CODE_TTL_MS);
  // A code sent to a phone proved through a client signs in a browser obtained through that client (and ends with it,
  // revokeClient), as a code an agent's key read does (inbox.ts sets read_by_client_id then).
  const readByClientId = channel === "sms" && agent.phoneVerified ? agent.phoneSetThroughClientId : null;
  await tx
    .insert(signinCodes)
    .values({ codeId, agentId: agent.agentId, webSessionHash, codeHash: sha256(code), createdAt: iso(now), expiresAt, channel, readByClientId });
  return { code, codeId, expiresAt };
}

/** The live code this browser is waiting to type, if any. */
export async function pendingCode(tx: Tx, now: Date, webSessionHash: string) {
  return tx
    .select()
    .from(signinCodes)
    .where(
      and(
        eq(signinCodes.webSessionHash, webSessionHash),
        isNull(signinCodes.usedAt),
        gt(signinCodes.expiresAt, iso(now)),
        lt(signinCodes.attempts, MAX_ATTEMPTS),
      ),
    )
    .orderBy(desc(signinCodes.createdAt))
    .get();
}

/**
 * `readBy`: the first client that read the code (see withSigninCodes in inbox.ts), or for an SMS code the client its
 * phone is tied to; a sign-in with it is obtained through that client.
 */
export type Verification = { ok: true; agentId: string; readBy: string | null } | { ok: false; reason: "none" | "wrong"; attemptsLeft: number };

/** Checks a typed code; every wrong try is counted in the database and the code dies after MAX_ATTEMPTS. */
export async function verifySigninCode(tx: Tx, now: Date, webSessionHash: string, typed: string): Promise<Verification> {
  const row = await pendingCode(tx, now, webSessionHash);
  if (!row) return { ok: false, reason: "none", attemptsLeft: 0 };
  if (!constantTimeEqual(sha256(normaliseCode(typed)), row.codeHash)) {
    await tx
      .update(signinCodes)
      .set({ attempts: row.attempts + 1 })
      .where(eq(signinCodes.codeId, row.codeId));
    return { ok: false, reason: "wrong", attemptsLeft: MAX_ATTEMPTS - row.attempts - 1 };
  }
  await tx
    .update(signinCodes)
    .set({ usedAt: iso(now) })
    .where(eq(signinCodes.codeId, row.codeId));
  await resolveItems(tx, row.agentId, JOIN_CODE_ITEM, { code_id: row.codeId });
  return { ok: true, agentId: row.agentId, readBy: row.readByClientId };
}
