// What a receiving server holds against a hostile peer or someone pretending to be one (docs/security.md, "Federation
// trust"): an origin's limits are spent only by transactions that prove they come from it; a signature over something
// the request lacks is refused, not an error; the operator's envelope quota holds for agents of other servers and its
// refusal is said in the answer; an alias of a remote handle never passes for a local handle.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { fakeKey, startFakePeer, type FakePeer } from "./fake-peer.ts";
import { awayFromMinuteEdge, startServers, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
// F: the peer whose budget a forger tries to spend; G: the peer the other tests speak as.
let F: FakePeer;
let G: FakePeer;

beforeAll(async () => {
  F = await startFakePeer();
  G = await startFakePeer();
  const started = await startServers(1, [F.host, G.host], {
    flags: ["--federation-limits", "txns=6", "--quota", "envelope_bytes_per_day=3000"],
  });
  A = started.servers[0]!;
  close = started.close;
}, 60_000);
afterAll(async () => {
  F?.stop();
  G?.stop();
  await close?.();
});

const txn = (peer: FakePeer, events: unknown[]) => ({ origin: peer.host, destination: A.host, events });
const countOf = (host: string, kind: string) => {
  const db = new Database(A.db, { readonly: true });
  try {
    return (db.query("SELECT coalesce(sum(count), 0) AS n FROM federation_limits WHERE host = ? AND kind = ?").get(host, kind) as { n: number }).n;
  } finally {
    db.close();
  }
};

describe("limits of an origin are charged only once its signature verifies", () => {
  test("unsigned and forged transactions naming a peer are refused and spend nothing of its budget; its own get through", async () => {
    await awayFromMinuteEdge();
    // The forger knows F's kid (it is published) but not its private key.
    const forged = await fakeKey(F.keys[0]!.kid);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await F.send(A, txn(F, []), { unsigned: true })).status);
    for (let i = 0; i < 4; i++) statuses.push((await F.send(A, txn(F, []), { key: forged })).status);
    expect(statuses).toEqual(Array(8).fill(401));
    expect(countOf(F.host, "txns")).toBe(0);
    // F's limit is 6 a minute: eight forged transactions before the fix left its own refused with 429.
    const real = await F.send(A, txn(F, []));
    expect(real.status).toBe(200);
    expect(countOf(F.host, "txns")).toBe(1);
  });
});

describe("a signature over a component the request lacks", () => {
  test("a header field it does not carry, or the draft's @request-target, is refused with 401, never a 500", async () => {
    for (const extra of ['"x-missing"', '"@request-target"']) {
      const res = await G.send(A, txn(G, []), {
        rewrite: (h) => h.set("signature-input", h.get("signature-input")!.replace('"content-type")', `"content-type" ${extra})`)),
      });
      expect(res.status).toBe(401);
      expect(JSON.parse(res.text).error).toContain(extra);
    }
  });
});

describe("the operator's envelope quota holds for agents of other servers", () => {
  test("past envelope_bytes_per_day an envelope is answered refused, whether or not anyone here takes it; each sender counts apart", async () => {
    const alice = await A.register("alice");
    const envelope = (from: string) => ({
      id: crypto.randomUUID(),
      type: "envelope",
      from: `${from}@${G.host}`,
      to: [`alice@${A.host}`],
      envelope_id: crypto.randomUUID(),
      thread_id: crypto.randomUUID(),
      in_reply_to: null,
      subject: "s",
      body_md: "x".repeat(1999),
    });
    // mallory is nobody's contact here: its envelopes are dropped, but counted, so that a refusal says nothing of consent.
    const events = [envelope("mallory"), envelope("mallory"), envelope("eve")];
    const res = await G.send(A, txn(G, events));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).results).toEqual([
      { id: events[0]!.id, result: "ok" },
      { id: events[1]!.id, result: "refused" },
      { id: events[2]!.id, result: "ok" },
    ]);
    expect((await A.ok("list_envelopes", { direction: "received" }, alice.key)).envelopes).toHaveLength(0);
  });
});

describe("aliases of agents of other servers", () => {
  test("a long remote handle keeps its host in the alias: it never becomes a local-looking handle", async () => {
    const bob = await A.register("bob");
    await A.ok("update_me", { accepts_from_other_servers: "address" }, bob.key);
    const long27 = "a".repeat(27);
    const long30 = "b".repeat(30);
    const request = (handle: string) => ({ id: crypto.randomUUID(), type: "contact.request", from: `${handle}@${G.host}`, to: `bob@${A.host}` });
    expect((await G.send(A, txn(G, [request(long27), request(long30)]))).status).toBe(200);
    const incoming = (await A.ok("list_contacts", { state: "incoming" }, bob.key)).contacts as any[];
    const aliases = incoming.map((c) => c.agent.handle as string).sort();
    expect(aliases).toHaveLength(2);
    const hostPart = G.host.replace(/[^a-z0-9]/g, "");
    for (const alias of aliases) {
      expect(alias).toMatch(new RegExp(`^[ab]+-${hostPart}$`));
      expect(alias.length).toBeLessThanOrEqual(28);
    }
    // A person here may still take the handle the remote agent has there.
    expect((await A.call("register_agent", { handle: long27, display_name: "Local" })).status).toBe(200);
  });
});
