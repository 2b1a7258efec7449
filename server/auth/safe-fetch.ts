// Fetching a small document from an address a stranger chose (a client ID metadata document) without letting them
// aim this server at itself or its network (SSRF): https only, no user name or password in the URL, every address
// the host resolves to must be public, checked inside the socket's own lookup so the address checked is the one
// connected to (no DNS rebinding between check and connect), no redirects followed, a deadline and a size cap.
import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import type { FetchedDocument } from "../config.ts";
import { addressProblem, fetchUrlProblem } from "./public-addresses.ts";

export { addressProblem, fetchUrlProblem };

export const FETCH_TIMEOUT_MS = 5_000;
export const MAX_DOCUMENT_BYTES = 64 * 1024;

/** Why a fetch was not made or not finished; the message is safe to show (it repeats nothing of the URL or the answer). */
export class FetchRefused extends Error {}
/** The deadline passed with no whole answer (federation counts these apart from refused connections). */
export class FetchTimedOut extends FetchRefused {}

export interface ResolvedAddress {
  address: string;
  family: number;
}
export type Resolve = (host: string) => Promise<ResolvedAddress[]>;
/** The socket lookup hook of node:https (https.request's `lookup` option). */
export type SocketLookup = (host: string, options: unknown, callback: (...args: any[]) => void) => void;

const systemResolve: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

/**
 * The one refusal of a name, whether it does not resolve or resolves to an address that is not public: saying which,
 * or what kind of address, would let anyone map this server's own network and DNS (which internal names exist, and
 * whether they are loopback, private or link-local) through the refusals.
 */
export const NAME_REFUSED = "The host does not resolve to public addresses only.";

/** Every address `host` resolves to, or FetchRefused (NAME_REFUSED) unless all of them are public. */
export async function publicAddresses(host: string, resolve: Resolve = systemResolve): Promise<ResolvedAddress[]> {
  let found: ResolvedAddress[];
  try {
    found = await resolve(host);
  } catch {
    throw new FetchRefused(NAME_REFUSED);
  }
  // One bad address refuses the host: the connection could land on any of them.
  if (!found.length || found.some((a) => addressProblem(a.address) !== null)) throw new FetchRefused(NAME_REFUSED);
  return found;
}

/** A socket lookup that connects only to public addresses (the guard at connection time). */
export function publicLookup(resolve: Resolve = systemResolve): SocketLookup {
  return (host, options, callback) => {
    publicAddresses(host, resolve).then(
      (found) => ((options as { all?: boolean } | null)?.all ? callback(null, found) : callback(null, found[0]!.address, found[0]!.family)),
      (err) => callback(err),
    );
  };
}

export interface TransportOptions {
  lookup: SocketLookup;
  timeoutMs?: number;
  maxBytes?: number;
  /** A certificate authority to trust besides the system's (only a test's self-signed certificate). */
  ca?: string;
  /** Another request than a GET of JSON (federation's signed PUT): its method, header fields and body. */
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /**
   * Connections kept open between requests (federation's peers; default: a new connection each time). A kept one was
   * checked by `lookup` when it was made.
   */
  agent?: http.Agent;
}

/**
 * One GET (or opts.method) over https (or plain http, which only callers that checked the URL allow) through the
 * given lookup: a redirect is returned as it is (never followed), the body stops at maxBytes, and everything ends
 * at the deadline. A kept connection the other side closed as a GET or PUT went out (a peer's transaction, which
 * carries its id) is not an answer: the request is sent once more on a new one. A POST is not: it may have been
 * acted on, and its caller retries it with its idempotency key.
 */
export function fetchDocument(url: string, opts: TransportOptions): Promise<FetchedDocument> {
  return fetchOnce(url, opts).catch((err: unknown) => {
    if (!(err instanceof KeptConnectionClosed) || !["GET", "PUT"].includes(opts.method ?? "GET")) throw err;
    return fetchOnce(url, { ...opts, agent: undefined });
  });
}

/** A kept connection that failed before any answer came on it. */
class KeptConnectionClosed extends FetchRefused {}

function fetchOnce(url: string, opts: TransportOptions): Promise<FetchedDocument> {
  const u = new URL(url);
  const timeoutMs = opts.timeoutMs ?? FETCH_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? MAX_DOCUMENT_BYTES;
  return new Promise((resolve, reject) => {
    let answered = false;
    const fail = (err: unknown) => {
      clearTimeout(timer);
      req.destroy();
      const code = (err as { code?: unknown } | null)?.code;
      if (req.reusedSocket && !answered && !(err instanceof FetchRefused)) return reject(new KeptConnectionClosed("The kept connection closed."));
      reject(
        err instanceof FetchRefused
          ? err
          : new FetchRefused(`The connection failed${typeof code === "string" && /^[A-Z0-9_]+$/.test(code) ? ` (${code})` : ""}.`),
      );
    };
    const plain = u.protocol === "http:";
    const req = (plain ? http : https).request(
      {
        host: u.hostname.replace(/^\[(.*)\]$/, "$1"),
        port: u.port || (plain ? 80 : 443),
        path: `${u.pathname}${u.search}`,
        method: opts.method ?? "GET",
        headers: opts.headers ?? { accept: "application/json", "user-agent": "svc (client metadata fetch)" },
        lookup: opts.lookup as never,
        ca: opts.ca,
        agent: opts.agent ?? false,
      },
      (res) => {
        answered = true;
        if (Number(res.headers["content-length"]) > maxBytes) return fail(new FetchRefused(`The answer is larger than ${maxBytes} bytes.`));
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) fail(new FetchRefused(`The answer is larger than ${maxBytes} bytes.`));
          else chunks.push(chunk);
        });
        res.on("error", fail);
        res.on("end", () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers["content-type"] ?? null,
            cacheControl: res.headers["cache-control"] ?? null,
            retryAfter: res.headers["retry-after"] ?? null,
            body: Buffer.concat(chunks).toString("utf8"),
          });
        });
      },
    );
    const timer = setTimeout(() => fail(new FetchTimedOut(`No answer within ${timeoutMs} ms.`)), timeoutMs);
    req.on("error", fail);
    req.end(opts.body);
  });
}

/** The production fetch: the URL checked, then fetched only from public addresses. */
export async function guardedFetch(url: string, resolve: Resolve = systemResolve): Promise<FetchedDocument> {
  const problem = fetchUrlProblem(url);
  if (problem) throw new FetchRefused(`The address ${problem}.`);
  return fetchDocument(url, { lookup: publicLookup(resolve) });
}
