import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { REGISTRATION_CLIENT } from "../../server/tools/identity/register-agent.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

async function signedInBrowser(handle: string) {
  const agent = await s.register(handle);
  const b = new PageClient(s.url);
  const page = await b.get("/account");
  expect(page.html).toContain("Send me a code");
  const account = await signInWithCode(s, b, "account", handle, agent.key);
  expect(account.html).toContain(`Signed in as <strong>@${handle}</strong>`);
  return { agent, b, account };
}

describe("/account", () => {
  test("the sign-in code says it is for the account page", async () => {
    const { agent } = await signedInBrowser("acct-ann");
    const item = (await s.ok("get_inbox", { since: "0", include_seen: true }, agent.key)).items.find((i: any) => i.type === "auth.join_code");
    expect(item.payload).toMatchObject({ purpose: "account", client_name: null });
    expect(item.payload.code).toMatch(/^\d{4}-\d{4}$/);
  });

  test("lists the clients with last use; a new API key is shown once and works; disconnecting stops it at once", async () => {
    const { agent, b, account } = await signedInBrowser("acct-ben");
    expect(account.html).toContain(REGISTRATION_CLIENT);
    s.clock.advance(2 * MINUTE);
    await s.ok("get_me", {}, agent.key);
    const listed = await b.get("/account");
    expect(listed.html).toContain(s.clock.now().toISOString().replace("T", " ").slice(0, 16));
    const created = await b.post("/account/keys", { name: "Laptop script" });
    expect(created.status).toBe(200);
    expect(created.headers.get("cache-control")).toBe("no-store");
    const key = created.html.match(/id="new-key">(svc_[\w-]+)</)![1]!;
    expect((await s.ok("get_me", {}, key)).agent.handle).toBe("acct-ben");
    const again = await b.get("/account");
    expect(again.html).not.toContain(key);
    expect(again.html).toContain("Laptop script");
    const laptop = (await s.ok("list_clients", {}, agent.key)).clients.find((c: any) => c.name === "Laptop script");
    const gone = await b.post("/account/clients/disconnect", { client_id: laptop.client_id });
    expect(gone.status).toBe(303);
    expect((await s.call("get_me", {}, key)).status).toBe(401);
    expect((await b.get("/account")).html).not.toContain("Laptop script");
  });

  test("refuses bad names, and clients of another handle", async () => {
    const { b } = await signedInBrowser("acct-cid");
    expect((await b.post("/account/keys", { name: "" })).status).toBe(400);
    expect((await b.post("/account/keys", { name: "x".repeat(41) })).status).toBe(400);
    const other = await s.register("acct-other");
    const theirs = (await s.ok("list_clients", {}, other.key)).clients[0];
    expect((await b.post("/account/clients/disconnect", { client_id: theirs.client_id })).status).toBe(404);
    expect((await s.call("get_me", {}, other.key)).status).toBe(200);
  });

  test("signed out, nothing is listed and forms need a sign-in; CSRF is required", async () => {
    const { b } = await signedInBrowser("acct-dot");
    expect((await b.post("/account/keys", { name: "no csrf" }, null)).status).toBe(403);
    const out = await b.follow(await b.post("/account/signout", { flow: "account" }));
    expect(out.html).toContain("Send me a code");
    expect(out.html).not.toContain("@acct-dot");
    expect((await b.post("/account/keys", { name: "after sign-out" })).status).toBe(401);
  });

  test("escapes what humans and agents wrote", async () => {
    const { agent, b } = await signedInBrowser("acct-eve");
    await s.ok("update_me", { display_name: `<img src=x onerror=alert(1)>"` }, agent.key);
    await b.post("/account/keys", { name: `<script>alert(1)</script>` });
    const page = await b.get("/account");
    expect(page.html).not.toContain("<script>alert");
    expect(page.html).not.toContain("<img src=x");
    expect(page.html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page.html).toContain("&lt;img src=x onerror=alert(1)&gt;&quot;");
  });

  test("every page carries a strict Content-Security-Policy and no framing", async () => {
    const b = new PageClient(s.url);
    for (const path of ["/account", "/join", "/settings", "/oauth/consent"]) {
      const r = await b.get(path);
      const csp = r.headers.get("content-security-policy")!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+'/);
      expect(csp).not.toContain("unsafe");
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      // Scripts of this server only, as files (every page loads app.js), never inline.
      expect(csp).toContain("script-src 'self'");
      expect(r.html.match(/<script[^>]*>/g)?.filter((tag) => !/^<script src="\/assets\/[a-z-]+\.js" defer>$/.test(tag))).toEqual([]);
    }
  });

  test("unknown page paths answer 404 as a page", async () => {
    const r = await new PageClient(s.url).get("/account/nothing-here");
    expect(r.status).toBe(404);
    expect(r.headers.get("content-type")).toContain("text/html");
  });
});

describe("rate limits of the pages and the OAuth endpoints", () => {
  test("forms and the token endpoint answer 429 with Retry-After past the per-address limit", async () => {
    const limited = await startTestServer({ publicRateLimit: 2 });
    try {
      const b = new PageClient(limited.url);
      await b.get("/join");
      expect((await b.post("/join", { user_code: "BCDF-GHJK" })).status).toBe(400);
      expect((await b.post("/join", { user_code: "BCDF-GHJK" })).status).toBe(400);
      const third = await b.post("/join", { user_code: "BCDF-GHJK" });
      expect(third.status).toBe(429);
      expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
      const token = async () =>
        (
          await limited.raw("/oauth/token", {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: "grant_type=refresh_token",
          })
        ).status;
      expect([await token(), await token(), await token()]).toEqual([400, 400, 429]);
    } finally {
      await limited.stop();
    }
  });
});
