// PUT /fed/v1/txn/{txn_id}: a transaction of events from another server. Checked in this order: the client address
// is within its limit (in memory: nothing read, fetched or written before); the destination is this server; the
// origin is allowed and not blocked; the signature names what it must, and a Content-Digest is sent; the key is known
// (an unknown kid fetches the origin's keys again, at most once every few seconds, and within the client address's
// budget of key fetches); `created` is within 5 minutes; the signature, then the Content-Digest (sha-256 or sha-512; a
// refusal for it carries Want-Content-Digest); only then the origin's own limits, which a request that did not prove
// it comes from the origin must not spend; then each event. The answer is stored per (origin, txn_id): a replay gets it.
import { and, eq, lt } from "drizzle-orm";
import { federationEventsSeen, federationTxnsIn } from "../../db/schema/index.ts";
import { DAY, iso } from "../clock.ts";
import type { Services } from "../services.ts";
import { verifyingKey } from "./keys.ts";
import { firstSeen, GREYLIST_MS, HOST_LIMITS, hostBlocked, retryAfterSeconds, takeAddressBudget, takeHostBudget } from "./limits.ts";
import { markVerified, peerKeys } from "./peer.ts";
import { hostAllowed, selfHost } from "./scope.ts";
import {
  componentsProblem,
  contentDigest,
  contentDigestProblem,
  FED_COMPONENTS,
  FED_TAG,
  parseSignature,
  SignatureError,
  verifyMessage,
  WANT_CONTENT_DIGEST,
} from "./signatures.ts";
import { receiveEvent, Transaction, type EventResult } from "./events.ts";

export const MAX_TXN_BYTES = 1024 * 1024;
export const CLOCK_SKEW_S = 5 * 60;
/** Event ids are remembered this long: a duplicate within it is dropped. */
export const SEEN_EVENTS_MS = 30 * DAY;

const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store", ...headers } });
const refuse = (status: number, error: string, headers: Record<string, string> = {}) => answer(status, { error }, headers);

export async function receiveTransaction(svc: Services, req: Request, txnId: string, clientAddress: string): Promise<Response> {
  const checked = await verifySigned(svc, req, `/fed/v1/txn/${encodeURIComponent(txnId)}`, clientAddress, Transaction);
  if (checked instanceof Response) return checked;
  const { body, origin, digest, now, self } = checked;
  const fed = svc.config.federation!;
  // A transaction answered before gets the same answer (the same id with another body is refused).
  const stored = await svc.db.read((tx) =>
    tx
      .select()
      .from(federationTxnsIn)
      .where(and(eq(federationTxnsIn.origin, origin), eq(federationTxnsIn.txnId, txnId)))
      .get(),
  );
  if (stored) return stored.bodyDigest === digest ? answer(200, JSON.parse(stored.answer)) : refuse(409, "this txn_id was used for another body");
  const greylisted =
    fed.mode === "open" && !fed.peers.includes(origin) && now.getTime() - (await svc.db.tx((tx) => firstSeen(tx, origin, now))).getTime() < GREYLIST_MS;
  const results: EventResult[] = [];
  for (const raw of body.events) {
    results.push(await receiveEvent({ db: svc.db, now, origin, selfHost: self, greylisted, limits: fed.limits, quotas: svc.config.quotas }, raw));
  }
  const result = { txn_id: txnId, results };
  await svc.db.tx(async (tx) => {
    await markVerified(tx, origin, now);
    await tx
      .insert(federationTxnsIn)
      .values({ origin, txnId, bodyDigest: digest, answer: JSON.stringify(result), receivedAt: iso(now) })
      .onConflictDoNothing();
    await tx.delete(federationEventsSeen).where(lt(federationEventsSeen.receivedAt, iso(new Date(now.getTime() - SEEN_EVENTS_MS))));
    await tx.delete(federationTxnsIn).where(lt(federationTxnsIn.receivedAt, iso(new Date(now.getTime() - SEEN_EVENTS_MS))));
  });
  return answer(200, result);
}

/** A signed request from another server, checked: its parsed body, the origin, the body's sha-256 and the time. */
export interface Verified<T> {
  body: T;
  origin: string;
  digest: string;
  now: Date;
  self: string;
}

/**
 * The checks of every signed request from another server, in the order above, up to and with the origin's own
 * limits (a transaction and its events); the refusal to answer when one fails.
 */
