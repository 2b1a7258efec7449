// The text messages (SMS) svc sends and how many: each text is fixed, carrying only the code (never a handle, a name
// or anything else a person typed: a stranger's words must not reach someone else's phone under svc's name), and
// besides the per-handle limit of codes (signin-codes.ts) they are limited per number, per client address and per
// server, in the database (attempts.ts: sliding windows shared by every instance). Sending happens after the commit
// (server/auth/sms.ts); these run in the transaction that stores the code.
import type { Tx } from "../../db/client.ts";
import { DAY, HOUR } from "../clock.ts";
import { AppError } from "../errors.ts";
import { checkAttempts, recordAttempt, takeAttempt, type AttemptLimit } from "./attempts.ts";

/** Messages to one number: a few sign-ins or proofs an hour, never a flood of someone's phone. */
export const SMS_PER_NUMBER_HOUR: AttemptLimit = { limit: 5, windowMs: HOUR };
export const SMS_PER_NUMBER_DAY: AttemptLimit = { limit: 10, windowMs: DAY };
/** Asks for a message from one client address (an IPv6 /64), whether or not one is sent. */
export const SMS_PER_ADDRESS: AttemptLimit = { limit: 10, windowMs: HOUR };

/** The only texts sent; `code` as people read it (1234-5678). */
export const SMS_TEXT = {
  signin: (code: string) => `svc sign-in code: ${code} (valid 10 minutes). If you are not signing in right now, ignore it.`,
  phone: (code: string) => `svc code to verify this phone: ${code} (valid 10 minutes). If you did not ask for it, ignore it.`,
};

const refused = (err: unknown, message: string): never => {
  if (err instanceof AppError && err.code === "RATE_LIMITED") throw new AppError("RATE_LIMITED", message, err.details, err.retryAfter);
  throw err;
};

/**
 * Counts an ask for a text message from `address`, sent or not (a sign-in for a handle without a phone counts the
 * same, so a refusal tells nothing about the handle). RATE_LIMITED past SMS_PER_ADDRESS.
 */
export async function chargeSmsAsk(tx: Tx, now: Date, address: string): Promise<void> {
  await takeAttempt(tx, now, `sms:address:${address}`, SMS_PER_ADDRESS).catch((err) =>
    refused(err, "Too many text messages were asked for from your address in the last hour; wait and try again."),
  );
}

/**
 * Counts a message about to go to `to` against the number and the server (`perHour`, --sms-per-hour). RATE_LIMITED
 * when either is used up, and nothing is counted then.
 */
export async function chargeSmsSend(tx: Tx, now: Date, to: string, perHour: number): Promise<void> {
  const server = { limit: perHour, windowMs: HOUR };
  // All three checked before any is counted, so a refused message spends none of them.
  const keys: [string, AttemptLimit, string][] = [
    [`sms:number:hour:${to}`, SMS_PER_NUMBER_HOUR, "Too many text messages went to this number in the last hour; wait and try again."],
    [`sms:number:day:${to}`, SMS_PER_NUMBER_DAY, "Too many text messages went to this number today; try again tomorrow."],
    ["sms:server", server, "This server has sent as many text messages as it may this hour; try again later."],
  ];
  for (const [key, limit, message] of keys) await checkAttempts(tx, now, key, limit).catch((err) => refused(err, message));
  for (const [key, limit] of keys) await recordAttempt(tx, now, key, limit);
}
