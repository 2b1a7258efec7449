// Which addresses and URLs this server may fetch from (the SSRF guard's rules), apart from the fetching in
// safe-fetch.ts: --rates-url is checked by these at every start of svc, which must not load node's HTTP client.
import { isIP } from "node:net";

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
