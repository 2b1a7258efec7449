// Connections and how drizzle reaches them. A local connection (the `libsql` package's native Database:
// a local file or an embedded replica) prepares each statement once and keeps it; a remote primary is
// reached through @libsql/client, one interactive transaction at a time.
import type { Client, InValue, ResultSet, Transaction } from "@libsql/client";
import { type AsyncRemoteCallback, drizzle } from "drizzle-orm/sqlite-proxy";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type Database from "libsql";
import * as schema from "./schema/index.ts";

export type TxKind = "read" | "write";

/** What a write statement reports. */
export interface RunResult {
  rowsAffected: number;
}
export type Orm = BaseSQLiteDatabase<"async", RunResult, typeof schema>;

/** A row of plain SQL: by column name, and by position (not enumerated). */
export type Row = Record<string | number, unknown>;
export interface RawResult {
  rows: Row[];
  rowsAffected: number;
}
/** Plain SQL, for migrations, backups, admin commands and tests. */
export interface RawSql {
  execute(stmt: string | { sql: string; args?: InValue[] }, args?: InValue[]): Promise<RawResult>;
  executeMultiple(sql: string): Promise<void>;
  /** fn in one write transaction on this connection. */
  transaction<T>(fn: (raw: RawSql) => Promise<T>): Promise<T>;
}

/** One connection as the pool sees it: transactions and plain SQL. */
export interface Conn {
  run<T>(kind: TxKind, fn: (tx: Orm) => Promise<T>): Promise<T>;
  readonly raw: RawSql;
  close(): void;
}

type Method = "run" | "all" | "get" | "values";
type Exec = (sql: string, params: unknown[], method: Method) => Promise<unknown>;

/** The handles of read transactions, where nothing may be written. */
export const readOnlyHandles = new WeakSet<Orm>();

const READ_ONLY = "READ_ONLY_TRANSACTION";
// What an embedded replica runs locally inside BEGIN READONLY (libsql's parser: SELECT, WITH ... SELECT).
const READ_STATEMENT = /^\s*(select|with)\b/i;
// BEGIN TRANSACTION READONLY: an embedded replica serves it locally; SQLite reads READONLY as a name.
const BEGIN = { read: "BEGIN TRANSACTION READONLY", write: "BEGIN IMMEDIATE" } as const;

/**
 * Statements are checked before they run: on a local file BEGIN READONLY is a plain BEGIN, so without this a
 * hidden write would pass there and fail only on a replica.
 */
function checkRead(sql: string): void {
  if (!READ_STATEMENT.test(sql)) {
    throw Object.assign(new Error(`${READ_ONLY}: Invalid write in a read transaction: ${sql.trim().split(/\s+/, 3).join(" ")} ...`), { code: READ_ONLY });
  }
}

/** A local connection's statements run at once, without drizzle's session around each (see prepared()). */
export type RunNow = (sql: string, params: unknown[], method: Method) => { rows: unknown } | RunResult;
const runNowOf = new WeakMap<Orm, RunNow>();
/** How to run a statement on the handle's connection at once; undefined for a remote one (each call awaits). */
export const runNow = (orm: Orm): RunNow | undefined => runNowOf.get(orm);

/** The drizzle handle of a transaction's kind; runsNow: exec answers at once (a local connection), see prepared(). */
function ormOn<E extends Exec | RunNow>(exec: E, kind: TxKind, runsNow = false): Orm {
  const checked = (kind === "read" ? (sql, params, method) => (checkRead(sql), exec(sql, params, method)) : exec) as E;
  // The proxy's declared result is a promise of { rows }: drizzle awaits it, so a local connection's answer is handed
  // over as it is, and a run answers { rowsAffected } instead, as RunResult says.
  const orm = drizzle(checked as unknown as AsyncRemoteCallback, { schema }) as unknown as Orm;
  if (runsNow) runNowOf.set(orm, checked as RunNow);
  if (kind === "read") readOnlyHandles.add(orm);
  return orm;
}

const argsOf = (stmt: string | { sql: string; args?: InValue[] }, args?: InValue[]) =>
  typeof stmt === "string" ? { sql: stmt, args: args ?? [] } : { sql: stmt.sql, args: stmt.args ?? args ?? [] };

function namedRow(columns: string[], values: unknown[]): Row {
  const row: Row = {};
  columns.forEach((c, i) => {
    row[c] = values[i];
    Object.defineProperty(row, i, { value: values[i], enumerable: false });
  });
  return row;
}

// Statements kept per connection; queries with IN lists of varying length would otherwise grow it forever.
const STATEMENT_CACHE = 1000;

export class LocalConnection implements Conn {
  private readonly statements = new Map<string, { stmt: Database.Statement; reader: boolean }>();
  private readonly orms: Record<TxKind, Orm>;
  readonly raw: RawSql;

