// svc users export and svc users delete of the compiled bin/svc on a real database file, beside a server running on
// the same file: a person's account taken out as one JSON file, and deleted only once the handle is typed (or --yes).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupOf } from "../ledger/ledger-fixtures.ts";
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
let dir: string;
beforeAll(async () => {
  await ensureBuilt();
  s = await startTestServer({ clock: new ManualClock() });
  db = s.dbFlags;
  dir = mkdtempSync(join(tmpdir(), "svc-account-admin-"));
}, 120_000);
afterAll(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("svc users export", () => {
  test("prints the account as one JSON document, or writes it to a new file readable by its owner alone", async () => {
    const [ann, ben] = await s.contacts("exa-ann", "exa-ben");
    const g = await groupOf(s, [ann, ben], "EUR", "Flat");
    await s.ok("add_expense", { group_id: g.group_id, description: "Rent", amount: "800.00" }, ann.key);
    const printed = await svc(["users", "export", "@exa-ann", ...db]);
    expect(printed.code).toBe(0);
    const doc = printed.json();
    expect(doc).toMatchObject({ format: "svc-account-export", version: 1, profile: (await s.ok("get_me", {}, ann.key)).agent });
    expect(doc.contacts.map((c: any) => c.agent.handle)).toEqual(["exa-ben"]);
    expect(doc.groups.map((x: any) => x.group.name)).toEqual(["Flat"]);
    expect(doc.groups[0].expenses.map((e: any) => e.description.untrusted_content)).toEqual(["Rent"]);
    expect(printed.stdout).not.toContain(ann.key);

    const file = join(dir, "ann.json");
    const written = await svc(["users", "export", "exa-ann", "-o", file, ...db]);
    expect(written.code).toBe(0);
    expect(written.stderr).toContain(`wrote ${file}`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8")).profile.handle).toBe("exa-ann");
    // An existing file is never overwritten.
    writeFileSync(file, "mine");
    const refused = await svc(["users", "export", "exa-ann", "-o", file, ...db]);
    expect(refused.code).toBe(5);
    expect(readFileSync(file, "utf8")).toBe("mine");
    expect((await svc(["users", "export", "nobody-here", ...db])).code).toBe(4);
  });
});

describe("svc users delete", () => {
  test("deletes only once the handle is typed; the person stays in the ledger, their key and handle are gone", async () => {
    const [cid, dot] = await s.contacts("del-cid", "del-dot");
    const g = await groupOf(s, [cid, dot], "EUR", "Shared");
    await s.ok("add_expense", { group_id: g.group_id, description: "Food", amount: "30.00" }, cid.key);
    const before = await s.ok("get_balances", { group_id: g.group_id }, dot.key);

    // Not confirmed (nothing typed, or another handle): nothing happens.
    const silent = await svc(["users", "delete", "del-cid", ...db]);
    expect(silent.code).toBe(2);
    expect(silent.stderr).toContain("Deleting @del-cid");
    expect(silent.stderr).toContain('"Shared" (balance +15.00 EUR)');
    expect(silent.stderr).toContain("not confirmed");
    expect((await svc(["users", "delete", "del-cid", ...db], { stdin: "del-dot\n" })).code).toBe(2);
    expect((await s.call("get_me", {}, cid.key)).status).toBe(200);

    const typed = await svc(["users", "delete", "del-cid", ...db], { stdin: "del-cid\n" });
    expect(typed.code).toBe(0);
    expect(typed.stdout).toContain("Deleted @del-cid.");
    expect(typed.stdout).toContain("told 1 person");
    expect((await s.call("get_me", {}, cid.key)).status).toBe(401);
    expect((await s.call("register_agent", { handle: "del-cid", display_name: "Another" })).status).toBe(409);
    // The deletion is itself an event of the group's chain: as_of_seq moves on, the balances do not.
    const { inbox: _, as_of_seq: seqAfter, ...after } = await s.ok("get_balances", { group_id: g.group_id }, dot.key);
    const { inbox: __, as_of_seq: seqBefore, ...was } = before;
    expect(after).toEqual(was);
    expect(seqAfter).toBe(seqBefore + 1);
    expect((await s.ok("get_inbox", { since: "0", include_seen: true }, dot.key)).items.map((i: any) => i.type)).toContain("network.account_deleted");
    expect((await svc(["users", "list", "--json", ...db])).json().map((u: any) => u.handle)).not.toContain("del-cid");
    // Gone is gone: neither deleted nor exported again.
    expect((await svc(["users", "delete", "del-cid", "--yes", ...db])).code).toBe(4);
    expect((await svc(["users", "export", "del-cid", ...db])).code).toBe(4);
  });

  test("--yes deletes without asking; --json prints what was done", async () => {
    const eva = await s.register("del-eva");
    await groupOf(s, [eva], "EUR", "Alone");
    const r = await svc(["users", "delete", "@DEL-EVA", "--yes", "--json", ...db]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ handle: "del-eva", kept: [], removed: [{ name: "Alone", kind: "group" }], told: 0 });
    expect(r.json().deleted_at).toBeString();
    expect((await s.call("get_me", {}, eva.key)).status).toBe(401);
  });
});
