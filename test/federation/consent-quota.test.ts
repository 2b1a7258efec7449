// Two servers: consent reaches the same end as on one server (crossing requests become a contact; an unblock by
// asking again leaves both sides agreeing), and mail past the receiver's quota is refused, never dropped as delivered:
// the sender's agent is told. B runs with a small envelope quota (--quota envelope_bytes_per_day=3000).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { connect, startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;

beforeAll(async () => {
  const started = await startServers(2, [], { perServer: [[], ["--quota", "envelope_bytes_per_day=3000"]] });
  [A, B] = started.servers as [FedServer, FedServer];
  close = started.close;
}, 60_000);
afterAll(() => close?.());

const contactsOf = (s: FedServer, key: string, state: string) => s.ok("list_contacts", { state }, key).then((d) => d.contacts as any[]);
const onServer = (s: FedServer) => (c: any) => c.agent.display_name.endsWith(`@${s.host})`);
const received = (s: FedServer, key: string) => s.ok("list_envelopes", { direction: "received" }, key).then((d) => d.envelopes as any[]);

describe("consent across servers", () => {
  test("two agents adding each other by address (default policies) both end up accepted, as on one server", async () => {
    const alice = await A.register("alice");
    const bob = await B.register("bob");
    expect((await A.ok("add_contact", { address: `bob@${B.host}` }, alice.key)).status).toBe("requested");
    expect((await B.ok("add_contact", { address: `alice@${A.host}` }, bob.key)).status).toBe("requested");
    const [bobOnA] = await until(
      () => contactsOf(A, alice.key, "accepted"),
      (cs) => cs.some(onServer(B)),
    );
    await until(
      () => contactsOf(B, bob.key, "accepted"),
      (cs) => cs.some(onServer(A)),
    );
    expect(await contactsOf(A, alice.key, "outgoing")).toEqual([]);
    expect(await contactsOf(B, bob.key, "outgoing")).toEqual([]);
    const { envelope } = await A.ok("send_envelope", { to: [bobOnA.agent.handle], subject: "Hi", body_md: "Found you." }, alice.key);
    await until(
      () => received(B, bob.key),
      (es) => es.some((e) => e.envelope_id === envelope.envelope_id),
    );
  });

  test("unblocking by adding again: both sides agree they are contacts, and what the other sends arrives", async () => {
    const carol = await A.register("carol");
    const dan = await B.register("dan");
    const { yOnX: danOnA, xOnY: carolOnB } = await connect(A, carol, B, dan);
    await B.ok("block_contact", { handle: carolOnB }, dan.key);
    expect((await B.ok("add_contact", { handle: carolOnB }, dan.key)).status).toBe("requested");
    await until(
      () => contactsOf(B, dan.key, "accepted"),
      (cs) => cs.some((c) => c.agent.handle === carolOnB),
    );
    expect((await contactsOf(A, carol.key, "accepted")).map((c) => c.agent.handle)).toEqual([danOnA]);
    const { envelope } = await A.ok("send_envelope", { to: [danOnA], subject: "Back?", body_md: "Are you there?" }, carol.key);
    await until(
      () => received(B, dan.key),
      (es) => es.some((e) => e.envelope_id === envelope.envelope_id),
    );
  });
});

describe("mail past the receiver's quota", () => {
  test("is refused in the answer: the sender's outbox marks it undelivered and its agent gets network.undelivered", async () => {
    const erin = await A.register("erin");
    const frank = await B.register("frank");
    const { yOnX: frankOnA } = await connect(A, erin, B, frank);
    const sent: string[] = [];
    // 1,200 bytes each: B takes two (2,400 of its 3,000 a day for erin); A's own quota (the default) is far off.
    for (let i = 1; i <= 3; i++) {
      const { envelope } = await A.ok("send_envelope", { to: [frankOnA], subject: `Part ${i}`, body_md: "x".repeat(1200 - 6) }, erin.key);
      sent.push(envelope.envelope_id);
    }
    const items = await until(
      () => A.ok("get_inbox", {}, erin.key).then((d) => d.items as any[]),
      (xs) => xs.some((i) => i.type === "network.undelivered"),
    );
    const notice = items.find((i) => i.type === "network.undelivered");
    expect(notice.refs).toEqual({ host: B.host, envelope_id: sent[2] });
    expect(notice.payload).toMatchObject({ reason: "refused" });
    expect(notice.summary_md).toContain("Part 3");
    expect((await received(B, frank.key)).map((e) => e.envelope_id).sort()).toEqual([sent[0], sent[1]].sort());
    const db = new Database(A.db, { readonly: true });
    try {
      const rows = db
        .query(
          "SELECT json_extract(event, '$.envelope_id') AS id, undelivered, sent_at IS NOT NULL AS done FROM federation_outbox WHERE json_extract(event, '$.type') = 'envelope' AND sender_id = ?",
        )
        .all(erin.agent_id) as { id: string; undelivered: number; done: number }[];
      expect(rows.map((r) => [r.id, r.undelivered, r.done])).toEqual(sent.map((id, i) => [id, i === 2 ? 1 : 0, 1]));
    } finally {
      db.close();
    }
  });
});
