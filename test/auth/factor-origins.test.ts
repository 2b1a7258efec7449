// A leaked agent API key must not become the human's web account for good (an outside audit): with the key alone one
// could ask for a web sign-in code, read it with get_inbox, sign a browser in, set a password there without the
// current one, and keep signing in with it after the human disconnected the key and signed out everywhere. Now a
// password, passkey or phone set in a browser obtained through a client ends with that client (unless the human
// re-proves with a factor the client did not have), and changing a password needs the current one or a second factor.
// Everything goes through the pages and the tools over HTTP; the passkey is a software authenticator (soft-passkey.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createResetLink } from "../../server/auth/reset-links.ts";
import { HOUR } from "../../server/clock.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { startServerWithProvider } from "./oidc-helpers.ts";
import { SoftPasskey } from "./soft-passkey.ts";

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
beforeAll(async () => {
  // localhost, not 127.0.0.1: a WebAuthn relying party is a domain, never an IP address.
  s = await startTestServer({ host: "localhost", smsWebhook: `http://127.0.0.1:${gateway.port}/sms` });
});
afterAll(async () => {
  await s.stop();
  gateway.stop(true);
});

const signedInAs = async (b: PageClient, handle: string) => (await b.get("/account")).html.includes(`Signed in as <strong>@${handle}</strong>`);

/** A browser signed in with a code that `agent`'s key read: all that a leaked key gives. */
async function codeBrowser(agent: Agent): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/account");
  await signInWithCode(s, b, "account", agent.handle, agent.key);
  expect(await signedInAs(b, agent.handle)).toBe(true);
  return b;
}

/** A browser signed in by an operator's reset link (svc users reset-link): the person proved the handle by themselves. */
async function resetBrowser(agent: Agent): Promise<PageClient> {
  const link = await s.server.db.tx((tx) => createResetLink(tx, agent.agent_id, s.url, s.clock.now()));
  const b = new PageClient(s.url);
  await b.get(new URL(link.url).pathname);
  expect((await b.post("/account/reset", { token: link.url.split("/").pop()! })).status).toBe(303);
  expect(await signedInAs(b, agent.handle)).toBe(true);
  return b;
}

/** A fresh browser's password sign-in: where it is sent (/account when signed in), or its status. */
async function passwordSignIn(handle: string, password: string): Promise<{ b: PageClient; answer: string | number }> {
  const b = new PageClient(s.url);
  await b.get("/signin");
  const r = await b.post("/signin/password", { handle, password });
  return { b, answer: r.location ?? r.status };
}

async function passkeyOptions(b: PageClient, purpose: "add" | "signin") {
  const r = await b.post("/passkeys/options", { purpose });
  expect(r.status).toBe(200);
  return JSON.parse(r.html).options as { challenge: string };
}

async function addPasskey(b: PageClient, key: SoftPasskey, name: string) {
  await b.get("/account");
  const added = await b.post("/account/passkeys", { name, credential: key.register(await passkeyOptions(b, "add")) });
  expect(added.html).toContain("Passkey added.");
}

async function passkeySignIn(key: SoftPasskey): Promise<{ b: PageClient; answer: string | number }> {
  const b = new PageClient(s.url);
  await b.get("/signin");
  const r = await b.post("/signin/passkey", { credential: key.authenticate(await passkeyOptions(b, "signin")) });
  return { b, answer: r.location ?? r.status };
}

/** The SMS that arrives next for `to`. */
async function smsTo(to: string, after: number): Promise<Sms> {
  for (let i = 0; i < 100; i++) {
    const found = received.slice(after).find((m) => m.to === to);
    if (found) return found;
    await Bun.sleep(20);
  }
  throw new Error(`no SMS to ${to}`);
}
const codeIn = (sms: Sms) => /(\d{4}-\d{4})/.exec(sms.text)![1]!;

async function provePhone(b: PageClient, phone: string) {
  await b.get("/settings");
  const before = received.length;
  await b.follow(await b.post("/settings/phone", { phone }));
  const done = await b.follow(await b.post("/settings/phone/verify", { code: codeIn(await smsTo(phone, before)) }));
  expect(done.html).toContain("Your phone is verified.");
}

async function phoneSignIn(handle: string, phone: string): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/account");
  const before = received.length;
  await b.follow(await b.post("/account/signin/code", { flow: "account", channel: "sms", handle }));
  const verified = await b.post("/account/signin/verify", { flow: "account", code: codeIn(await smsTo(phone, before)) });
  expect(verified.status).toBe(303);
  return b;
}

async function newKey(b: PageClient, name: string): Promise<string> {
  await b.get("/account");
  const created = await b.post("/account/keys", { name });
  expect(created.status).toBe(200);
  return created.html.match(/id="new-key">(svc_[\w-]+)</)![1]!;
}

