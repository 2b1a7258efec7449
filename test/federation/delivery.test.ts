// The outbox: what an agent sends to another server arrives exactly once and in order, whether the receiver was
// down for a while or the sender was killed (SIGKILL) while sending.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;
let alice: { key: string };
let bob: { key: string };
let bobAlias: string;

beforeAll(async () => {
  const started = await startServers(2);
  [A, B] = started.servers as [FedServer, FedServer];
  close = started.close;
  alice = await A.register("alice");
  bob = await B.register("bob");
  const { code } = await B.ok("get_contact_code", {}, bob.key);
  await A.ok("add_contact", { code: `${code}@${B.host}` }, alice.key);
  const incoming = await until(
    () => B.ok("list_contacts", { state: "incoming" }, bob.key),
    (d) => d.contacts.length === 1,
  );
  await B.ok("respond_contact_request", { handle: incoming.contacts[0].agent.handle, action: "accept" }, bob.key);
  const accepted = await until(
    () => A.ok("list_contacts", { state: "accepted" }, alice.key),
    (d) => d.contacts.length === 1,
  );
  bobAlias = accepted.contacts[0].agent.handle;
}, 60_000);
afterAll(() => close?.());

/** Subjects bob received, oldest first. */
const received = async () => {
  const subjects: string[] = [];
  let cursor: string | undefined;
  do {
    const d = await B.ok("list_envelopes", { direction: "received", limit: 100, ...(cursor ? { cursor } : {}) }, bob.key);
    subjects.push(...d.envelopes.map((e: any) => e.subject.untrusted_content));
    cursor = d.next_cursor ?? undefined;
  } while (cursor);
  return subjects.reverse();
};

/** The sender's own view of its outbox: unsent events, and the attempts of the transaction in flight. */
const outbox = (s: FedServer) => {
  const db = new Database(s.db, { readonly: true });
  try {
    const unsent = db.query("SELECT count(*) AS n FROM federation_outbox WHERE sent_at IS NULL").get() as { n: number };
    const inFlight = db.query("SELECT attempts FROM federation_txns_out").get() as { attempts: number } | null;
    return Promise.resolve({ unsent: unsent.n, attempts: inFlight?.attempts ?? 0 });
  } finally {
    db.close();
  }
};

const sendMany = async (prefix: string, n: number) => {
  for (let i = 1; i <= n; i++) await A.ok("send_envelope", { to: [bobAlias], subject: `${prefix} ${i}`, body_md: `number ${i}` }, alice.key);
};

describe("delivery through the outbox", () => {
  test("the receiver down while 10 envelopes are sent: each arrives once, in order, after it is back", async () => {
    await B.proc.stop();
    await sendMany("down", 10);
    // The sender tried, and failed, more than once against the closed port.
    await until(
      () => outbox(A),
      (o) => o.attempts >= 2,
    );
    await B.restart();
    const got = await until(received, (s) => s.filter((x) => x.startsWith("down")).length >= 10);
    expect(got.filter((x) => x.startsWith("down"))).toEqual(Array.from({ length: 10 }, (_, i) => `down ${i + 1}`));
  }, 45_000);

  test("the sender killed with SIGKILL while sending: after its restart each envelope arrives once, in order", async () => {
    await sendMany("kill", 10);
    await until(received, (s) => s.some((x) => x.startsWith("kill")));
    await A.proc.kill9();
    await A.restart();
    const got = await until(received, (s) => s.filter((x) => x.startsWith("kill")).length >= 10);
    expect(got.filter((x) => x.startsWith("kill"))).toEqual(Array.from({ length: 10 }, (_, i) => `kill ${i + 1}`));
    await until(
      () => outbox(A),
      (o) => o.unsent === 0 && o.attempts === 0,
    );
    expect((await received()).filter((x) => x.startsWith("kill"))).toHaveLength(10);
  }, 45_000);
});
