// What a receiving server checks of a transaction, with a stand-in peer signing what a hostile server would send.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fakeKey, startFakePeer, type FakePeer } from "./fake-peer.ts";
import { startServers, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let F: FakePeer;
let stranger: FakePeer;
let alice: { handle: string; key: string };
let aliceCode: string;

beforeAll(async () => {
  F = await startFakePeer();
  stranger = await startFakePeer();
  const started = await startServers(1, [F.host]);
  A = started.servers[0]!;
  close = started.close;
  alice = await A.register("alice");
  aliceCode = (await A.ok("get_contact_code", {}, alice.key)).code;
}, 60_000);
afterAll(async () => {
  F?.stop();
  stranger?.stop();
  await close?.();
});

const txn = (events: unknown[], over: Record<string, unknown> = {}) => ({ origin: F.host, destination: A.host, events, ...over });
const request = (to: { code?: string; to?: string }, from = `mallory@${F.host}`) => ({
  id: crypto.randomUUID(),
  type: "contact.request",
  from,
  ...to,
  note: "hello",
});
const requestsOf = async (key: string) =>
  ((await A.ok("get_inbox", { include_seen: true, since: "0" }, key)).items as any[]).filter((i) => i.type === "contact.request" && !i.resolved);

describe("receiving a transaction", () => {
  test("a signed request by code reaches the agent; a replay gets the same answer and adds nothing; a repeated event id is dropped", async () => {
    const event = request({ code: aliceCode });
    const first = await F.send(A, txn([event]));
    expect(first.status).toBe(200);
    expect(JSON.parse(first.text).results).toEqual([{ id: event.id, result: "ok" }]);
    const items = await requestsOf(alice.key);
    expect(items).toHaveLength(1);
    expect(items[0].refs.handle).toStartWith("mallory-");
    const replay = await F.send(A, txn([event]), { txnId: first.txnId });
    expect(replay.status).toBe(200);
    expect(replay.text).toBe(first.text);
    const again = await F.send(A, txn([event]));
    expect(again.status).toBe(200);
    expect(await requestsOf(alice.key)).toHaveLength(1);
  });

  test("a tampered body, the wrong destination and a stale created are refused; nothing is applied", async () => {
    const signed = JSON.stringify(txn([request({ code: aliceCode })]));
    const tampered = await F.send(A, signed, { sentBody: signed.replace("hello", "HELLO") });
    expect(tampered.status).toBe(401);
    const wrong = await F.send(A, txn([request({ code: aliceCode })], { destination: "127.0.0.1:1" }));
    expect(wrong.status).toBe(403);
    const stale = await F.send(A, txn([request({ code: aliceCode })]), { created: Math.floor(Date.now() / 1000) - 600 });
    expect(stale.status).toBe(401);
    const replayedOther = await F.send(A, txn([request({ code: aliceCode })]), { txnId: crypto.randomUUID() });
    expect(replayedOther.status).toBe(200);
  });

  test("more than 50 events, or more than 1 MiB, is refused whole", async () => {
    const many = Array.from({ length: 51 }, () => request({ code: aliceCode }));
    expect((await F.send(A, txn(many))).status).toBe(400);
    const big = await F.send(A, txn([{ ...request({ code: aliceCode }), note: "x".repeat(1024 * 1024) }]));
    expect(big.status).toBe(413);
  });

  test("a server not on the allowlist is refused before any cryptography: its keys are never fetched", async () => {
    const res = await stranger.send(A, { origin: stranger.host, destination: A.host, events: [request({ code: aliceCode }, `eve@${stranger.host}`)] });
    expect(res.status).toBe(403);
    expect(stranger.fetches).toBe(0);
  });

  test("a server speaks only for its own agents, and only to this server's", async () => {
    const carol = await A.register("carol");
    const code = (await A.ok("get_contact_code", {}, carol.key)).code;
    const forged = [request({ code }, `x@${A.host}`), request({ code }, "x@a.example"), request({ to: `carol@127.0.0.1:9` })];
    const res = await F.send(A, txn(forged));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).results.map((r: any) => r.result)).toEqual(["rejected", "rejected", "rejected"]);
    expect(await requestsOf(carol.key)).toHaveLength(0);
  });

  test("a declined or blocked sender gets byte for byte the answer a welcome one gets", async () => {
    const bob = await A.register("bob");
    const dave = await A.register("dave");
    const bobCode = (await A.ok("get_contact_code", {}, bob.key)).code;
    const daveCode = (await A.ok("get_contact_code", {}, dave.key)).code;
    await F.send(A, txn([request({ code: bobCode })]));
    const [item] = await requestsOf(bob.key);
    await A.ok("respond_contact_request", { handle: item.refs.handle, action: "decline" }, bob.key);
    const normalised = async (code: string) => {
      const event = request({ code });
      const res = await F.send(A, txn([event]));
      return { status: res.status, type: res.headers.get("content-type"), text: res.text.replaceAll(res.txnId, "T").replaceAll(event.id, "E") };
    };
    const declined = await normalised(bobCode);
    const welcome = await normalised(daveCode);
    expect(declined).toEqual(welcome);
    expect(await requestsOf(bob.key)).toHaveLength(0);
    expect(await requestsOf(dave.key)).toHaveLength(1);
    await A.ok("block_contact", { handle: item.refs.handle }, bob.key);
    expect(await normalised(bobCode)).toEqual(welcome);
    expect(await requestsOf(bob.key)).toHaveLength(0);
  });

  test("a rotated key is fetched on its unknown kid; another unknown kid within KEY_REFETCH_MS (seconds) is refused without a fetch", async () => {
    const rotated = await fakeKey();
    F.keys = [rotated, ...F.keys];
    const before = F.fetches;
    const ok = await F.send(A, txn([request({ code: aliceCode })]), { key: rotated });
    expect(ok.status).toBe(200);
    expect(F.fetches).toBe(before + 1);
    const unknown = await F.send(A, txn([request({ code: aliceCode })]), { key: await fakeKey() });
    expect(unknown.status).toBe(401);
    expect(F.fetches).toBe(before + 1);
  });
});
