// Group commit on a remote primary's writer stream (db/turns.ts), against sqld: writes that queue while one runs share
// its transaction and are answered once it commits; one that fails after writing is undone alone, the others run
// again and commit, each once; one that fails having written nothing leaves the group as it was.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createClient } from "@libsql/client";
import { integer, sqliteTable } from "drizzle-orm/sqlite-core";
import { type Db, getOnCommit, openDb, prepared, preparedWrite, remoteRequests, remoteSockets, remoteStatements } from "../../db/client.ts";
import { numbersOn, type Sqld, startSqld } from "../sqld.ts";
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
const onPrimary = () => numbersOn(sqld, "t");

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

test("statements issued together go to the primary in one request, and one that fails fails alone", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  const before = { ...remoteRequests };
  const [counted, missing, max] = await db.tx(async (tx) => {
    await tx.run(sql`INSERT INTO t VALUES (7)`);
    return Promise.all([
      tx.values<[number]>(sql`SELECT count(*) FROM t`),
      tx.values(sql`SELECT n FROM no_such_table`).then(
        () => "found",
        (err: Error) => String(err.cause ?? err.message),
      ),
      tx.values<[number]>(sql`SELECT max(n) FROM t`),
    ]);
  });
  expect(counted).toEqual([[1]]);
  expect(missing).toContain("no such table");
  expect(max).toEqual([[7]]);
  // BEGIN, the INSERT, then the three SELECTs in one request (the INSERT's answer is awaited first); the COMMIT in another.
  expect(remoteRequests.write - before.write).toBe(3);
  expect(await onPrimary()).toEqual([7]);
});

test("a read transaction's COMMIT goes with the stream's next request, or alone once the stream is idle; the next read sees what committed since", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  const count = () => db.read((tx) => tx.values<[number]>(sql`SELECT count(*) FROM t`));
  const before = remoteRequests.read;
  expect(await count()).toEqual([[0]]);
  const other = createClient({ url: sqld.url });
  try {
    await other.execute("INSERT INTO t VALUES (1)");
  } finally {
    other.close();
  }
  // The first read's COMMIT went with this one's BEGIN: a snapshot kept open would not see the row.
  expect(await count()).toEqual([[1]]);
  expect(remoteRequests.read - before).toBe(2);
  // Idle, the last read's COMMIT is sent on its own.
  const deadline = Date.now() + 5_000;
  while (remoteRequests.read - before < 3 && Date.now() < deadline) await Bun.sleep(10);
  expect(remoteRequests.read - before).toBe(3);
});

test("statements run again and again are stored on the primary, within its limit of 150 a connection: 200 of them all answer", async () => {
  // sqld closes the WebSocket of a client that stores a 151st SQL text (RemoteStreams.sqlOn stores at most 100).
  const texts = Array.from({ length: 200 }, (_, i) => `SELECT ${i} AS n, 'a statement long enough to be worth storing' AS padding`);
  const sockets = remoteSockets.opened;
  for (let round = 0; round < 4; round++) {
    const answers = await db.read(async (tx) => {
      const seen: number[] = [];
      for (const text of texts) seen.push(Number((await tx.values<[number]>(sql.raw(text)))[0]![0]));
      return seen;
    });
    expect(answers).toEqual(texts.map((_, i) => i));
  }
  // Not one read was tried again on a new WebSocket.
  expect(remoteSockets.opened).toBe(sockets);
});

test("a write that fails with a statement of its own still waiting to be sent is taken back whole: nothing of it commits", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  const failed = db.tx(async (tx) => {
    // Issued and not awaited: it waits for the statements beside it (StreamConn.outgoing) when the write fails.
    void tx.run(sql`INSERT INTO t VALUES (99)`).catch(() => undefined);
    throw new Error("the write fails");
  });
  expect(
    await failed.then(
      () => "committed",
      (err: Error) => err.message,
    ),
  ).toBe("the write fails");
  await db.tx((tx) => tx.run(sql`INSERT INTO t VALUES (1)`));
  expect(await onPrimary()).toEqual([1]);
});

const countT = prepared((tx) => tx.select({ n: sql<number>`count(*)` }).from(tTable).prepare());

test("a read on commit goes in the COMMIT's request, after it: each write of a group sees what the group committed", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  const { promise: hold, resolve: release } = Promise.withResolvers<void>();
  const before = { ...remoteRequests };
  const seen: Promise<{ n: number } | undefined>[] = [];
  const write = (n: number, then?: Promise<void>) =>
    db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO t VALUES (${n})`);
      seen.push(getOnCommit(tx, countT(tx), {})!);
      await then;
    });
  const writes = [write(1, hold), write(2)];
  release();
  await Promise.all(writes);
  expect(await Promise.all(seen)).toEqual([{ n: 2 }, { n: 2 }]);
  // BEGIN with the first INSERT, the second INSERT, and the COMMIT with both reads.
  expect(remoteRequests.write - before.write).toBe(3);
});

test("a read on commit of a write taken back fails; the write run again reads anew, and nothing reads outside a commit", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM t"));
  const { promise: hold, resolve: release } = Promise.withResolvers<void>();
  const reads: Promise<{ n: number } | undefined>[] = [];
  const results = Promise.allSettled([
    db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO t VALUES (1)`);
      reads.push(getOnCommit(tx, countT(tx), {})!);
      await hold;
    }),
    // Fails after writing: the group is taken back, and the first write runs again.
    db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO t VALUES (2)`);
      throw new Error("two fails");
    }),
  ]);
  release();
  expect((await results).map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
  const settled = await Promise.all(
    reads.map((r) =>
      r.then(
        (v) => v,
        (err: Error) => err.message,
      ),
    ),
  );
  expect(settled).toEqual(["the transaction was taken back", { n: 1 }]);
  // A write that fails alone: its read fails with it.
  let alone: Promise<unknown> | undefined;
  await db
    .tx(async (tx) => {
      await tx.run(sql`INSERT INTO t VALUES (3)`);
      alone = getOnCommit(tx, countT(tx), {});
      throw new Error("three fails");
    })
    .catch(() => undefined);
  expect(
    await alone!.then(
      () => "read",
      () => "failed",
    ),
  ).toBe("failed");
  expect(await onPrimary()).toEqual([1]);
});