  /**
   * replica: an embedded replica, whose driver routes each statement it runs (reads local, writes to the primary);
   * its transaction statements go the way they always did, as prepared statements.
   */
  constructor(
    readonly db: Database.Database,
    private readonly replica = false,
  ) {
    const exec: RunNow = (sql, params, method) => this.exec(sql, params, method);
    this.orms = { read: ormOn(exec, "read", true), write: ormOn(exec, "write", true) };
    this.raw = {
      execute: async (statement, args) => {
        const { sql, args: params } = argsOf(statement, args);
        const { stmt, reader } = this.statement(sql);
        if (!reader) return { rows: [], rowsAffected: stmt.run(params).changes };
        const columns = stmt.columns().map((c) => (c as { name: string }).name);
        return { rows: (stmt.all(params) as unknown[][]).map((v) => namedRow(columns, v)), rowsAffected: 0 };
      },
      executeMultiple: async (sql) => void this.db.exec(sql),
      transaction: (fn) => this.transact("write", () => fn(this.raw)),
    };
  }

  /** The prepared statement for this SQL, prepared on first use. */
  private statement(sql: string): { stmt: Database.Statement; reader: boolean } {
    let s = this.statements.get(sql);
    if (!s) {
      const stmt = this.db.prepare(sql);
      // Asking the native statement costs a call each time, so its answer is kept with it.
      s = { stmt, reader: stmt.reader };
      if (s.reader) stmt.raw(true);
      if (this.statements.size >= STATEMENT_CACHE) this.statements.delete(this.statements.keys().next().value!);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Statements run that may have written: group commit asks whether a failed write changed anything. */
  writesRun = 0;

  private exec(sql: string, params: unknown[], method: Method): { rows: unknown } | RunResult {
    const { stmt, reader } = this.statement(sql);
    if (method === "run" || !reader) {
      this.writesRun++;
      return { rowsAffected: stmt.run(params).changes };
    }
    return { rows: method === "get" ? stmt.get(params) : stmt.all(params) };
  }

  // BEGIN, COMMIT and ROLLBACK on a local file through the driver's plain exec: its prepared-statement run reads
  // the change counters and builds a result around every statement: a tenth of a cheap read call, under load.
  private control(sql: string): void {
    if (this.replica) this.exec(sql, [], "run");
    else this.db.exec(sql);
  }

  private async transact<T>(kind: TxKind, fn: () => Promise<T>): Promise<T> {
    this.control(BEGIN[kind]);
    try {
      const result = await fn();
      this.commit();
      return result;
    } catch (err) {
      this.rollback();
      throw err;
    }
  }

  run<T>(kind: TxKind, fn: (tx: Orm) => Promise<T>): Promise<T> {
    return this.transact(kind, () => fn(this.orms[kind]));
  }

  // Group commit (db/turns.ts) begins and commits the write transaction its writes share itself.
  /** Whether a transaction is open; false once the connection is closed (the driver would panic). */
  get inTransaction(): boolean {
    return this.db.open && this.db.inTransaction;
  }
  begin(): void {
    this.control(BEGIN.write);
  }
  /** The handle of a write transaction begun with begin(). */
  get writeOrm(): Orm {
    return this.orms.write;
  }
  commit(): void {
    this.control("COMMIT");
  }
  /** Rolls back the open transaction, if SQLite has not already (a full disk, an interrupted statement). */
  rollback(): void {
    if (this.inTransaction) this.control("ROLLBACK");
  }

  close(): void {
    this.statements.clear();
    if (this.db.open) this.db.close();
  }
}

/** fn in one interactive transaction of a remote client. */
export async function remoteTransaction<T>(client: Client, kind: TxKind, fn: (tx: Orm) => Promise<T>): Promise<T> {
  const t = await client.transaction(kind);
  try {
    const orm = ormOn(async (sql, params, method) => {
      const rs = await t.execute({ sql, args: params as InValue[] });
      if (method === "run") return { rowsAffected: rs.rowsAffected };
      // drizzle reads rows as arrays (values() destructures them); the client's rows are array-like, not arrays.
      const rows = rs.rows.map((r) => Array.from(r as ArrayLike<unknown>));
      return { rows: method === "get" ? rows[0] : rows };
    }, kind);
    const result = await fn(orm);
    await t.commit();
    return result;
  } finally {
    t.close();
  }
}

const rawResult = (rs: ResultSet): RawResult => ({
  rows: rs.rows.map((r) => namedRow(rs.columns, Array.from(r as ArrayLike<unknown>))),
  rowsAffected: rs.rowsAffected,
});

/** Plain SQL on a remote client, or inside one of its transactions. */
export function remoteRaw(on: Client | Transaction): RawSql {
  return {
    execute: async (stmt, args) => rawResult(await on.execute(argsOf(stmt, args))),
    executeMultiple: (sql) => on.executeMultiple(sql),
    async transaction(fn) {
      if (!("transaction" in on)) throw new Error("transactions do not nest");
      const t = await on.transaction("write");
      try {
        const result = await fn(remoteRaw(t));
        await t.commit();
        return result;
      } finally {
        t.close();
      }
    },
  };
}
