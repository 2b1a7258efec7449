// A credential never obtains a credential or a session stronger than itself, and disconnecting a client ends what it
// obtained. Each case is a path an outside audit took: a read-only OAuth token reading a sign-in code, a settings link
// asked for with svc:read, keys made in a browser outliving the key that signed the browser in, GETs that wrote.
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { grant } from "./oauth-helpers.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** The newest sign-in code item as `key` sees it. */
async function codeItem(key: string) {
  const items = (await s.ok("get_inbox", { since: "0", include_seen: true }, key)).items.filter((i: any) => i.type === "auth.join_code");
  return items.at(-1);
}

/** A browser signed in to /account with a code that `agent`'s key read. */
async function browserOf(agent: Agent) {
  const b = new PageClient(s.url);
  await b.get("/account");
  const page = await signInWithCode(s, b, "account", agent.handle, agent.key);
  expect(page.html).toContain(`Signed in as <strong>@${agent.handle}</strong>`);
  return b;
}

async function newKey(b: PageClient, name: string): Promise<string> {
  const created = await b.post("/account/keys", { name });
  expect(created.status).toBe(200);
  return created.html.match(/id="new-key">(svc_[\w-]+)</)![1]!;
}

describe("sign-in codes", () => {
  test("only an API key that may write reads one: OAuth tokens, read-only or not, see that a code was sent", async () => {
    const alice = await s.register("trust-alice");
    const readOnly = (await grant(s, new PageClient(s.url), alice, "svc:read")).tokens.access_token;
    const readWrite = (await grant(s, new PageClient(s.url), alice, "svc:read svc:write")).tokens.access_token;
    const attacker = new PageClient(s.url);
    await attacker.get("/account");
    for (const token of [readOnly, readWrite]) {
      // Someone else's browser asks for a code for alice (one for each token: the cursor poll shows a code only once).
      expect((await attacker.post("/account/signin/code", { handle: "trust-alice", flow: "account" })).status).toBe(303);
      const item = await codeItem(token);
      expect(item.payload.code).toBeNull();
      expect(item.summary_md).toContain("cannot read sign-in codes");
      // The cursor poll hides it the same way.
      const polled = (await s.ok("get_inbox", {}, token)).items.filter((i: any) => i.type === "auth.join_code");
      expect(polled.length).toBeGreaterThan(0);
      for (const i of polled) expect(i.payload.code).toBeNull();
    }
    // The API key reads it, so the control shows the hiding is about the credential.
    expect((await codeItem(alice.key)).payload.code).toMatch(/^\d{4}-\d{4}$/);
  });
});

describe("settings links", () => {
  test("a link asked for with svc:read opens a page that cannot write, and ends with the client that asked", async () => {
    const bea = await s.register("trust-bea");
    const { tokens } = await grant(s, new PageClient(s.url), bea, "svc:read");
    const link = (await s.ok("get_settings_link", {}, tokens.access_token)).url as string;
    const b = new PageClient(s.url);
    const opened = await b.get(link.slice(s.url.length));
    const token = opened.html.match(/name="token" value="([^"]+)"/)![1]!;
    expect((await b.post("/settings/link", { token })).location).toBe("/settings");
    const settings = await b.get("/settings");
    expect(settings.status).toBe(200);
    expect(settings.html).toContain("read-only credential");
    expect(settings.html).not.toContain('name="display_name"');
    const refused = await b.post("/settings", { display_name: "Changed by a reader", description: "" });
    expect(refused.status).toBe(403);
    expect((await s.ok("get_me", {}, bea.key)).agent.display_name).not.toBe("Changed by a reader");
    // The browser is a client obtained through the OAuth session: disconnecting that session ends it.
    // Two browsers: the one that consented to the OAuth app (signed in with a code bea's key read), and this one.
    const clients = (await s.ok("list_clients", {}, bea.key)).clients;
    const key = clients.find((c: any) => c.current);
    const oauth = clients.find((c: any) => c.kind === "oauth");
    const browsers = clients.filter((c: any) => c.kind === "web").map((c: any) => c.obtained_through);
    expect(browsers.sort()).toEqual([key.client_id, oauth.client_id].sort());
    await s.ok("disconnect_client", { client_id: oauth.client_id }, bea.key);
    expect((await b.get("/settings")).status).toBe(401);
  });

  test("a link asked for by a key that may write still changes the profile", async () => {
    const cal = await s.register("trust-cal");
    const link = (await s.ok("get_settings_link", {}, cal.key)).url as string;
    const b = new PageClient(s.url);
    const token = (await b.get(link.slice(s.url.length))).html.match(/name="token" value="([^"]+)"/)![1]!;
    await b.post("/settings/link", { token });
    await b.get("/settings");
    expect((await b.post("/settings", { display_name: "Cal Again", description: "" })).status).toBe(303);
    expect((await s.ok("get_me", {}, cal.key)).agent.display_name).toBe("Cal Again");
  });
});

