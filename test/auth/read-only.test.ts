// A read-only credential (an OAuth token with svc:read alone) sees what get_me shows it and no more, and its reads
// leave the agent's inbox as they found it for the agent's other clients (docs/security.md, "Text messages, attachments, read-only tokens and guess windows").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { grant } from "./oauth-helpers.ts";

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

let s: TestServer;
let human: Agent;
let readOnly: string;
beforeAll(async () => {
  s = await startTestServer({ smsWebhook: `http://127.0.0.1:${gateway.port}/sms` });
  human = await s.register("ro-ann");
  readOnly = (await grant(s, new PageClient(s.url), human, "svc:read")).tokens.access_token;
});
afterAll(async () => {
  await s.stop();
  gateway.stop(true);
});

/** A browser on the settings page through a link asked for with `credential`. */
async function settings(credential: string) {
  const link = await s.ok("get_settings_link", {}, credential);
  const b = new PageClient(s.url);
  await b.get(link.url.slice(s.url.length));
  await b.follow(await b.post("/settings/link", { token: link.url.split("/").pop()! }));
  return b;
}

async function smsTo(to: string): Promise<Sms> {
  for (let i = 0; i < 100; i++) {
    const found = received.find((m) => m.to === to);
    if (found) return found;
    await Bun.sleep(20);
  }
  throw new Error(`no SMS to ${to}`);
}

describe("a read-only credential", () => {
  test("its settings page shows whether a phone is verified, as get_me does, never the number", async () => {
    const phone = "+41794000001";
    const full = await settings(human.key);
    await full.follow(await full.post("/settings/phone", { phone }));
    const code = /(\d{4}-\d{4})/.exec((await smsTo(phone)).text)![1]!;
    expect((await full.follow(await full.post("/settings/phone/verify", { code }))).html).toContain("Your phone is verified.");

    expect((await s.ok("get_me", {}, readOnly)).verification).toEqual({ email: false, phone: true });
    const page = await (await settings(readOnly)).get("/settings");
    expect(page.html).toContain("read-only credential");
    expect(page.html).toContain("<dt>Phone</dt><dd>verified</dd>");
    expect(page.html).not.toContain("41794000001");
  });

  test("its inbox reads hide nothing from the agent's other clients: the main key still gets the new item, and it stays unread", async () => {
    const other = await s.register("ro-ben");
    // Drain what the main key has not read yet.
    await s.ok("get_inbox", {}, human.key);
    await s.ok("add_contact", { handle: human.handle }, other.key);
    const seenByToken = await s.ok("get_inbox", {}, readOnly);
    expect(seenByToken.items.map((i: any) => i.type)).toContain("contact.request");
    expect(seenByToken.unread).toBeGreaterThan(0);
    expect(seenByToken.digest_md).toContain("left unread for your other apps");
    // The token's own cursor moved: its next poll has nothing new.
    expect((await s.ok("get_inbox", {}, readOnly)).items).toHaveLength(0);
    const main = await s.ok("get_inbox", {}, human.key);
    expect(main.items.map((i: any) => i.type)).toContain("contact.request");
    expect(main.digest_md).toContain("now marked seen");
    expect(main.unread).toBe(seenByToken.unread - 1);
  });
});
