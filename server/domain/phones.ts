// A phone proved on the settings page: a code goes by SMS to the number typed, and typing it back (in the same
// browser session, before it expires, within the attempt limit) records the number as verified. The same limits as
// sign-in codes (signin-codes.ts), and the limits of every text message (text-messages.ts).
import { and, count, desc, eq, gt, isNull, lt } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { agents, phoneCodes } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { AppError } from "../errors.ts";
import { constantTimeEqual, sha256 } from "../auth/secrets.ts";
import { MAX_ATTEMPTS, MAX_CODES_PER_HOUR, newCode, normaliseCode, SIGNIN_CODE_TTL_MS, spaced, type Verification } from "./signin-codes.ts";
import { chargeSmsAsk, chargeSmsSend, SMS_TEXT } from "./text-messages.ts";

/** E.164: a plus, a country code that does not start with 0, at most 15 digits in all. */
const E164 = /^\+[1-9]\d{6,14}$/;

/** The number in E.164 with the spaces, dashes, dots and brackets people type taken out; null if it is not one. */
export function normalisePhone(typed: string): string | null {
  const phone = typed.replace(/[\s\-.()]/g, "");
  return E164.test(phone) ? phone : null;
}

/** Who asks for a proof: the client's address (an IPv6 /64) and the server's messages an hour (--sms-per-hour). */
export interface SmsAsk {
  address: string;
  smsPerHour: number;
}

/**
 * Creates a code for this session to prove `phone`, and the message that carries it, which the caller sends outside
 * the transaction. RATE_LIMITED past the handle's codes an hour, or the address's, the number's or the server's
 * messages (text-messages.ts); an ask refused by the number or the server still counts against the address.
 */
export async function startPhoneProof(tx: Tx, now: Date, agentId: string, webSessionHash: string, phone: string, ask: SmsAsk) {
  const recent = await tx
    .select({ n: count() })
    .from(phoneCodes)
    .where(and(eq(phoneCodes.agentId, agentId), gt(phoneCodes.createdAt, later(now, -60 * MINUTE))))
    .get();
  if ((recent?.n ?? 0) >= MAX_CODES_PER_HOUR) {
    throw new AppError("RATE_LIMITED", "Too many phone codes were sent for this handle in the last hour; wait and try again.", undefined, 3600);
  }
  await chargeSmsAsk(tx, now, ask.address);
  await chargeSmsSend(tx, now, phone, ask.smsPerHour);
  await dropPhoneCodes(tx, now, webSessionHash);
  const code = newCode();
  const codeId = crypto.randomUUID();
  await tx.insert(phoneCodes).values({
    codeId,
    agentId,
    webSessionHash,
    phone,
    codeHash: sha256(code),
    createdAt: iso(now),
    expiresAt: later(now, SIGNIN_CODE_TTL_MS),
  });
  return { codeId, sms: { to: phone, text: SMS_TEXT.phone(spaced(code)) } };
}

/** Ends this session's waiting codes: a new one replaces them, or the SMS could not be sent, or the human starts again. */
export async function dropPhoneCodes(tx: Tx, now: Date, webSessionHash: string): Promise<void> {
  await tx
    .update(phoneCodes)
    .set({ usedAt: iso(now) })
    .where(and(eq(phoneCodes.webSessionHash, webSessionHash), isNull(phoneCodes.usedAt)));
}

/** The live code this session's human is waiting to type for `agentId`, if any. */
export async function pendingPhoneCode(tx: Tx, now: Date, agentId: string, webSessionHash: string) {
  return tx
    .select()
    .from(phoneCodes)
    .where(
      and(
        eq(phoneCodes.webSessionHash, webSessionHash),
        eq(phoneCodes.agentId, agentId),
        isNull(phoneCodes.usedAt),
        gt(phoneCodes.expiresAt, iso(now)),
        lt(phoneCodes.attempts, MAX_ATTEMPTS),
      ),
    )
    .orderBy(desc(phoneCodes.createdAt))
    .get();
}

/**
 * Checks a typed code; right, the number becomes the agent's verified phone (replacing any earlier one). `setThrough`:
 * the client the phone is tied to (server/web/session.ts factorOrigin): revoking it removes the phone.
 */
export async function verifyPhoneCode(
  tx: Tx,
  now: Date,
  agentId: string,
  webSessionHash: string,
  typed: string,
  setThrough: string | null,
): Promise<Verification> {
  const row = await pendingPhoneCode(tx, now, agentId, webSessionHash);
  if (!row) return { ok: false, reason: "none", attemptsLeft: 0 };
  if (!constantTimeEqual(sha256(normaliseCode(typed)), row.codeHash)) {
    await tx
      .update(phoneCodes)
      .set({ attempts: row.attempts + 1 })
      .where(eq(phoneCodes.codeId, row.codeId));
    return { ok: false, reason: "wrong", attemptsLeft: MAX_ATTEMPTS - row.attempts - 1 };
  }
  await tx
    .update(phoneCodes)
    .set({ usedAt: iso(now) })
    .where(eq(phoneCodes.codeId, row.codeId));
  await tx.update(agents).set({ phone: row.phone, phoneVerified: true, phoneSetThroughClientId: setThrough }).where(eq(agents.agentId, agentId));
  return { ok: true, agentId, readBy: null };
}

export async function removePhone(tx: Tx, agentId: string): Promise<void> {
  await tx.update(agents).set({ phone: null, phoneVerified: false, phoneSetThroughClientId: null }).where(eq(agents.agentId, agentId));
}
