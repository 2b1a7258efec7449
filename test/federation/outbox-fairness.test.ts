// The outbox sends to each destination on its own: hosts that accept a connection and never answer (each send waits
// out the 5 s peer timeout) delay no other agent's delivery; and an agent may have undelivered events for at most
// its pending_hosts quota of other servers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, startServers, until, type FedServer } from "./servers.ts";

// Loopback hosts that accept every connection and never say a word.
const silent = Array.from({ length: 20 }, () => {
  const counter = { connections: 0 };
  const listener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open() {
        counter.connections++;
      },
      data() {},
    },
  });
  return { host: `127.0.0.1:${listener.port}`, listener, counter };
});

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;
let alice: { key: string };
let bob: { key: string };
let bobOnA: string;

beforeAll(async () => {
  const started = await startServers(
    2,
    silent.map((s) => s.host),
    { flags: ["--quota", "pending_hosts=10"] },
  );
  [A, B] = started.servers as [FedServer, FedServer];
  close = started.close;
  alice = await A.register("alice");
  bob = await B.register("bob");
  bobOnA = (await connect(A, alice, B, bob)).yOnX;
}, 60_000);
afterAll(async () => {
  // The silent hosts first, dropping their connections: else A's stop waits out each send's 5 s timeout, as long as
  // the hook's own limit.
  for (const s of silent) s.listener.stop(true);
  await close?.();
}, 20_000);

describe("an agent's pending servers", () => {
  test("past pending_hosts, a request to one more server is refused with CONFLICT that names the limit; to one already waiting it goes", async () => {
    const mallory = await A.register("mallory");
    for (const s of silent.slice(0, 10)) expect((await A.ok("add_contact", { address: `xavier@${s.host}` }, mallory.key)).status).toBe("requested");
    const refused = await A.call("add_contact", { address: `xavier@${silent[10]!.host}` }, mallory.key);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("CONFLICT");
    expect(refused.body.error.message).toContain("the limit is 10");
    expect(refused.body.error.details).toEqual({ limit: 10, pending_hosts: 10 });
    // Another agent on a server already waiting is still fine, and so is another agent's own quota.
    expect((await A.ok("add_contact", { address: `yvonne@${silent[0]!.host}` }, mallory.key)).status).toBe("requested");
    const trudy = await A.register("trudy");
    for (const s of silent.slice(10)) await A.ok("add_contact", { address: `xavier@${s.host}` }, trudy.key);
  });

  test("twenty hosts that never answer delay no other delivery: an envelope to a live server arrives at once", async () => {
    // The sender is busy with the silent hosts now.
    await until(
      async () => silent.filter((s) => s.counter.connections > 0).length,
      (n) => n >= 1,
    );
    const { envelope } = await A.ok("send_envelope", { to: [bobOnA], subject: "Still there?", body_md: "Quick one." }, alice.key);
    // Before, the hosts were tried one after another, 5 s each: this waited up to 100 s.
    await until(
      () => B.ok("list_envelopes", { direction: "received" }, bob.key),
      (d) => d.envelopes.some((e: any) => e.envelope_id === envelope.envelope_id),
      3_000,
    );
  });
});
