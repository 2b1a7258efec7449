// Connections and how drizzle reaches them. A read runs on a snapshot: a local connection (the `libsql` package's
// native Database on a file: a local database, or the file of an embedded replica), or a remote primary reached on
// Hrana streams kept open (Streams). A write is a Batch: its statements are collected while the call reads, and sent as one request at
// the end (db/database.ts), so no lock is held while anything waits.
import type { Client, InValue, ResultSet } from "@libsql/client";
import * as hrana from "@libsql/hrana-client";
import { atCommit } from "./errors.ts";
import { drizzle, type AsyncRemoteCallback } from "drizzle-orm/sqlite-proxy";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type Database from "libsql";
import * as schema from "./schema/index.ts";

export type TxKind = "read" | "write";

/** What a write statement reports: never read in a batch, where it is not known until the batch commits. */
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

type Method = "run" | "all" | "get" | "values";
/** How a handle's statements run: at once on a snapshot, or collected into a batch. */
export type Exec = (sql: string, params: unknown[], method: Method) => unknown;

/** A read that runs in the batch's own request, once its writes have run: who waits for its rows. */
interface ReadAfter {
  at: number;
  resolve(rows: unknown[][]): void;
  reject(err: unknown): void;
}

/**
 * A write call's statements, in order, as one request: its writes and guards, then the reads that see them
 * (readAfter). It is sent when the call returns, or as soon as the call reads a table it wrote (`written`): that read
 * must see the write, so the batch goes first, and the call may only read after it (a page rendered after its form's
 * writes). Either way the call's writes are one request.
 */
export class Batch {
  readonly statements: { sql: string; args: InValue[] }[] = [];
  readonly reads: ReadAfter[] = [];
  readonly written = new Set<string>();
  /** Set once the batch is sent: the call may only read. */
  sent = false;
  /** Sends the batch now, and has the call's next reads see it (db/database.ts). */
  send: () => Promise<void> = async () => {};
  /** Where the call reads once its batch is sent, if not its snapshot (a replica that could not catch up). */
  readsAfterSend?: Exec;

  write(sql: string, args: unknown[]): void {
    this.statements.push({ sql, args: args as InValue[] });
    const table = WRITTEN_TABLE.exec(sql)?.[1];
    if (table) this.written.add(table);
  }

  readAfter(sql: string, args: unknown[]): Promise<unknown[][]> {
    return new Promise((resolve, reject) => {
      this.reads.push({ at: this.statements.length, resolve, reject });
      this.statements.push({ sql, args: args as InValue[] });
    });
  }

  /** Hands each read after its rows, from the batch's results (one per statement, as arrays). */
  settle(results: unknown[][][]): void {
    for (const r of this.reads) r.resolve(results[r.at]!);
  }

  fail(err: unknown): void {
    for (const r of this.reads) r.reject(err);
  }

  get empty(): boolean {
    return this.statements.length === this.reads.length;
  }
}

const WRITTEN_TABLE = /^\s*(?:insert(?:\s+or\s+\w+)?\s+into|update|delete\s+from|replace\s+into)\s+"?(\w+)"?/i;
const READ_STATEMENT = /^\s*(select|with)\b/i;

const batches = new WeakMap<Orm, () => Batch>();
/** The batch a write call's handle is collecting now; undefined for a read's. */
export const batchOf = (orm: Orm): Batch | undefined => batches.get(orm)?.();

const snapshots = new WeakMap<Orm, Orm>();
/**
 * The snapshot a write call reads, without the refusal of reads of tables it has written: for a read of rows the
 * call has not written (a key-value table read by key, as attempt counts are). Any other handle as it is.
 */
export const snapshotOf = (orm: Orm): Orm => snapshots.get(orm) ?? orm;

/** The handles of read transactions, where nothing may be written. */
export const readOnlyHandles = new WeakSet<Orm>();

const READ_ONLY = "READ_ONLY_TRANSACTION";

/** A read handle over exec: a statement other than a SELECT fails, in every mode. */
export function readHandle(exec: Exec): Orm {
  const orm = ormOn((sql, params, method) => {
    if (!READ_STATEMENT.test(sql)) {
      throw Object.assign(new Error(`${READ_ONLY}: Invalid write in a read transaction: ${sql.trim().split(/\s+/, 3).join(" ")} ...`), { code: READ_ONLY });
    }
    return exec(sql, params, method);
  });
  readOnlyHandles.add(orm);
  return orm;
}

