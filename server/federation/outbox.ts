// Sends the outbox: per destination, in order, one transaction in flight, retried with the same txn_id and body
// (RETRY_BASE_MS doubling to RETRY_MAX_MS, or later when a 429 or 503 says so in Retry-After) until the destination
// answers 200; every other answer, a timeout or a failed connection is reported to `onFailure` (in svc serve a log
// line and a counter per peer). After GIVE_UP_MS the senders get a network.undelivered inbox item, and so does the
// sender of an event the answer says was not taken (an envelope past the receiver's quota). Destinations are sent to
// side by side, so one that never answers delays no other. A lease row (job_leases, "federation-send:<host>") keeps
// one sender per destination across processes and instances; the network call is made outside any database
// transaction.
import { and, asc, eq, inArray, isNull, lt, sql } from "drizzle-orm";
import type { Db, Tx } from "../../db/client.ts";
import { federationOutbox, federationTxnsOut, jobLeases } from "../../db/schema/index.ts";
import { HOUR, iso } from "../clock.ts";
import { FetchTimedOut } from "../auth/safe-fetch.ts";
import { takeLease } from "../jobs/leases.ts";
import type { FederationConfig, ServerConfig } from "../config.ts";
import { deliver } from "../domain/inbox.ts";
import { quoted } from "../domain/untrusted.ts";
import { MAX_EVENTS, outgoingEvent, type EventResult } from "./events.ts";
import { signingKey } from "./keys.ts";
import { peerBaseUrl, peerFeatures, peerRequest } from "./peer.ts";
import { selfHost } from "./scope.ts";
import { contentDigest, FED_TAG, signMessage } from "./signatures.ts";
import { MAX_TXN_BYTES } from "./transactions.ts";

export const RETRY_BASE_MS = 30_000;
export const RETRY_MAX_MS = HOUR;
export const GIVE_UP_MS = 72 * HOUR;
export const SEND_LEASE_MS = 30_000;
/** Sent events stay in the outbox this long. */
export const SENT_KEPT_MS = 7 * 24 * HOUR;
/** Real milliseconds between passes over the outbox in svc serve. */
export const FEDERATION_SEND_MS = 1_000;
/** A signature is valid this long after it was made. */
const SIGNATURE_TTL_S = 300;

export interface SendTiming {
  retryBaseMs: number;
  leaseMs: number;
}
const timing = (fed: FederationConfig): SendTiming => ({ retryBaseMs: fed.retryBaseMs ?? RETRY_BASE_MS, leaseMs: fed.leaseMs ?? SEND_LEASE_MS });

/** How a send to a peer failed, as logged and counted: its status (other 4xx and 5xx grouped), or no answer. */
export type SendOutcome = "401" | "429" | "4xx" | "5xx" | "other" | "timeout" | "network";

export interface SendFailure {
  peer: string;
  outcome: SendOutcome;
  /** The HTTP status; 0 when there was no answer. */
  status: number;
  /** Failed attempts of this transaction so far, this one included. */
  attempts: number;
  /** When it is tried again; null when it was given up. */
  nextTryAt: string | null;
}

export interface Answer {
  /** The HTTP status; 0 when there was no answer. */
  status: number;
  body: string;
  retryAfter: string | null;
  /** Why there was no answer: the deadline passed, or the connection failed or was refused. */
  noAnswer?: "timeout" | "network";
}

/** The outcome of an answer that is not 200; null for 200. */
export function sendOutcome(a: Pick<Answer, "status" | "noAnswer">): SendOutcome | null {
  if (a.status === 200) return null;
  if (a.status === 0) return a.noAnswer ?? "network";
  if (a.status === 401 || a.status === 429) return String(a.status) as "401" | "429";
  if (a.status >= 500) return "5xx";
  return a.status >= 400 ? "4xx" : "other";
}

/** A Retry-After field (delay-seconds or an HTTP-date) as milliseconds after `at`; null when absent or unreadable. */
export function retryAfterMs(field: string | null | undefined, at: Date): number | null {
  const v = field?.trim();
  if (!v) return null;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const when = Date.parse(v);
  return Number.isNaN(when) ? null : Math.max(0, when - at.getTime());
}

/**
 * When a failed transaction is tried again: after the doubling wait, or later when a 429 or 503 asked for that in
 * Retry-After (counted from the answer), but never more than RETRY_MAX_MS from it: a peer cannot park our outbox.
 */
