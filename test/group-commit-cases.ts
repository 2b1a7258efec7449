// What group commit promises on any writer connection (db/turns.ts), as scenarios for the local file's tests and the
// remote primary's: writes held in one group, one failing after it wrote, one failing having only read; writes sent
// later (db/query.ts preparedWrite) that fail.
import { expect } from "bun:test";
import { sql } from "drizzle-orm";
import { integer, sqliteTable } from "drizzle-orm/sqlite-core";
import { type Db, preparedWrite } from "../db/client.ts";

/**
 * A write that fails is undone alone: the rest of its group commits, each write once. `db` has an empty table
 * t (n INTEGER); `rows` reads its n in order, from outside any open group.
 */
export async function failingWriteUndoneAlone(db: Db, rows: () => Promise<number[]>): Promise<void> {
  const { promise: hold, resolve: release } = Promise.withResolvers<void>();
  const runs = new Map<number, number>();
  const write = (n: number, then?: () => Promise<void>) =>
    db.tx(async (tx) => {
      runs.set(n, (runs.get(n) ?? 0) + 1);
      await tx.run(sql`INSERT INTO t VALUES (${n})`);
      await then?.();
    });
  const results = Promise.allSettled([
    write(1, () => hold),
    write(2),
    // Fails after writing: the group so far is taken back, and writes 1 and 2 run again.
    write(3, () => Promise.reject(new Error("three fails"))),
    // Fails having only read: the group goes on as it was.
    db.tx(async (tx) => {
      await tx.values(sql`SELECT count(*) FROM t`);
      throw new Error("four fails");
    }),
    write(5),
  ]);
  release();
  expect((await results).map((r) => (r.status === "fulfilled" ? "ok" : (r.reason as Error).message))).toEqual(["ok", "ok", "three fails", "four fails", "ok"]);
  expect(await rows()).toEqual([1, 2, 5]);
  expect(Object.fromEntries(runs)).toEqual({ 1: 2, 2: 2, 3: 1, 5: 1 });
}

const later = sqliteTable("later_u", { n: integer("n").primaryKey() });
const insertLater = preparedWrite((tx) =>
  tx
    .insert(later)
    .values({ n: sql.placeholder("n") })
    .prepare(),
);

/**
 * Writes whose answer nothing reads (preparedWrite) are seen by the next statement of their transaction; one that
 * fails fails its own write, whether it is sent with its write's next statement, the next write's or the COMMIT, and
 * leaves nothing of that write; the writes grouped with it commit. Creates the table later_u.
 */
export async function laterWritesFailAlone(db: Db): Promise<void> {
  await db.exclusive((c) => c.execute("CREATE TABLE later_u (n INTEGER PRIMARY KEY)"));
  const seen = await db.tx(async (tx) => {
    await insertLater(tx).run({ n: 1 });
    await insertLater(tx).run({ n: 2 });
    return tx.values<[number]>(sql`SELECT n FROM later_u ORDER BY n`);
  });
  expect(seen).toEqual([[1], [2]]);

  const { promise: hold, resolve: release } = Promise.withResolvers<void>();
  const results = Promise.allSettled([
    db.tx(async (tx) => {
      await insertLater(tx).run({ n: 3 });
      await hold;
    }),
    // The duplicate is the write's last statement: the end of the write reports it.
    db.tx(async (tx) => {
      await insertLater(tx).run({ n: 4 });
      await insertLater(tx).run({ n: 1 });
    }),
    // The duplicate is followed by a read: the read reports it.
    db.tx(async (tx) => {
      await insertLater(tx).run({ n: 5 });
      await insertLater(tx).run({ n: 2 });
      await tx.values(sql`SELECT count(*) FROM later_u`);
    }),
    db.tx((tx) => insertLater(tx).run({ n: 6 })),
    // The duplicate's error is swallowed by the code that runs next: the write fails all the same.
    db.tx(async (tx) => {
      await insertLater(tx).run({ n: 7 });
      await insertLater(tx).run({ n: 3 });
      await tx.values(sql`SELECT count(*) FROM later_u`).catch(() => undefined);
    }),
  ]);
  release();
  // On a remote primary the error comes with the statement that reported it (drizzle names that one), as its cause.
  const failure = (err: Error): string => `${err.message} ${err.cause instanceof Error ? failure(err.cause) : ""}`;
  const outcomes = (await results).map((r) => (r.status === "fulfilled" ? "ok" : failure(r.reason as Error)));
  expect(outcomes[0]).toBe("ok");
  expect(outcomes[1]).toContain("UNIQUE constraint failed");
  expect(outcomes[2]).toContain("UNIQUE constraint failed");
  expect(outcomes[3]).toBe("ok");
  expect(outcomes[4]).toContain("UNIQUE constraint failed");
  // The group's last write holds its duplicate back until the COMMIT: it alone fails, the write before it commits.
  const atCommit = await Promise.allSettled([db.tx((tx) => insertLater(tx).run({ n: 8 })), db.tx((tx) => insertLater(tx).run({ n: 1 }))]);
  expect(atCommit.map((r) => (r.status === "fulfilled" ? "ok" : failure(r.reason as Error)))).toEqual([
    "ok",
    expect.stringContaining("UNIQUE constraint failed"),
  ]);
  const rows = await db.read((tx) => tx.values<[number]>(sql`SELECT n FROM later_u ORDER BY n`));
  expect(rows.map(([n]) => n)).toEqual([1, 2, 3, 6, 8]);
}
