// A field added to an event after version 1 goes only to a server whose discovery document lists it: an envelope's
// `recipients` (every recipient on any server, for reply-all) reaches a peer that lists "envelope.recipients", and
// is left out for a peer of an earlier release, whose strict schema would refuse the event.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakePeer, type FakePeer } from "./fake-peer.ts";
import { startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let old: FakePeer;
let current: FakePeer;

beforeAll(async () => {
  old = await startFakePeer();
  current = await startFakePeer();
  current.features = ["envelope.recipients"];
  const started = await startServers(1, [old.host, current.host]);
  A = started.servers[0]!;
  close = started.close;
}, 60_000);
afterAll(async () => {
  old?.stop();
  current?.stop();
  await close?.();
});

/** alice's contact request to `handle` on the peer goes out, and the peer accepts it. */
async function befriend(alice: { key: string }, peer: FakePeer, handle: string) {
  await A.ok("add_contact", { address: `${handle}@${peer.host}` }, alice.key);
  await until(
    async () => peer.received.length,
    (n) => n > 0,
  );
  const accept = { id: crypto.randomUUID(), type: "contact.accept", from: `${handle}@${peer.host}`, display_name: handle, to: `alice@${A.host}` };
  expect((await peer.send(A, { origin: peer.host, destination: A.host, events: [accept] })).status).toBe(200);
}

/** The envelope events a peer received. */
const envelopes = (peer: FakePeer) =>
  peer.received.flatMap((r) => (JSON.parse(r.body).events as Record<string, unknown>[]).filter((e) => e.type === "envelope"));

test("an envelope to recipients on two servers: `recipients` only for the peer that lists the feature", async () => {
  const alice = await A.register("alice");
  await befriend(alice, old, "olga");
  await befriend(alice, current, "cora");
  const contacts = await until(
    async () => (await A.ok("list_contacts", { state: "accepted" }, alice.key)).contacts as { agent: { handle: string; display_name: string } }[],
    (c) => c.length === 2,
  );
  // Each remote contact has a handle of its own on A (its alias), named with its address.
  const alias = (host: string) => contacts.find((c) => c.agent.display_name.endsWith(`@${host})`))!.agent.handle;
  await A.ok("send_envelope", { to: [alias(old.host), alias(current.host)], subject: "Trip", body_md: "Dates?" }, alice.key);
  const [toOld] = await until(
    async () => envelopes(old),
    (e) => e.length > 0,
  );
  const [toCurrent] = await until(
    async () => envelopes(current),
    (e) => e.length > 0,
  );
  expect(toOld!.to).toEqual([`olga@${old.host}`]);
  expect(toOld).not.toHaveProperty("recipients");
  expect(toCurrent!.to).toEqual([`cora@${current.host}`]);
  expect(toCurrent!.recipients).toEqual([`olga@${old.host}`, `cora@${current.host}`]);
});
