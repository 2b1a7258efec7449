// Query helpers for domain code: statements built and prepared once per handle, lists bound as one JSON value, the
// guards a write call puts in its batch, the reads that see its batch committed, and NeedsWrite.
import { count, fillPlaceholders, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { PreparedQueryConfig, SQLitePreparedQuery, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { InValue } from "@libsql/client";
import { batchOf } from "./connections.ts";
import { isReadOnly, type Tx } from "./database.ts";

/** Deletes the rows of table where `where` holds; how many, as the call read them (what a job reports). */
export async function deleteCounted(tx: Tx, table: SQLiteTable, where: SQL | undefined): Promise<number> {
  const n = (await tx.select({ n: count() }).from(table).where(where).get())?.n ?? 0;
  if (n) await tx.delete(table).where(where);
  return n;
}

/** The first column of the first row of a plain SQL query (drizzle maps rows only for its own selects). */
export async function scalar<T = unknown>(tx: Tx, query: SQL): Promise<T | undefined> {
  const [row] = await tx.values<[T]>(query);
  return row?.[0];
}

/**
 * A query built once per handle and reused (handles live as long as their connection):
 * `const q = prepared((tx) => tx.select()...where(eq(t.id, sql.placeholder("id"))).prepare());` then
 * `await q(tx).get({ id })`.
 */
export function prepared<Q extends SQLitePreparedQuery<PreparedQueryConfig>>(build: (tx: Tx) => Q): (tx: Tx) => Q {
  const built = new WeakMap<Tx, Q>();
  return (tx) => {
    let q = built.get(tx);
    if (q === undefined) built.set(tx, (q = build(tx)));
    return q;
  };
}

/**
 * Insert values that are all placeholders named as their columns, for an insert built once with prepared() and run
 * once per row.
 */
export function placeholders<K extends string>(columns: readonly K[]): Record<K, Placeholder> {
  return Object.fromEntries(columns.map((c) => [c, sql.placeholder(c)])) as unknown as Record<K, Placeholder>;
}

/** A write that nothing reads the answer of: `await q(tx).run(values)`. */
export interface Write {
  run(values?: Record<string, unknown>): Promise<void>;
}

/** A write built once per handle whose answer nothing reads (in a batch, none is known before it commits). */
export function preparedWrite<Q extends SQLitePreparedQuery<PreparedQueryConfig>>(build: (tx: Tx) => Q): (tx: Tx) => Write {
  const query = prepared(build);
  return (tx) => {
    const q = query(tx);
    return { run: async (values) => void (await q.run(values)) };
  };
}

/** A one-row insert of these columns, built once per handle, as preparedWrite: `await q(tx).run(row)`. */
export function preparedInsert<T extends SQLiteTable>(table: T, columns: readonly (keyof T["$inferInsert"] & string)[]) {
  return preparedWrite((tx) =>
    tx
      .insert(table)
      .values(placeholders(columns) as T["$inferInsert"])
      .prepare(),
  );
}

/**
 * Puts in the write call's batch, at this point, the condition that what it read still holds: `holds` is an SQL
 * boolean expression. When it no longer holds as the batch runs, the batch fails whole as a write conflict and the
 * call runs again from its reads (db/database.ts), which then see what changed. Outside a write call it does nothing.
 */
export async function guard(tx: Tx, name: string, holds: SQL): Promise<void> {
  if (isReadOnly(tx)) return;
  await tx.run(sql`INSERT INTO write_conflicts (guard) SELECT ${name} WHERE NOT (${holds})`);
}

/**
 * Guards that the write just put in the batch changed a row: an UPDATE whose WHERE holds what the call read (a
 * version, a state), so a row changed since is not changed twice.
 */
export const guardChanged = (tx: Tx, name: string): Promise<void> => guard(tx, name, sql`changes() > 0`);

/**
 * The rows of a prepared query as the write call's batch commits them, read in the batch's own request; at once in
 * a read call. Not awaited inside the call (the batch is sent after it): it settles with the commit, or fails with it.
 */
export function allAfterCommit<R>(tx: Tx, q: SQLitePreparedQuery<PreparedQueryConfig & { all: R }>, values: Record<string, unknown>): Promise<R> {
  const batch = batchOf(tx);
  if (!batch || batch.sent) return q.all(values) as Promise<R>;
  const { sql, params } = q.getQuery();
  return unseenFailure(batch.readAfter(sql, fillPlaceholders(params, values)).then((rows) => q.mapAllResult(rows) as R));
}

/** The first row of a prepared query as the write call's batch commits it: as allAfterCommit. */
export function getAfterCommit<R>(tx: Tx, q: SQLitePreparedQuery<PreparedQueryConfig & { get: R }>, values: Record<string, unknown>): Promise<R> {
  const batch = batchOf(tx);
  if (!batch || batch.sent) return q.get(values) as Promise<R>;
  const { sql, params } = q.getQuery();
  return unseenFailure(batch.readAfter(sql, fillPlaceholders(params, values)).then((rows) => q.mapGetResult(rows[0]) as R));
}

const LATER = "\u0000filled later";

/**
 * A write with one value known only when the call ends (an idempotency record's answer): put in the batch now, in
 * its place, with that value null. fill(value) sets it while the batch is still being collected; false once the batch
 * was sent (the call read what it wrote), when the value must be written apart.
 */
export async function writeFilledLater(tx: Tx, statement: (value: unknown) => SQL): Promise<(value: unknown) => boolean> {
  const batch = batchOf(tx);
  const at = batch?.statements.length ?? -1;
  await tx.run(statement(LATER));
  const args = batch?.statements[at]?.args;
  const i = args?.indexOf(LATER) ?? -1;
  if (i >= 0) args![i] = null;
  return (value) => {
    if (!batch || batch.sent || i < 0) return false;
    args![i] = value as InValue;
    return true;
  };
}

/** p, whose failure is not reported as unhandled: a read after a batch that runs again fails with nobody waiting. */
export function unseenFailure<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/**
 * A list bound as one value: `json_each(:name)` over a JSON array (of arrays, for rows), for statements whose rows or
 * IN list vary in length. Their text is then the same for every length, so they are built and prepared once.
 */
export const jsonEach = (name: string): SQL => sql`json_each(${sql.placeholder(name)})`;

/**
 * The value bound to a jsonEach placeholder: the list as JSON, its strings well-formed. SQLite decodes the escape of
 * a lone surrogate into bytes that are not UTF-8, and the driver cannot read such text back (it aborts the process).
 */
export function jsonList(values: readonly unknown[]): string {
  const text = JSON.stringify(values);
  return /\\ud[89a-f]/i.test(text) ? JSON.stringify(values, (_key, v: unknown) => (typeof v === "string" ? v.toWellFormed() : v)) : text;
}

/** Thrown in a read call by code that finds it must write after all; the caller runs it again as a write call. */
export class NeedsWrite extends Error {
  override name = "NeedsWrite";
}

/** Continues only in a write call: in a read one, throws NeedsWrite. */
export function requireWrite(tx: Tx): void {
  if (isReadOnly(tx)) throw new NeedsWrite("this call must write");
}