export async function verifySigned<T extends { origin: string; destination: string; events?: unknown[] }>(
  svc: Services,
  req: Request,
  path: string,
  clientAddress: string,
  schema: { parse(v: unknown): T },
  /**
   * Where the origin's budget is counted: in the database (a transaction and its events), or, for a member's write
   * answered at once (home-calls.ts), in the server's in-memory limiter, shared by its processes: a write fewer per call.
   */
  hostBudget: "db" | "memory" = "db",
): Promise<Verified<T> | Response> {
  const fed = svc.config.federation;
  if (!fed || fed.mode === "off") return refuse(404, "federation is off");
  // 0. The client address's budget, before anything is read, fetched or written: any origin can be named in a body.
  const perAddress = takeAddressBudget(svc.limiter, clientAddress, "txns_per_address", fed.limits);
  if (!perAddress.allowed) return refuse(429, "too many transactions from this address", { "Retry-After": String(perAddress.resetSeconds) });
  const now = svc.config.clock.now();
  if (Number(req.headers.get("content-length") ?? "0") > MAX_TXN_BYTES) return refuse(413, "larger than 1 MiB");
  const bytes = new Uint8Array(await req.arrayBuffer());
  if (bytes.byteLength > MAX_TXN_BYTES) return refuse(413, "larger than 1 MiB");
  let body: T;
  try {
    body = schema.parse(JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  } catch {
    return refuse(400, "not a transaction");
  }
  const self = selfHost(svc.config);
  const origin = body.origin.toLowerCase();
  // 1. destination, 2. origin: before any cryptography.
  if (body.destination.toLowerCase() !== self) return refuse(403, "wrong destination");
  if (!hostAllowed(fed, origin) || (await svc.db.read((tx) => hostBlocked(tx, origin)))) return refuse(403, "origin not allowed");
  // 3. the signature's form, 4. key, 5. created, 6. signature and digest.
  let parsed: ReturnType<typeof parseSignature>;
  try {
    parsed = parseSignature(req.headers.get("signature-input"), req.headers.get("signature"));
  } catch (err) {
    return refuse(401, err instanceof SignatureError ? err.message : "bad signature");
  }
  const [keyid, created, expires, alg, tag] = ["keyid", "created", "expires", "alg", "tag"].map((p) => parsed.params.get(p));
  if (typeof keyid !== "string" || alg !== "ed25519" || tag !== FED_TAG || FED_COMPONENTS.some((c) => !parsed.components.includes(c))) {
    return refuse(401, "the signature must cover @method, @target-uri, content-digest and content-type with keyid, alg and tag");
  }
  // RFC 9530 section 4: a refusal for the digest says which algorithms this server checks.
  const wantDigest = { "Want-Content-Digest": WANT_CONTENT_DIGEST };
  if (!req.headers.has("content-digest")) return refuse(401, "Content-Digest is required", wantDigest);
  const url = `${svc.config.baseUrl}${path}`;
  const message = { method: req.method, url, headers: req.headers };
  const uncheckable = componentsProblem(message, parsed.components);
  if (uncheckable) return refuse(401, uncheckable);
  let fetchRefusedFor = 0;
  const mayFetch = () => {
    const d = takeAddressBudget(svc.limiter, clientAddress, "key_fetches_per_address", fed.limits);
    if (!d.allowed) fetchRefusedFor = d.resetSeconds;
    return d.allowed;
  };
  const keys = await peerKeys(svc.db, fed, origin, now, keyid, mayFetch);
  const jwk = keys?.find((k) => k.kid === keyid);
  const key = jwk && (await verifyingKey(jwk, now));
  if (!key && fetchRefusedFor) return refuse(429, "too many key fetches from this address", { "Retry-After": String(fetchRefusedFor) });
  if (!key) return refuse(401, "unknown key");
  const seconds = now.getTime() / 1000;
  if (
    typeof created !== "number" ||
    !Number.isInteger(created) ||
    Math.abs(seconds - created) > CLOCK_SKEW_S ||
    (expires !== undefined && (typeof expires !== "number" || !Number.isInteger(expires) || expires < seconds))
  ) {
    return refuse(401, "signature too old or expired");
  }
  if (!(await verifyMessage(message, parsed, key))) return refuse(401, "the signature does not match");
  const digestProblem = await contentDigestProblem(req.headers.get("content-digest"), bytes);
  if (digestProblem) return refuse(401, digestProblem, wantDigest);
  // The body's own sha-256, whatever the sender's field held: a replay is recognised by it.
  const digest = await contentDigest(bytes);
  // 7. The origin proved itself: now its own limits.
  if (hostBudget === "memory") {
    const d = svc.limiter.take(`federation:txns:host:${origin}`, "federation_txns", fed.limits?.txns ?? HOST_LIMITS.txns.limit);
    if (!d.allowed) return refuse(429, "too many transactions", { "Retry-After": String(d.resetSeconds) });
    return { body, origin, digest, now, self };
  }
  const withinLimits = await svc.db.tx(
    async (tx) =>
      (await takeHostBudget(tx, origin, "txns", now, 1, fed.limits)) &&
      (await takeHostBudget(tx, origin, "events", now, Math.max(1, body.events?.length ?? 1), fed.limits)),
  );
  if (!withinLimits) return refuse(429, "too many transactions", { "Retry-After": String(retryAfterSeconds("txns", now)) });
  return { body, origin, digest, now, self };
}
