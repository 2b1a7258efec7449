// /fed/v1/txn per client address, on a server in open mode (any host may be named): past the address's budget a
// transaction is refused before anything is fetched or written, and made-up origins make this server fetch at most a
// few discovery documents and leave no rows behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { startFakePeer, type FakePeer } from "./fake-peer.ts";
import { awayFromMinuteEdge, startServers, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let F: FakePeer;
// Hosts that answer every request 404 and count them: the made-up origins' "discovery documents".
let hosts: ReturnType<typeof Bun.serve>[] = [];
let fetched = 0;

beforeAll(async () => {
  F = await startFakePeer();
  hosts = Array.from({ length: 12 }, () =>
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => {
        fetched++;
        return new Response("no", { status: 404 });
      },
    }),
  );
  const started = await startServers(1, [], { mode: "open", flags: ["--federation-limits", "txns_per_address=8,key_fetches_per_address=3"] });
  A = started.servers[0]!;
  close = started.close;
}, 60_000);
afterAll(async () => {
  F?.stop();
  for (const h of hosts) h.stop(true);
  await close?.();
});

describe("/fed/v1/txn per client address", () => {
  test("made-up origins: a few key fetches, then 429 before any fetch; past the address's budget 429 before anything; no rows kept", async () => {
    await awayFromMinuteEdge();
    const answers: { status: number; error: string; retryAfter: number }[] = [];
    for (const h of hosts) {
      const origin = `127.0.0.1:${h.port}`;
      const res = await F.send(A, { origin, destination: A.host, events: [] });
      answers.push({ status: res.status, error: JSON.parse(res.text).error, retryAfter: Number(res.headers.get("retry-after") ?? 0) });
    }
    expect(answers.map((a) => a.status)).toEqual([...Array(3).fill(401), ...Array(9).fill(429)]);
    expect(answers.slice(3, 8).map((a) => a.error)).toEqual(Array(5).fill("too many key fetches from this address"));
    expect(answers.slice(8).map((a) => a.error)).toEqual(Array(4).fill("too many transactions from this address"));
    for (const a of answers.slice(3)) expect(a.retryAfter).toBeGreaterThan(0);
    expect(fetched).toBe(3);
    // Nothing is written for an origin that never proved itself.
    const db = new Database(A.db, { readonly: true });
    try {
      expect((db.query("SELECT count(*) AS n FROM federation_limits").get() as { n: number }).n).toBe(0);
      expect((db.query("SELECT count(*) AS n FROM federation_hosts").get() as { n: number }).n).toBe(0);
    } finally {
      db.close();
    }
  });
});
