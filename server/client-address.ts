// Which address a request counts against. Behind a reverse proxy every connection comes from the proxy; only when
// the connection's peer is a proxy the operator trusts (--trusted-proxy) are its forwarding headers read, and then
// from the right: each proxy appends the address it saw, so everything left of the last trusted hop is the client's
// own say and may be made up. A leaf, like server/config.ts, which checks the entries at start.

/** An address as a number: IPv4 in 32 bits, IPv6 in 128 (an IPv4-mapped IPv6 address is its IPv4 address). */
interface Ip {
  v6: boolean;
  n: bigint;
}

interface Range extends Ip {
  prefix: number;
}

function parseIpv4(s: string): bigint | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  let n = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = (n << 8n) | BigInt(p);
  }
  return n;
}

function parseIpv6(s: string): bigint | null {
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  // A dotted IPv4 address may end it (::ffff:192.0.2.1): it is the last two groups.
  const lastColon = s.lastIndexOf(":");
  if (lastColon >= 0 && s.includes(".", lastColon)) {
    const v4 = parseIpv4(s.slice(lastColon + 1));
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  for (const g of [...head, ...rest]) if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
  const given = head.length + rest.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return null;
  const all = [...head.map((g) => BigInt(`0x${g}`)), ...Array(8 - given).fill(0n), ...rest.map((g) => BigInt(`0x${g}`))];
  return all.reduce((n, g) => (n << 16n) | g, 0n);
}

const MAPPED = 0xffffn << 32n;

/** An IPv4 or IPv6 address (no port, no brackets), or null. */
export function parseIp(s: string): Ip | null {
  const v4 = parseIpv4(s);
  if (v4 !== null) return { v6: false, n: v4 };
  if (!s.includes(":")) return null;
  const v6 = parseIpv6(s);
  if (v6 === null) return null;
  // A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d; it is the same client as a.b.c.d.
  if (v6 >> 32n === 0xffffn) return { v6: false, n: v6 & ~MAPPED };
  return { v6: true, n: v6 };
}

/** The address as a key: IPv4 dotted, IPv6 in full lowercase hex groups (one client, one spelling). */
function format(ip: Ip): string {
  if (!ip.v6) return [24n, 16n, 8n, 0n].map((s) => String((ip.n >> s) & 0xffn)).join(".");
  return Array.from({ length: 8 }, (_, i) => ((ip.n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(":");
}

/**
 * The address as every limit counts it: IPv4 as it is, IPv6 as its /64 (`2001:db8:0:7::/64`). One subscriber, one
 * host even, is handed a whole /64 and may take any address in it, so counting each address apart would leave an
 * IPv6 client unlimited. Anything that is not an address is left as it is.
 */
export function limitAddress(address: string): string {
  const ip = parseIp(address);
  if (!ip?.v6) return ip ? format(ip) : address;
  const net = ip.n >> 64n;
  return `${Array.from({ length: 4 }, (_, i) => ((net >> BigInt(48 - 16 * i)) & 0xffffn).toString(16)).join(":")}::/64`;
}

/** The trusted proxies: parsed once at start from `CIDR,...` entries (a bare address is a range of one). */
export class TrustedProxies {
  private readonly ranges: Range[];

  constructor(entries: readonly string[] = []) {
    this.ranges = entries.map((e) => {
      const [addr, bits, extra] = e.trim().split("/");
      const ip = parseIp(addr ?? "");
      const max = ip?.v6 ? 128 : 32;
      const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
      if (!ip || extra !== undefined || !(prefix >= 0 && prefix <= max)) {
        throw new Error(`expected an IPv4 or IPv6 address or CIDR range such as 10.0.0.0/8 or fd00::/8, got "${e}"`);
      }
      return { ...ip, prefix };
    });
  }

  get any(): boolean {
    return this.ranges.length > 0;
  }

  /** Whether the address (as a socket reports it) is a trusted proxy's. */
  trusts(address: string): boolean {
    const ip = parseIp(address);
    return ip !== null && this.has(ip);
  }

  private has(ip: Ip): boolean {
    return this.ranges.some((r) => {
      if (r.v6 !== ip.v6) return false;
      const shift = BigInt((r.v6 ? 128 : 32) - r.prefix);
      return r.n >> shift === ip.n >> shift;
    });
  }

  /**
   * The client's address: the socket's peer, unless the peer is trusted; then the rightmost untrusted address of
   * X-Forwarded-For (or, without it, of Forwarded). A header that cannot be read, or names only trusted hops, leaves
   * the peer.
   */
  clientAddress(peer: string, headers: Headers): string {
    const ip = parseIp(peer);
    if (!ip) return peer;
    if (!this.any || !this.has(ip)) return format(ip);
    const xff = headers.get("x-forwarded-for");
    const hops = xff !== null ? xff.split(",").map(stripPort) : forwardedFor(headers.get("forwarded"));
    if (!hops) return format(ip);
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parseIp(hops[i]!);
      if (!hop) return format(ip);
      if (!this.has(hop)) return format(hop);
    }
    return format(ip);
  }
}

/** "192.0.2.1:80", "[2001:db8::1]:80", "[2001:db8::1]", "2001:db8::1" as the address alone. */
function stripPort(s: string): string {
  s = s.trim();
  if (s.startsWith("[")) {
    const end = s.indexOf("]");
    return end < 0 || (end + 1 < s.length && !/^:\d+$/.test(s.slice(end + 1))) ? "" : s.slice(1, end);
  }
  const colon = s.indexOf(":");
  // One colon: IPv4 with a port; more: a bare IPv6 address.
  if (colon >= 0 && colon === s.lastIndexOf(":")) return /^\d+$/.test(s.slice(colon + 1)) ? s.slice(0, colon) : "";
  return s;
}

/**
 * The for= values of RFC 7239 Forwarded, left to right; null when the header is absent or any element lacks a
 * readable for= (obfuscated names and "unknown" come back as themselves and are not addresses).
 */
function forwardedFor(header: string | null): string[] | null {
  if (header === null) return null;
  const out: string[] = [];
  // Commas and semicolons inside a quoted string do not separate.
  const elements = header.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? [];
  for (const element of elements) {
    let found: string | null = null;
    for (const pair of element.match(/(?:[^;"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== "for") continue;
      let value = pair.slice(eq + 1).trim();
      if (value.startsWith('"')) {
        if (value.length < 2 || !value.endsWith('"')) return null;
        value = value.slice(1, -1).replace(/\\(.)/g, "$1");
      }
      found = stripPort(value);
    }
    if (found === null) return null;
    out.push(found);
  }
  return out.length ? out : null;
}
