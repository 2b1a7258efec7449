// Phone verification (interface.md, verification.phone): a code by SMS through the operator's webhook, received here
// by a fake gateway on loopback. The settings page proves a phone; /join and the account page then offer a code to
// it, without ever telling whether a handle has a phone. Without a webhook none of it appears.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";

interface Sms {
  to: string;
  text: string;
}
const received: Sms[] = [];
let gatewayStatus = 200;
const gateway = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    if (gatewayStatus === 200) received.push((await req.json()) as Sms);
    return new Response(null, { status: gatewayStatus });
  },
});

let s: TestServer;
let plain: TestServer;
beforeAll(async () => {
  s = await startTestServer({ smsWebhook: `http://127.0.0.1:${gateway.port}/sms` });
  plain = await startTestServer();
});
afterAll(async () => {
  await Promise.all([s.stop(), plain.stop()]);
  gateway.stop(true);
});

/** A browser on the agent's settings page, through a settings link. */
async function settings(server: TestServer, key: string) {
  const link = await server.ok("get_settings_link", {}, key);
  const b = new PageClient(server.url);
  await b.get(link.url.slice(server.url.length));
  await b.follow(await b.post("/settings/link", { token: link.url.split("/").pop()! }));
  return b;
}

/** The SMS that arrives next for `to` (the sign-in one is sent without waiting for it). */
async function smsTo(to: string, after: number): Promise<Sms> {
  for (let i = 0; i < 100; i++) {
    const found = received.slice(after).find((m) => m.to === to);
    if (found) return found;
    await Bun.sleep(20);
  }
  throw new Error(`no SMS to ${to}`);
}
const codeIn = (sms: Sms) => /(\d{4}-\d{4})/.exec(sms.text)![1]!;

/** Proves `phone` for the agent on its settings page; returns the browser. */
async function provePhone(key: string, phone: string) {
  const b = await settings(s, key);
  const before = received.length;
  const sent = await b.follow(await b.post("/settings/phone", { phone }));
  expect(sent.html).toContain("Verify my phone");
  const code = codeIn(await smsTo(phone.replace(/[\s-]/g, ""), before));
  const done = await b.follow(await b.post("/settings/phone/verify", { code }));
  expect(done.html).toContain("Your phone is verified.");
  return b;
}

describe("without --sms-webhook", () => {
  test("neither the settings page nor the sign-in offers a phone", async () => {
    const a = await plain.register("ph-none");
    const page = await (await settings(plain, a.key)).get("/settings");
    expect(page.html).not.toContain("Phone");
    const account = await new PageClient(plain.url).get("/account");
    expect(account.html).toContain("Send me a code");
    expect(account.html).not.toContain("Send a code to my phone");
  });
});

