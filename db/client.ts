// The one way into the database. Three modes share this code: a local file, a remote libSQL/Turso
// primary, and an embedded replica (a local file kept in sync with a primary). Everything that
// differs between them lives here (connections in db/connections.ts).
//
// Queries are written with drizzle; drizzle's sqlite-proxy hands each statement's SQL to the connection
// that runs the transaction, which keeps every statement prepared once and reuses it.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { createClient, type Client, type Config } from "@libsql/client";
import { fillPlaceholders, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { PreparedQueryConfig, SQLitePreparedQuery, SQLiteTable } from "drizzle-orm/sqlite-core";
import Database from "libsql";
import { GroupCommit, Turns } from "./turns.ts";
import {
  LocalConnection,
  readOnlyHandles,
  remoteTransaction,
  remoteRaw,
  runNow,
  type Conn,
  type Orm,
  type RawSql,
  type Row,
  type RunNow,
  type TxKind,
} from "./connections.ts";

export type { Orm, RawSql, Row, TxKind };
/** The handle a transaction gives to domain code; the only way domain code reaches the database. */
export type Tx = Orm;

export type DbMode = "local" | "remote" | "replica";

export interface DbOptions {
  url: string;
  authToken?: string;
  /** Primary of an embedded replica; `url` is then the replica's local file. */
  syncUrl?: string;
  /** Seconds between background syncs of a replica (besides the sync after each write). */
  syncIntervalSeconds?: number;
  /** Bound on reaching a remote primary at open; past it openDb fails instead of hanging. */
  connectTimeoutMs?: number;
  /** How many processes open it at once (svc serve --workers): only a local file can be shared. */
  processes?: number;
  /** Called with the duration of every transaction run through tx() or read(), for metrics. */
  observeTx?: (ms: number, ok: boolean, kind: TxKind) => void;
}

export interface Db {
  readonly url: string;
  readonly mode: DbMode;
  /**
   * Runs fn in one write transaction; writes take turns on the one writer connection, and on a local file those
   * that queue up share one COMMIT (db/turns.ts). fn may run more than once, so it does nothing outside the database.
   */
  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Runs fn in one read transaction on a reader connection, so a read never waits behind a write (an embedded
   * replica serves it from its local file). A statement other than a SELECT fails, in every mode.
   */
  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Runs fn with plain SQL on the writer connection, in the writers' turn (migrations, backups, admin). */
  exclusive<T>(fn: (raw: RawSql) => Promise<T>): Promise<T>;
  /** Plain SQL in the writers' turn: exclusive() for one statement. */
  readonly raw: RawSql;
  /** Milliseconds a trivial query takes; throws when the database cannot answer. */
  ping(): Promise<number>;
  /** Waits for work in progress, checkpoints the WAL of a local file into it, then closes every connection. */
  close(): Promise<void>;
}

/** A database that cannot be opened or reached; the message is meant for the operator and never holds the token. */
export class DbOpenError extends Error {
  override name = "DbOpenError";
}

/** Whether tx is a read transaction of Db.read, where nothing may be written. */
export const isReadOnly = (tx: Tx): boolean => readOnlyHandles.has(tx);

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const BUSY_TIMEOUT_MS = 5_000;
// Readers beside the one writer: enough that a read never waits behind a write, few enough to stay light.
const LOCAL_READERS = 3;
const REMOTE_SCHEMES = ["libsql:", "http:", "https:", "ws:", "wss:"];

const schemeOf = (url: string) => /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();

/** Scheme, host and path only: query strings may carry credentials. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.protocol === "file:" ? url.split("?")[0]! : `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return url.split("?")[0]!;
  }
}

/** Which mode the options ask for; throws DbOpenError for a combination that cannot work. */
export function selectMode(opts: DbOptions): DbMode {
  const mode = modeOf(opts);
  if ((opts.processes ?? 1) > 1 && (mode !== "local" || localPath(opts.url) === ":memory:")) {
    throw new DbOpenError(
      "--workers above 1 needs a local database file (--db file:PATH): a remote database, an embedded replica or :memory: is served by one process.",
    );
  }
  return mode;
}

function modeOf(opts: DbOptions): DbMode {
  const scheme = schemeOf(opts.url);
  const remote = scheme !== undefined && REMOTE_SCHEMES.includes(scheme);
  if (scheme !== "file:" && !remote) {
    throw new DbOpenError(
      `Unsupported database URL ${describeUrl(opts.url)}: use file:PATH for a local file, or libsql://HOST (also https://, wss://) for a remote libSQL or Turso database.`,
    );
  }
  if (opts.syncIntervalSeconds !== undefined && !opts.syncUrl) {
    throw new DbOpenError("--sync-interval applies only to an embedded replica: give --sync-url as well.");
  }
  if (opts.syncUrl !== undefined) {
    if (remote) {
      throw new DbOpenError(
        "--sync-url makes an embedded replica, whose --db must be a local file:PATH; for a remote database without a replica leave out --sync-url.",
      );
    }
    const syncScheme = schemeOf(opts.syncUrl);
    if (!syncScheme || !REMOTE_SCHEMES.includes(syncScheme)) {
      throw new DbOpenError(`--sync-url must be the primary's libsql://HOST (or https://) URL, not ${describeUrl(opts.syncUrl)}.`);
    }
    if (localPath(opts.url) === ":memory:") throw new DbOpenError("An embedded replica needs a file for --db, not :memory:.");
    if (opts.syncIntervalSeconds !== undefined && !(opts.syncIntervalSeconds > 0)) {
      throw new DbOpenError("--sync-interval must be a positive duration such as 5s.");
    }
    return "replica";
  }
  if (remote) return "remote";
  if (opts.authToken) {
    throw new DbOpenError("--auth-token applies only to a remote database (libsql://) or a replica's --sync-url; a local file takes none.");
  }
  return "local";
}

const localPath = (url: string) => url.slice("file:".length).split("?")[0]!;

/** The file behind a local file: URL, or null for a remote URL or an in-memory database. */
export function localFilePath(url: string): string | null {
  if (schemeOf(url) !== "file:") return null;
  const path = localPath(url);
  return path && path !== ":memory:" ? path : null;
}

/** Opens (creating if needed) the database; no connection exists until this is called. */
export async function openDb(opts: DbOptions): Promise<Db> {
  const mode = selectMode(opts);
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  if (mode === "remote") {
    const client = await reachPrimary({ url: opts.url, authToken: opts.authToken }, timeoutMs);
    return assemble(opts, mode, remotePool(client), () => client.close());
  }
  const path = localPath(opts.url);
  if (path && path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  if (mode === "replica") {
    // Opening a replica syncs inside native code that blocks the event loop and has no timeout of its
    // own, so the primary is first proven reachable (and the token accepted) with a bounded probe.
    (await reachPrimary({ url: opts.syncUrl!, authToken: opts.authToken }, timeoutMs)).close();
    const conn = guard(
      opts.syncUrl!,
      opts.authToken,
      () =>
        new LocalConnection(
          new Database(path, {
            syncUrl: opts.syncUrl,
            authToken: opts.authToken,
            // Writes go to the primary; the replica then waits for them, so the next read sees them.
            readYourWrites: true,
            syncPeriod: opts.syncIntervalSeconds,
          } as Database.Options),
          true,
        ),
    );
    try {
      conn.db.sync();
    } catch (err) {
      conn.close();
      throw openError(opts.syncUrl!, opts.authToken, err);
    }
    // One connection holds the replica, so readers and the writer are the same one, taking turns.
    return assemble(opts, mode, { writer: conn, readers: [conn] }, () => conn.close());
  }
  const open = () => guard(opts.url, undefined, () => new LocalConnection(new Database(path, { timeout: BUSY_TIMEOUT_MS })));
  const writer = open();
  const readers: LocalConnection[] = [];
  try {
    // WAL lets readers run beside the writer; it is stored in the file, so once is enough.
    writer.db.exec("PRAGMA journal_mode = WAL");
    for (let i = 0; i < (path === ":memory:" ? 0 : LOCAL_READERS); i++) readers.push(open());
    // NORMAL in WAL mode survives a killed process (not a power loss); synchronous is per connection.
    for (const c of [writer, ...readers]) c.db.exec("PRAGMA synchronous = NORMAL");
    // Checkpoints copy each changed page once per round: rarer rounds (32 MB of WAL) copy a hot index page once
    // for many writes. Shutdown checkpoints the rest (close()).
    writer.db.exec("PRAGMA wal_autocheckpoint = 8000");
    writer.db.exec("PRAGMA temp_store = MEMORY");
  } catch (err) {
    for (const c of [writer, ...readers]) c.close();
    throw openError(opts.url, undefined, err);
  }
  const closeAll = () => {
    for (const r of readers) r.close();
    try {
      // The last connection to close removes the WAL; checkpointing first leaves svc.db complete on its own.
      if (path !== ":memory:") writer.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      // A checkpoint that fails (a full disk) loses nothing: the WAL is replayed at the next start.
      writer.close();
    }
  };
  return assemble(opts, mode, readers.length ? { writer, readers, grouped: writer } : { writer, readers: [writer] }, closeAll);
}

interface Pool {
  writer: Conn;
  readers: Conn[];
  /** The local writer, when its writes may share commits (readers of their own, so no read sees an open group). */
  grouped?: LocalConnection;
}

/** A remote primary: every transaction is one interactive transaction of the client, reads beside writes. */
function remotePool(client: Client): Pool {
  const conn = (): Conn => ({ run: (kind, fn) => remoteTransaction(client, kind, fn), raw: remoteRaw(client), close() {} });
  // Distinct handles, so that reads take turns apart from the writes (assemble() shares turns only with the writer).
  return { writer: conn(), readers: Array.from({ length: LOCAL_READERS }, conn) };
}

function assemble(opts: DbOptions, mode: DbMode, pool: Pool, closeAll: () => void): Db {
  const writerTurns = new Turns();
  const readerTurns = pool.readers.map((r) => (r === pool.writer ? writerTurns : new Turns()));
  // The least busy reader: with a synchronous driver a read usually finishes within one turn of the event loop.
  const reader = (): [Conn, Turns] => {
    let best = 0;
    for (let i = 1; i < readerTurns.length; i++) if (readerTurns[i]!.load < readerTurns[best]!.load) best = i;
    return [pool.readers[best]!, readerTurns[best]!];
  };
  const timed = async <T>(kind: TxKind, conn: Conn, fn: (tx: Tx) => Promise<T>): Promise<T> => {
    const started = performance.now();
    let ok = false;
    try {
      const result = await conn.run(kind, fn);
      ok = true;
      return result;
    } finally {
      opts.observeTx?.(performance.now() - started, ok, kind);
    }
  };
  const groups = pool.grouped && new GroupCommit(pool.grouped, writerTurns, opts.observeTx);
  // Exclusive work runs outside any group: the open one is committed first.
  const exclusive = <T>(fn: (raw: RawSql) => Promise<T>) =>
    writerTurns.take(() => {
      groups?.commit();
      return fn(pool.writer.raw);
    });
  let closing: Promise<void> | undefined;
  return {
    url: opts.url,
    mode,
    tx: (fn) => (groups ? groups.write(fn) : writerTurns.take(() => timed("write", pool.writer, fn))),
    read: (fn) => {
      const [conn, turns] = reader();
      return turns.take(() => timed("read", conn, fn));
    },
    exclusive,
    raw: {
      execute: (stmt, args) => exclusive((raw) => raw.execute(stmt, args)),
      executeMultiple: (sql) => exclusive((raw) => raw.executeMultiple(sql)),
      transaction: (fn) => exclusive((raw) => raw.transaction(fn)),
    },
    ping() {
      const [conn, turns] = reader();
      return turns.take(async () => {
        const started = performance.now();
        await conn.raw.execute("SELECT 1");
        return performance.now() - started;
      });
    },
    close() {
      closing ??= (async () => {
        await Promise.all([writerTurns.drain(), ...readerTurns.map((t) => t.drain())]);
        groups?.commit();
        closeAll();
      })();
      return closing;
    },
  };
}

/** A remote client that has answered SELECT 1 within the timeout. */
async function reachPrimary(cfg: Config, timeoutMs: number): Promise<Client> {
  const client = guard(cfg.url, cfg.authToken, () => createClient(cfg));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new DbOpenError(
            `The database at ${describeUrl(cfg.url)} did not answer within ${timeoutMs / 1000}s; check the URL, the network and that the server is up.`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    await Promise.race([client.execute("SELECT 1"), timeout]);
    return client;
  } catch (err) {
    client.close();
    throw openError(cfg.url, cfg.authToken, err);
  } finally {
    clearTimeout(timer);
  }
}

function guard<T>(url: string, token: string | undefined, open: () => T): T {
  try {
    return open();
  } catch (err) {
    throw openError(url, token, err);
  }
}

/** Turns a driver error into one line an operator can act on. */
function openError(url: string, token: string | undefined, err: unknown): DbOpenError {
  if (err instanceof DbOpenError) return err;
  const where = describeUrl(url);
  const raw = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string })?.code ?? "";
  if (/\b(401|403)\b/.test(raw) || /unauthori[sz]ed|forbidden/i.test(raw)) {
    return new DbOpenError(`The database at ${where} refused the auth token; check --auth-token (SVC_AUTH_TOKEN) and that it belongs to this database.`);
  }
  if (code === "ECONNREFUSED" || /connection refused|unable to connect/i.test(raw)) {
    return new DbOpenError(`Cannot reach the database at ${where}: connection refused; check the URL and that the server is up.`);
  }
  if (code === "ENOTFOUND" || /dns|failed to lookup|not known/i.test(raw)) {
    return new DbOpenError(`Cannot reach the database at ${where}: the host name does not resolve.`);
  }
  const message = token ? raw.replaceAll(token, "***") : raw;
  return new DbOpenError(`Cannot open the database at ${where}: ${message}`);
}

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
 */
function runningNow<Q extends SQLitePreparedQuery<PreparedQueryConfig>>(q: Q, run: RunNow | undefined): Q {
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

/** A one-row insert of these columns, built and prepared once per connection: `await q(tx).run(row)`. */
export function preparedInsert<T extends SQLiteTable>(table: T, columns: readonly (keyof T["$inferInsert"] & string)[]) {
  return prepared((tx) =>
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
