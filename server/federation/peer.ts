// Talking to another svc server: its base URL from its host, every call through the SSRF guard of
// server/auth/safe-fetch.ts (public addresses only, no redirects, size and time caps), and its published keys,
// cached in the database and fetched again on an unknown kid at most once every KEY_REFETCH_MS per host.
import { and, eq, isNull, lt, or } from "drizzle-orm";
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import type { Db, Tx } from "../../db/client.ts";
import { federationPeerKeys } from "../../db/schema/index.ts";
import { FetchRefused, addressProblem, fetchDocument, fetchUrlProblem, publicLookup, type SocketLookup } from "../auth/safe-fetch.ts";
import { HOUR, iso } from "../clock.ts";
import type { FederationConfig, FetchedDocument } from "../config.ts";
import { KEY_CACHE_MS, type PublicJwk } from "./keys.ts";

export const DISCOVERY_PATH = "/.well-known/svc-federation";
/**
 * An unknown kid fetches a peer's keys again at most this often per host: short, so that a key rotated twice in a
 * row (rotate-key --now) is fetched at the sender's next retry, not a minute on; long enough that a forger naming
 * made-up kids cannot keep this server fetching.
 */
export const KEY_REFETCH_MS = 5_000;
export const PEER_TIMEOUT_MS = 5_000;
const MAX_ANSWER_BYTES = 256 * 1024;

const hostname = (host: string) => host.replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1");
const isLoopbackHost = (host: string) => {
  const name = hostname(host);
  return name === "localhost" || (isIP(name) !== 0 && addressProblem(name) === "loopback");
};

/** The peer's base URL: https, or with --federation-allow-loopback plain http to a loopback peer. */
export function peerBaseUrl(host: string, fed: Pick<FederationConfig, "allowLoopback">): string {
  return `${fed.allowLoopback && isLoopbackHost(host) ? "http" : "https"}://${host}`;
}

// Connects to loopback addresses only: what --federation-allow-loopback permits on top of public peers.
const loopbackLookup: SocketLookup = (host, options, callback) => {
  const address = hostname(host) === "localhost" ? "127.0.0.1" : hostname(host);
  if (addressProblem(address) !== "loopback") return callback(new FetchRefused("Not a loopback address."));
  const family = isIP(address);
  return (options as { all?: boolean } | null)?.all ? callback(null, [{ address, family }]) : callback(null, address, family);
};

/**
 * Connections to peers stay open between requests (a member's writes sent to a group's home, the outbox's
 * transactions): a new one costs a TCP and a TLS handshake, two round trips, before each request. Each was made
 * through the lookup that checks its address.
 */
const KEPT = { http: new http.Agent({ keepAlive: true, maxFreeSockets: 4 }), https: new https.Agent({ keepAlive: true, maxFreeSockets: 4 }) };

