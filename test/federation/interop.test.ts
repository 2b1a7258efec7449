// svc's federation signatures against a second implementation, npm's http-message-signatures (RFC 9421, over
// structured-headers): what svc's outbox sends verifies with it, and what it signs svc's receiver takes. Then the
// parsing the two must agree on, through the real receiver: a label named twice keeps its last value, whitespace the
// structured-field grammar allows changes nothing, and Content-Digest is a Dictionary of sha-256 and/or sha-512.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, createPublicKey, KeyObject } from "node:crypto";
import { createSigner, createVerifier, httpbis } from "http-message-signatures";
import { parseDictionary } from "structured-headers";
import { FED_COMPONENTS, FED_TAG, type Message, type SignatureParams } from "../../server/federation/signatures.ts";
import { type FakeKey, fakeKey, startFakePeer, type FakePeer } from "./fake-peer.ts";
import { startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let F: FakePeer;

beforeAll(async () => {
  F = await startFakePeer();
  const started = await startServers(1, [F.host]);
  A = started.servers[0]!;
  close = started.close;
}, 60_000);
afterAll(async () => {
  F?.stop();
  await close?.();
});

const PARAMS = ["created", "expires", "keyid", "alg", "tag"];
const WANT = "sha-256=10, sha-512=3";
/** An empty transaction from F: it changes nothing, so each test may send as many as it needs. */
const txn = () => ({ origin: F.host, destination: A.host, events: [] });
const digestOf = (alg: "sha256" | "sha512", body: string) => createHash(alg).update(body).digest("base64");

/** http-message-signatures signing what svc signs: its components, label, tag, keyid, created and expires. */
async function librarySign(m: Message, key: FakeKey, params: SignatureParams) {
  const signed = await httpbis.signMessage(
    {
      key: createSigner(KeyObject.from(key.key), "ed25519", key.kid),
      name: "fed",
      fields: [...FED_COMPONENTS],
      params: PARAMS,
      paramValues: {
        created: new Date(params.created * 1000),
        expires: new Date(params.expires! * 1000),
        keyid: params.keyid,
        alg: params.alg,
        tag: params.tag,
      },
    },
    { method: m.method, url: m.url, headers: Object.fromEntries(m.headers) },
  );
  return { signatureInput: String(signed.headers["Signature-Input"]), signature: String(signed.headers.Signature) };
}

describe("svc and http-message-signatures agree", () => {
  test("a transaction svc's outbox sends verifies with http-message-signatures, and not once a covered field changes", async () => {
    const alice = await A.register("alice");
    await A.ok("add_contact", { address: `frank@${F.host}` }, alice.key);
    const [sent] = await until(
      async () => F.received,
      (r) => r.length > 0,
    );
    const { jwks } = await (await fetch(`${A.url}/.well-known/svc-federation`)).json();
    const config = {
      keyLookup: async (p: { keyid?: string }) => {
        const jwk = jwks.keys.find((k: { kid: string }) => k.kid === p.keyid);
        return jwk ? { id: jwk.kid, algs: ["ed25519"], verify: createVerifier(createPublicKey({ key: jwk, format: "jwk" }), "ed25519") } : null;
      },
      requiredFields: [...FED_COMPONENTS],
      requiredParams: PARAMS,
    };
    expect(await httpbis.verifyMessage(config, sent!)).toBe(true);
    expect((parseDictionary(sent!.headers["signature-input"]!).get("fed")![1] as Map<string, unknown>).get("tag")).toBe(FED_TAG);
    // The digest the signature covers is the body's, by another hash than svc's.
    const [digest] = parseDictionary(sent!.headers["content-digest"]!).get("sha-256")!;
    expect(Buffer.from(digest as ArrayBuffer).toString("base64")).toBe(digestOf("sha256", sent!.body));
    const changed = { ...sent!, headers: { ...sent!.headers, "content-type": "text/plain" } };
    expect(await httpbis.verifyMessage(config, changed)).toBe(false);
  });

  test("a transaction http-message-signatures signs is taken by svc's receiver; a forged one is not", async () => {
    const ok = await F.send(A, txn(), { sign: librarySign });
    expect(ok.status).toBe(200);
    const forged = await F.send(A, txn(), { sign: librarySign, key: await fakeKey(F.keys[0]!.kid) });
    expect(forged.status).toBe(401);
  });
});

describe("parsed as structured fields (RFC 8941)", () => {
  const decoyInput = `fed=("@method");created=1;keyid="decoy"`;
  const decoySignature = `fed=:${Buffer.alloc(64).toString("base64")}:`;
  const set = (name: string, value: (sent: string) => string) => (h: Headers) => h.set(name, value(h.get(name)!));

  test("a label named twice in Signature-Input or Signature keeps its last value", async () => {
    const lastReal = await F.send(A, txn(), {
      rewrite: (h) => {
        set("signature-input", (v) => `${decoyInput}, ${v}`)(h);
        set("signature", (v) => `${decoySignature}, ${v}`)(h);
      },
    });
    expect(lastReal.status).toBe(200);
    expect((await F.send(A, txn(), { rewrite: set("signature-input", (v) => `${v}, ${decoyInput}`) })).status).toBe(401);
    expect((await F.send(A, txn(), { rewrite: set("signature", (v) => `${v}, ${decoySignature}`) })).status).toBe(401);
  });

  test("whitespace the grammar allows in Signature-Input leaves the signature base canonical; elsewhere it is refused", async () => {
    const betweenComponents = (v: string) => v.replaceAll('" "', '"  "');
    const everywhere = (v: string) =>
      `other=("@method");created=1 ,  ${v.replace("(", "(  ").replaceAll('" "', '"   "').replace(")", " )").replaceAll(";", ";  ")}  `;
    for (const spaced of [betweenComponents, everywhere]) {
      expect((await F.send(A, txn(), { rewrite: set("signature-input", spaced) })).status).toBe(200);
    }
    // RFC 8941 allows no space before a parameter's semicolon.
    const before = await F.send(A, txn(), { rewrite: set("signature-input", (v) => v.replace(");", ") ;")) });
    expect(before.status).toBe(401);
  });
});

describe("Content-Digest (RFC 9530)", () => {
  const sha256 = (body: string) => `sha-256=:${digestOf("sha256", body)}:`;
  const sha512 = (body: string) => `sha-512=:${digestOf("sha512", body)}:`;
  const wrong512 = `sha-512=:${digestOf("sha512", "another body")}:`;

  test("sha-512 alone, sha-256 beside sha-512, and a known algorithm beside an unknown one are taken", async () => {
    for (const digest of [sha512, (b: string) => `${sha256(b)}, ${sha512(b)}`, (b: string) => `md5=:AAAA:, ${sha256(b)}`]) {
      const res = await F.send(A, txn(), { digest });
      expect({ status: res.status, digest: res.headers.get("content-digest") }).toEqual({ status: 200, digest: null });
    }
  });

  test("a missing, unknown or mismatched digest is refused with Want-Content-Digest", async () => {
    const signed = JSON.stringify(txn());
    const refusals = [
      await F.send(A, txn(), { digest: () => wrong512 }),
      await F.send(A, txn(), { digest: (b) => `${sha256(b)}, ${wrong512}` }),
      await F.send(A, txn(), { digest: () => "md5=:AAAA:" }),
      await F.send(A, txn(), { digest: () => "sha-256=1" }),
      await F.send(A, txn(), { rewrite: (h) => h.delete("content-digest") }),
      await F.send(A, signed, { sentBody: signed.replace("[]", "[ ]") }),
    ];
    expect(refusals.map((r) => [r.status, r.headers.get("want-content-digest")])).toEqual(refusals.map(() => [401, WANT]));
  });

  test("a refusal for the signature itself does not ask for a digest", async () => {
    const forged = await F.send(A, txn(), { key: await fakeKey(F.keys[0]!.kid) });
    expect(forged.status).toBe(401);
    expect(forged.headers.get("want-content-digest")).toBeNull();
  });
});
