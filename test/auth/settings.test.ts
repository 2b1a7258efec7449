import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const path = (url: string) => url.slice(s.url.length);

/** Opens a settings link in a fresh browser and presses its button. */
async function openLink(url: string) {
  const b = new PageClient(s.url);
  const landing = await b.get(path(url));
  return { b, landing, opened: landing.status === 200 ? await b.post("/settings/link", { token: path(url).split("/").pop()! }) : landing };
}

describe("get_settings_link and the settings page", () => {
  test("a single-use link valid 10 minutes signs the human into settings, where the profile changes", async () => {
    const a = await s.register("set-ann");
    const link = await s.ok("get_settings_link", {}, a.key);
    expect(link.url).toMatch(new RegExp(`^${s.url}/settings/link/set_[\\w-]{43}$`));
    expect(Date.parse(link.expires_at) - s.clock.now().getTime()).toBe(10 * MINUTE);
    expect(link.message_for_human).toContain(link.url);
    const { b, landing, opened } = await openLink(link.url);
    expect(landing.html).toContain("Open my settings");
    expect(opened.status).toBe(303);
    const page = await b.follow(opened);
    expect(page.html).toContain('value="SET-ANN"');
    const saved = await b.follow(await b.post("/settings", { display_name: "Ann Example", description: "Splits rent" }));
    expect(saved.html).toContain("Saved.");
    expect((await s.ok("get_me", {}, a.key)).agent).toMatchObject({ display_name: "Ann Example", description: "Splits rent" });
  });

  test("looking at the link does not use it up; using it does: a reused link is refused", async () => {
    const a = await s.register("set-ben");
    const link = await s.ok("get_settings_link", {}, a.key);
    const b = new PageClient(s.url);
    await b.get(path(link.url));
    await b.get(path(link.url));
    const first = await openLink(link.url);
    expect(first.opened.status).toBe(303);
    const again = await openLink(link.url);
    expect(again.landing.status).toBe(410);
    expect(again.landing.html).toContain("expired or was already used");
    const replay = await b.post("/settings/link", { token: path(link.url).split("/").pop()! });
    expect(replay.status).toBe(410);
    expect((await b.get("/settings")).status).toBe(401);
  });

  test("an expired link is refused", async () => {
    const a = await s.register("set-cid");
    const link = await s.ok("get_settings_link", {}, a.key);
    s.clock.advance(10 * MINUTE);
    const { landing } = await openLink(link.url);
    expect(landing.status).toBe(410);
    expect((await s.ok("get_me", {}, a.key)).agent.display_name).toBe("SET-CID");
  });

  test("a settings session reaches the settings page only, not the account page", async () => {
    const a = await s.register("set-dot");
    const { b } = await openLink((await s.ok("get_settings_link", {}, a.key)).url);
    const account = await b.get("/account");
    expect(account.html).toContain("Send me a code");
    expect(account.html).not.toContain("@set-dot");
    expect((await b.post("/account/keys", { name: "sneaky" })).status).toBe(401);
  });

  test("saving needs the CSRF token and valid fields; made-up tokens are refused", async () => {
    const a = await s.register("set-eve");
    const { b } = await openLink((await s.ok("get_settings_link", {}, a.key)).url);
    await b.get("/settings");
    expect((await b.post("/settings", { display_name: "Hacked" }, null)).status).toBe(403);
    expect((await b.post("/settings", { display_name: "" })).status).toBe(400);
    expect((await b.post("/settings", { display_name: "ok", description: "x".repeat(501) })).status).toBe(400);
    expect((await b.post("/settings", { display_name: "bell\u0007" })).status).toBe(400);
    expect((await s.ok("get_me", {}, a.key)).agent.display_name).toBe("SET-EVE");
    expect((await new PageClient(s.url).get("/settings/link/set_forged")).status).toBe(410);
    expect((await new PageClient(s.url).get("/settings/link/%3Cscript%3E")).html).not.toContain("<script>");
  });

  test("needs a credential like any read tool", async () => {
    expect((await s.call("get_settings_link", {})).status).toBe(401);
  });
});