/** One request to a peer through the SSRF guard. */
export async function peerRequest(
  url: string,
  fed: Pick<FederationConfig, "allowLoopback">,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<FetchedDocument> {
  const u = new URL(url);
  const loopback = u.protocol === "http:";
  if (loopback && !(fed.allowLoopback && isLoopbackHost(u.host))) throw new FetchRefused("Plain HTTP is for loopback peers in tests only.");
  if (!loopback) {
    const problem = fetchUrlProblem(url);
    if (problem) throw new FetchRefused(`The address ${problem}.`);
  }
  return fetchDocument(url, {
    agent: loopback ? KEPT.http : KEPT.https,
    lookup: loopback ? loopbackLookup : publicLookup(),
    timeoutMs: PEER_TIMEOUT_MS,
    maxBytes: MAX_ANSWER_BYTES,
    method: init.method,
    headers: { accept: "application/json", "user-agent": "svc (federation)", ...init.headers },
    body: init.body,
  });
}

/** A peer's discovery document (with its keys), or FetchRefused. */
export async function fetchDiscovery(
  host: string,
  fed: Pick<FederationConfig, "allowLoopback">,
): Promise<{ server: string; keys: PublicJwk[]; features: string[] }> {
  const doc = await peerRequest(`${peerBaseUrl(host, fed)}${DISCOVERY_PATH}`, fed);
  if (doc.status !== 200) throw new FetchRefused(`The server answered ${doc.status}.`);
  let parsed: { server?: unknown; jwks?: { keys?: unknown }; features?: unknown };
  try {
    parsed = JSON.parse(doc.body);
  } catch {
    throw new FetchRefused("The discovery document is not JSON.");
  }
  if (parsed.server !== host || !Array.isArray(parsed.jwks?.keys)) throw new FetchRefused("The discovery document names another server or no keys.");
  const features = Array.isArray(parsed.features) ? parsed.features.filter((f): f is string => typeof f === "string") : [];
  return { server: host, keys: parsed.jwks.keys as PublicJwk[], features };
}

// What each peer's discovery document last said it takes beyond version 1, and when it was read (in this process).
const featuresSeen = new Map<string, { features: ReadonlySet<string>; at: number }>();

/**
 * What a peer takes beyond version 1 (its discovery document's `features`), read again after KEY_CACHE_MS; none
 * while it cannot be read (not kept: the next send asks again).
 */
export async function peerFeatures(host: string, fed: Pick<FederationConfig, "allowLoopback">, now: Date): Promise<ReadonlySet<string>> {
  const seen = featuresSeen.get(host);
  if (seen && now.getTime() - seen.at < KEY_CACHE_MS) return seen.features;
  try {
    const features = new Set((await fetchDiscovery(host, fed)).features);
    featuresSeen.set(host, { features, at: now.getTime() });
    return features;
  } catch {
    return new Set();
  }
}

/**
 * The peer's keys: from the cache while fresh (KEY_CACHE_MS); fetched again when stale, or when `unknownKid` is not
 * among them, at most once every KEY_REFETCH_MS for unknown kids, and only when `mayFetch` allows it (the caller's
 * limit on the fetches one client address may cause). Null when they cannot be had.
 */
export async function peerKeys(
  db: Db,
  fed: FederationConfig,
  host: string,
  now: Date,
  unknownKid?: string,
  mayFetch: () => boolean = () => true,
): Promise<PublicJwk[] | null> {
  const cached = await db.read((tx) => tx.select().from(federationPeerKeys).where(eq(federationPeerKeys.host, host)).get());
  const keys = cached ? (JSON.parse(cached.jwks) as PublicJwk[]) : null;
  const stale = !cached || now.getTime() - Date.parse(cached.fetchedAt) >= KEY_CACHE_MS;
  const missing = unknownKid !== undefined && !keys?.some((k) => k.kid === unknownKid);
  const mayRefetch = !cached?.refetchedAt || now.getTime() - Date.parse(cached.refetchedAt) >= KEY_REFETCH_MS;
  if (!stale && !(missing && mayRefetch)) return keys;
  if (!mayFetch()) return keys;
  try {
    const fresh = (await fetchDiscovery(host, fed)).keys;
    const row = {
      host,
      jwks: JSON.stringify(fresh),
      fetchedAt: iso(now),
      refetchedAt: stale ? (cached?.refetchedAt ?? null) : iso(now),
      verifiedAt: cached?.verifiedAt ?? null,
    };
    await db.tx((tx) => tx.insert(federationPeerKeys).values(row).onConflictDoUpdate({ target: federationPeerKeys.host, set: row }));
    return fresh;
  } catch {
    return keys;
  }
}

/** How often a host's keys are marked as having verified a transaction (their row is kept while this is recent). */
const VERIFIED_MARK_MS = HOUR;

/** Marks the host's cached keys as having verified a transaction now (at most once an hour: it is a write). */
export async function markVerified(tx: Tx, host: string, now: Date): Promise<void> {
  await tx
    .update(federationPeerKeys)
    .set({ verifiedAt: iso(now) })
    .where(
      and(
        eq(federationPeerKeys.host, host),
        or(isNull(federationPeerKeys.verifiedAt), lt(federationPeerKeys.verifiedAt, iso(new Date(now.getTime() - VERIFIED_MARK_MS)))),
      ),
    );
}