describe("proving a phone on the settings page", () => {
  test("a code by SMS to the number typed, typed back, makes verification.phone true", async () => {
    const a = await s.register("ph-ann");
    expect((await s.ok("get_me", {}, a.key)).verification).toEqual({ email: false, phone: false });
    const b = await settings(s, a.key);
    expect((await b.get("/settings")).html).toContain("Send a code");
    expect((await b.post("/settings/phone", { phone: "079 123 45 67" })).status).toBe(400);
    expect((await b.post("/settings/phone", { phone: "+0791234567" })).status).toBe(400);
    const before = received.length;
    const sent = await b.follow(await b.post("/settings/phone", { phone: "+41 79 123-45-67" }));
    expect(sent.html).toContain("+41791234567");
    const sms = await smsTo("+41791234567", before);
    // A fixed text: the code and nothing of the handle's (docs/security.md, "Text messages, attachments, read-only tokens and guess windows").
    expect(sms.text).toBe(`svc code to verify this phone: ${codeIn(sms)} (valid 10 minutes). If you did not ask for it, ignore it.`);
    const wrong = await b.post("/settings/phone/verify", { code: "0000-0000" });
    expect(wrong.status).toBe(400);
    expect(wrong.html).toContain("4 tries left");
    expect((await s.ok("get_me", {}, a.key)).verification.phone).toBe(false);
    const done = await b.follow(await b.post("/settings/phone/verify", { code: codeIn(sms) }));
    expect(done.html).toContain("Your verified phone: <strong>+41791234567</strong>");
    expect((await s.ok("get_me", {}, a.key)).verification).toEqual({ email: false, phone: true });
    // Removing it takes the verification away.
    await b.follow(await b.post("/settings/phone/remove", {}));
    expect((await s.ok("get_me", {}, a.key)).verification.phone).toBe(false);
  });

  test("a gateway that fails: a clear error, no code waiting, nothing verified", async () => {
    const a = await s.register("ph-ben");
    const b = await settings(s, a.key);
    gatewayStatus = 502;
    try {
      const failed = await b.post("/settings/phone", { phone: "+15551234567" });
      expect(failed.location).toBe("/settings?sms=failed");
      const page = await b.follow(failed);
      expect(page.html).toContain("could not be sent");
      expect(page.html).not.toContain("Verify my phone");
    } finally {
      gatewayStatus = 200;
    }
    expect((await s.ok("get_me", {}, a.key)).verification.phone).toBe(false);
  });

  test("five wrong codes end it", async () => {
    const a = await s.register("ph-cid");
    const b = await settings(s, a.key);
    await b.follow(await b.post("/settings/phone", { phone: "+15557654321" }));
    for (let i = 0; i < 5; i++) await b.post("/settings/phone/verify", { code: "1111-1111" });
    const gone = await b.post("/settings/phone/verify", { code: "1111-1111" });
    expect(gone.html).toContain("No code is waiting");
    expect((await s.ok("get_me", {}, a.key)).verification.phone).toBe(false);
  });
});

describe("signing in by phone", () => {
  test("join: a code by SMS to the verified phone connects the app; nothing goes to the inbox", async () => {
    const a = await s.register("ph-eve");
    await provePhone(a.key, "+447700900123");
    const j = await s.ok("join_network", { client_name: "Phone App" });
    const b = new PageClient(s.url);
    await b.get(j.enter_url.slice(s.url.length));
    const page = await b.follow(await b.post("/join", { user_code: j.user_code }));
    expect(page.html).toContain("Send a code to my phone");
    const before = received.length;
    const sent = await b.follow(await b.post("/account/signin/code", { flow: "join", channel: "sms", handle: "ph-eve" }));
    expect(sent.html).toContain("If <strong>@ph-eve</strong> has a verified phone");
    const sms = await smsTo("+447700900123", before);
    const signedIn = await b.follow(await b.post("/account/signin/verify", { flow: "join", code: codeIn(sms) }));
    expect(signedIn.html).toContain("Connect to @ph-eve");
    await b.post("/join/approve", {});
    const done = await s.ok("finish_join", { poll_token: j.poll_token });
    expect(done).toMatchObject({ status: "connected", created: false });
    expect((await s.ok("get_me", {}, done.api_key)).agent.handle).toBe("ph-eve");
    const inbox = await s.ok("get_inbox", { since: "0", include_seen: true }, a.key);
    expect(inbox.items.filter((i: any) => i.type === "auth.join_code")).toHaveLength(0);
  });

  test("a handle without a phone gets the same answer and no SMS; its code cannot be guessed past the limit", async () => {
    await s.register("ph-fay");
    const b = new PageClient(s.url);
    await b.get("/account");
    const before = received.length;
    const sent = await b.post("/account/signin/code", { flow: "account", channel: "sms", handle: "ph-fay" });
    expect(sent.status).toBe(303);
    const page = await b.follow(sent);
    expect(page.html).toContain("If <strong>@ph-fay</strong> has a verified phone");
    for (let i = 0; i < 5; i++) expect((await b.post("/account/signin/verify", { flow: "account", code: "1234-5678" })).status).toBe(400);
    expect((await b.follow(await b.get("/account"))).html).toContain("Send me a code");
    await Bun.sleep(100);
    expect(received.length).toBe(before);
  });
});
