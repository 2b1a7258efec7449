// Abuse controls on a server in open mode: limits per origin host kept in the database, greylisting of new hosts,
// an operator's blocklist, and each agent's choice of what it accepts from other servers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { startFakePeer, type FakePeer } from "./fake-peer.ts";
import { startServers, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let F: FakePeer;
let G: FakePeer;

beforeAll(async () => {
  F = await startFakePeer();
  G = await startFakePeer();
  // F is a named peer (not greylisted); G is any server, first seen now.
  const started = await startServers(1, [F.host], { mode: "open", flags: ["--federation-limits", "txns=6,contact_requests=3"] });
  A = started.servers[0]!;
  close = started.close;
}, 60_000);
afterAll(async () => {
  F?.stop();
  G?.stop();
  await close?.();
});

const request = (peer: FakePeer, to: { code?: string; to?: string }, from = "mallory") => ({
  id: crypto.randomUUID(),
  type: "contact.request",
  from: `${from}@${peer.host}`,
  ...to,
});
const txn = (peer: FakePeer, events: unknown[]) => ({ origin: peer.host, destination: A.host, events });
const incoming = async (key: string) => (await A.ok("list_contacts", { state: "incoming" }, key)).contacts as any[];

describe("abuse controls", () => {
  test("each agent chooses: by default only requests with its code; by address once it says so; nothing at all with none", async () => {
    const alice = await A.register("alice");
    const { code } = await A.ok("get_contact_code", {}, alice.key);
    expect((await A.ok("get_me", {}, alice.key)).federation).toEqual({ address: `alice@${A.host}`, accepts_from_other_servers: "code" });
    expect((await F.send(A, txn(F, [request(F, { to: `alice@${A.host}` }, "mal1")]))).status).toBe(200);
    expect(await incoming(alice.key)).toHaveLength(0);
    await A.ok("update_me", { accepts_from_other_servers: "address" }, alice.key);
    await F.send(A, txn(F, [request(F, { to: `alice@${A.host}` }, "mal2")]));
    expect(await incoming(alice.key)).toHaveLength(1);
    await A.ok("update_me", { accepts_from_other_servers: "none" }, alice.key);
    await F.send(A, txn(F, [request(F, { code }, "mal3")]));
    expect(await incoming(alice.key)).toHaveLength(1);
  });

  test("a new host in open mode is greylisted: only requests that carry a code reach anyone", async () => {
    const bob = await A.register("bob");
    await A.ok("update_me", { accepts_from_other_servers: "address" }, bob.key);
    const { code } = await A.ok("get_contact_code", {}, bob.key);
    const byAddress = await G.send(A, txn(G, [request(G, { to: `bob@${A.host}` }, "grey1")]));
    expect(byAddress.status).toBe(200);
    expect(await incoming(bob.key)).toHaveLength(0);
    await G.send(A, txn(G, [request(G, { code }, "grey2")]));
    expect((await incoming(bob.key)).map((c) => c.agent.display_name)).toEqual([`grey2 (grey2@${G.host})`]);
  });

  test("limits per origin host: contact requests an hour are dropped past the limit; transactions a minute answer 429 with Retry-After", async () => {
    const carol = await A.register("carol");
    const { code } = await A.ok("get_contact_code", {}, carol.key);
    // F already sent 3 requests in this hour (the first test): a fourth is dropped, answered as any other.
    const res = await F.send(A, txn(F, [request(F, { code }, "mal4")]));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).results[0].result).toBe("ok");
    expect(await incoming(carol.key)).toHaveLength(0);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await F.send(A, txn(F, []))).status);
    expect(statuses).toContain(429);
    const limited = await F.send(A, txn(F, []));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    // The counts are in the database, so every process of the server (and a restart) sees them.
    const db = new Database(A.db, { readonly: true });
    const rows = db.query("SELECT kind, count FROM federation_limits WHERE host = ?").all(F.host) as { kind: string; count: number }[];
    db.close();
    expect(rows.find((r) => r.kind === "contact_requests")?.count).toBe(3);
  });

  test("a host the operator blocked is refused, whatever the mode", async () => {
    const proc = Bun.spawn(["bun", "run", "cli/main.ts", "federation", "block", G.host, "--db", `file:${A.db}`], {
      cwd: `${import.meta.dir}/../..`,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(0);
    expect((await G.send(A, txn(G, []))).status).toBe(403);
  });
});
