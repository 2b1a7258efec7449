// Query helpers for domain code: statements built and prepared once per connection, lists bound as one JSON value,
// and the read transaction that finds it must write (NeedsWrite).
import { fillPlaceholders, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { PreparedQueryConfig, SQLitePreparedQuery, SQLiteTable } from "drizzle-orm/sqlite-core";
import { readOnCommit, runNow, type RunNow, sendLater } from "./connections.ts";
import { isReadOnly, type Tx } from "./pool.ts";

/** The first column of the first row of a plain SQL query (drizzle maps rows only for its own selects). */
export async function scalar<T = unknown>(tx: Tx, query: SQL): Promise<T | undefined> {
  const [row] = await tx.values<[T]>(query);
  return row?.[0];
}

/**
 * A query built and prepared once per connection and reused: drizzle builds its SQL once, the connection
 * keeps the statement. `const q = prepared((tx) => tx.select()...where(eq(t.id, sql.placeholder("id"))).prepare());`
 * then `await q(tx).get({ id })`.
 */
export function prepared<Q extends SQLitePreparedQuery<PreparedQueryConfig>>(build: (tx: Tx) => Q): (tx: Tx) => Q {
  const built = new WeakMap<Tx, Q>();
  return (tx) => {
    let q = built.get(tx);
    if (q === undefined) {
      q = runningNow(build(tx), runNow(tx));
      built.set(tx, q);
    }
    return q;
  };
}

/**
 * On a local connection, the query's statement runs at once and drizzle only maps its rows: its session would wrap
 * every run in layers of promises (its query cache, the proxy's callback). add_expense, ~25 statements, gained ~8%.
 * drizzle documents no way to do this: test/spine/prepared-queries.test.ts pins the parts of it relied on here.
 */
export function runningNow<Q extends SQLitePreparedQuery<PreparedQueryConfig>>(q: Q, run: RunNow | undefined): Q {
  if (!run) return q;
  const { sql, params } = q.getQuery();
  const fill = (values?: Record<string, unknown>) => fillPlaceholders(params, values ?? {});
  const rows = (values: Record<string, unknown> | undefined, method: "get" | "all") => (run(sql, fill(values), method) as { rows: unknown }).rows;
  const direct: Pick<SQLitePreparedQuery<PreparedQueryConfig>, "get" | "all" | "values" | "run"> = {
    get: async (values) => q.mapGetResult(rows(values, "get")),
    all: async (values) => q.mapAllResult(rows(values, "all")),
    values: async (values) => rows(values, "all"),
    run: async (values) => run(sql, fill(values), "run"),
  };
  return Object.assign(Object.create(q) as Q, direct);
}

/**
 * Insert values that are all placeholders named as their columns, for an insert built once with prepared() and run
 * once per row: building a many-row insert anew on each call cost more than writing its rows.
 */
export function placeholders<K extends string>(columns: readonly K[]): Record<K, Placeholder> {
  return Object.fromEntries(columns.map((c) => [c, sql.placeholder(c)])) as unknown as Record<K, Placeholder>;
}

/** A write that nothing reads the answer of: `await q(tx).run(values)`. */
export interface Write {
  run(values?: Record<string, unknown>): Promise<void>;
}

/**
 * A write built and prepared once per connection whose answer nothing reads (an insert). On a remote primary it is
 * held back and sent with the next statement (the call's own, the next write's in its group, or the COMMIT), so a
 * call's inserts cost no round trip of their own while the writer is held; if it fails, its own call fails and the
 * rest of the group runs again (db/turns.ts). Elsewhere it runs at once.
 */
export function preparedWrite<Q extends SQLitePreparedQuery<PreparedQueryConfig>>(build: (tx: Tx) => Q): (tx: Tx) => Write {
  const query = prepared(build);
  const built = new WeakMap<Tx, Write>();
  return (tx) => {
    let w = built.get(tx);
    if (w === undefined) {
      const q = query(tx);
      const later = sendLater(tx);
      if (later) {
        const { sql, params } = q.getQuery();
        w = { run: async (values) => later(sql, fillPlaceholders(params, values ?? {})) };
      } else w = { run: async (values) => void (await q.run(values)) };
      built.set(tx, w);
    }
    return w;
  };
}

/**
 * The first row of a prepared query as the write transaction tx will have committed it, read with tx's COMMIT in
 * its request where the connection is a remote primary's (what a write answers with after its commit then costs no
 * transaction of its own); undefined elsewhere. Not awaited before the commit: it settles with it, and fails if tx
 * does not commit.
 */
export function getOnCommit<R>(tx: Tx, q: SQLitePreparedQuery<PreparedQueryConfig & { get: R }>, values: Record<string, unknown>): Promise<R> | undefined {
  return onCommit(tx, q, values, (rows) => q.mapGetResult(rows[0]) as R);
}

/** Every row of a prepared query as the write transaction tx will have committed it: as getOnCommit. */
export function allOnCommit<R>(tx: Tx, q: SQLitePreparedQuery<PreparedQueryConfig & { all: R }>, values: Record<string, unknown>): Promise<R> | undefined {
  return onCommit(tx, q, values, (rows) => q.mapAllResult(rows) as R);
}

function onCommit<R>(
  tx: Tx,
  q: SQLitePreparedQuery<PreparedQueryConfig>,
  values: Record<string, unknown>,
  map: (rows: unknown[][]) => R,
): Promise<R> | undefined {
  const read = readOnCommit(tx);
  if (!read) return undefined;
  const { sql, params } = q.getQuery();
  return unseenFailure(read(sql, fillPlaceholders(params, values)).then(map));
}

/**
 * p, whose failure is not reported as unhandled: a read on commit of a write that runs again is dropped, and fails
 * with nobody waiting for it.
 */
export function unseenFailure<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/** A one-row insert of these columns, built and prepared once per connection, as preparedWrite: `await q(tx).run(row)`. */
export function preparedInsert<T extends SQLiteTable>(table: T, columns: readonly (keyof T["$inferInsert"] & string)[]) {
  return preparedWrite((tx) =>
    tx
      .insert(table)
      .values(placeholders(columns) as T["$inferInsert"])
      .prepare(),
  );
}

/**
 * A list bound as one value: `json_each(:name)` over a JSON array (of arrays, for rows), for statements whose rows or
 * IN list vary in length. Their text is then the same for every length, so they are built and prepared once with
 * prepared(); a VALUES or IN list would be new SQL, built and prepared again, for each length.
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

/** Thrown in a read transaction by code that finds it must write after all; the caller runs it again in a write one. */
export class NeedsWrite extends Error {
  override name = "NeedsWrite";
}

/** Continues only in a write transaction: in a read one, throws NeedsWrite. */
export function requireWrite(tx: Tx): void {
  if (isReadOnly(tx)) throw new NeedsWrite("this call must write");
}
