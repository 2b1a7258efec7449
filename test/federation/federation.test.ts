import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;

beforeAll(async () => {
  const started = await startServers(2);
  [A, B] = started.servers as [FedServer, FedServer];
  close = started.close;
}, 60_000);
afterAll(() => close?.());

const contactsOf = (s: FedServer, key: string, state = "accepted") => s.ok("list_contacts", { state }, key).then((d) => d.contacts as any[]);
const inbox = (s: FedServer, key: string) => s.ok("get_inbox", {}, key).then((d) => d.items as any[]);

describe("federation between two servers", () => {
  test("discovery names the server, its endpoint and an Ed25519 key with kid and nbf", async () => {
    const doc: any = await (await fetch(`${A.url}/.well-known/svc-federation`)).json();
    expect(doc.server).toBe(A.host);
    expect(doc.endpoint).toBe(`${A.url}/fed/v1`);
    expect(doc.versions).toContain("1");
    expect(doc.jwks.keys[0]).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA" });
    expect(typeof doc.jwks.keys[0].kid).toBe("string");
    expect(typeof doc.jwks.keys[0].nbf).toBe("number");
    expect(doc.jwks.keys[0].d).toBeUndefined();
  });

  test("a contact made by code across servers, then envelopes both ways", async () => {
    const alice = await A.register("alice");
    const bob = await B.register("bob");
    const { code } = await B.ok("get_contact_code", {}, bob.key);
    const sent = await A.ok("add_contact", { code: `${code}@${B.host}`, note: "Hi Bob, Alice here" }, alice.key);
    expect(sent).toMatchObject({ status: "requested", contact: null });

    // Bob's server shows the request from alice's alias, with her address in the display name.
    const items = await until(
      () => inbox(B, bob.key),
      (xs) => xs.some((i) => i.type === "contact.request"),
    );
    const request = items.find((i) => i.type === "contact.request");
    expect(request.refs.handle).toBe(`alice-${B.host === A.host ? "" : A.host.replace(/[^a-z0-9]/g, "")}`);
    expect(request.note.untrusted_content).toContain("Alice here");
    const incoming = await contactsOf(B, bob.key, "incoming");
    expect(incoming[0].agent.display_name).toContain(`(alice@${A.host})`);
    await B.ok("respond_contact_request", { handle: request.refs.handle, action: "accept" }, bob.key);

    // Alice's server hears it: bob's alias is her accepted contact, and she has a contact.accepted item.
    const aliceContacts = await until(
      () => contactsOf(A, alice.key),
      (cs) => cs.length === 1,
    );
    const bobAlias = aliceContacts[0].agent.handle;
    expect(aliceContacts[0].agent.display_name).toContain(`(bob@${B.host})`);
    expect((await inbox(A, alice.key)).some((i) => i.type === "contact.accepted")).toBe(true);

    // Envelopes both ways; each side keeps its copy, and a reply lands in the same thread.
    const { envelope: env } = await A.ok("send_envelope", { to: [bobAlias], subject: "Dinner?", body_md: "Friday at 8?" }, alice.key);
    const got = await until(
      () => B.ok("list_envelopes", { direction: "received" }, bob.key),
      (d) => d.envelopes.length === 1,
    );
    expect(got.envelopes[0].envelope_id).toBe(env.envelope_id);
    expect(got.envelopes[0].subject.untrusted_content).toBe("Dinner?");
    const { envelope: full } = await B.ok("get_envelope", { envelope_id: env.envelope_id }, bob.key);
    expect(full.body_md.untrusted_content).toBe("Friday at 8?");
    await B.ok("reply_envelope", { envelope_id: env.envelope_id, body_md: "Yes!" }, bob.key);
    const back = await until(
      () => A.ok("list_envelopes", { direction: "received" }, alice.key),
      (d) => d.envelopes.length === 1,
    );
    expect(back.envelopes[0].thread_id).toBe(env.thread_id);
    expect(back.envelopes[0].in_reply_to).toBe(env.envelope_id);
    expect((await A.ok("list_envelopes", { direction: "sent" }, alice.key)).envelopes).toHaveLength(1);
  }, 30_000);
});