export function nextTry(retryBaseMs: number, attempts: number, sentAt: Date, answer: Pick<Answer, "status" | "retryAfter">, answeredAt: Date): Date {
  const backoff = Math.min(retryBaseMs * 2 ** attempts, RETRY_MAX_MS);
  const asked = answer.status === 429 || answer.status === 503 ? retryAfterMs(answer.retryAfter, answeredAt) : null;
  return new Date(Math.max(sentAt.getTime() + backoff, answeredAt.getTime() + Math.min(asked ?? 0, RETRY_MAX_MS)));
}

/** Signs and sends one transaction; resolves with the HTTP status (0: no answer), the answer's body and Retry-After. */
export function sendTransaction(db: Db, config: ServerConfig, destination: string, txnId: string, body: string, now: Date): Promise<Answer> {
  return signedRequest(db, config, destination, "PUT", `/fed/v1/txn/${encodeURIComponent(txnId)}`, body, now);
}

/** A request to another server signed as a transaction is (RFC 9421, the body's Content-Digest); never throws. */
export async function signedRequest(
  db: Db,
  config: ServerConfig,
  destination: string,
  method: "PUT" | "POST",
  path: string,
  body: string,
  now: Date,
): Promise<Answer> {
  const fed = config.federation!;
  const url = `${peerBaseUrl(destination, fed)}${path}`;
  const headers = new Headers({ "content-type": "application/json", "content-digest": await contentDigest(body) });
  const { kid, key } = await db.read((tx) => signingKey(tx, now));
  const created = Math.floor(now.getTime() / 1000);
  const sig = await signMessage({ method, url, headers }, key, {
    created,
    expires: created + SIGNATURE_TTL_S,
    keyid: kid,
    alg: "ed25519",
    tag: FED_TAG,
  });
  headers.set("signature-input", sig.signatureInput);
  headers.set("signature", sig.signature);
  try {
    const res = await peerRequest(url, fed, { method, headers: Object.fromEntries(headers), body });
    return { status: res.status, body: res.body, retryAfter: res.retryAfter ?? null };
  } catch (err) {
    return { status: 0, body: "", retryAfter: null, noAnswer: err instanceof FetchTimedOut ? "timeout" : "network" };
  }
}

/** The ids of the events a 200 answer did not take ("refused", "rejected", or left out); the other server is untrusted. */
function notTaken(answer: string, sentIds: string[]): Set<string> {
  let results: unknown;
  try {
    results = (JSON.parse(answer) as { results?: unknown }).results;
  } catch {
    results = undefined;
  }
  const ok = new Set(
    Array.isArray(results)
      ? results.flatMap((r) => (r && typeof r === "object" && (r as EventResult).result === "ok" ? [String((r as EventResult).id)] : []))
      : [],
  );
  return new Set(sentIds.filter((id) => !ok.has(id)));
}

/** Destinations sent to at once by one process; at most half of them may be ones whose last attempt failed. */
export const MAX_PARALLEL_SENDS = 32;
const MAX_PARALLEL_FAILING = MAX_PARALLEL_SENDS / 2;

/** The sends this process has in flight, by destination: a slow destination holds only its own. */
export type InFlight = Map<string, { failing: boolean; done: Promise<boolean> }>;

/**
 * Starts a send to every destination that is due and not already in flight here, each on its own, so that a
 * destination that never answers (up to the peer timeout, 5 s) delays no other: at most MAX_PARALLEL_SENDS at once,
 * destinations that have not failed first, and those that failed last time never more than half of them. Returns the
 * sends started; each resolves with whether its transaction was answered.
 */