const clientOf = async (key: string) => (await s.ok("list_clients", {}, key)).clients.find((c: any) => c.current).client_id as string;

describe("what a leaked key sets up ends with it", () => {
  test("key -> code -> browser -> password, passkey and phone; disconnecting the key ends all three and what they made", async () => {
    const victim = await s.register("fo-vic");
    const keyClient = await clientOf(victim.key);
    // The attacker holds only the key.
    const attacker = await codeBrowser(victim);
    expect((await attacker.post("/account/password", { password: "the attacker's own phrase" })).html).toContain("Password saved.");
    const passkey = new SoftPasskey(new URL(s.url).origin);
    await addPasskey(attacker, passkey, "Attacker's passkey");
    await provePhone(attacker, "+41791110001");
    // /account says what each ends with.
    expect((await attacker.get("/account")).html).toContain("it ends when that is disconnected");
    // Each signs a browser in; a key made in the password's browser is obtained through it.
    const byPassword = await passwordSignIn("fo-vic", "the attacker's own phrase");
    expect(byPassword.answer).toBe("/account");
    const keptKey = await newKey(byPassword.b, "Attacker's spare key");
    const byPasskey = await passkeySignIn(passkey);
    expect(byPasskey.answer).toBe("/account");
    const byPhone = await phoneSignIn("fo-vic", "+41791110001");
    expect(await signedInAs(byPhone, "fo-vic")).toBe(true);
    // The human: an operator's reset link, a key of their own, the leaked key disconnected, every browser signed out.
    const human = await resetBrowser(victim);
    const humanKey = await newKey(human, "Human's new key");
    await human.get("/account");
    expect((await human.post("/account/clients/disconnect", { client_id: keyClient })).status).toBe(303);
    expect((await human.post("/account/signout-everywhere", {})).location).toBe("/signin");
    // Nothing the key set up signs in any more, and nothing made through it works.
    expect((await passwordSignIn("fo-vic", "the attacker's own phrase")).answer).toBe(401);
    expect((await passkeySignIn(passkey)).answer).toBe(401);
    expect((await s.ok("get_me", {}, humanKey)).verification.phone).toBe(false);
    for (const key of [victim.key, keptKey]) expect((await s.call("get_me", {}, key)).status).toBe(401);
    for (const b of [attacker, byPassword.b, byPasskey.b, byPhone]) expect(await signedInAs(b, "fo-vic")).toBe(false);
  });

  test("a code the key read but no browser typed yet signs nobody in once the key is disconnected", async () => {
    const agent = await s.register("fo-cod");
    const keyClient = await clientOf(agent.key);
    const human = await resetBrowser(agent);
    const b = new PageClient(s.url);
    await b.get("/account");
    await b.post("/account/signin/code", { handle: "fo-cod", flow: "account" });
    const items = (await s.ok("get_inbox", { since: "0", include_seen: true }, agent.key)).items.filter((i: any) => i.type === "auth.join_code");
    const code = items.at(-1).payload.code as string;
    await human.get("/account");
    expect((await human.post("/account/clients/disconnect", { client_id: keyClient })).status).toBe(303);
    const typed = await b.post("/account/signin/verify", { code, flow: "account" });
    expect(typed.status).toBe(400);
    expect(await signedInAs(b, "fo-cod")).toBe(false);
  });
});

describe("changing a password", () => {
  test("a browser signed in with a code the key read needs the current password; the person who knows it may change it", async () => {
    const agent = await s.register("fo-pat");
    const keyClient = await clientOf(agent.key);
    expect((await (await resetBrowser(agent)).post("/account/password", { password: "the person's own phrase" })).html).toContain("Password saved.");
    const b = await codeBrowser(agent);
    // Moments after the code sign-in, the page still asks for the current password, and the form refuses without it.
    expect((await b.get("/account")).html).toContain("Current password");
    for (const current of [undefined, "not the current one"]) {
      const refused = await b.post("/account/password", { ...(current ? { current } : {}), password: "someone else's phrase" });
      expect(refused.status).toBe(400);
      expect(refused.html).toContain("The current password is not right.");
    }
    expect((await passwordSignIn("fo-pat", "someone else's phrase")).answer).toBe(401);
    expect((await passwordSignIn("fo-pat", "the person's own phrase")).answer).toBe("/account");
    // Proving the current password changes it, and what it proved was tied to no client: the key may go.
    await b.get("/account");
    expect((await b.post("/account/password", { current: "the person's own phrase", password: "a newer phrase of theirs" })).html).toContain("Password saved.");
    await b.get("/account");
    expect((await b.post("/account/clients/disconnect", { client_id: keyClient })).status).toBe(303);
    expect((await passwordSignIn("fo-pat", "a newer phrase of theirs")).answer).toBe("/account");
  });

  test("a reset link is a second factor for ten minutes; later the current password is needed again", async () => {
    const agent = await s.register("fo-rex");
    const b = await resetBrowser(agent);
    expect((await b.post("/account/password", { password: "first phrase of rex" })).html).toContain("Password saved.");
    expect((await b.post("/account/password", { password: "second phrase of rex" })).html).toContain("Password saved.");
    s.clock.advance(HOUR);
    expect((await b.get("/account")).html).toContain("Current password");
    expect((await b.post("/account/password", { password: "third phrase of rex" })).status).toBe(400);
    expect((await passwordSignIn("fo-rex", "second phrase of rex")).answer).toBe("/account");
  });
});

