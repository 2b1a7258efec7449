// The outbox's retry schedule and its end, on an in-process server whose clock the test moves.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { HOUR } from "../../server/clock.ts";
import { GIVE_UP_MS, sendOutbox } from "../../server/federation/outbox.ts";
import { peerBaseUrl, peerRequest } from "../../server/federation/peer.ts";
import { FetchRefused } from "../../server/auth/safe-fetch.ts";
import { federationTxnsOut } from "../../db/schema/index.ts";
import { startTestServer, type TestServer } from "../harness.ts";

// Nothing listens on port 9 of loopback: every send fails at once.
const DEAD = "127.0.0.1:9";
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({
    federation: { mode: "allowlist", peers: [DEAD], blocked: [], allowLoopback: true, sendIntervalMs: 1e9 },
  });
});
afterAll(() => t?.stop());

const inFlight = () => t.server.db.read((tx) => tx.select().from(federationTxnsOut).get());

describe("outbox", () => {
  test("--federation-allow-loopback refuses to start a server that does not listen on loopback", async () => {
    await expect(startTestServer({ host: "0.0.0.0", federation: { mode: "allowlist", peers: [], blocked: [], allowLoopback: true } })).rejects.toThrow(
      /loopback/,
    );
  });

  test("a destination that never answers: retried with the same txn_id, waits doubling to an hour, and after 72 hours an undelivered item", async () => {
    const alice = await t.register("alice");
    const sent = await t.ok("add_contact", { address: `bob@${DEAD}` }, alice.key);
    expect(sent.status).toBe("requested");
    expect(sent.contact.agent.display_name).toContain(`(bob@${DEAD})`);
    const config = t.server.services.config;
    await sendOutbox(t.server.db, config, "test");
    const first = (await inFlight())!;
    expect(first.attempts).toBe(1);
    // Not due yet: nothing is sent before the wait is over.
    await sendOutbox(t.server.db, config, "test");
    expect((await inFlight())!.attempts).toBe(1);
    const waits: number[] = [];
    for (let i = 0; i < 9; i++) {
      const before = (await inFlight())!;
      t.clock.advance(Date.parse(before.nextTryAt) - t.clock.now().getTime());
      waits.push(Date.parse(before.nextTryAt) - Date.parse((await inFlight())!.firstTriedAt));
      await sendOutbox(t.server.db, config, "test");
      const after = (await inFlight())!;
      expect(after.txnId).toBe(first.txnId);
      expect(after.body).toBe(first.body);
    }
    const gaps = waits.map((w, i) => (i ? w - waits[i - 1]! : w));
    expect(gaps.slice(0, 4)).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(HOUR);
    t.clock.advance(GIVE_UP_MS);
    await sendOutbox(t.server.db, config, "test");
    expect(await inFlight()).toBeUndefined();
    const items = (await t.ok("get_inbox", {}, alice.key)).items as any[];
    const undelivered = items.find((i) => i.type === "network.undelivered");
    expect(undelivered.refs).toEqual({ host: DEAD });
  });
});

describe("add_contact to another server", () => {
  test("is refused for a server this one does not exchange with (allowlist), and when federation is off", async () => {
    const zed = await t.register("zed");
    const refused = await t.call("add_contact", { address: "bob@elsewhere.example", idempotency_key: crypto.randomUUID() }, zed.key);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("does not exchange with");
    const off = await startTestServer();
    try {
      const amy = await off.register("amy");
      const r = await off.call("add_contact", { code: "amber-falcon-river-seven@b.example", idempotency_key: crypto.randomUUID() }, amy.key);
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toContain("--federation");
    } finally {
      await off.stop();
    }
  });
});

describe("outbound calls", () => {
  test("go through the SSRF guard: https to public addresses only; plain http only to loopback with the test flag", async () => {
    expect(peerBaseUrl("127.0.0.1:8702", { allowLoopback: false })).toBe("https://127.0.0.1:8702");
    expect(peerBaseUrl("127.0.0.1:8702", { allowLoopback: true })).toBe("http://127.0.0.1:8702");
    expect(peerBaseUrl("b.example", { allowLoopback: true })).toBe("https://b.example");
    for (const url of ["https://127.0.0.1:9/x", "https://10.0.0.1/x", "https://[::1]/x", "https://user:pw@b.example/x"]) {
      await expect(peerRequest(url, { allowLoopback: true })).rejects.toBeInstanceOf(FetchRefused);
    }
    await expect(peerRequest("http://127.0.0.1:9/x", { allowLoopback: false })).rejects.toBeInstanceOf(FetchRefused);
    await expect(peerRequest("http://10.0.0.1/x", { allowLoopback: true })).rejects.toBeInstanceOf(FetchRefused);
  });
});
