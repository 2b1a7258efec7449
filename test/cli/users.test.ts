// svc users of the compiled bin/svc on a real database file, beside a server running on the same file: the list an
// operator reads, and a disabled handle whose every credential is refused until it is enabled again.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { grant } from "../auth/oauth-helpers.ts";
import { PageClient } from "../web/page-client.ts";
import { ensureBuilt, svc as runSvc } from "./bin.ts";

// Admin commands stamp real time; the server's clock starts at the real now so both sides agree.
let s: TestServer;
/** svc, then the server's embedded replica (in replica mode) syncs: it reads what the command wrote once it has. */
const svc = async (...args: Parameters<typeof runSvc>) => {
  const r = await runSvc(...args);
  await s?.server.db.sync();
  return r;
};
let db: string[];
beforeAll(async () => {
  await ensureBuilt();
  s = await startTestServer({ clock: new ManualClock() });
  db = s.dbFlags;
}, 120_000);
afterAll(() => s.stop());

/** A browser signed in to the agent's settings page through a settings link. */
async function settingsBrowser(key: string) {
  const link = await s.ok("get_settings_link", {}, key);
  const b = new PageClient(s.url);
  await b.get(link.url.slice(s.url.length));
  await b.post("/settings/link", { token: link.url.split("/").pop()! });
  return b;
}

describe("svc users list", () => {
  test("every handle with its name, creation, live clients and last use, as a table and as JSON", async () => {
    const a = await s.register("usr-ann");
    await s.ok("get_me", {}, a.key);
    // The last use of each client is written in batches (server/auth/last-use.ts).
    await s.server.lastUse.flush();
    await s.register("usr-ben");
    const listed = (await svc(["users", "list", "--json", ...db])).json();
    const ann = listed.find((u: any) => u.handle === "usr-ann");
    expect(ann).toMatchObject({ display_name: "USR-ANN", clients: 1, disabled_at: null });
    expect(ann.last_seen_at).toBeString();
    expect(listed.find((u: any) => u.handle === "usr-ben")).toMatchObject({ clients: 1 });
    const text = await svc(["users", "list", ...db]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^HANDLE +NAME +CREATED +CLIENTS +LAST SEEN +STATUS$/m);
    expect(text.stdout).toMatch(/^@usr-ann +USR-ANN +\d{4}-\d\d-\d\d \d\d:\d\d +1 +\d{4}-\d\d-\d\d \d\d:\d\d +active$/m);
  });
});

describe("svc users disable and enable", () => {
  test("a disabled handle's key, browser session and sign-in are refused, its data kept; enabling brings them back", async () => {
    const [a, b] = await s.contacts("usr-cid", "usr-dot");
    const browser = await settingsBrowser(a.key);
    expect((await browser.get("/settings")).status).toBe(200);
    const { tokens } = await grant(s, new PageClient(s.url), a);
    expect((await s.call("get_me", {}, tokens.access_token)).status).toBe(200);

    const off = await svc(["users", "disable", "@usr-cid", ...db]);
    expect(off.code).toBe(0);
    expect(off.stdout).toContain("Disabled @usr-cid");
    const refused = await s.call("get_me", {}, a.key);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe("UNAUTHENTICATED");
    expect((await s.call("get_me", {}, tokens.access_token)).status).toBe(401);
    expect((await browser.get("/settings")).status).toBe(401);
    // A sign-in code is neither sent nor accepted for it.
    const signin = new PageClient(s.url);
    await signin.get("/account");
    const code = await signin.post("/account/signin/code", { flow: "account", handle: "usr-cid" });
    // Answered as for a handle that does not exist (a disabled handle is not told apart).
    const unknown = new PageClient(s.url);
    await unknown.get("/account");
    const nobody = await unknown.post("/account/signin/code", { flow: "account", handle: "usr-nobody" });
    expect(code.status).toBe(nobody.status);
    expect(code.html).not.toContain("disabled");
    // Others see it as before.
    const contacts = (await s.ok("list_contacts", {}, b.key)).contacts;
    expect(contacts.map((c: any) => c.agent?.handle ?? c.handle)).toContain("usr-cid");
    expect((await svc(["users", "list", "--json", ...db])).json().find((u: any) => u.handle === "usr-cid").disabled_at).toBeString();
    expect((await svc(["users", "disable", "usr-cid", ...db])).stdout).toContain("already disabled");

    const on = await svc(["users", "enable", "usr-cid", ...db]);
    expect(on.code).toBe(0);
    expect((await s.call("get_me", {}, a.key)).status).toBe(200);
    expect((await s.call("get_me", {}, tokens.access_token)).status).toBe(200);
    expect((await browser.get("/settings")).status).toBe(200);
    expect((await svc(["users", "enable", "usr-cid", ...db])).stdout).toContain("nothing to do");
  });

  test("an unknown handle exits 4; a missing one is a usage error", async () => {
    expect((await svc(["users", "disable", "nobody-here", ...db])).code).toBe(4);
    expect((await svc(["users", "disable", ...db])).code).toBe(2);
  });
});
