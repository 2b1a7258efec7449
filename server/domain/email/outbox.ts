// The e-mail outbox: every e-mail svc sends is a row here first, written in the transaction that decided to send it,
// and sent later by the job runner (server/jobs/email.ts) over SMTP, outside any transaction. A send that fails for a
// reason that may pass (the SMTP server down, a 4xx answer) is tried again with a growing wait; nothing is lost while
// the SMTP server is away. The rows sent stay a week: they are what the sending limits count.
import { and, asc, count, eq, gt, isNull, lte, or, sql } from "drizzle-orm";
import { deleteCounted, type Tx } from "../../../db/client.ts";
import { emailOutbox } from "../../../db/schema/index.ts";
import { DAY, HOUR, MINUTE, iso, later } from "../../clock.ts";
import { emailKey } from "../../contract/email.ts";

/** E-mails one address may get: in any hour, and in any day (sign-in links and notifications together). */
export const PER_ADDRESS_HOUR = 10;
export const PER_ADDRESS_DAY = 50;
/** A send that keeps failing is given up this long after the e-mail was written (logged, kept a week). */
export const GIVE_UP_MS = 3 * DAY;
/** Sent and given-up rows are deleted this long after they were written. */
export const KEPT_MS = 7 * DAY;
/** A row handed to a sender is not handed to another for this long (a sender that crashed leaves it to be retried). */
export const CLAIM_MS = 5 * MINUTE;

export type Purpose = "confirm" | "signin" | "reset" | "claim" | "notification" | "digest";

export interface Mail {
  agentId: string | null;
  to: string;
  purpose: Purpose;
  subject: string;
  text: string;
  html: string;
  /** RFC 8058 one-click unsubscribe (notifications and digests). */
  unsubscribeUrl?: string | null;
}

export type OutboxRow = typeof emailOutbox.$inferSelect;

/** The wait before the next try after `attempts` failed ones: 1, 2, 4, ... minutes, at most an hour. */
export const retryDelayMs = (attempts: number) => Math.min(HOUR, MINUTE * 2 ** Math.max(0, attempts - 1));

const waiting = and(isNull(emailOutbox.sentAt), isNull(emailOutbox.failedAt));

/** E-mails to the address sent in the window ending now, or still waiting to be sent (they will be). */
async function sentOrWaiting(tx: Tx, now: Date, key: string, windowMs: number): Promise<number> {
  const since = iso(new Date(now.getTime() - windowMs));
  const row = await tx
    .select({ n: count() })
    .from(emailOutbox)
    .where(and(eq(emailOutbox.toKey, key), or(gt(emailOutbox.sentAt, since), waiting)))
    .get();
  return row?.n ?? 0;
}

/** Whether one more e-mail to the address keeps within its limits, counting those still waiting. */
export async function roomFor(tx: Tx, now: Date, address: string): Promise<boolean> {
  const key = emailKey(address);
  return (await sentOrWaiting(tx, now, key, HOUR)) < PER_ADDRESS_HOUR && (await sentOrWaiting(tx, now, key, DAY)) < PER_ADDRESS_DAY;
}

/** Writes an e-mail to be sent; the caller checked roomFor where the limit decides what to tell the person. */
export async function enqueue(tx: Tx, now: Date, mail: Mail): Promise<string> {
  const mailId = Bun.randomUUIDv7();
  await tx.insert(emailOutbox).values({
    mailId,
    agentId: mail.agentId,
    toAddress: mail.to,
    toKey: emailKey(mail.to),
    purpose: mail.purpose,
    subject: mail.subject,
    textBody: mail.text,
    htmlBody: mail.html,
    unsubscribeUrl: mail.unsubscribeUrl ?? null,
    createdAt: iso(now),
    nextAttemptAt: iso(now),
  });
  return mailId;
}

async function sentSince(tx: Tx, since: Date, key?: string): Promise<number> {
  const row = await tx
    .select({ n: count() })
    .from(emailOutbox)
    .where(and(gt(emailOutbox.sentAt, iso(since)), key === undefined ? undefined : eq(emailOutbox.toKey, key)))
    .get();
  return row?.n ?? 0;
}

