// The one way into the database. Three modes share this code: a local file, a remote libSQL/Turso
// primary, and an embedded replica (a local file kept in sync with a primary). Everything that
// differs between them lives here.
import { createClient, LibsqlError, type Client, type Config, type InStatement, type Transaction } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import * as schema from "./schema/index.ts";

export type Orm = LibSQLDatabase<typeof schema>;
/** The handle a transaction gives to domain code; the only way domain code reaches the database. */
export type Tx = Parameters<Parameters<Orm["transaction"]>[0]>[0];

export type DbMode = "local" | "remote" | "replica";
export type TxKind = "read" | "write";

export interface DbOptions {
  url: string;
  authToken?: string;
  /** Primary of an embedded replica; `url` is then the replica's local file. */
  syncUrl?: string;
  /** Seconds between background syncs of a replica (besides the sync after each write). */
  syncIntervalSeconds?: number;
  /** Bound on reaching a remote primary at open; past it openDb fails instead of hanging. */
  connectTimeoutMs?: number;
  /** Called with the duration of every transaction run through tx() or read(), for metrics. */
  observeTx?: (ms: number, ok: boolean, kind: TxKind) => void;
}

export interface Db {
  readonly url: string;
  readonly mode: DbMode;
  readonly client: Client;
  readonly orm: Orm;
  /** Runs fn in one write transaction; callers in this process are queued so SQLite never waits on itself. */
  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Runs fn in one read transaction, in the same queue: an embedded replica serves it from its local file.
   * A statement other than a SELECT fails (the replica would refuse it too), in every mode.
   */
  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Runs fn on the raw client in the same queue: a replica has a single connection a transaction may hold. */
  exclusive<T>(fn: (client: Client) => Promise<T>): Promise<T>;
  /** Milliseconds a trivial query takes; throws when the database cannot answer. */
  ping(): Promise<number>;
  /** Waits for queued work, then closes every connection. */
  close(): Promise<void>;
}

/** A database that cannot be opened or reached; the message is meant for the operator and never holds the token. */
export class DbOpenError extends Error {
  override name = "DbOpenError";
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const BUSY_TIMEOUT_MS = 5_000;
// Every local connection gets the same pragmas; the pool never grows past this many.
const LOCAL_CONNECTIONS = 4;
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
  let client: Client;
  if (mode === "local") {
    client = await openLocal(opts.url);
  } else if (mode === "remote") {
    client = await reachPrimary({ url: opts.url, authToken: opts.authToken }, timeoutMs);
  } else {
    // Opening a replica syncs inside native code that blocks the event loop and has no timeout of its
    // own, so the primary is first proven reachable (and the token accepted) with a bounded probe.
    (await reachPrimary({ url: opts.syncUrl!, authToken: opts.authToken }, timeoutMs)).close();
    mkdirSync(dirname(localPath(opts.url)), { recursive: true });
    client = guard(opts.syncUrl!, opts.authToken, () =>
      createClient({
        url: opts.url,
        syncUrl: opts.syncUrl,
        authToken: opts.authToken,
        syncInterval: opts.syncIntervalSeconds,
        // Writes go to the primary; the replica then waits for them, so the next read sees them.
        readYourWrites: true,
      }),
    );
    await client.sync().catch((err) => {
      client.close();
      throw openError(opts.syncUrl!, opts.authToken, err);
    });
  }
  return wrap(opts, mode, client);
}

