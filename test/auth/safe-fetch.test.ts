// The SSRF guard on its own: which addresses and URLs are refused, that refusal happens before any connection
// (the local server never sees a request), and the transport's own limits (no redirects, size cap, deadline, TLS).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  FetchRefused,
  MAX_DOCUMENT_BYTES,
  NAME_REFUSED,
  addressProblem,
  fetchDocument,
  fetchUrlProblem,
  guardedFetch,
  publicAddresses,
  type Resolve,
} from "../../server/auth/safe-fetch.ts";
import { serveTls, toLoopback, type TlsHost } from "./tls-fixture.ts";

describe("addressProblem: the addresses a document may never be fetched from", () => {
  const refused: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["0.0.0.0", "this-network"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local"],
    ["100.64.0.1", "shared (carrier-grade NAT)"],
    ["192.0.0.8", "IETF protocol"],
    ["192.0.2.1", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link-local"],
    ["fd12:3456::1", "unique local (private)"],
    ["fc00::1", "unique local (private)"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["2001::1", "IETF protocol (Teredo and others)"],
    ["100::1", "discard"],
    ["::127.0.0.1", "reserved"],
    ["::ffff:127.0.0.1", "loopback, inside IPv6"],
    ["::ffff:7f00:1", "loopback, inside IPv6"],
    ["::ffff:10.0.0.1", "private, inside IPv6"],
    ["::ffff:169.254.169.254", "link-local, inside IPv6"],
    ["64:ff9b::7f00:1", "loopback, inside IPv6"],
    ["2002:c0a8:101::1", "private, inside IPv6"],
    ["fe80::1%eth0", "unparsable"],
    ["localhost", "unparsable"],
  ];
  test.each(refused)("%s is refused (%s)", (address, why) => {
    expect(addressProblem(address)).toBe(why);
  });

  const allowed = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1",
    "100.128.0.1",
    "11.0.0.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
  ];
  test.each(allowed)("%s is public", (address) => {
    expect(addressProblem(address)).toBeNull();
  });
});

describe("fetchUrlProblem: URLs refused before any lookup", () => {
  const cases: [string, string | null][] = [
    ["https://client.example/meta.json", null],
    ["https://93.184.216.34/meta.json", null],
    ["http://client.example/meta.json", "must use https"],
    ["ftp://client.example/meta.json", "must use https"],
    ["https://user:secret@client.example/meta.json", "must not carry a user name or password"],
    ["https://user@client.example/meta.json", "must not carry a user name or password"],
    ["https://127.0.0.1/meta.json", "names a non-public address (loopback)"],
    ["https://0x7f.1/meta.json", "names a non-public address (loopback)"],
    ["https://2130706433/meta.json", "names a non-public address (loopback)"],
    ["https://[::1]/meta.json", "names a non-public address (loopback)"],
    ["https://[::ffff:127.0.0.1]/meta.json", "names a non-public address (loopback, inside IPv6)"],
    ["https://169.254.169.254/latest/meta-data", "names a non-public address (link-local)"],
    ["not a url", "is not a URL"],
  ];
  test.each(cases)("%s", (url, problem) => {
    expect(fetchUrlProblem(url)).toBe(problem);
  });
});

describe("publicAddresses: a name is refused unless every address it resolves to is public", () => {
  const resolver =
    (...addresses: string[]): Resolve =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

  test("public addresses pass", async () => {
    expect(await publicAddresses("client.example", resolver("93.184.216.34", "2606:4700::1"))).toHaveLength(2);
  });

  // One refusal for every way a name fails: it never says how the name resolved (what kind of address, or none).
  test.each([[["10.0.0.7"]], [["93.184.216.34", "127.0.0.1"]], [["::ffff:192.168.0.1"]], [[]]])("%p is refused", async (addresses) => {
    await expect(publicAddresses("client.example", resolver(...addresses))).rejects.toThrow(NAME_REFUSED);
  });

  test("a name that does not resolve, and localhost through the system resolver, are refused alike", async () => {
    const failing: Resolve = async () => {
      throw new Error("ENOTFOUND");
    };
    await expect(publicAddresses("nowhere.example", failing)).rejects.toThrow(NAME_REFUSED);
    await expect(publicAddresses("localhost")).rejects.toThrow(NAME_REFUSED);
  });
});

describe("guardedFetch: refused before any connection", () => {
  let host: TlsHost;
  beforeAll(() => {
    host = serveTls("client.test", () => Response.json({ reached: true }));
  });
  afterAll(() => host.stop());

  test("loopback by name, by literal, and by a resolver answering with a private address never reach the server", async () => {
    const p = host.port;
    const refusals: [string, Resolve | undefined, RegExp][] = [
      [`https://localhost:${p}/doc`, undefined, /does not resolve to public addresses only/],
      [`https://127.0.0.1:${p}/doc`, undefined, /names a non-public address \(loopback\)/],
      [`https://[::1]:${p}/doc`, undefined, /names a non-public address \(loopback\)/],
      [`https://[::ffff:127.0.0.1]:${p}/doc`, undefined, /loopback, inside IPv6/],
      // what DNS rebinding would answer: the name is checked in the socket's own lookup, so this cannot slip through
      [`https://client.test:${p}/doc`, async () => [{ address: "127.0.0.1", family: 4 }], /does not resolve to public addresses only/],
      [`https://client.test:${p}/doc`, async () => [{ address: "::ffff:127.0.0.1", family: 6 }], /does not resolve to public addresses only/],
      [`http://client.test:${p}/doc`, undefined, /must use https/],
      [`https://user:pw@client.test:${p}/doc`, undefined, /user name or password/],
    ];
    for (const [url, resolve, message] of refusals) {
      const err = await guardedFetch(url, resolve).catch((e) => e);
      expect(err).toBeInstanceOf(FetchRefused);
      expect(err.message).toMatch(message);
    }
    expect(host.seen).toEqual([]);
  });
});

describe("fetchDocument: the transport's own limits", () => {
  // toLoopback stands in for public DNS: these tests are about the transport, not the address guard above.
  let host: TlsHost;
  let stalled: () => void = () => {};
  beforeAll(() => {
    host = serveTls("client.test", async (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/doc") return new Response('{"ok":true}', { headers: { "content-type": "application/json", "cache-control": "max-age=90" } });
      if (path === "/redirect") return new Response(null, { status: 302, headers: { location: "/doc" } });
      if (path === "/declared-big") return new Response("x".repeat(MAX_DOCUMENT_BYTES + 1));
      if (path === "/streamed-big") {
        const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
        let sent = 0;
        return new Response(new ReadableStream({ pull: (c) => (sent++ < 8 ? c.enqueue(chunk) : c.close()) }));
      }
      if (path === "/exactly-max") return new Response("y".repeat(MAX_DOCUMENT_BYTES));
      return new Promise<Response>((resolve) => {
        stalled = () => resolve(new Response("late"));
      });
    });
  });
  afterAll(() => {
    stalled();
    host.stop();
  });
  const get = (path: string, extra: { timeoutMs?: number; ca?: string | undefined; name?: string } = {}) =>
    fetchDocument(`https://${extra.name ?? "client.test"}:${host.port}${path}`, {
      lookup: toLoopback,
      ca: "ca" in extra ? extra.ca : host.cert,
      timeoutMs: extra.timeoutMs,
    });

  test("a document comes back with its status and caching headers", async () => {
    expect(await get("/doc")).toEqual({ status: 200, contentType: "application/json", cacheControl: "max-age=90", retryAfter: null, body: '{"ok":true}' });
  });

  test("a redirect is returned as it is, never followed", async () => {
    const before = host.seen.length;
    const r = await get("/redirect");
    expect(r.status).toBe(302);
    expect(host.seen.slice(before)).toEqual(["/redirect"]);
  });

  test("the size cap holds whether the length is declared or streamed; the cap itself is allowed", async () => {
    await expect(get("/declared-big")).rejects.toThrow(`The answer is larger than ${MAX_DOCUMENT_BYTES} bytes.`);
    await expect(get("/streamed-big")).rejects.toThrow(`The answer is larger than ${MAX_DOCUMENT_BYTES} bytes.`);
    expect((await get("/exactly-max")).body).toHaveLength(MAX_DOCUMENT_BYTES);
  });

  test("a server that never answers is left at the deadline", async () => {
    await expect(get("/stall", { timeoutMs: 100 })).rejects.toThrow("No answer within 100 ms.");
  });

  test("the certificate must be valid for the host: another name, or an untrusted issuer, is refused", async () => {
    await expect(get("/doc", { name: "other.test" })).rejects.toThrow(/^The connection failed/);
    await expect(get("/doc", { ca: undefined })).rejects.toThrow(/^The connection failed/);
  });
});
