// Which address a request counts against: the socket's peer, or, from a trusted reverse proxy, the rightmost
// untrusted hop of its forwarding headers.
import { afterAll, describe, expect, test } from "bun:test";
import { TrustedProxies } from "../../server/client-address.ts";
import { ConfigError, parseTrustedProxies } from "../../server/config.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer } from "../hardening/spawn-server.ts";
import { startTestServer, type TestServer } from "../harness.ts";

const proxies = new TrustedProxies(["10.0.0.0/8", "127.0.0.1", "fd00::/8", "2001:db8:1::5"]);
const client = (peer: string, headers: Record<string, string> = {}) => proxies.clientAddress(peer, new Headers(headers));

describe("the client address", () => {
  test("an untrusted peer is the client whatever its headers say", () => {
    expect(client("203.0.113.7", { "x-forwarded-for": "198.51.100.1" })).toBe("203.0.113.7");
    expect(client("203.0.113.7", { forwarded: "for=198.51.100.1" })).toBe("203.0.113.7");
    expect(new TrustedProxies([]).clientAddress("10.0.0.1", new Headers({ "x-forwarded-for": "198.51.100.1" }))).toBe("10.0.0.1");
  });

  test("from a trusted peer, the rightmost untrusted hop of X-Forwarded-For; made-up entries on its left do not count", () => {
    expect(client("127.0.0.1", { "x-forwarded-for": "198.51.100.1" })).toBe("198.51.100.1");
    expect(client("127.0.0.1", { "x-forwarded-for": "1.1.1.1, 2.2.2.2, 198.51.100.1" })).toBe("198.51.100.1");
    // two proxies: the second saw the first (trusted) and the first saw the client
    expect(client("127.0.0.1", { "x-forwarded-for": "6.6.6.6, 198.51.100.1, 10.1.2.3" })).toBe("198.51.100.1");
    expect(client("10.9.9.9", { "x-forwarded-for": "198.51.100.1,10.1.2.3" })).toBe("198.51.100.1");
  });

  test("IPv6: bare, bracketed, with ports, IPv4-mapped; one spelling per address", () => {
    expect(client("127.0.0.1", { "x-forwarded-for": "2001:DB8::1" })).toBe("2001:db8:0:0:0:0:0:1");
    expect(client("127.0.0.1", { "x-forwarded-for": "[2001:db8::1]:4711" })).toBe("2001:db8:0:0:0:0:0:1");
    expect(client("127.0.0.1", { "x-forwarded-for": "198.51.100.1:5555" })).toBe("198.51.100.1");
    expect(client("::ffff:127.0.0.1", { "x-forwarded-for": "::ffff:198.51.100.1" })).toBe("198.51.100.1");
    expect(client("fd12::9", { "x-forwarded-for": "2001:db8::2, 2001:db8:1::5" })).toBe("2001:db8:0:0:0:0:0:2");
    expect(client("::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  test("RFC 7239 Forwarded: quoted and bracketed IPv6 with ports, other parameters, several elements", () => {
    expect(client("127.0.0.1", { forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"' })).toBe("2001:db8:cafe:0:0:0:0:17");
    expect(client("127.0.0.1", { forwarded: 'for="198.51.100.1:80", for=10.0.0.2' })).toBe("198.51.100.1");
    expect(client("127.0.0.1", { forwarded: 'For="[2001:db8::9]"' })).toBe("2001:db8:0:0:0:0:0:9");
    // a quoted comma does not split elements
    expect(client("127.0.0.1", { forwarded: 'for=198.51.100.1;ext="a,b"' })).toBe("198.51.100.1");
    // X-Forwarded-For, which the usual proxies set, wins over a Forwarded header a client may have sent through
    expect(client("127.0.0.1", { "x-forwarded-for": "198.51.100.1", forwarded: "for=6.6.6.6" })).toBe("198.51.100.1");
  });

  test("what cannot be read, or names only trusted hops, leaves the peer", () => {
    for (const headers of <Record<string, string>[]>[
      { "x-forwarded-for": "" },
      { "x-forwarded-for": "not-an-address" },
      { "x-forwarded-for": "198.51.100.1, unknown" },
      { "x-forwarded-for": "256.1.1.1" },
      { "x-forwarded-for": "1:2:3:4:5:6:7:8:9" },
      { "x-forwarded-for": "[2001:db8::1" },
      { "x-forwarded-for": "10.0.0.1, 10.0.0.2" },
      { forwarded: "for=unknown" },
      { forwarded: "for=_hidden" },
      { forwarded: "proto=https" },
      { forwarded: 'for="198.51.100.1' },
      { forwarded: "" },
    ]) {
      expect({ headers, client: client("127.0.0.1", headers) }).toEqual({ headers, client: "127.0.0.1" });
    }
  });

  test("--trusted-proxy takes addresses and CIDR ranges of both families, and refuses anything else clearly", () => {
    expect(parseTrustedProxies(" 10.0.0.0/8, ::1 ,fd00::/8,192.0.2.1/32")).toEqual(["10.0.0.0/8", "::1", "fd00::/8", "192.0.2.1/32"]);
    for (const bad of ["10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/8/1", "localhost", "10.0.0", "::1/x"]) {
      expect(() => parseTrustedProxies(bad)).toThrow(ConfigError);
      expect(() => parseTrustedProxies(bad)).toThrow(`got "${bad}"`);
    }
    expect(new TrustedProxies(["0.0.0.0/0"]).trusts("198.51.100.1")).toBe(true);
    expect(new TrustedProxies(["0.0.0.0/0"]).trusts("2001:db8::1")).toBe(false);
    expect(new TrustedProxies(["10.1.0.0/16"]).trusts("10.2.0.1")).toBe(false);
  });
});

describe("over HTTP: public rate limits per forwarded client", () => {
  const servers: TestServer[] = [];
  afterAll(() => Promise.all(servers.map((s) => s.stop())));
  const signUp = (s: TestServer, handle: string, xff: string) =>
    s.call("register_agent", { handle, display_name: handle }, null, { "x-forwarded-for": xff }).then((r) => r.status);

  test("behind a trusted proxy, each client named by X-Forwarded-For has its own bucket; a made-up left entry does not escape it", async () => {
    const s = await startTestServer({ publicRateLimit: 1, trustedProxies: ["127.0.0.1"] });
    servers.push(s);
    expect(await signUp(s, "xff-a1", "203.0.113.1")).toBe(200);
    expect(await signUp(s, "xff-b1", "203.0.113.2")).toBe(200);
    expect(await signUp(s, "xff-a2", "203.0.113.1")).toBe(429);
    expect(await signUp(s, "xff-a3", "198.51.100.77, 203.0.113.1")).toBe(429);
  });

  test("without --trusted-proxy the header is ignored: one bucket for the peer", async () => {
    const s = await startTestServer({ publicRateLimit: 1 });
    servers.push(s);
    expect(await signUp(s, "nxff-a1", "203.0.113.1")).toBe(200);
    expect(await signUp(s, "nxff-b1", "203.0.113.2")).toBe(429);
  });

  test("a trusted proxy that is not the peer changes nothing", async () => {
    const s = await startTestServer({ publicRateLimit: 1, trustedProxies: ["10.0.0.0/8"] });
    servers.push(s);
    expect(await signUp(s, "oxff-a1", "203.0.113.1")).toBe(200);
    expect(await signUp(s, "oxff-b1", "203.0.113.2")).toBe(429);
  });
});

test("svc serve --workers 2: a call a worker hands to the first process keeps the forwarded client's address", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-xff-"));
  const server = await spawnServer(join(dir, "svc.db"), ["--workers", "2", "--trusted-proxy", "127.0.0.1", "--public-rate-limit", "1"]);
  try {
    const signUp = (handle: string, xff: string) =>
      fetch(`${server.url}/v1/tools/register_agent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": xff },
        body: JSON.stringify({ handle, display_name: handle }),
      }).then((r) => r.status);
    // register_agent writes: from a worker it runs in the first process, which charges the address it is handed.
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push(await signUp(`wxff-${i}`, `203.0.113.${i + 1}`));
    expect(statuses).toEqual([200, 200, 200, 200]);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
