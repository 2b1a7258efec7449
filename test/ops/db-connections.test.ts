// The connections of the two server modes, against a real sqld: a remote pool's connections keep their streams and
// open them again when the primary comes back; an embedded replica reads through plain connections on its own file,
// which see each sync, and after a write the instance's next read sees it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { type Db, openDb } from "../../db/client.ts";
import { toAppError } from "../../server/errors.ts";
import { type Sqld, startSqld } from "../sqld.ts";

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
