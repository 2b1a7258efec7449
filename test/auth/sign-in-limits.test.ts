// What the sign-in pages tell, and how many guesses they take (docs/security.md, "Text messages, attachments, read-only tokens and guess windows"): password guesses in
// sliding windows; every limit keyed on the address counts an IPv6 address as its /64; the first answer of a code sign-in the
// same for a handle that exists, one that does not and a disabled one; a disabled handle's right password answered as
// a wrong one; a passkey registered twice refused on a page; Enter in the sign-up password field signs up with it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, generateKeyPairSync } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";
import { limitAddress } from "../../server/client-address.ts";
import { MINUTE } from "../../server/clock.ts";
import { setDisabled } from "../../server/domain/agent-admin.ts";
import { agentByHandle } from "../../server/domain/agents.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient, type PageResponse } from "../web/page-client.ts";

const WRONG = "The handle or the password is not right.";

/** A form posted by `b` (its cookies and CSRF token) as if from `address`, behind the trusted proxy on loopback. */
async function postFrom(b: PageClient, path: string, fields: Record<string, string>, address: string): Promise<number> {
  const res = await fetch(`${b.base}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-forwarded-for": address,
      cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
    },
    body: new URLSearchParams({ ...fields, csrf: b.csrf }),
  });
  await res.body?.cancel();
  return res.status;
}

async function signUp(s: TestServer, handle: string, password: string) {
  const b = new PageClient(s.url);
  await b.get("/signup");
  expect((await b.post("/signup", { handle, display_name: handle.toUpperCase(), method: "password", password })).location).toBe("/");
}

describe("password guesses", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  test("a sliding hour: 10 wrong guesses just before the clock hour turns leave none just after it", async () => {
    await signUp(s, "slide-ann", "a long and unusual phrase");
    const b = new PageClient(s.url);
    await b.get("/signin");
    // The test clock starts at 12:00; the guesses come at 12:50, ten minutes before a fixed window would reset.
    s.clock.advance(50 * MINUTE);
    for (let i = 0; i < 10; i++) expect((await b.post("/signin/password", { handle: "slide-ann", password: `wrong ${i}` })).status).toBe(401);
    s.clock.advance(11 * MINUTE);
    const held = await b.post("/signin/password", { handle: "slide-ann", password: "wrong again" });
    expect(held.status).toBe(429);
    // The first guess leaves the window an hour after it was made: 49 minutes from now.
    expect(held.headers.get("retry-after")).toBe(String(49 * 60));
    expect((await b.post("/signin/password", { handle: "slide-ann", password: "a long and unusual phrase" })).status).toBe(429);
    s.clock.advance(50 * MINUTE);
    expect((await b.post("/signin/password", { handle: "slide-ann", password: "a long and unusual phrase" })).location).toBe("/account");
  });
});

describe("an IPv6 client counts as its /64", () => {
  let s: TestServer;
  const gateway = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(null, { status: 200 }) });
  beforeAll(async () => {
    s = await startTestServer({ trustedProxies: ["127.0.0.1"], smsWebhook: `http://127.0.0.1:${gateway.port}/sms` });
  });
  afterAll(async () => {
    await s.stop();
    gateway.stop(true);
  });

  test("the address as limits key it", () => {
    expect(limitAddress("2001:db8:7:7::1")).toBe("2001:db8:7:7::/64");
    expect(limitAddress("2001:0DB8:0007:0007:ffff:ffff:ffff:ffff")).toBe("2001:db8:7:7::/64");
    expect(limitAddress("::ffff:198.51.100.7")).toBe("198.51.100.7");
    expect(limitAddress("198.51.100.7")).toBe("198.51.100.7");
  });

  test("asks from ten addresses of one /64 spend that /64's ten an hour; another /64 still asks", async () => {
    const b = new PageClient(s.url);
    await b.get("/signin");
    // Sign-in codes by text for handles nobody has: cheap to ask, limited per address (10 an hour), one per handle here.
    const ask = (handle: string, address: string) => postFrom(b, "/account/signin/code", { flow: "account", channel: "sms", handle }, address);
    for (let i = 1; i <= 10; i++) expect(await ask(`v6-${i}`, `2001:db8:7:7::${i.toString(16)}`)).toBe(303);
    expect(await ask("v6-last", "2001:db8:7:7:ffff:ffff:ffff:ffff")).toBe(429);
    expect(await ask("v6-last", "2001:db8:7:8::1")).toBe(303);
  });
});