describe("web sessions are clients", () => {
  test("listed with the key they were obtained through; what they made ends when that key is disconnected, even after signing out", async () => {
    const dan = await s.register("trust-dan");
    const b1 = await browserOf(dan);
    const madeInB1 = await newKey(b1, "Made in browser one");
    let clients = (await s.ok("list_clients", {}, dan.key)).clients;
    const first = clients.find((c: any) => c.current);
    const web1 = clients.find((c: any) => c.kind === "web");
    expect(web1.obtained_through).toBe(first.client_id);
    expect(clients.find((c: any) => c.name === "Made in browser one").obtained_through).toBe(web1.client_id);
    // Signing out ends the browser's client, not what it made.
    expect((await b1.post("/account/signout", { flow: "account" })).status).toBe(303);
    clients = (await s.ok("list_clients", {}, dan.key)).clients;
    expect(clients.some((c: any) => c.client_id === web1.client_id)).toBe(false);
    expect((await s.call("get_me", {}, madeInB1)).status).toBe(200);
    // A second browser, also signed in through the first key, disconnects that key: everything obtained through it ends.
    const b2 = await browserOf(dan);
    const madeInB2 = await newKey(b2, "Made in browser two");
    expect((await b2.post("/account/clients/disconnect", { client_id: first.client_id })).status).toBe(303);
    for (const key of [dan.key, madeInB1, madeInB2]) expect((await s.call("get_me", {}, key)).status).toBe(401);
    expect((await b2.get("/account")).html).toContain("Send me a code");
  });

  test("a browser disconnected from another client is signed out at once", async () => {
    const eve = await s.register("trust-eve");
    const b = await browserOf(eve);
    const spare = await newKey(b, "Spare");
    const web = (await s.ok("list_clients", {}, eve.key)).clients.find((c: any) => c.kind === "web");
    await s.ok("disconnect_client", { client_id: web.client_id }, eve.key);
    expect((await b.get("/account")).html).toContain("Send me a code");
    expect((await s.call("get_me", {}, spare)).status).toBe(401);
    expect((await s.call("get_me", {}, eve.key)).status).toBe(200);
  });
});

describe("a GET never writes", () => {
  test("pages, the JWK Set and the groups page answer while another connection holds the write lock, and leave no rows", async () => {
    const db = createClient({ url: s.database.dbUrl, authToken: s.database.authToken });
    const rows = async () => Number((await db.execute("SELECT count(*) AS n FROM web_sessions")).rows[0]!.n);
    const before = await rows();
    const writer = await db.transaction("write");
    try {
      for (const path of ["/account", "/groups", "/settings", "/join", "/.well-known/jwks.json", "/account", "/groups"]) {
        const started = performance.now();
        const res = await s.raw(path);
        await res.text();
        // A write would wait for the lock (the busy timeout) and then fail.
        expect(res.status).toBeLessThan(500);
        expect(performance.now() - started).toBeLessThan(2000);
      }
    } finally {
      await writer.rollback();
    }
    for (let i = 0; i < 50; i++) await (await s.raw("/account")).text();
    expect(await rows()).toBe(before);
    db.close();
  });

  test("an anonymous form's CSRF token belongs to its own cookie; the first form stores the session", async () => {
    const mine = new PageClient(s.url);
    await mine.get("/account");
    const other = new PageClient(s.url);
    await other.get("/account");
    await s.register("trust-fay");
    // Another browser's token, or a cookie the sender made up, is refused.
    expect((await other.post("/account/signin/code", { handle: "trust-fay", flow: "account" }, mine.csrf)).status).toBe(403);
    const forged = new PageClient(s.url);
    forged.cookies.set("svc_session", `ws_${"A".repeat(43)}`);
    expect((await forged.post("/account/signin/code", { handle: "trust-fay", flow: "account" }, "csrf_made_up")).status).toBe(403);
    expect((await mine.post("/account/signin/code", { handle: "trust-fay", flow: "account" })).status).toBe(303);
    expect((await mine.get("/account")).html).toContain("One-time code");
  });
});

test("a page that needs a signed-in browser answers 401 with the Bearer challenge", async () => {
  const join = await s.ok("join_network", { client_name: "Desk Assistant" });
  const b = new PageClient(s.url);
  await b.get(`/join?user_code=${join.user_code}`);
  await b.follow(await b.post("/join", { user_code: join.user_code }));
  const refused = await b.post("/join/approve", {});
  expect(refused.status).toBe(401);
  expect(refused.headers.get("www-authenticate")).toStartWith("Bearer ");
  expect(refused.html).toContain("Send me a code");
});

test("a code sign-in never tells whether a handle exists: the same pages, tries and limit for one that does not", async () => {
  await s.register("trust-real");
  const answers = async (handle: string) => {
    const b = new PageClient(s.url);
    await b.get("/account");
    const seen: string[] = [];
    const norm = (html: string) => html.replaceAll(handle, "HANDLE").replace(/value="[^"]*"/g, 'value=""');
    const sent = await b.post("/account/signin/code", { handle, flow: "account" });
    seen.push(`${sent.status}`, norm((await b.follow(sent)).html));
    for (let i = 0; i < 5; i++) {
      const wrong = await b.post("/account/signin/verify", { code: "0000-0000", flow: "account" });
      seen.push(`${wrong.status}`, norm(wrong.html));
    }
    for (let i = 0; i < 5; i++) await b.post("/account/signin/code", { handle, flow: "account" });
    const sixth = await b.post("/account/signin/code", { handle, flow: "account" });
    seen.push(`${sixth.status}`, norm(sixth.html));
    return seen;
  };
  const real = await answers("trust-real");
  const none = await answers("trust-none");
  expect(real[1]).toContain("We left a one-time code in the inbox of <strong>@HANDLE</strong>");
  expect(real.at(-2)).toBe("429");
  expect(none).toEqual(real);
});
