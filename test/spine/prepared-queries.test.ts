// prepared() on a local connection runs drizzle's prepared queries without drizzle's session (runningNow in
// db/query.ts): it clones the query and keeps only drizzle's SQL (getQuery) and row mapping (mapGetResult,
// mapAllResult). drizzle documents no such way, so these tests pin what it relies on: an upgrade that changes them
// fails here rather than answering wrong rows in production.
import { afterAll, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { integer, type SQLitePreparedQuery, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb, prepared, preparedInsert, type Tx } from "../../db/client.ts";
import { runNow } from "../../db/connections.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-prepared-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Columns whose values drizzle maps on the way out (boolean, JSON), and one that may be null.
const things = sqliteTable("things", {
  id: text("id").primaryKey(),
  flag: integer("flag", { mode: "boolean" }).notNull(),
  tags: text("tags", { mode: "json" }).$type<string[]>().notNull(),
  note: text("note"),
});
const owners = sqliteTable("owners", { thingId: text("thing_id").notNull(), name: text("name").notNull() });

// Each query as the server builds them, run both ways: drizzle's own prepared query, and prepared()'s clone.
const byId = (tx: Tx) =>
  tx
    .select()
    .from(things)
    .where(eq(things.id, sql.placeholder("id")))
    .prepare();
const withOwner = (tx: Tx) =>
  tx.select({ id: things.id, flag: things.flag, owner: owners.name }).from(things).leftJoin(owners, eq(owners.thingId, things.id)).orderBy(things.id).prepare();
const setNote = (tx: Tx) =>
  tx
    .update(things)
    .set({ note: sql`${sql.placeholder("note")}` })
    .where(eq(things.flag, true))
    .prepare();
const fast = { byId: prepared(byId), withOwner: prepared(withOwner), setNote: prepared(setNote) };
const insertThing = preparedInsert(things, ["id", "flag", "tags", "note"]);

async function withDb(fn: (tx: Tx) => Promise<void>): Promise<void> {
  const db = await openDb({ url: `file:${join(dir, `${crypto.randomUUID()}.db`)}` });
  try {
    await db.exclusive((c) =>
      c.executeMultiple(
        "CREATE TABLE things (id TEXT PRIMARY KEY, flag INTEGER NOT NULL, tags TEXT NOT NULL, note TEXT); CREATE TABLE owners (thing_id TEXT, name TEXT);",
      ),
    );
    await db.tx(fn);
  } finally {
    await db.close();
  }
}

describe("prepared() beside drizzle's own prepared queries", () => {
  test("drizzle's prepared query still offers what the clone keeps: its SQL and parameters, and its row mapping", async () => {
    await withDb(async (tx) => {
      expect(runNow(tx)).toBeFunction();
      const q: SQLitePreparedQuery<never> = byId(tx) as never;
      const { sql: text, params } = q.getQuery();
      expect(text).toContain('from "things" where "things"."id" = ?');
      expect(params).toHaveLength(1);
      expect(q.mapGetResult).toBeFunction();
      expect(q.mapAllResult).toBeFunction();
      // The clone answers from its own methods and inherits the rest (fields, mapping) from drizzle's query.
      const clone = fast.byId(tx);
      expect(clone).not.toBe(byId(tx));
      expect(Object.hasOwn(clone, "get") && Object.hasOwn(clone, "all") && Object.hasOwn(clone, "values") && Object.hasOwn(clone, "run")).toBe(true);
      expect(clone.getQuery().sql).toBe(text);
    });
  });

  test("writes, rows, a missing row, joined nulls and raw values are the same both ways", async () => {
    await withDb(async (tx) => {
      await insertThing(tx).run({ id: "a", flag: true, tags: ["x", "y"], note: null });
      await tx.insert(things).values({ id: "b", flag: false, tags: [], note: "n" });
      await tx.insert(owners).values({ thingId: "a", name: "ann" });

      const a = await fast.byId(tx).get({ id: "a" });
      expect(a).toEqual({ id: "a", flag: true, tags: ["x", "y"], note: null });
      expect(a).toEqual(await byId(tx).get({ id: "a" }));
      expect(await fast.byId(tx).get({ id: "none" })).toBeUndefined();
      expect(await byId(tx).get({ id: "none" })).toBeUndefined();
      expect(await fast.byId(tx).all({ id: "b" })).toEqual(await byId(tx).all({ id: "b" }));

      const joined = await fast.withOwner(tx).all();
      expect(joined).toEqual([
        { id: "a", flag: true, owner: "ann" },
        { id: "b", flag: false, owner: null },
      ]);
      expect(joined).toEqual(await withOwner(tx).all());
      expect(await fast.withOwner(tx).values()).toEqual([
        ["a", 1, "ann"],
        ["b", 0, null],
      ]);

      expect(await fast.setNote(tx).run({ note: "set" })).toEqual({ rowsAffected: 1 });
      expect(await setNote(tx).run({ note: "again" })).toEqual({ rowsAffected: 1 });
      // all(), not get(): the libsql driver (0.5.29) answers a get() that follows an all() of the same statement
      // with the all()'s row.
      expect((await byId(tx).all({ id: "a" }))[0]?.note).toBe("again");
    });
  });
});
