// What group commit promises on any writer connection (db/turns.ts), as one scenario for the local file's tests
// and the remote primary's: writes held in one group, one failing after it wrote, one failing having only read.
import { expect } from "bun:test";
import { sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";

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