export async function startSends(
  db: Db,
  config: ServerConfig,
  holder: string,
  inFlight: InFlight,
  onFailure: (f: SendFailure) => void = () => {},
): Promise<Promise<boolean>[]> {
  const fed = config.federation;
  if (!fed || fed.mode === "off") return [];
  const now = config.clock.now();
  const { fresh, failing } = await db.read(async (tx) => {
    const pending = await tx.selectDistinct({ d: federationOutbox.destination }).from(federationOutbox).where(isNull(federationOutbox.sentAt));
    const open = await tx.select().from(federationTxnsOut);
    const tried = new Map(open.map((t) => [t.destination, t]));
    const due = [...new Set([...pending.map((r) => r.d), ...open.map((t) => t.destination)])].filter(
      (d) => !inFlight.has(d) && Date.parse(tried.get(d)?.nextTryAt ?? iso(now)) <= now.getTime(),
    );
    const failed = (d: string) => (tried.get(d)?.attempts ?? 0) > 0;
    return { fresh: due.filter((d) => !failed(d)), failing: due.filter(failed) };
  });
  const started: Promise<boolean>[] = [];
  const start = (destination: string, isFailing: boolean) => {
    const done = sendTo(db, config, destination, holder, now, onFailure).finally(() => inFlight.delete(destination));
    inFlight.set(destination, { failing: isFailing, done });
    started.push(done);
  };
  for (const d of fresh) if (inFlight.size < MAX_PARALLEL_SENDS) start(d, false);
  for (const d of failing) {
    const failingNow = [...inFlight.values()].filter((f) => f.failing).length;
    if (inFlight.size < MAX_PARALLEL_SENDS && failingNow < MAX_PARALLEL_FAILING) start(d, true);
  }
  return started;
}

/** One pass: a send to every destination due whose lease this process takes, all at once. Returns transactions answered. */
export async function sendOutbox(
  db: Db,
  config: ServerConfig,
  holder: string,
  inFlight: InFlight = new Map(),
  onFailure?: (f: SendFailure) => void,
): Promise<number> {
  const answered = await Promise.all(await startSends(db, config, holder, inFlight, onFailure));
  return answered.filter(Boolean).length;
}

async function sendTo(db: Db, config: ServerConfig, destination: string, holder: string, now: Date, onFailure: (f: SendFailure) => void): Promise<boolean> {
  const fed = config.federation!;
  const { retryBaseMs, leaseMs } = timing(fed);
  const lease = `federation-send:${destination}`;
  if (!(await db.tx((tx) => takeLease(tx, lease, holder, now, leaseMs)))) return false;
  // Read before the transaction is made (no network inside a write call): which fields the peer takes.
  const features = await peerFeatures(destination, fed, now);
  const release = (tx: Parameters<Parameters<Db["tx"]>[0]>[0]) =>
    tx
      .update(jobLeases)
      .set({ leaseUntil: iso(now), holder: null, lastRunAt: iso(now) })
      .where(and(eq(jobLeases.name, lease), eq(jobLeases.holder, holder)));
  const txn = await db.tx(async (tx) => {
    const open = await tx.select().from(federationTxnsOut).where(eq(federationTxnsOut.destination, destination)).get();
    if (open) return open;
    // The next transaction: the oldest unsent events, at most MAX_EVENTS and within the size limit, in order.
    const rows = await tx
      .select()
      .from(federationOutbox)
      .where(and(eq(federationOutbox.destination, destination), isNull(federationOutbox.sentAt)))
      .orderBy(asc(federationOutbox.seq))
      .limit(MAX_EVENTS);
    const self = selfHost(config);
    const events: Record<string, unknown>[] = [];
    let lastSeq = 0;
    let size = 200;
    for (const r of rows) {
      const event = await outgoingEvent({ tx, now }, r.event, self, features);
      const bytes = event ? Buffer.byteLength(JSON.stringify(event)) + 1 : 0;
      if (events.length && size + bytes > MAX_TXN_BYTES) break;
      size += bytes;
      lastSeq = r.seq;
      if (event) events.push(event);
    }
    if (!lastSeq) return null;
    const row = {
      destination,
      txnId: crypto.randomUUID(),
      body: JSON.stringify({ origin: self, destination, events }),
      lastSeq,
      firstTriedAt: iso(now),
      attempts: 0,
      nextTryAt: iso(now),
    };
    await tx.insert(federationTxnsOut).values(row);
    return row;
  });
  if (!txn || Date.parse(txn.nextTryAt) > now.getTime()) {
    await db.tx(release);
    return false;
  }
  const reply = await sendTransaction(db, config, destination, txn.txnId, txn.body, now);
  const { status, body: answer } = reply;
  const answeredAt = config.clock.now();
  const failure = await db.tx(async (tx): Promise<SendFailure | null> => {
    const done = status === 200;
    const givenUp = !done && now.getTime() - Date.parse(txn.firstTriedAt) >= GIVE_UP_MS;
    let nextTryAt: string | null = null;
    if (done || givenUp) {
      const sentIds = (JSON.parse(txn.body) as { events: { id: string }[] }).events.map((e) => e.id);
      // What the other server did not take is not delivered, whatever its status said: its sender is told.
      const refused = done ? notTaken(answer, sentIds) : new Set<string>();
      // This instance holds the destination's lease: nothing else changes its outbox meanwhile.
      const sent = and(eq(federationOutbox.destination, destination), isNull(federationOutbox.sentAt), sql`${federationOutbox.seq} <= ${txn.lastSeq}`);
      const events = await tx.select({ eventId: federationOutbox.eventId, event: federationOutbox.event }).from(federationOutbox).where(sent);
      await tx
        .update(federationOutbox)
        .set({ sentAt: iso(now), txnId: txn.txnId, undelivered: givenUp })
        .where(sent);
      if (refused.size) {
        await tx
          .update(federationOutbox)
          .set({ undelivered: true })
          .where(inArray(federationOutbox.eventId, [...refused]));
      }
      await tx.delete(federationTxnsOut).where(eq(federationTxnsOut.destination, destination));
      // Sent events are kept a while for the operator to look at, then dropped.
      await tx
        .delete(federationOutbox)
        .where(and(eq(federationOutbox.destination, destination), lt(federationOutbox.sentAt, iso(new Date(now.getTime() - SENT_KEPT_MS)))));
      if (givenUp) {
        for (const agentId of new Set(events.map((e) => String(e.event.from)))) {
          await deliver(tx, now, {
            to: agentId,
            type: "network.undelivered",
            from: null,
            summaryMd: `What you sent to the server ${destination} could not be delivered for 72 hours and was given up. Tell your human; try again later.`,
            payload: { reason: "given_up" },
            refs: { host: destination },
          });
        }
      }
      for (const e of events.filter((x) => refused.has(x.eventId))) await tellRefused(tx, now, destination, e.event);
    } else {
      nextTryAt = iso(nextTry(retryBaseMs, txn.attempts, now, reply, answeredAt));
      await tx
        .update(federationTxnsOut)
        .set({ attempts: txn.attempts + 1, nextTryAt })
        .where(eq(federationTxnsOut.destination, destination));
    }
    await release(tx);
    return done ? null : { peer: destination, outcome: sendOutcome(reply)!, status, attempts: txn.attempts + 1, nextTryAt };
  });
  // Told once the transaction committed, so that a failure is logged and counted once.
  if (failure) onFailure(failure);
  return status === 200;
}

