// Group commit on a remote primary's writer stream (db/turns.ts), against sqld: writes that queue while one runs share
// its transaction and are answered once it commits; one that fails after writing is undone alone, the others run
// again and commit, each once; one that fails having written nothing leaves the group as it was.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createClient } from "@libsql/client";
import { integer, sqliteTable } from "drizzle-orm/sqlite-core";
import { type Db, openDb, preparedWrite, remoteRequests, remoteStatements } from "../../db/client.ts";
import { type Sqld, startSqld } from "../sqld.ts";
import { failingWriteUndoneAlone, laterWritesFailAlone } from "../group-commit-cases.ts";

const tTable = sqliteTable("t", { n: integer("n") });

let sqld: Sqld;
let db: Db;
beforeAll(async () => {
  sqld = await startSqld();
  db = await openDb({ url: sqld.url });
  await db.exclusive((c) => c.execute("CREATE TABLE t (n INTEGER)"));
}, 60_000);
afterAll(async () => {
  await db?.close();
  await sqld?.stop();
});

/** What the primary holds, read by a client of its own (never inside an open group). */
async function onPrimary(): Promise<number[]> {
  const c = createClient({ url: sqld.url });
  try {
    return (await c.execute("SELECT n FROM t ORDER BY n")).rows.map((r) => Number(r.n));
  } finally {
    c.close();
  }
}

test("writes that queue while one runs share its transaction: one COMMIT, each answered once it is done", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  const { promise: hold, resolve: release } = Promise.withResolvers<void>();
  const statementsBefore = remoteStatements.write;
  const first = db.tx(async (tx) => {
    await tx.run(sql`INSERT INTO t VALUES (1)`);
    await hold;
  });
  const others = [2, 3].map((n) => db.tx((tx) => tx.run(sql`INSERT INTO t VALUES (${n})`)));
  const seenWhenAnswered = first.then(onPrimary);
  expect(await onPrimary()).toEqual([]);
  release();
  expect(await seenWhenAnswered).toEqual([1, 2, 3]);
  await Promise.all(others);
  // Three INSERTs, and one BEGIN and one COMMIT for all of them
  expect(remoteStatements.write - statementsBefore).toBe(5);
});

test("a write that fails is undone alone: the rest of its group commits, each write once", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  await failingWriteUndoneAlone(db, onPrimary);
});

test("writes sent later go to the primary with the next statement, in one request; one that fails fails its own write", async () => {
  const insert = preparedWrite((tx) =>
    tx
      .insert(tTable)
      .values({ n: sql.placeholder("n") })
      .prepare(),
  );
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  const before = { ...remoteRequests };
  const seen = await db.tx(async (tx) => {
    for (const n of [1, 2, 3]) await insert(tx).run({ n });
    return tx.values<[number]>(sql`SELECT count(*) FROM t`);
  });
  expect(seen).toEqual([[3]]);
  // BEGIN, three INSERTs and the SELECT in one request; the COMMIT in another.
  expect(remoteRequests.write - before.write).toBe(2);
  await laterWritesFailAlone(db);
});
