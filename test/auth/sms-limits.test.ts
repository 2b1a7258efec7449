// Text messages cost money and reach a stranger's phone: besides the per-handle limit of codes, svc sends at most
// 5 an hour (10 a day) to one number, takes 10 asks an hour from one address and --sms-per-hour from the whole server,
// and the text is fixed: the code, never a handle or anything a person typed (docs/security.md, "Text messages, attachments, read-only tokens and guess windows"). A fake
// gateway on loopback receives what would go out.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { HOUR, MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";

interface Sms {
  to: string;
  text: string;
}
const received: Sms[] = [];
const gateway = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    received.push((await req.json()) as Sms);
    return new Response(null, { status: 200 });
  },
});
const webhook = `http://127.0.0.1:${gateway.port}/sms`;
afterAll(() => gateway.stop(true));

/** A browser on the agent's settings page, through a settings link. */
async function settings(s: TestServer, key: string) {
  const link = await s.ok("get_settings_link", {}, key);
  const b = new PageClient(s.url);
  await b.get(link.url.slice(s.url.length));
  await b.follow(await b.post("/settings/link", { token: link.url.split("/").pop()! }));
  return b;
}

/** The SMS that arrives next for `to` after `after` messages (the sign-in one is sent without waiting for it). */
async function smsTo(to: string, after: number): Promise<Sms> {
  for (let i = 0; i < 100; i++) {
    const found = received.slice(after).find((m) => m.to === to);
    if (found) return found;
    await Bun.sleep(20);
  }
  throw new Error(`no SMS to ${to}`);
}
const codeIn = (sms: Sms) => /(\d{4}-\d{4})/.exec(sms.text)![1]!;
const sentTo = (to: string) => received.filter((m) => m.to === to).length;

/** Asks for a phone code on the settings page: the status, and the page's text. */
async function ask(b: PageClient, phone: string) {
  const r = await b.post("/settings/phone", { phone });
  // A new ask starts over: the waiting code of this browser is dropped either way.
  if (r.status === 303) await b.post("/settings/phone/cancel", {});
  return r;
}

describe("limits per number, per address and per server", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ smsWebhook: webhook, smsPerHour: 1000 });
  });
  afterAll(() => s.stop());

  test("throwaway handles cannot bomb one number: 5 texts an hour reach it, then a clear refusal; an hour later it takes more", async () => {
    const victim = "+41790000001";
    const before = sentTo(victim);
    const keys: string[] = [];
    const browsers: PageClient[] = [];
    for (const h of ["bomb-a", "bomb-b", "bomb-c"]) {
      keys.push((await s.register(h)).key);
      browsers.push(await settings(s, keys.at(-1)!));
    }
    // Two asks per handle, under each handle's own limit of 5: the number's limit is what stops the sixth.
    const statuses: number[] = [];
    for (const b of browsers) for (let i = 0; i < 2; i++) statuses.push((await ask(b, victim)).status);
    expect(statuses).toEqual([303, 303, 303, 303, 303, 429]);
    const refused = await browsers[2]!.post("/settings/phone", { phone: victim });
    expect(refused.status).toBe(429);
    expect(refused.html).toContain("Too many text messages went to this number in the last hour");
    await Bun.sleep(100);
    expect(sentTo(victim) - before).toBe(5);
    // Sliding: an hour after the first of them, one more fits.
    s.clock.advance(HOUR + MINUTE);
    expect((await ask(await settings(s, keys[0]!), victim)).status).toBe(303);
  });

  test("one address asks for at most 10 texts an hour, whatever the handles and numbers", async () => {
    s.clock.advance(2 * HOUR);
    const statuses: number[] = [];
    let n = 0;
    for (const h of ["addr-a", "addr-b", "addr-c"]) {
      const b = await settings(s, (await s.register(h)).key);
      for (let i = 0; i < 4; i++) statuses.push((await ask(b, `+4179100000${n++}`)).status);
    }
    expect(statuses.filter((x) => x === 303)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual([429, 429]);
    // The sign-in by text counts against the same address, for a handle that exists or not.
    const b = new PageClient(s.url);
    await b.get("/signin");
    const signin = await b.post("/account/signin/code", { flow: "account", channel: "sms", handle: "nobody-here" });
    expect(signin.status).toBe(429);
    expect(signin.html).toContain("Too many text messages were asked for from your address");
  });
});

describe("the server's own limit, and a sign-in at a number's limit", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ smsWebhook: webhook, smsPerHour: 3 });
  });
  afterAll(() => s.stop());

  test("past --sms-per-hour the server sends nothing more this hour, and says so", async () => {
    const statuses: number[] = [];
    for (const [i, h] of ["srv-a", "srv-b", "srv-c", "srv-d"].entries()) {
      statuses.push((await ask(await settings(s, (await s.register(h)).key), `+4179200000${i}`)).status);
    }
    expect(statuses).toEqual([303, 303, 303, 429]);
    const b = await settings(s, (await s.register("srv-e")).key);
    expect((await b.post("/settings/phone", { phone: "+41792000009" })).html).toContain("This server has sent as many text messages as it may this hour");
  });
});

describe("the text of a message is fixed", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ smsWebhook: webhook });
  });
  afterAll(() => s.stop());

  test("neither the phone proof nor the sign-in code carries the handle; a sign-in past the number's limit sends nothing and answers alike", async () => {
    const a = await s.register("click-here-evil-example");
    const b = await settings(s, a.key);
    const phone = "+41793000001";
    let before = received.length;
    await b.follow(await b.post("/settings/phone", { phone }));
    const proof = await smsTo(phone, before);
    expect(proof.text).toBe(`svc code to verify this phone: ${codeIn(proof)} (valid 10 minutes). If you did not ask for it, ignore it.`);
    expect((await b.follow(await b.post("/settings/phone/verify", { code: codeIn(proof) }))).html).toContain("Your phone is verified.");

    const browser = new PageClient(s.url);
    await browser.get("/signin");
    before = received.length;
    const sent = await browser.post("/account/signin/code", { flow: "account", channel: "sms", handle: a.handle });
    expect(sent.status).toBe(303);
    const signin = await smsTo(phone, before);
    expect(signin.text).toBe(`svc sign-in code: ${codeIn(signin)} (valid 10 minutes). If you are not signing in right now, ignore it.`);
    expect(signin.text).not.toContain("evil");

    // The number has had 2 of its 5; three more sign-ins reach it, the next is answered alike and sends nothing.
    for (let i = 0; i < 3; i++) {
      const again = new PageClient(s.url);
      await again.get("/signin");
      expect((await again.post("/account/signin/code", { flow: "account", channel: "sms", handle: a.handle })).status).toBe(303);
    }
    await Bun.sleep(100);
    expect(sentTo(phone)).toBe(5);
    const last = new PageClient(s.url);
    await last.get("/signin");
    const quiet = await last.post("/account/signin/code", { flow: "account", channel: "sms", handle: a.handle });
    expect(quiet.status).toBe(303);
    expect((await last.follow(quiet)).html).toContain(`If <strong>@${a.handle}</strong> has a verified phone`);
    await Bun.sleep(100);
    expect(sentTo(phone)).toBe(5);
  });
});
