// Sends the outbox: per destination, in order, one transaction in flight, retried with the same txn_id and body
// (RETRY_BASE_MS doubling to RETRY_MAX_MS) until the destination answers 200; after GIVE_UP_MS the senders get a
// network.undelivered inbox item. A lease row (job_leases, "federation-send:<host>") keeps one sender per
// destination across processes and instances; the network call is made outside any database transaction.
import { and, asc, eq, isNull, lt, lte, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { federationOutbox, federationTxnsOut, jobLeases } from "../../db/schema/index.ts";
import { HOUR, iso, later } from "../clock.ts";
import type { FederationConfig, ServerConfig } from "../config.ts";
import { deliver } from "../domain/inbox.ts";
import { MAX_EVENTS, senderAddress } from "./events.ts";
import { signingKey } from "./keys.ts";
import { peerBaseUrl, peerRequest } from "./peer.ts";
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

/** Signs and sends one transaction; resolves with the HTTP status (0: no answer). */
export async function sendTransaction(db: Db, config: ServerConfig, destination: string, txnId: string, body: string, now: Date): Promise<number> {
  const fed = config.federation!;
  const url = `${peerBaseUrl(destination, fed)}/fed/v1/txn/${encodeURIComponent(txnId)}`;
  const headers = new Headers({ "content-type": "application/json", "content-digest": await contentDigest(body) });
  const { kid, key } = await db.read((tx) => signingKey(tx, now));
  const created = Math.floor(now.getTime() / 1000);
  const sig = await signMessage({ method: "PUT", url, headers }, key, {
    created,
    expires: created + SIGNATURE_TTL_S,
    keyid: kid,
    alg: "ed25519",
    tag: FED_TAG,
  });
  headers.set("signature-input", sig.signatureInput);
  headers.set("signature", sig.signature);
  try {
    const res = await peerRequest(url, fed, { method: "PUT", headers: Object.fromEntries(headers), body });
    return res.status;
  } catch {
    return 0;
  }
}

/** One pass: every destination with something to send whose lease this process takes. Returns transactions answered. */
export async function sendOutbox(db: Db, config: ServerConfig, holder: string): Promise<number> {
  const fed = config.federation;
  if (!fed || fed.mode === "off") return 0;
  const now = config.clock.now();
  const destinations = await db.read(async (tx) => {
    const pending = await tx.selectDistinct({ d: federationOutbox.destination }).from(federationOutbox).where(isNull(federationOutbox.sentAt));
    const inFlight = await tx.select({ d: federationTxnsOut.destination }).from(federationTxnsOut);
    return [...new Set([...pending, ...inFlight].map((r) => r.d))];
  });
  let sent = 0;
  for (const destination of destinations) if (await sendTo(db, config, destination, holder, now)) sent++;
  return sent;
}

async function takeLease(db: Db, name: string, holder: string, now: Date, leaseMs: number): Promise<boolean> {
  return db.tx(async (tx) => {
    await tx.insert(jobLeases).values({ name, leaseUntil: "", nextRunAt: "" }).onConflictDoNothing();
    const taken = await tx
      .update(jobLeases)
      .set({ holder, leaseUntil: later(now, leaseMs) })
      .where(and(eq(jobLeases.name, name), lte(jobLeases.leaseUntil, iso(now))));
    return taken.rowsAffected === 1;
  });
}

async function sendTo(db: Db, config: ServerConfig, destination: string, holder: string, now: Date): Promise<boolean> {
  const fed = config.federation!;
  const { retryBaseMs, leaseMs } = timing(fed);
  const lease = `federation-send:${destination}`;
  if (!(await takeLease(db, lease, holder, now, leaseMs))) return false;
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
      const from = await senderAddress({ tx, now }, String(r.event.from), self);
      const event = from ? { ...r.event, ...from } : null;
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
  const status = await sendTransaction(db, config, destination, txn.txnId, txn.body, now);
  await db.tx(async (tx) => {
    const done = status === 200;
    const givenUp = !done && now.getTime() - Date.parse(txn.firstTriedAt) >= GIVE_UP_MS;
    if (done || givenUp) {
      const events = await tx
        .update(federationOutbox)
        .set({ sentAt: iso(now), txnId: txn.txnId })
        .where(and(eq(federationOutbox.destination, destination), isNull(federationOutbox.sentAt), sql`${federationOutbox.seq} <= ${txn.lastSeq}`))
        .returning({ event: federationOutbox.event });
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
            refs: { host: destination },
          });
        }
      }
    } else {
      const wait = Math.min(retryBaseMs * 2 ** txn.attempts, RETRY_MAX_MS);
      await tx
        .update(federationTxnsOut)
        .set({ attempts: txn.attempts + 1, nextTryAt: later(now, wait) })
        .where(eq(federationTxnsOut.destination, destination));
    }
    await release(tx);
  });
  return status === 200;
}

/** Runs sendOutbox every intervalMs until stopped; passes never overlap. */
export function startSender(
  db: Db,
  config: ServerConfig,
  onError: (err: unknown) => void,
  /** Whether this instance may write now: among instances with one writer, the writer alone sends. */
  writesHere: () => boolean = () => true,
): { stop(): Promise<void> } {
  const holder = crypto.randomUUID();
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    if (!writesHere()) return;
    running = running.then(() => sendOutbox(db, config, holder)).catch(onError);
  };
  const timer = setInterval(tick, config.federation?.sendIntervalMs ?? FEDERATION_SEND_MS);
  tick();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