describe("an IPv6 client counts as its /64 for the per-minute limits too", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ trustedProxies: ["127.0.0.1"], publicRateLimit: 3 });
  });
  afterAll(() => s.stop());

  test("public calls from three addresses of one /64 spend that /64's three a minute; another /64 still calls", async () => {
    const from = (address: string) => s.call("join_network", { client_name: "V6 App" }, null, { "x-forwarded-for": address });
    for (const address of ["2001:db8:9:9::1", "2001:db8:9:9::2", "2001:db8:9:9:abcd::3"]) expect((await from(address)).status).toBe(200);
    const over = await from("2001:db8:9:9:ffff:ffff:ffff:ffff");
    expect({ status: over.status, policy: over.headers.get("ratelimit-policy") }).toEqual({ status: 429, policy: '"address";q=3;w=60' });
    expect((await from("2001:db8:9:a::1")).status).toBe(200);
  });
});

/** The svc_signin cookie of an answer: its attributes, and its value's payload (the signature only by length). */
function signinCookie(r: PageResponse) {
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith("svc_signin="));
  expect(cookie).toBeDefined();
  const [pair, ...attributes] = cookie!.split("; ");
  const [payload, mac] = pair!.slice("svc_signin=".length).split(".");
  return { attributes, payload: JSON.parse(Buffer.from(payload ?? "", "base64url").toString() || "null"), macLength: (mac ?? "").length };
}

describe("what a code sign-in's answers tell", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  test("a handle that exists, one that does not and a disabled one get the same first answer and the same wrong-code answers", async () => {
    await s.register("same-real");
    await s.register("same-disabled");
    await s.server.db.tx((tx) => setDisabled(tx, "same-disabled", s.clock.now()));
    const answers = [];
    for (const handle of ["same-real", "same-nobody", "same-disabled"]) {
      const b = new PageClient(s.url);
      await b.get("/signin");
      const sent = await b.post("/account/signin/code", { flow: "account", handle });
      const first = { status: sent.status, location: sent.location, ...signinCookie(sent) };
      const page = await b.follow(sent);
      const wrong = await b.post("/account/signin/verify", { flow: "account", code: "0000-0000" });
      answers.push({
        handle,
        first: { ...first, payload: { ...first.payload, handle: "*" } },
        page: { status: page.status, text: page.html.replaceAll(handle, "*").replace(/value="[^"]*"/g, "") },
        wrong: { status: wrong.status, ...signinCookie(wrong), error: /That code is not right\. \d tries left\./.exec(wrong.html)?.[0] },
      });
    }
    const [real, nobody, disabled] = answers.map(({ handle: _, ...rest }) => ({
      ...rest,
      wrong: { ...rest.wrong, payload: { ...rest.wrong.payload, handle: "*" } },
    }));
    expect(real!.first.attributes).toEqual(["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=600"]);
    expect(real!.wrong.payload.attempts).toBe(1);
    expect(nobody).toEqual(real!);
    expect(disabled).toEqual(real!);
  });
});

