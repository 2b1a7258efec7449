// What the sender does with a peer's answers other than 200: it waits as long as a 429 or 503 asks in Retry-After
// (never less than its own backoff, never more than its longest wait), and it logs and counts every 401, 429, 5xx,
// timeout and failed connection per peer (svc_federation_send_failures_total on /metrics).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { HOUR } from "../../server/clock.ts";
import { freePort } from "../hardening/spawn-server.ts";
import { startFakePeer, type FakePeer } from "./fake-peer.ts";
import { startServers, until, type FedServer } from "./servers.ts";

const TOKEN = "peer-answers-metrics";
/** The first retry's wait of the test servers (--federation-test-timing in servers.ts), doubling after each try. */
const BASE_MS = 300;
// A loopback port nothing listens on: every connection to it is refused.
const CLOSED = `127.0.0.1:${freePort()}`;

let close: () => Promise<void>;
let A: FedServer;
let alice: { key: string };
const peers: FakePeer[] = [];

beforeAll(async () => {
  for (let i = 0; i < 4; i++) peers.push(await startFakePeer());
  const started = await startServers(1, [...peers.map((p) => p.host), CLOSED], { flags: ["--metrics-token", TOKEN] });
  A = started.servers[0]!;
  close = started.close;
  alice = await A.register("alice");
}, 60_000);
afterAll(async () => {
  for (const p of peers) p.stop();
  await close?.();
});

/** A contact request from alice to someone on `host`: one event in A's outbox for that server. */
const requestTo = (host: string) => A.ok("add_contact", { address: `bob@${host}` }, alice.key);
const gaps = (p: FakePeer) => p.received.slice(1).map((r, i) => r.at - p.received[i]!.at);
/** A's transaction in flight to `host`: its failed attempts and when it is tried next. */
const inFlight = (host: string) => {
  const db = new Database(A.db, { readonly: true });
  try {
    return Promise.resolve(
      db.query("SELECT attempts, next_try_at AS nextTryAt FROM federation_txns_out WHERE destination = ?").get(host) as {
        attempts: number;
        nextTryAt: string;
      } | null,
    );
  } finally {
    db.close();
  }
};
const metrics = async () => (await fetch(`${A.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
const failures = (text: string, peer: string) =>
  Object.fromEntries(
    [...text.matchAll(/^svc_federation_send_failures_total\{peer="([^"]+)",outcome="([^"]+)"\} (\d+)$/gm)]
      .filter((m) => m[1] === peer)
      .map((m) => [m[2]!, Number(m[3])]),
  );
/** A's warn lines about transactions a peer did not take. */
const warnings = (peer: string) =>
  A.proc
    .output()
    .split("\n")
    // Whole lines only: the last may still be arriving.
    .filter((l) => l.startsWith("{") && l.endsWith("}"))
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === "federation transaction not taken" && l.peer === peer);

describe("Retry-After from a peer", () => {
  test("429 and 503 are retried no sooner than Retry-After asks (seconds or an HTTP-date), nor sooner than the backoff", async () => {
    const [F] = peers as [FakePeer];
    F.answers = [
      { status: 429, headers: () => ({ "retry-after": "2" }) },
      // An HTTP-date has whole seconds: 3 s ahead is more than 2 s after the answer.
      { status: 503, headers: () => ({ "retry-after": new Date(Date.now() + 3_000).toUTCString() }) },
      // Sooner than the backoff (the third retry waits 4 × 300 ms): the backoff wins.
      { status: 429, headers: () => ({ "retry-after": "0" }) },
    ];
    await requestTo(F.host);
    await until(
      async () => F.received.length,
      (n) => n >= 4,
      20_000,
    );
    const [afterSeconds, afterDate, afterZero] = gaps(F) as [number, number, number];
    // Before, each wait was the backoff alone: 300 ms, 600 ms, 1.2 s.
    expect(afterSeconds).toBeGreaterThanOrEqual(2_000);
    expect(afterDate).toBeGreaterThanOrEqual(2_000);
    // The backoff counts from when the try began, a little before the peer saw it.
    expect(afterZero).toBeGreaterThanOrEqual(4 * BASE_MS - 200);
    // Nor much later: the next pass after the wait (passes are 100 ms apart).
    expect(afterSeconds).toBeLessThan(4_000);
    // The fourth try is taken.
    await until(
      () => inFlight(F.host),
      (r) => r === null,
    );
  }, 40_000);

  test("a Retry-After past the longest wait is held to it (an hour)", async () => {
    const F = peers[1]!;
    F.answers = [{ status: 429, headers: () => ({ "retry-after": String(7 * 24 * 3600) }) }];
    await requestTo(F.host);
    const row = await until(
      () => inFlight(F.host),
      (r) => (r?.attempts ?? 0) >= 1,
    );
    const wait = Date.parse(row!.nextTryAt) - F.received[0]!.at;
    expect(wait).toBeGreaterThan(HOUR - 60_000);
    expect(wait).toBeLessThanOrEqual(HOUR + 5_000);
  });
});

describe("failed sends are logged and counted per peer", () => {
  test("401, 429 and 500 answers each add to svc_federation_send_failures_total{peer,outcome} and log a warning", async () => {
    const F = peers[2]!;
    F.answers = [{ status: 401 }, { status: 429 }, { status: 500 }];
    await requestTo(F.host);
    const counted = await until(
      async () => failures(await metrics(), F.host),
      (c) => c["401"] === 1 && c["429"] === 1 && c["5xx"] === 1,
      20_000,
    );
    expect(counted).toEqual({ "401": 1, "429": 1, "5xx": 1 });
    // The fourth try is taken: nothing more is counted.
    await until(
      () => inFlight(F.host),
      (r) => r === null,
    );
    expect(failures(await metrics(), F.host)).toEqual({ "401": 1, "429": 1, "5xx": 1 });
    const logged = await until(
      async () => warnings(F.host),
      (ls) => ls.length === 3,
    );
    expect(logged.map((l) => [l.level, l.outcome, l.status, l.attempts])).toEqual([
      ["warn", "401", 401, 1],
      ["warn", "429", 429, 2],
      ["warn", "5xx", 500, 3],
    ]);
    expect(typeof logged[0].next_try_at).toBe("string");
  }, 30_000);

  test("a peer that never answers counts as timeout; one that refuses the connection as network", async () => {
    const F = peers[3]!;
    F.answers = ["hang"];
    await requestTo(F.host);
    await requestTo(CLOSED);
    const text = await until(metrics, (t) => failures(t, F.host).timeout === 1 && (failures(t, CLOSED).network ?? 0) >= 1, 20_000);
    expect(failures(text, F.host)).toEqual({ timeout: 1 });
    expect(Object.keys(failures(text, CLOSED))).toEqual(["network"]);
    expect(warnings(F.host)[0]).toMatchObject({ level: "warn", outcome: "timeout", status: 0 });
  }, 30_000);
});