/** Tells the agent that sent `event` that the server `destination` refused it (an envelope past its quota, ...). */
async function tellRefused(tx: Tx, now: Date, destination: string, event: Record<string, unknown>): Promise<void> {
  const envelope = event.type === "envelope" && typeof event.envelope_id === "string";
  const what = envelope ? `Your envelope ${quoted(String(event.subject ?? ""))}` : `What you sent (${String(event.type)})`;
  await deliver(tx, now, {
    to: String(event.from),
    type: "network.undelivered",
    from: null,
    summaryMd: `${what} was refused by the server ${destination} and not delivered (for an envelope: past that server's daily limit for you). Tell your human; try again later.`,
    payload: { reason: "refused", event_type: String(event.type) },
    refs: { host: destination, ...(envelope ? { envelope_id: String(event.envelope_id) } : {}) },
  });
}

/** Starts the due sends every intervalMs until stopped; a slow destination holds up no other, nor the next pass. */
export function startSender(db: Db, config: ServerConfig, onError: (err: unknown) => void, onFailure?: (f: SendFailure) => void): { stop(): Promise<void> } {
  const holder = crypto.randomUUID();
  const inFlight: InFlight = new Map();
  // Only the listing is one at a time; the sends it starts run on, each on its own.
  let listing: Promise<unknown> | null = null;
  const tick = () => {
    if (listing) return;
    listing = startSends(db, config, holder, inFlight, onFailure)
      .then((sends) => {
        for (const s of sends) s.catch(onError);
      })
      .catch(onError)
      .finally(() => {
        listing = null;
      });
  };
  const timer = setInterval(tick, config.federation?.sendIntervalMs ?? FEDERATION_SEND_MS);
  tick();
  return {
    async stop() {
      clearInterval(timer);
      await listing;
      await Promise.allSettled([...inFlight.values()].map((f) => f.done));
    },
  };
}
