// A stand-in for another svc server, run by the test: it publishes its discovery document and keys and signs
// transactions as svc does (server/federation/signatures.ts, checked against RFC 9421's vector on its own), so a
// test can send what a hostile or broken server would; it answers the transactions sent to it as a test scripts
// (401, 429 with Retry-After, 500, no answer at all), then takes them, each kept as it arrived.
import { freePort } from "../hardening/spawn-server.ts";
import { contentDigest, FED_TAG, type Message, type SignatureParams, signMessage } from "../../server/federation/signatures.ts";

export interface FakeKey {
  kid: string;
  key: CryptoKey;
  jwk: Record<string, unknown>;
}

export async function fakeKey(kid = `fake-${crypto.randomUUID().slice(0, 8)}`): Promise<FakeKey> {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = await crypto.subtle.exportKey("jwk", pair.publicKey);
  return { kid, key: pair.privateKey, jwk: { kty: "OKP", crv: "Ed25519", x: pub.x, kid, alg: "EdDSA", use: "sig", nbf: Math.floor(Date.now() / 1000) - 60 } };
}

export interface SendOptions {
  /** Signs this body but sends `sentBody` (a tampered body). */
  sentBody?: string;
  created?: number;
  key?: FakeKey;
  txnId?: string;
  /** Changes the header fields after signing (a Signature-Input that covers something else, ...). */
  rewrite?: (headers: Headers) => void;
  /** Sends no Signature-Input and no Signature at all. */
  unsigned?: boolean;
  /** The Content-Digest sent and signed, of the body signed, in place of svc's sha-256. */
  digest?: (body: string) => string | Promise<string>;
  /** Signs with another implementation in place of svc's signMessage. */
  sign?: (m: Message, key: FakeKey, params: SignatureParams) => Promise<{ signatureInput: string; signature: string }>;
}

/** A transaction a real server sent to the fake peer, as it arrived, and when (Date.now()). */
export interface ReceivedTxn {
  at: number;
  txnId: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * One scripted answer to a transaction sent to the fake peer, its header fields made when it answers (an HTTP-date
 * counts from then); `hang` never answers (the sender times out).
 */
export type ScriptedAnswer = { status: number; headers?: () => Record<string, string> } | "hang";

export interface FakePeer {
  host: string;
  keys: FakeKey[];
  /** Discovery fetches answered so far. */
  fetches: number;
  /** What its discovery document says it takes beyond version 1; none said (an earlier release) when unset. */
  features?: string[];
  /** Answers to the next transactions sent here, in order; once they run out, 200 taking every event. */
  answers: ScriptedAnswer[];
  /** The transactions sent here (not checked: it takes what it is scripted to), as they arrived. */
  received: ReceivedTxn[];
  send(target: { url: string }, body: unknown, opts?: SendOptions): Promise<{ status: number; text: string; headers: Headers; txnId: string }>;
  stop(): void;
}

export async function startFakePeer(): Promise<FakePeer> {
  const port = freePort();
  const host = `127.0.0.1:${port}`;
  const peer: FakePeer = {
    host,
    keys: [await fakeKey()],
    fetches: 0,
    answers: [],
    received: [],
    async send(target, body, opts = {}) {
      const txnId = opts.txnId ?? crypto.randomUUID();
      const text = typeof body === "string" ? body : JSON.stringify(body);
      const url = `${target.url}/fed/v1/txn/${txnId}`;
      const headers = new Headers({ "content-type": "application/json", "content-digest": await (opts.digest ?? contentDigest)(text) });
      const key = opts.key ?? peer.keys[0]!;
      const created = opts.created ?? Math.floor(Date.now() / 1000);
      const params = { created, expires: created + 300, keyid: key.kid, alg: "ed25519", tag: FED_TAG };
      const message = { method: "PUT", url, headers };
      const sig = opts.sign ? await opts.sign(message, key, params) : await signMessage(message, key.key, params);
      if (!opts.unsigned) {
        headers.set("signature-input", sig.signatureInput);
        headers.set("signature", sig.signature);
      }
      opts.rewrite?.(headers);
      const res = await fetch(url, { method: "PUT", headers, body: opts.sentBody ?? text });
      return { status: res.status, text: await res.text(), headers: res.headers, txnId };
    },
    stop: () => {
      server.stop(true);
      for (const end of hanging) end();
    },
  };
  const hanging: (() => void)[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(req) {
      const txn = /^\/fed\/v1\/txn\/([^/]+)$/.exec(new URL(req.url).pathname);
      if (txn && req.method === "PUT") {
        const body = await req.text();
        peer.received.push({
          at: Date.now(),
          txnId: decodeURIComponent(txn[1]!),
          method: req.method,
          url: req.url,
          headers: Object.fromEntries(req.headers),
          body,
        });
        const scripted = peer.answers.shift();
        if (scripted === "hang") return new Promise<Response>((resolve) => hanging.push(() => resolve(new Response("stopped", { status: 503 }))));
        if (scripted) return Response.json({ error: "scripted" }, { status: scripted.status, headers: scripted.headers?.() });
        const events = (JSON.parse(body).events ?? []) as { id: string }[];
        return Response.json({ txn_id: decodeURIComponent(txn[1]!), results: events.map((e) => ({ id: e.id, result: "ok" })) });
      }
      if (new URL(req.url).pathname !== "/.well-known/svc-federation") return new Response("no", { status: 404 });
      peer.fetches++;
      return Response.json({
        server: host,
        endpoint: `http://${host}/fed/v1`,
        versions: ["1"],
        ...(peer.features ? { features: peer.features } : {}),
        jwks: { keys: peer.keys.map((k) => k.jwk) },
      });
    },
  });
  return peer;
}
