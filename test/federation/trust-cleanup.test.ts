// What /fed/v1/txn stores for an origin that never proved itself is cleaned by a job (clean_federation), on an
// in-process server whose clock the test moves; what a verified peer needs stays.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { federationLimits, federationPeerKeys } from "../../db/schema/index.ts";
import { HOUR } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { fakeKey, startFakePeer, type FakePeer } from "./fake-peer.ts";

let t: TestServer;
let F: FakePeer;
let G: FakePeer;
let host: string;

beforeAll(async () => {
  F = await startFakePeer();
  G = await startFakePeer();
  t = await startTestServer({ federation: { mode: "open", peers: [], blocked: [], allowLoopback: true, sendIntervalMs: 1e9 } });
  // The peers sign with the real time: the server's clock is brought to it.
  t.clock.advance(Date.now() - t.clock.now().getTime());
  host = new URL(t.url).host;
});
afterAll(async () => {
  F?.stop();
  G?.stop();
  await t?.stop();
});

const keysOf = (h: string) => t.server.db.read((tx) => tx.select().from(federationPeerKeys).where(eq(federationPeerKeys.host, h)).get());
const limitsOf = (h: string) => t.server.db.read((tx) => tx.select().from(federationLimits).where(eq(federationLimits.host, h)));

describe("clean_federation", () => {
  test("keys fetched for an origin whose signature never verified are deleted; a verified peer's stay; old limit windows go", async () => {
    // F publishes real keys, but the transaction naming it is signed by someone else under its kid.
    const forged = await F.send(t, { origin: F.host, destination: host, events: [] }, { key: await fakeKey(F.keys[0]!.kid) });
    expect(forged.status).toBe(401);
    expect((await keysOf(F.host))?.verifiedAt).toBeNull();
    expect(await limitsOf(F.host)).toEqual([]);
    const real = await G.send(t, { origin: G.host, destination: host, events: [] });
    expect(real.status).toBe(200);
    expect((await keysOf(G.host))?.verifiedAt).not.toBeNull();
    expect((await limitsOf(G.host)).length).toBeGreaterThan(0);

    t.clock.advance(3 * HOUR);
    const ran = await t.server.jobs.runDue();
    expect(ran.find((o) => o.job === "clean_federation")?.error).toBeUndefined();
    expect(await keysOf(F.host)).toBeUndefined();
    expect(await keysOf(G.host)).toBeDefined();
    expect(await limitsOf(G.host)).toEqual([]);
  });
});
