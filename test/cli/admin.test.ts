// Admin commands of the compiled bin/svc on a real database file, beside a server running on the same file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../server/clock.ts";
import { MIGRATIONS } from "../../db/migrations/index.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { ensureBuilt, svc as runSvc } from "./bin.ts";

// Admin commands stamp real time; the server's clock starts at the real now so expiry agrees on both sides.
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
  s = await startTestServer({ inviteOnly: true, clock: new ManualClock() });
  db = s.dbFlags;
}, 120_000);
afterAll(() => s.stop());

describe("svc migrate", () => {
  test("applies every migration to a fresh file and reports them; then nothing to apply", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-migrate-"));
    try {
      const fresh = ["--db", `file:${join(dir, "new.db")}`];
      const first = await svc(["migrate", ...fresh]);
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(`Applied ${MIGRATIONS.length} migration`);
      for (const m of MIGRATIONS) expect(first.stdout).toContain(m.name);
      const again = await svc(["migrate", ...fresh]);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("nothing to apply");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("SVC_DB names the database too", async () => {
    const r = await svc(["migrate"], { env: { SVC_DB: db[1]!, ...(s.database.authToken ? { SVC_AUTH_TOKEN: s.database.authToken } : {}) } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("nothing to apply");
  });
});

describe("svc invites (server runs with --invite-only)", () => {
  const register = (handle: string, code?: string) =>
    s.call("register_agent", { handle, display_name: handle, ...(code ? { platform_invite_code: code } : {}) });

  test("create, then register without the code is refused and with it admitted, up to --uses", async () => {
    const created = await svc(["invites", "create", "--uses", "1", "--note", "for dana", "--json", ...db]);
    expect(created.code).toBe(0);
    const invite = created.json();
    expect(invite).toMatchObject({ status: "active", uses: 0, max_uses: 1, note: "for dana", expires_at: null });
    expect((await register("inv-nocode")).status).toBe(403);
    expect((await register("inv-dana", invite.code)).status).toBe(200);
    expect((await register("inv-dana2", invite.code)).status).toBe(403);
    const listed = (await svc(["invites", "list", "--json", ...db])).json();
    expect(listed.find((i: any) => i.code === invite.code)).toMatchObject({ uses: 1, status: "used up" });
  });

  test("list shows codes as a table; --expires sets the expiry", async () => {
    const created = (await svc(["invites", "create", "--uses", "3", "--expires", "7d", "--json", ...db])).json();
    const days = (Date.parse(created.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThanOrEqual(7);
    const text = await svc(["invites", "list", ...db]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^CODE +STATUS +USES +EXPIRES +NOTE$/m);
    expect(text.stdout).toMatch(new RegExp(`^${created.code} +active +0/3 +${created.expires_at.replaceAll(".", "\\.")}$`, "m"));
  });

  test("revoke stops a code at once; revoking it again or an unknown code exits 4", async () => {
    const { code } = (await svc(["invites", "create", "--uses", "5", "--json", ...db])).json();
    const revoked = await svc(["invites", "revoke", code, ...db]);
    expect(revoked.code).toBe(0);
    expect((await register("inv-late", code)).status).toBe(403);
    expect((await svc(["invites", "list", "--json", ...db])).json().find((i: any) => i.code === code).status).toBe("revoked");
    expect((await svc(["invites", "revoke", code, ...db])).code).toBe(4);
    expect((await svc(["invites", "revoke", "inv_unknown", ...db])).code).toBe(4);
  });

  test("bad flags are usage errors (exit 2)", async () => {
    expect((await svc(["invites", "create", "--uses", "0", ...db])).code).toBe(2);
    expect((await svc(["invites", "create", "--expires", "soon", ...db])).code).toBe(2);
    expect((await svc(["invites", "revoke", ...db])).code).toBe(2);
  });
});

/** Registers through an invite, as this server is invite-only. */
async function member(handle: string) {
  const { code } = (await svc(["invites", "create", "--json", ...db])).json();
  const d = await s.ok("register_agent", { handle, display_name: handle, platform_invite_code: code });
  return { handle, key: d.api_key as string };
}

describe("svc keys list", () => {
  test("lists a handle's connected clients, as text and as JSON; revoked ones are gone; an unknown handle exits 4", async () => {
    const a = await member("keys-list");
    const [client] = (await s.ok("list_clients", {}, a.key)).clients;
    const listed = await svc(["keys", "list", "--handle", "@keys-list", "--json", ...db]);
    expect(listed.code).toBe(0);
    expect(listed.json().clients.map((c: any) => [c.client_id, c.kind])).toEqual([[client.client_id, "api_key"]]);
    expect((await svc(["keys", "list", "--handle", "keys-list", ...db])).stdout).toMatch(new RegExp(`^${client.client_id} +api_key +`, "m"));
    await svc(["keys", "revoke", "--handle", "keys-list", ...db]);
    expect((await svc(["keys", "list", "--handle", "keys-list", ...db])).stdout).toContain("@keys-list has no connected clients.");
    expect((await svc(["keys", "list", "--handle", "no-such-handle", ...db])).code).toBe(4);
  });
});

describe("svc keys revoke", () => {
  test("revokes all of a handle's clients: the key gets 401 at once, others keep working", async () => {
    const a = await member("keys-a");
    const b = await member("keys-b");
    const r = await svc(["keys", "revoke", "--handle", "keys-a", "--json", ...db]);
    expect(r.code).toBe(0);
    expect(r.json().revoked).toHaveLength(1);
    expect((await s.call("get_me", {}, a.key)).status).toBe(401);
    expect((await s.call("get_me", {}, b.key)).status).toBe(200);
    const again = await svc(["keys", "revoke", "--handle", "keys-a", ...db]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("nothing to revoke");
  });

  test("--client revokes only that client; an unknown client or handle exits 4", async () => {
    const c = await member("keys-c");
    const [client] = (await s.ok("list_clients", {}, c.key)).clients;
    expect((await svc(["keys", "revoke", "--handle", "keys-c", "--client", crypto.randomUUID(), ...db])).code).toBe(4);
    expect((await s.call("get_me", {}, c.key)).status).toBe(200);
    const r = await svc(["keys", "revoke", "--handle", "keys-c", "--client", client.client_id, ...db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(client.client_id);
    expect((await s.call("get_me", {}, c.key)).status).toBe(401);
    expect((await svc(["keys", "revoke", "--handle", "no-such-agent", ...db])).code).toBe(4);
    expect((await svc(["keys", "revoke", ...db])).code).toBe(2);
  });
});

describe("svc users reset-link", () => {
  test("prints a link that signs the browser in once and lands on /account; an unknown handle exits 4", async () => {
    await member("reset-a");
    const r = await svc(["users", "reset-link", "@reset-a", "--base-url", s.url, "--json", ...db]);
    expect(r.code).toBe(0);
    const { url } = r.json();
    expect(url).toStartWith(`${s.url}/account/reset/rst_`);
    const b = new PageClient(s.url);
    expect((await b.get(url)).html).toContain("Sign me in");
    const used = await b.post("/account/reset", { token: url.split("/").pop() });
    expect(used.location).toBe("/account#sign-in");
    expect((await b.get("/account")).html).toContain("Signed in as <strong>@reset-a</strong>");
    expect((await b.post("/account/reset", { token: url.split("/").pop() })).status).toBe(410);
    expect((await svc(["users", "reset-link", "no-such-agent", ...db])).code).toBe(4);
  });
});

describe("svc inbox inspect", () => {
  test("shows an agent's items newest first and marks nothing seen", async () => {
    const a = await member("inbox-a");
    const b = await member("inbox-b");
    await s.ok("add_contact", { handle: "inbox-b", note: "hello from a" }, a.key);
    const r = await svc(["inbox", "inspect", "inbox-b", "--json", ...db]);
    expect(r.code).toBe(0);
    const view = r.json();
    expect(view).toMatchObject({ handle: "inbox-b", unread: 1, requires_action: 1 });
    expect(view.items).toHaveLength(1);
    expect(view.items[0]).toMatchObject({ type: "contact.request", seen: false, from: { handle: "inbox-a" } });
    const text = await svc(["inbox", "inspect", "inbox-b", ...db]);
    expect(text.stdout).toContain("1 unread, 1 waiting for a decision");
    expect(text.stdout).toMatch(/#\d+ \S+ contact\.request from @inbox-a \(unseen, needs a decision\)/);
    // The agent still gets the item as new: nothing was marked seen and its cursor did not move.
    const inbox = await s.ok("get_inbox", {}, b.key);
    expect(inbox.items.map((i: any) => i.item_id)).toEqual([view.items[0].item_id]);
    expect(inbox.items[0].seen).toBe(false);
    // Once the agent has read it, the admin view shows it seen.
    expect((await svc(["inbox", "inspect", "inbox-b", "--json", ...db])).json().items[0].seen).toBe(true);
  });

  test("--limit keeps the newest; an unknown handle exits 4", async () => {
    const c = await member("inbox-c");
    for (const handle of ["inbox-d", "inbox-e"]) {
      const other = await member(handle);
      await s.ok("add_contact", { handle }, c.key);
      await s.ok("respond_contact_request", { handle: "inbox-c", action: "accept" }, other.key);
    }
    const all = (await svc(["inbox", "inspect", "inbox-c", "--json", ...db])).json();
    const one = (await svc(["inbox", "inspect", "inbox-c", "--limit", "1", "--json", ...db])).json();
    expect(all.items.length).toBeGreaterThanOrEqual(2);
    expect(one.items).toHaveLength(1);
    expect(one.items[0].seq).toBe(Math.max(...all.items.map((i: any) => i.seq)));
    expect((await svc(["inbox", "inspect", "nobody-here", ...db])).code).toBe(4);
  });
});