/** A write handle: reads run on the snapshot (read), writes go into the batch it is collecting (current). */
export function batchHandle(read: Exec, current: () => Batch, snapshot: Orm): Orm {
  const orm = ormOn((sql, params, method) => {
    const batch = current();
    if (!READ_STATEMENT.test(sql)) {
      if (method !== "run") throw new Error(`A write's result is not known before its batch commits: ${sql.slice(0, 60)} ...`);
      if (batch.sent) throw new Error(`A write call writes after reading what it wrote (its batch was sent then): ${sql.slice(0, 60)} ...`);
      batch.write(sql, params);
      return BATCHED;
    }
    if (!batch.sent && [...batch.written].some((t) => sql.includes(`"${t}"`))) {
      return batch.send().then(() => (batch.readsAfterSend ?? read)(sql, params, method));
    }
    return (batch.readsAfterSend ?? read)(sql, params, method);
  });
  batches.set(orm, current);
  snapshots.set(orm, snapshot);
  return orm;
}

// What a write in a batch answers: its row count is the batch's to know (guard it instead).
const BATCHED: RunResult = Object.freeze({
  get rowsAffected(): number {
    throw new Error("A write's row count is not known before its batch commits: guard the condition instead (db/query.ts guard).");
  },
});

function ormOn(exec: Exec): Orm {
  // drizzle awaits the proxy's answer, so a local connection's is handed over as it is.
  return drizzle(exec as unknown as AsyncRemoteCallback, { schema }) as unknown as Orm;
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

type Prepared = { stmt: Database.Statement; reader: boolean };

/** A connection on a local file: each statement prepared once and kept; every call on it runs at once. */
export class LocalConnection {
  private readonly cache = new Map<string, Prepared>();
  readonly exec: Exec = (sql, params, method) => {
    const { stmt, reader } = this.statement(sql);
    if (method === "run" || !reader) return { rowsAffected: stmt.run(params).changes };
    // get() by all(): the native get() can leave its statement open after the first row, and an open statement keeps
    // the connection on the snapshot it began with (a reader then answers from before the last writes).
    return { rows: method === "get" ? (stmt.all(params) as unknown[])[0] : stmt.all(params) };
  };
  readonly raw: RawSql;

  constructor(readonly db: Database.Database) {
    this.raw = {
      execute: async (statement, args) => {
        const { sql, args: params } = argsOf(statement, args);
        const { stmt, reader } = this.statement(sql);
        if (!reader) return { rows: [], rowsAffected: stmt.run(params).changes };
        const columns = stmt.columns().map((c) => (c as { name: string }).name);
        return { rows: (stmt.all(params) as unknown[][]).map((v) => namedRow(columns, v)), rowsAffected: 0 };
      },
      executeMultiple: async (sql) => void this.db.exec(sql),
      transaction: async (fn) => {
        this.db.exec("BEGIN IMMEDIATE");
        try {
          const result = await fn(this.raw);
          this.db.exec("COMMIT");
          return result;
        } catch (err) {
          if (this.db.inTransaction) this.db.exec("ROLLBACK");
          throw err;
        }
      },
    };
  }

  private statement(sql: string): Prepared {
    let s = this.cache.get(sql);
    if (!s) {
      const stmt = this.db.prepare(sql);
      // Asking the native statement costs a call each time, so its answer is kept with it.
      s = { stmt, reader: stmt.reader };
      if (s.reader) stmt.raw(true);
      if (this.cache.size >= STATEMENT_CACHE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(sql, s);
    }
    return s;
  }

  /** fn in a read transaction: one snapshot for all its statements. */
  async read<T>(fn: (exec: Exec) => Promise<T>): Promise<T> {
    this.db.exec("BEGIN");
    try {
      return await fn(this.exec);
    } finally {
      if (this.db.open && this.db.inTransaction) this.db.exec("COMMIT");
    }
  }

  /**
   * A batch as one short transaction, run to the end without yielding (the driver is synchronous): nothing else on
   * this process's event loop runs while it holds the file's write lock. Results as arrays, one per statement.
   */
  commit(batch: Batch): unknown[][][] {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      const results = batch.statements.map(({ sql, args }) => {
        const { stmt, reader } = this.statement(sql);
        if (reader) return stmt.all(args as unknown[]) as unknown[][];
        stmt.run(args as unknown[]);
        return [];
      });
      this.db.exec("COMMIT");
      return results;
    } catch (err) {
      if (this.db.open && this.db.inTransaction) this.db.exec("ROLLBACK");
      throw err;
    }
  }

  close(): void {
    this.cache.clear();
    if (this.db.open) this.db.close();
  }
}

/** Requests this process sent to a remote primary: reads, and batches of writes (bench/scale.ts). */
export const remoteRequests = { read: 0, write: 0 };

// A stream idle this long is closed and a new one opened: the primary ends idle streams by itself (sqld after 10 s).
const STREAM_IDLE_MS = 5_000;

/**
 * Hrana streams on a primary, kept open from statement to statement and shared by reads and batches, at most `max`
 * at once. A stream is a connection on the primary: sqld opens one and reads svc's schema for each new stream, 4.2 ms
 * of its CPU against 0.6 ms for a statement on an open one (bench/README.md), so a stream per statement made the
 * primary the bottleneck of every remote deployment; and a primary serves so many connections (sqld 128), so each
 * instance keeps a bounded number. A stream runs one request at a time.
 */
export class Streams {
  private readonly idle: { stream: hrana.HttpStream; used: number }[] = [];
  private readonly waiting: (() => void)[] = [];
  private count = 0;
  private readonly client: hrana.HttpClient;

  /** url: the primary's, in any form it takes (libsql:, ws:, wss:, http:, https:); Hrana over HTTP is used. */
  constructor(
    url: string,
    authToken: string | undefined,
    private readonly max: number,
  ) {
    const u = new URL(url);
    const tls = u.protocol === "libsql:" ? u.searchParams.get("tls") !== "0" : ["https:", "wss:"].includes(u.protocol);
    const token = authToken ?? u.searchParams.get("authToken") ?? undefined;
    this.client = hrana.openHttp(`${tls ? "https" : "http"}://${u.host}${u.pathname === "/" ? "" : u.pathname}`, token);
  }

  /** fn on a stream of its own; a stream fn failed on is closed, not used again (expired, or the primary gone). */
  async use<T>(fn: (stream: hrana.HttpStream, version: number) => Promise<T>): Promise<T> {
    const stream = await this.take();
    try {
      const result = await fn(stream, await this.client.getVersion());
      this.idle.push({ stream, used: performance.now() });
      return result;
    } catch (err) {
      stream.close();
      this.count--;
      throw err;
    } finally {
      this.waiting.shift()?.();
    }
  }

  private async take(): Promise<hrana.HttpStream> {
    for (;;) {
      const open = this.idle.pop();
      if (open && !open.stream.closed && performance.now() - open.used < STREAM_IDLE_MS) return open.stream;
      if (open) {
        open.stream.closeGracefully();
        this.count--;
        continue;
      }
      if (this.count < this.max) {
        this.count++;
        return this.client.openStream();
      }
      await new Promise<void>((wake) => this.waiting.push(wake));
    }
  }

  close(): void {
    for (const { stream } of this.idle.splice(0)) stream.closeGracefully();
    this.client.close();
  }
}

// drizzle reads rows as arrays (values() destructures them); Hrana's rows are array-like, not arrays.
const arraysOf = (rs: { rows: ArrayLike<unknown>[] }) => rs.rows.map((r) => Array.from(r));

interface Asked {
  sql: string;
  params: unknown[];
  method: Method;
  resolve(answer: unknown): void;
  reject(err: unknown): void;
}

/**
 * Reads of a remote primary, each statement on its own (it sees what is committed), on a pooled stream. The reads a
 * call asks at once (Promise.all) go on one stream, which sends them in one request (Hrana pipelines what is asked of
 * a stream in one turn): a request costs the primary more CPU than a statement in it.
 */
export function streamExec(streams: Streams): Exec {
  let asked: Asked[] = [];
  const send = () => {
    const together = asked;
    asked = [];
    remoteRequests.read++;
    void streams
      .use((s) =>
        Promise.all(
          together.map(async (q) => {
            try {
              const args: [string, hrana.InValue[]] = [q.sql, q.params as hrana.InValue[]];
              if (q.method === "run") return q.resolve({ rowsAffected: (await s.run(args)).affectedRowCount });
              const rows = arraysOf(await s.query(args));
              q.resolve({ rows: q.method === "get" ? rows[0] : rows });
            } catch (err) {
              q.reject(err);
              throw err;
            }
          }),
        ),
      )
      .catch((err) => {
        // The stream failed before a statement was sent (none open, the primary gone): each hears of it.
        for (const q of together) q.reject(err);
      });
  };
  return (sql, params, method) =>
    new Promise((resolve, reject) => {
      if (!asked.length) queueMicrotask(send);
      asked.push({ sql, params, method, resolve, reject });
    });
}

// Batches one request to the primary carries at most: each is its own transaction, so more only lengthen the request.
const BATCHES_A_REQUEST = 16;

interface Waiting {
  batch: Batch;
  resolve(results: unknown[][][]): void;
  reject(err: unknown): void;
}

/**
 * Write batches on a primary, one request at a time from this instance: the batches that wait meanwhile go together
 * in the next request, each its own transaction (BEGIN IMMEDIATE, its statements, each run only if the one before
 * succeeded, COMMIT, else ROLLBACK: what @libsql/client's `batch(..., "write")` sends). One request in flight keeps
 * this instance's transactions from waiting on each other in the primary's lock, where sqld parks a waiter until the
 * holder's transaction times out when it misses the holder's release (seconds; bench/README.md), and the batches
 * that queue behind a round trip still take only one more.
 */
export function streamCommit(streams: Streams): (batch: Batch) => Promise<unknown[][][]> {
  const queue: Waiting[] = [];
  let sending = false;
  const send = async () => {
    sending = true;
    while (queue.length) {
      const together = queue.splice(0, BATCHES_A_REQUEST);
      remoteRequests.write++;
      await streams
        .use((stream, version) => inOneRequest(stream, version, together))
        .catch((err) => {
          for (const w of together) w.reject(err);
        });
    }
    sending = false;
  };
  return (batch) =>
    new Promise((resolve, reject) => {
      queue.push({ batch, resolve, reject });
      if (!sending) void send();
    });
}

/** The batches as transactions of one request; each settles on its own: one refused leaves the others committed. */
async function inOneRequest(stream: hrana.HttpStream, version: number, together: Waiting[]): Promise<void> {
  const steps = stream.batch(false);
  // Hrana 3 can tell whether a transaction is open: a statement never runs outside its own.
  const inTransaction = (step: hrana.BatchStep) => (version >= 3 ? step.condition(hrana.BatchCond.not(hrana.BatchCond.isAutocommit(steps))) : step);
  const outcomes = together.map(({ batch }) => {
    const begin = steps.step();
    if (version >= 3) begin.condition(hrana.BatchCond.isAutocommit(steps));
    const began = begin.run("BEGIN IMMEDIATE");
    let last = begin;
    const answers = batch.statements.map((st) => {
      const step = inTransaction(steps.step().condition(hrana.BatchCond.ok(last)));
      last = step;
      return step.query([st.sql, st.args as hrana.InValue[]]);
    });
    const commit = inTransaction(steps.step().condition(hrana.BatchCond.ok(last)));
    const committed = commit.run("COMMIT");
    steps
      .step()
      .condition(hrana.BatchCond.not(hrana.BatchCond.ok(commit)))
      .run("ROLLBACK")
      .catch(() => undefined);
    return { began, answers, committed };
  });
  try {
    await steps.execute();
  } catch (err) {
    // Lost on the way, any of them may have committed.
    throw atCommit(err);
  }
  for (const [i, { began, answers, committed }] of outcomes.entries()) {
    try {
      // Refused by the primary (busy, a guard, a key): it ran nothing.
      await began;
      const results: unknown[][][] = [];
      for (const answer of answers) {
        const rows = await answer;
        if (!rows) throw new Error("A statement of the batch did not run: the transaction was rolled back");
        results.push(arraysOf(rows));
      }
      await committed;
      together[i]!.resolve(results);
    } catch (err) {
      together[i]!.reject(err);
    }
  }
}

const rawResult = (rs: ResultSet): RawResult => ({
  rows: rs.rows.map((r) => namedRow(rs.columns, Array.from(r as ArrayLike<unknown>))),
  rowsAffected: rs.rowsAffected,
});

/** Plain SQL on a remote client. */
export function remoteRaw(client: Client): RawSql {
  return {
    execute: async (stmt, args) => rawResult(await client.execute(argsOf(stmt, args))),
    executeMultiple: (sql) => client.executeMultiple(sql),
    async transaction(fn) {
      const t = await client.transaction("write");
      try {
        const inner: RawSql = {
          execute: async (stmt, args) => rawResult(await t.execute(argsOf(stmt, args))),
          executeMultiple: (sql) => t.executeMultiple(sql),
          transaction: () => Promise.reject(new Error("transactions do not nest")),
        };
        const result = await fn(inner);
        await t.commit();
        return result;
      } finally {
        t.close();
      }
    },
  };
}