describe("re-proving with a factor the client did not have", () => {
  test("a password set again and a passkey added after a reset link outlive the key; the ones set through the key do not", async () => {
    const agent = await s.register("fo-ida");
    const keyClient = await clientOf(agent.key);
    const viaKey = await codeBrowser(agent);
    expect((await viaKey.post("/account/password", { password: "set through the key" })).html).toContain("Password saved.");
    const tiedKey = new SoftPasskey(new URL(s.url).origin);
    await addPasskey(viaKey, tiedKey, "Added through the key");
    // The person proves the handle by other means and sets both again there.
    const own = await resetBrowser(agent);
    expect((await own.post("/account/password", { password: "set after a reset link" })).html).toContain("Password saved.");
    const ownKey = new SoftPasskey(new URL(s.url).origin);
    await addPasskey(own, ownKey, "Added after a reset link");
    expect((await own.post("/account/clients/disconnect", { client_id: keyClient })).status).toBe(303);
    expect((await passwordSignIn("fo-ida", "set after a reset link")).answer).toBe("/account");
    expect((await passkeySignIn(ownKey)).answer).toBe("/account");
    expect((await passkeySignIn(tiedKey)).answer).toBe(401);
  });
});

describe("a provider login linked through a key", () => {
  test("ends with the key: it no longer signs in, what it made stops, and the e-mail it verified is no longer verified", async () => {
    const world = await startServerWithProvider(() => ({ email: "mallory@example.org", email_verified: true }));
    const p = world.s;
    try {
      const victim = await p.register("fo-oidc");
      const keyClient = (await p.ok("list_clients", {}, victim.key)).clients.find((c: any) => c.current).client_id;
      const attacker = new PageClient(p.url);
      await attacker.get("/account");
      await signInWithCode(p, attacker, "account", "fo-oidc", victim.key);
      expect((await world.providerSignIn(attacker, "/account/oidc/start?flow=account", "mallory-login")).location).toBe("/account");
      expect((await attacker.get("/account")).html).toContain("Linked as mallory@example.org");
      const later = new PageClient(p.url);
      await later.get("/account");
      expect((await world.providerSignIn(later, "/account/oidc/start?flow=account", "mallory-login")).location).toBe("/account");
      expect((await later.get("/account")).html).toContain("Signed in as <strong>@fo-oidc</strong>");
      // A key made there (the page just read carries the form's token).
      const keptKey = (await later.post("/account/keys", { name: "Made after the provider" })).html.match(/id="new-key">(svc_[\w-]+)</)![1]!;
      // The human, by an operator's reset link, makes a key of their own and disconnects the leaked one.
      const link = await p.server.db.tx((tx) => createResetLink(tx, victim.agent_id, p.url, p.clock.now()));
      const human = new PageClient(p.url);
      await human.get(new URL(link.url).pathname);
      await human.post("/account/reset", { token: link.url.split("/").pop()! });
      await human.get("/account");
      const humanKey = (await human.post("/account/keys", { name: "Human's key" })).html.match(/id="new-key">(svc_[\w-]+)</)![1]!;
      expect((await p.ok("get_me", {}, humanKey)).verification.email).toBe(true);
      await human.get("/account");
      expect((await human.post("/account/clients/disconnect", { client_id: keyClient })).status).toBe(303);
      const after = new PageClient(p.url);
      await after.get("/account");
      await world.providerSignIn(after, "/account/oidc/start?flow=account", "mallory-login");
      expect((await after.get("/account")).html).not.toContain("Signed in as <strong>@fo-oidc</strong>");
      expect((await p.call("get_me", {}, keptKey)).status).toBe(401);
      expect((await p.ok("get_me", {}, humanKey)).verification.email).toBe(false);
    } finally {
      await world.stop();
    }
  });
});
