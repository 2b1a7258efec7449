// The connections of the two server modes, against a real sqld: a remote pool's connections keep their streams and
// open them again when the primary comes back; an embedded replica reads through plain connections on its own file,
// which see each sync, and after a write the instance's next read sees it, from the primary while the replica cannot
// catch up (sqld answering "snapshot not found" after compacting its log).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { type Db, openDb } from "../../db/client.ts";
import { toAppError } from "../../server/errors.ts";
import Database from "libsql";
import { spawnServer } from "../hardening/spawn-server.ts";
import { ok, register, restApi } from "../hardening/world.ts";
import { type Sqld, startSqld, syncFault } from "../sqld.ts";
import { key, startTestServer } from "../harness.ts";

let sqld: Sqld;
const dir = mkdtempSync(join(tmpdir(), "svc-db-connections-"));

beforeAll(async () => {
  sqld = await startSqld();
  const db = await openDb({ url: sqld.url });
  await db.exclusive((raw) => raw.execute("CREATE TABLE t (x INTEGER)"));
  await db.close();
});
afterAll(async () => {
  await sqld.stop();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (db: Db, x: number) => db.tx((tx) => tx.run(sql`INSERT INTO t VALUES (${x})`));
const count = (db: Db, x: number) => db.read(async (tx) => (await tx.values<[number]>(sql`SELECT count(*) FROM t WHERE x = ${x}`))[0]![0]);

describe("a remote primary", () => {
  test("a connection whose stream went with the primary opens another once it is back", async () => {
    const db = await openDb({ url: sqld.url });
    try {
      await insert(db, 1);
      for (let i = 0; i < 5; i++) expect(await count(db, 1)).toBe(1);

      await sqld.kill();
      const down = await count(db, 1).catch((err: unknown) => err);
      expect(toAppError(down)).toMatchObject({ code: "STORAGE_UNAVAILABLE", status: 503 });

      await sqld.restart();
      await insert(db, 1);
      expect(await count(db, 1)).toBe(2);
    } finally {
      await db.close();
    }
  });
});

describe("an embedded replica", () => {
  test("reads see this instance's write at once, and another instance's once synced", async () => {
    const replica = await openDb({ url: `file:${join(dir, "replica.db")}`, syncUrl: sqld.url, syncIntervalSeconds: 3600 });
    const other = await openDb({ url: sqld.url });
    try {
      await insert(replica, 2);
      expect(await count(replica, 2)).toBe(1);

      await insert(other, 3);
      // The background sync is an hour away: the replica's file does not have it yet.
      expect(await count(replica, 3)).toBe(0);
      await replica.sync();
      expect(await count(replica, 3)).toBe(1);

      // Several writes, then one read: it sees them all.
      await Promise.all([insert(replica, 4), insert(replica, 4), insert(replica, 4)]);
      expect(await count(replica, 4)).toBe(3);
    } finally {
      await replica.close();
      await other.close();
    }
  });
});

describe("add_expense on an embedded replica (a tool declared guarded)", () => {
  test("reads the file as it is, and its guards keep it right: a retry replays, a member just removed is refused", async () => {
    // The background sync an hour away: between calls the file has only what a call waited for.
    const s = await startTestServer({ dbUrl: `file:${join(dir, "guarded.db")}`, syncUrl: sqld.url, syncIntervalSeconds: 3600 });
    try {
      const a = await s.register("rg-ann");
      const { group } = await s.ok("create_group", { name: "Guarded", currency: "EUR", idempotency_key: key() }, a.key);
      const placeholder = async (name: string) =>
        (await s.ok("create_group_invite", { group_id: group.group_id, name, idempotency_key: key() }, a.key)).invite.placeholder.member_id as string;
      const eve = await placeholder("Eve");
      const split = (who: string) => ({ mode: "equal", among: [{ handle: a.handle }, { member_id: who }] });
      const add = (args: Record<string, unknown>) =>
        s.call("add_expense", { group_id: group.group_id, description: "Tea", amount_minor: 200, split: split(eve), ...args }, a.key);
      const keys = [key(), key(), key(), key()];
      const made = [];
      for (const k of keys) made.push(await add({ idempotency_key: k }));
      expect(made.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      // The same key at once: the file may not have the first answer yet; the record's key runs it again, replayed.
      const again = await add({ idempotency_key: keys[3] });
      expect(again.status).toBe(200);
      expect(again.body.data.expense.expense_id).toBe(made[3]!.body.data.expense.expense_id);

      // Removed on another instance, then named by an expense read from this file, which does not have it yet: the
      // batch's guard finds Finn gone, and the call, run again once the file caught up, is refused.
      const finn = await placeholder("Finn");
      await s.server.db.sync();
      const other = await startTestServer({ dbUrl: sqld.url });
      try {
        await other.ok("remove_group_member", { group_id: group.group_id, member_id: finn, idempotency_key: key() }, a.key);
      } finally {
        await other.stop();
      }
      const refused = await add({ split: split(finn), idempotency_key: key() });
      expect([refused.status, refused.body.error?.code]).toEqual([400, "VALIDATION_ERROR"]);

      // A read waits for what this instance wrote: every expense once, the balances summing to zero.
      expect((await s.ok("list_expenses", { group_id: group.group_id }, a.key)).expenses).toHaveLength(4);
      const { members } = await s.ok("get_balances", { group_id: group.group_id }, a.key);
      expect(members.map((m: any) => [m.member_id, m.balance_minor])).toEqual(
        expect.arrayContaining([
          [a.agent_id, 400],
          [eve, -400],
        ]),
      );
    } finally {
      await s.stop();
    }
  });
});

/** What the replica's file itself holds (not what its Db would read). */
function inFile(path: string, x: number): number {
  const file = new Database(path, { readonly: true });
  try {
    return Number((file.prepare("SELECT count(*) AS n FROM t WHERE x = ?").get(x) as { n: number }).n);
  } finally {
    file.close();
  }
}

describe("an embedded replica that cannot catch up", () => {
  test("reads after its write go to the primary while its syncs fail, and to its own file once one succeeds", async () => {
    const fault = await syncFault(sqld);
    const path = join(dir, "behind.db");
    const catchUps: string[] = [];
    const replica = await openDb({ url: `file:${path}`, syncUrl: fault.url, syncIntervalSeconds: 3600, observeCatchUp: (o) => catchUps.push(o) });
    try {
      await insert(replica, 5);
      expect(await count(replica, 5)).toBe(1);
      expect(catchUps).toEqual(["synced"]);

      fault.failSyncs(true);
      await insert(replica, 6);
      expect(await count(replica, 6)).toBe(1);
      expect(await count(replica, 6)).toBe(1);
      expect(fault.refused).toBeGreaterThan(0);
      expect(catchUps[1]).toBe("behind");
      // Those answers came from the primary: the replica's file has not got the write.
      expect(inFile(path, 6)).toBe(0);

      fault.failSyncs(false);
      await replica.sync();
      expect(inFile(path, 6)).toBe(1);
      expect(await count(replica, 6)).toBe(1);
    } finally {
      await replica.close();
      fault.close();
    }
  });

  test("over HTTP: a key made on a replica whose syncs fail works on it at once", async () => {
    const fault = await syncFault(sqld);
    const server = await spawnServer(`file:${join(dir, "behind-server.db")}`, ["--sync-url", fault.url, "--metrics-token", "behind-metrics"]);
    try {
      const api = restApi(server.url);
      await register(api, "behind-ann");
      fault.failSyncs(true);
      const ben = await register(api, "behind-ben");
      const { group } = await ok(api, "create_group", { name: "Behind", currency: "EUR", idempotency_key: crypto.randomUUID() }, ben.key);
      expect((await ok(api, "get_group", { group_id: group.group_id }, ben.key)).group.name).toBe("Behind");
      expect(fault.refused).toBeGreaterThan(0);
      // The operator sees it: catch-ups that left the replica behind, its reads going to the primary.
      const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer behind-metrics" } })).text();
      expect(metrics).toMatch(/svc_replica_catch_ups_total\{result="behind"\} [1-9]/);
      expect(metrics).toMatch(/svc_replica_catch_ups_total\{result="synced"\} [1-9]/);
    } finally {
      await server.kill9();
      fault.close();
    }
  }, 60_000);
});
