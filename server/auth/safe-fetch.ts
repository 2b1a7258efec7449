// Fetching a small document from an address a stranger chose (a client ID metadata document) without letting them
// aim this server at itself or its network (SSRF): https only, no user name or password in the URL, every address
// the host resolves to must be public, checked inside the socket's own lookup so the address checked is the one
// connected to (no DNS rebinding between check and connect), no redirects followed, a deadline and a size cap.
import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import type { FetchedDocument } from "../config.ts";

export const FETCH_TIMEOUT_MS = 5_000;
export const MAX_DOCUMENT_BYTES = 64 * 1024;

/** Why a fetch was not made or not finished; the message is safe to show (it repeats nothing of the URL or the answer). */
export class FetchRefused extends Error {}

export interface ResolvedAddress {
  address: string;
  family: number;
}
export type Resolve = (host: string) => Promise<ResolvedAddress[]>;
/** The socket lookup hook of node:https (https.request's `lookup` option). */
export type SocketLookup = (host: string, options: unknown, callback: (...args: any[]) => void) => void;

// Ranges no document may be fetched from: not the public Internet (RFC 6890 special-purpose registries).
const V4_REFUSED: [string, number, string][] = [
  ["0.0.0.0", 8, "this-network"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "shared (carrier-grade NAT)"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];
const V6_REFUSED: [string, number, string][] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["100::", 64, "discard"],
  ["2001::", 23, "IETF protocol (Teredo and others)"],
  ["2001:db8::", 32, "documentation"],
  ["3fff::", 20, "documentation"],
  ["fc00::", 7, "unique local (private)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];
// IPv6 ranges that carry an IPv4 address: they are judged by that address. [prefix, length, bit offset of the IPv4]
const V6_EMBEDDING_V4: [string, number, number][] = [
  ["::ffff:0:0", 96, 0],
  ["64:ff9b::", 96, 0],
  ["2002::", 16, 80],
];

function parseV4(text: string): number | null {
  if (isIP(text) !== 4) return null;
  return text.split(".").reduce((acc, part) => ((acc << 8) | Number(part)) >>> 0, 0);
}

function parseV6(text: string): bigint | null {
  if (text.includes("%") || isIP(text) !== 6) return null;
  let s = text.toLowerCase();
  const dotted = s.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const v4 = parseV4(dotted[2]!);
    if (v4 === null) return null;
    s = `${dotted[1]}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split("::");
  const groups = (part: string) => (part ? part.split(":") : []);
  const left = groups(halves[0]!);
  const right = halves.length > 1 ? groups(halves[1]!) : [];
  const all = halves.length > 1 ? [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right] : left;
  return all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

const inV4 = (ip: number, base: string, len: number) => {
  const mask = len === 0 ? 0 : (~0 << (32 - len)) >>> 0;
  return (ip & mask) >>> 0 === (parseV4(base)! & mask) >>> 0;
};
const ALL_V6 = (1n << 128n) - 1n;
const inV6 = (ip: bigint, base: string, len: number) => {
  const mask = ALL_V6 ^ ((1n << BigInt(128 - len)) - 1n);
  return (ip & mask) === (parseV6(base)! & mask);
};

/** Why this server must not connect to an address ("loopback", "private", ...), or null for a public address. */
export function addressProblem(address: string): string | null {
  const v4 = parseV4(address);
  if (v4 !== null) return V4_REFUSED.find(([base, len]) => inV4(v4, base, len))?.[2] ?? null;
  const v6 = parseV6(address);
  if (v6 === null) return "unparsable";
  for (const [base, len, offset] of V6_EMBEDDING_V4) {
    if (inV6(v6, base, len)) {
      const embedded = Number((v6 >> BigInt(offset)) & 0xffffffffn);
      const problem = addressProblem([24, 16, 8, 0].map((shift) => (embedded >>> shift) & 0xff).join("."));
      return problem && `${problem}, inside IPv6`;
    }
  }
  const refused = V6_REFUSED.find(([base, len]) => inV6(v6, base, len));
  if (refused) return refused[2];
  // Everything outside global unicast (2000::/3) is reserved.
  return inV6(v6, "2000::", 3) ? null : "reserved";
}

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
}

/**
 * One GET (or opts.method) over https (or plain http, which only callers that checked the URL allow) through the
 * given lookup: a redirect is returned as it is (never followed), the body stops at maxBytes, and everything ends
 * at the deadline.
 */
export function fetchDocument(url: string, opts: TransportOptions): Promise<FetchedDocument> {
  const u = new URL(url);
  const timeoutMs = opts.timeoutMs ?? FETCH_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? MAX_DOCUMENT_BYTES;
  return new Promise((resolve, reject) => {
    const fail = (err: unknown) => {
      clearTimeout(timer);
      req.destroy();
      const code = (err as { code?: unknown } | null)?.code;
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
        agent: false,
      },
      (res) => {
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
            body: Buffer.concat(chunks).toString("utf8"),
          });
        });
      },
    );
    const timer = setTimeout(() => fail(new FetchRefused(`No answer within ${timeoutMs} ms.`)), timeoutMs);
    req.on("error", fail);
    req.end(opts.body);
  });
}

/** Why a URL may not be fetched at all, or null: https only, no credentials, an IP literal must be public. */
export function fetchUrlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "is not a URL";
  }
  if (u.protocol !== "https:") return "must use https";
  if (u.username || u.password) return "must not carry a user name or password";
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const problem = isIP(host) ? addressProblem(host) : null;
  return problem && `names a non-public address (${problem})`;
}

/** The production fetch: the URL checked, then fetched only from public addresses. */
export async function guardedFetch(url: string, resolve: Resolve = systemResolve): Promise<FetchedDocument> {
  const problem = fetchUrlProblem(url);
  if (problem) throw new FetchRefused(`The address ${problem}.`);
  return fetchDocument(url, { lookup: publicLookup(resolve) });
}
