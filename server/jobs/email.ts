// E-mail for people (svc serve --smtp-url): the job that composes what is due (server/domain/email/compose.ts) and
// sends the outbox over SMTP with nodemailer. The sending happens in prepare, outside any transaction (an SMTP server
// may take seconds), each e-mail recorded sent or failed in a short transaction of its own as soon as its answer comes;
// the job's lease keeps two instances from sending the same rows. A crash between a send and its record sends that
// e-mail again later: at least once, never lost.
import { count, lte, sql } from "drizzle-orm";
import nodemailer from "nodemailer";
import { type Db, deleteCounted } from "../../db/client.ts";
import { emailAddresses, emailEvents } from "../../db/schema/index.ts";
import { DAY, MINUTE, iso } from "../clock.ts";
import { composeDue } from "../domain/email/compose.ts";
import { claimDue, expireOutbox, type OutboxRow, recordFailed, recordSent } from "../domain/email/outbox.ts";
import type { Job } from "./index.ts";

/** E-mails sent in one run at most; the rest wait for the next. */
const BATCH = 50;
/** How long an SMTP server may take to connect, greet and answer. */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/** What sends one e-mail; throws SendFailed when it was not sent. */
export interface EmailSender {
  send(row: OutboxRow): Promise<void>;
}

/** An e-mail not sent: `final` when the SMTP server refused it for good (a 5xx answer), else it is tried again. */
export class SendFailed extends Error {
  override name = "SendFailed";
  constructor(
    message: string,
    readonly final: boolean,
  ) {
    super(message);
  }
}

/** The SMTP server of --smtp-url, through nodemailer (a connection per run's e-mail; STARTTLS when offered on smtp://). */
export function smtpSender(smtpUrl: string, from: string): EmailSender {
  const url = new URL(smtpUrl);
  const secure = url.protocol === "smtps:";
  const transport = nodemailer.createTransport({
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
    ...SMTP_TIMEOUTS,
  });
  return {
    async send(row) {
      const headers: Record<string, string> = { "Auto-Submitted": "auto-generated" };
      // RFC 8058: a mail client's "unsubscribe" button POSTs List-Unsubscribe=One-Click to this URL, no page opened.
      if (row.unsubscribeUrl) Object.assign(headers, { "List-Unsubscribe": `<${row.unsubscribeUrl}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" });
      try {
        await transport.sendMail({ from, to: row.toAddress, subject: row.subject, text: row.textBody, html: row.htmlBody, headers });
      } catch (err) {
        const e = err as { message?: string; responseCode?: number; code?: string };
        // Only the server's own 5xx answer to this e-mail is final; a connection refused, a timeout or a 4xx may pass.
        const final = typeof e.responseCode === "number" && e.responseCode >= 500 && e.code !== "EAUTH";
        throw new SendFailed(`${e.code ?? "error"}${e.responseCode ? ` ${e.responseCode}` : ""}: ${String(e.message ?? err).slice(0, 300)}`, final);
      }
    },
  };
}

/** Told of each e-mail not sent (logged as a warning by svc serve); never its address or contents. */
export type OnSendFailure = (failure: { mail_id: string; purpose: string; attempts: number; given_up: boolean; error: string }) => void;

/** What the job reads of the server's settings when it runs (the base URL is known once the server listens). */
export interface EmailSettings {
  baseUrl: string;
  /** E-mails the whole server may send in any hour. */
  perHour: number;
  /** Signs the unsubscribe links (the server's form key). */
  key: string;
}

/** The e-mail job: composes the notifications that are due, then sends what the outbox holds within the limits. */
export function sendEmail(db: Db, settings: () => EmailSettings, sender: EmailSender, onFailure: OnSendFailure = () => {}): Job<number> {
  return {
    name: "email",
    everyMs: MINUTE,
    async prepare(now) {
      const { baseUrl, perHour, key } = settings();
      let count = await composeDue(db, now, { baseUrl, key });
      const due = await db.tx((tx) => claimDue(tx, now, perHour, BATCH));
      for (const row of due) {
        try {
          await sender.send(row);
          await db.tx((tx) => recordSent(tx, now, row.mailId));
          count++;
        } catch (err) {
          if (!(err instanceof SendFailed)) throw err;
          const givenUp = await db.tx((tx) => recordFailed(tx, now, row, err.message, err.final));
          onFailure({ mail_id: row.mailId, purpose: row.purpose, attempts: row.attempts + 1, given_up: givenUp, error: err.message });
        }
      }
      return count;
    },
    // Each e-mail was recorded as it went; the runner records the run with the lease.
    run: async (_tx, _now, count) => count,
  };
}

/**
 * Housekeeping, with or without --smtp-url: confirmation links past their day, events nobody composed (the server
 * runs without --smtp-url now), and outbox rows sent or given up a week ago.
 */
export const expireEmail: Job = {
  name: "expire_email",
  everyMs: 60 * MINUTE,
  async run(tx, now) {
    const over = iso(now);
    const lapsed = lte(emailAddresses.pendingExpiresAt, over);
    const pending = (await tx.select({ n: count() }).from(emailAddresses).where(lapsed).get())?.n ?? 0;
    const events = await deleteCounted(tx, emailEvents, lte(emailEvents.createdAt, iso(new Date(now.getTime() - 7 * DAY))));
    const outbox = await expireOutbox(tx, now);
    await tx.update(emailAddresses).set({ pendingAddress: null, pendingHash: null, pendingExpiresAt: null, pendingSetThrough: null }).where(lapsed);
    // Runs after the update in the same batch, so it sees the links it just dropped.
    await tx.delete(emailAddresses).where(sql`${emailAddresses.address} IS NULL AND ${emailAddresses.pendingHash} IS NULL`);
    return pending + events + outbox;
  },
};