async function openLocal(url: string): Promise<Client> {
  const path = localPath(url);
  if (path && path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const client = guard(url, undefined, () => createClient({ url, timeout: BUSY_TIMEOUT_MS, concurrency: LOCAL_CONNECTIONS }));
  try {
    // WAL lets readers run beside the writer; it is stored in the file, so once is enough.
    await client.execute("PRAGMA journal_mode = WAL");
    // synchronous is per connection: calls started together each borrow a different connection of the pool,
    // so this reaches all of them. NORMAL in WAL mode survives a killed process (not a power loss).
    await Promise.all(Array.from({ length: LOCAL_CONNECTIONS }, () => client.execute("PRAGMA synchronous = NORMAL")));
  } catch (err) {
    client.close();
    throw openError(url, undefined, err);
  }
  return client;
}

/** A remote client that has answered SELECT 1 within the timeout. */
async function reachPrimary(cfg: Config, timeoutMs: number): Promise<Client> {
  const client = guard(cfg.url, cfg.authToken, () => createClient(cfg));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DbOpenError(`The database at ${describeUrl(cfg.url)} did not answer within ${timeoutMs / 1000}s; check the URL, the network and that the server is up.`)),
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

function guard(url: string, token: string | undefined, open: () => Client): Client {
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

const readHandles = new WeakSet<Tx>();

/** Whether tx is a read transaction of Db.read, where nothing may be written. */
export const isReadOnly = (tx: Tx): boolean => readHandles.has(tx);

// What an embedded replica runs locally inside BEGIN READONLY (libsql's parser: SELECT, WITH ... SELECT).
const READ_STATEMENT = /^\s*(select|with)\b/i;

function checkRead(stmt: InStatement): void {
  const text = typeof stmt === "string" ? stmt : stmt.sql;
  if (!READ_STATEMENT.test(text)) {
    throw new LibsqlError(`Invalid write in a read transaction: ${text.trim().split(/\s+/, 3).join(" ")} ...`, "READ_ONLY_TRANSACTION");
  }
}

/**
 * A read transaction whose statements are checked before they run. On a local file BEGIN TRANSACTION READONLY
 * is plain BEGIN (SQLite reads READONLY as the transaction's name), so without this a hidden write would
 * pass there and fail only on a replica.
 */
function readOnly(t: Transaction): Transaction {
  return {
    execute: (stmt) => (checkRead(stmt), t.execute(stmt)),
    batch: (stmts) => (stmts.forEach(checkRead), t.batch(stmts)),
    executeMultiple: () => Promise.reject(new LibsqlError("executeMultiple is not allowed in a read transaction", "READ_ONLY_TRANSACTION")),
    rollback: () => t.rollback(),
    commit: () => t.commit(),
    close: () => t.close(),
    get closed() {
      return t.closed;
    },
  };
}

/** The client drizzle opens read transactions on: the same client, whose transaction() begins a checked read one. */
function readTransactions(client: Client): Client {
  return new Proxy(client, {
    get(target, prop) {
      if (prop === "transaction") return async () => readOnly(await target.transaction("read"));
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function wrap(opts: DbOptions, mode: DbMode, client: Client): Db {
  const orm = drizzle(client, { schema });
  // Only its transaction() is used: drizzle commits it, or rolls it back when fn throws.
  const readOrm = drizzle({ client: readTransactions(client), schema });
  let queue: Promise<unknown> = Promise.resolve();
  // A synchronous SQLite busy-wait would block the event loop that holds the lock, so work takes turns here.
  const enqueue = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn);
    queue = run.catch(() => undefined);
    return run;
  };
  const transact = <T>(on: Orm, kind: TxKind, fn: (tx: Tx) => Promise<T>): Promise<T> =>
    enqueue(async () => {
      const started = performance.now();
      let ok = false;
      try {
        const result = await on.transaction(fn);
        ok = true;
        return result;
      } finally {
        opts.observeTx?.(performance.now() - started, ok, kind);
      }
    });
  return {
    url: opts.url,
    mode,
    client,
    orm,
    tx: (fn) => transact(orm, "write", fn),
    read: (fn) =>
      transact(readOrm, "read", (tx) => {
        readHandles.add(tx);
        return fn(tx);
      }),
    exclusive: (fn) => enqueue(() => fn(client)),
    ping: () =>
      enqueue(async () => {
        const started = performance.now();
        await client.execute("SELECT 1");
        return performance.now() - started;
      }),
    async close() {
      await queue;
      client.close();
    },
  };
}