/**
 * The e-mails due now that the limits let through, at most `batch`, each held for CLAIM_MS so that no other sender
 * takes it meanwhile. The server may send `perHour` in any hour, an address PER_ADDRESS_HOUR and PER_ADDRESS_DAY:
 * a row past a limit waits (an address's until its window frees), it is never dropped.
 */
export async function claimDue(tx: Tx, now: Date, perHour: number, batch: number): Promise<OutboxRow[]> {
  const serverRoom = perHour - (await sentSince(tx, new Date(now.getTime() - HOUR)));
  if (serverRoom <= 0) return [];
  const due = await tx
    .select()
    .from(emailOutbox)
    .where(and(waiting, lte(emailOutbox.nextAttemptAt, iso(now))))
    .orderBy(asc(emailOutbox.nextAttemptAt))
    .limit(Math.min(batch, serverRoom));
  const taken: OutboxRow[] = [];
  const held: { mailId: string; hold: number }[] = [];
  const chosen = new Map<string, number>();
  // Every count is read before any row is written: a write call reads nothing it wrote (db/connections.ts).
  for (const row of due) {
    const mine = chosen.get(row.toKey) ?? 0;
    const hour = (await sentSince(tx, new Date(now.getTime() - HOUR), row.toKey)) + mine;
    const day = (await sentSince(tx, new Date(now.getTime() - DAY), row.toKey)) + mine;
    // Past an address's limit the row waits a while and is looked at again (its window frees as time passes).
    const hold = hour >= PER_ADDRESS_HOUR || day >= PER_ADDRESS_DAY ? (day >= PER_ADDRESS_DAY ? HOUR : 5 * MINUTE) : 0;
    held.push({ mailId: row.mailId, hold });
    if (hold) continue;
    chosen.set(row.toKey, mine + 1);
    taken.push(row);
  }
  for (const { mailId, hold } of held)
    await tx
      .update(emailOutbox)
      .set({ nextAttemptAt: later(now, hold || CLAIM_MS) })
      .where(eq(emailOutbox.mailId, mailId));
  return taken;
}

export async function recordSent(tx: Tx, now: Date, mailId: string): Promise<void> {
  await tx
    .update(emailOutbox)
    .set({ sentAt: iso(now), lastError: null })
    .where(eq(emailOutbox.mailId, mailId));
}

/**
 * A send that failed: tried again after retryDelayMs, unless the failure is final (the SMTP server refused the
 * recipient for good) or the e-mail has waited GIVE_UP_MS. Returns whether it was given up.
 */
export async function recordFailed(tx: Tx, now: Date, row: OutboxRow, error: string, final: boolean): Promise<boolean> {
  const attempts = row.attempts + 1;
  const giveUp = final || now.getTime() - Date.parse(row.createdAt) >= GIVE_UP_MS;
  await tx
    .update(emailOutbox)
    .set({
      attempts,
      lastError: error.slice(0, 500),
      nextAttemptAt: later(now, retryDelayMs(attempts)),
      failedAt: giveUp ? iso(now) : null,
    })
    .where(eq(emailOutbox.mailId, row.mailId));
  return giveUp;
}

/** Housekeeping: rows sent or given up that were written more than KEPT_MS ago. */
export async function expireOutbox(tx: Tx, now: Date): Promise<number> {
  const before = iso(new Date(now.getTime() - KEPT_MS));
  return deleteCounted(
    tx,
    emailOutbox,
    and(lte(emailOutbox.createdAt, before), sql`(${emailOutbox.sentAt} IS NOT NULL OR ${emailOutbox.failedAt} IS NOT NULL)`),
  );
}

/** An agent's e-mails not sent yet (its address removed: nothing more goes to it). */
export async function dropWaiting(tx: Tx, agentId: string): Promise<void> {
  await tx.delete(emailOutbox).where(and(eq(emailOutbox.agentId, agentId), waiting));
}