describe("a disabled handle's password", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  test("the right password is answered, and counted, as a wrong one", async () => {
    await signUp(s, "off-ann", "a long and unusual phrase");
    await s.server.db.tx((tx) => setDisabled(tx, "off-ann", s.clock.now()));
    const b = new PageClient(s.url);
    await b.get("/signin");
    const right = await b.post("/signin/password", { handle: "off-ann", password: "a long and unusual phrase" });
    const wrong = await b.post("/signin/password", { handle: "off-ann", password: "not the password" });
    expect({ status: right.status, alert: right.html.includes(WRONG) }).toEqual({ status: 401, alert: true });
    expect(right.html.replace(/value="[^"]*"/g, "")).toBe(wrong.html.replace(/value="[^"]*"/g, ""));
    // Counted: 8 more reach the handle's 10, then even the right password is held back.
    for (let i = 0; i < 8; i++) await b.post("/signin/password", { handle: "off-ann", password: "a long and unusual phrase" });
    expect((await b.post("/signin/password", { handle: "off-ann", password: "a long and unusual phrase" })).status).toBe(429);
  });
});

/** A passkey's registration answer as an authenticator makes it (attestation "none"), for the options the server gave. */
function registration(origin: string, options: { challenge: string; rp: { id: string } }, credentialId: Buffer) {
  const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = publicKey.export({ format: "jwk" });
  const cose = isoCBOR.encode(
    new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, new Uint8Array(Buffer.from(jwk.x!, "base64url"))],
      [-3, new Uint8Array(Buffer.from(jwk.y!, "base64url"))],
    ]),
  );
  const idLength = Buffer.alloc(2);
  idLength.writeUInt16BE(credentialId.length);
  const authData = Buffer.concat([
    createHash("sha256").update(options.rp.id).digest(),
    Buffer.from([0x45]), // user present, user verified, attested credential data
    Buffer.alloc(4),
    Buffer.alloc(16),
    idLength,
    credentialId,
    Buffer.from(cose),
  ]);
  const attestationObject = isoCBOR.encode(
    new Map<string, string | Map<string, string> | Uint8Array>([
      ["fmt", "none"],
      ["attStmt", new Map<string, string>()],
      ["authData", new Uint8Array(authData)],
    ]),
  );
  const clientDataJSON = JSON.stringify({ type: "webauthn.create", challenge: options.challenge, origin, crossOrigin: false });
  const id = credentialId.toString("base64url");
  return JSON.stringify({
    id,
    rawId: id,
    type: "public-key",
    response: {
      clientDataJSON: Buffer.from(clientDataJSON).toString("base64url"),
      attestationObject: Buffer.from(attestationObject).toString("base64url"),
      transports: ["internal"],
    },
    clientExtensionResults: {},
    authenticatorAttachment: "platform",
  });
}

describe("signing up", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  async function passkeySignup(handle: string, credentialId: Buffer): Promise<PageResponse> {
    const b = new PageClient(s.url);
    await b.get("/signup");
    const fields = { handle, display_name: handle.toUpperCase() };
    const answer = await b.post("/passkeys/options", { ...fields, purpose: "signup" });
    expect(answer.status).toBe(200);
    const { options } = JSON.parse(answer.html);
    return b.post("/signup", { ...fields, method: "passkey", credential: registration(s.url, options, credentialId) });
  }

  test("a passkey already registered is refused on a page, and no handle is made", async () => {
    const credentialId = Buffer.from("the-same-credential-id-twice");
    expect((await passkeySignup("key-first", credentialId)).location).toBe("/");
    const again = await passkeySignup("key-second", credentialId);
    expect(again.status).toBe(409);
    expect(again.headers.get("content-type")).toStartWith("text/html");
    expect(again.html).toContain("This passkey is registered here already.");
    expect(await s.server.db.read((tx) => agentByHandle(tx, "key-second"))).toBeUndefined();
    expect(await s.server.db.read((tx) => agentByHandle(tx, "key-first"))).toBeDefined();
  });

  test("the form's first submit button, which Enter in the password field presses, creates the account with the password", async () => {
    const page = await new PageClient(s.url).get("/signup");
    const form = page.html.slice(page.html.indexOf('<form method="post" action="/signup">'));
    const first = /<button type="submit"[^>]*>/.exec(form.slice(0, form.indexOf("</form>")))![0];
    expect(first).toContain('value="password"');
    // and it sits after the password field, its form's one text field that Enter submits from in the browser test
    expect(form.indexOf('name="password"')).toBeLessThan(form.indexOf(first));
  });
});
