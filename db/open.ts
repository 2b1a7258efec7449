// Opening a database in one of three modes: a local file, a remote libSQL/Turso primary, and an embedded replica (a
// local file kept in sync with a primary). Everything that differs between them at open lives here; the pool they
// are served from is db/database.ts.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { createClient, type Client, type Config } from "@libsql/client";
import Database from "libsql";
import { type Batch, LocalConnection, remoteRaw, streamCommit, Streams } from "./connections.ts";
import { assemble, type Db, type DbMode, localSlots, type PoolOptions, remoteSlots } from "./database.ts";
import { DbOpenError, describeUrl, guard, openError, transient } from "./errors.ts";
import { ReplicaSync } from "./replica-sync.ts";

export interface DbOptions extends PoolOptions {
  authToken?: string;
  /** Primary of an embedded replica; `url` is then the replica's local file. */
  syncUrl?: string;
  /** Seconds between background syncs of a replica (besides the sync after each write). */
  syncIntervalSeconds?: number;
  /** Bound on reaching a remote primary at open; past it openDb fails instead of hanging. */
  connectTimeoutMs?: number;
  /** How many processes open it at once (svc serve --workers): only a local file can be shared. */
  processes?: number;
  /**
   * Whether a local file that does not exist is created (svc serve, svc migrate); false: refused with a DbOpenError
   * saying where it looked, so an admin command pointed at the wrong path never leaves an empty database there.
   */
  create?: boolean;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const BUSY_TIMEOUT_MS = 5_000;
// The writer's wait for the file's lock: a batch holds it for its own statements only (a millisecond or two), and the
// native wait blocks the event loop, so a lock held longer is answered busy soon and the call is run again.
const WRITER_BUSY_TIMEOUT_MS = 1_000;
// Readers of a local file (or a replica's) beside the writer: enough that a read never waits behind a write.
const READERS = 3;
// Calls reading from a remote primary at once: each waits on round trips, not on this process's CPU.
const REMOTE_READERS = 16;
// Streams (connections) an instance keeps open on its primary, for reads and batches (db/connections.ts Streams).
const REMOTE_STREAMS = 16;
// Batches to a primary are not made to take turns here: streamCommit sends those that wait together.
const BATCHES_IN_FLIGHT = Number.POSITIVE_INFINITY;
// How often an embedded replica without --sync-interval syncs in the background: a revoked key stops working on it
// within this long (reads never reach the primary).
const DEFAULT_SYNC_MS = 1_000;
const REMOTE_SCHEMES = ["libsql:", "http:", "https:", "ws:", "wss:"];

const schemeOf = (url: string) => /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();

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
    const streams = new Streams(opts.url, opts.authToken, REMOTE_STREAMS);
    const pool = { slots: remoteSlots(streams, REMOTE_READERS), commit: streamCommit(streams), raw: remoteRaw(client), inFlight: BATCHES_IN_FLIGHT };
    return assemble(opts, mode, pool, () => {
      streams.close();
      client.close();
    });
  }
  const path = localPath(opts.url);
  if (path && path !== ":memory:") {
    if (opts.create === false && !existsSync(path)) {
      throw new DbOpenError(
        `No database at ${resolve(path)} (--db ${describeUrl(opts.url)}${isAbsolute(path) ? "" : `, relative to ${process.cwd()}`}). ` +
          "Point the command at the server's database with --db file:/var/lib/svc/svc.db, SVC_DB, or db in the settings file (SVC_CONFIG, default /etc/svc/svc.toml); only svc serve and svc migrate create one.",
      );
    }
    mkdirSync(dirname(path), { recursive: true });
    // Readable by its owner only: it holds password hashes, codes and receipts. SQLite gives its -wal and -shm files
    // the database file's permissions, so creating it first with 0600 covers them too. (A replica's file must not
    // exist before its first sync: it is made owner-only once open.)
    if (mode === "local" && !existsSync(path)) closeSync(openSync(path, "a", 0o600));
  }
  const open = () => guard(opts.url, undefined, () => new LocalConnection(new Database(path, { timeout: BUSY_TIMEOUT_MS })));
  if (mode === "replica") {
    // Opening a replica syncs inside native code that blocks the event loop and has no timeout of its own, so the
    // primary is first proven reachable (and the token accepted) with a bounded probe; that client then takes the
    // batches. Reads go through plain read-only connections on the replica's file (a WAL file like any other, which
    // each sync appends to); the replica's own connection only syncs, in a thread of its own (db/replica-sync.ts).
    // A sync holds that thread for 3 s when the primary is down: once one has failed, the next waits for the primary
    // to answer the client first.
    const primary = await reachPrimary({ url: opts.syncUrl!, authToken: opts.authToken }, timeoutMs);
    const streams = new Streams(opts.syncUrl!, opts.authToken, REMOTE_STREAMS);
    let conn: ReplicaSync;
    try {
      conn = await openReplica(path, opts);
    } catch (err) {
      primary.close();
      throw err;
    }
    for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, 0o600);
    let unreachable = false;
    const sync = async () => {
      if (unreachable && !(await answers(primary))) throw new Error("Replication: the primary does not answer; the replica was not synced");
      try {
        await conn.sync();
        unreachable = false;
      } catch (err) {
        unreachable = true;
        throw err;
      }
    };
    const readers: LocalConnection[] = [];
    try {
      for (let i = 0; i < READERS; i++) {
        readers.push(open());
        // Only the replica's own sync writes this file.
        readers[i]!.db.exec("PRAGMA query_only = 1");
      }
    } catch (err) {
      for (const r of readers) r.close();
      void conn.close();
      primary.close();
      throw openError(opts.url, undefined, err);
    }
    const replica = {
      sync,
      primary: remoteSlots(streams, REMOTE_READERS),
      primaryAnswers: () => answers(primary),
      syncEveryMs: opts.syncIntervalSeconds ? undefined : DEFAULT_SYNC_MS,
    };
    const pool = { slots: localSlots(readers), commit: streamCommit(streams), raw: remoteRaw(primary), replica, inFlight: BATCHES_IN_FLIGHT };
    return assemble(opts, mode, pool, () => {
      for (const r of readers) r.close();
      void conn.close();
      streams.close();
      primary.close();
    });
  }
  const writer = guard(opts.url, undefined, () => new LocalConnection(new Database(path, { timeout: WRITER_BUSY_TIMEOUT_MS })));
  const readers: LocalConnection[] = [];
  try {
    // WAL lets readers run beside the writer; it is stored in the file, so once is enough.
    writer.db.exec("PRAGMA journal_mode = WAL");
    for (let i = 0; i < (path === ":memory:" ? 0 : READERS); i++) readers.push(open());
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
  const pool = { slots: localSlots(readers.length ? readers : [writer]), commit: (b: Batch) => writer.commit(b), raw: writer.raw };
  return assemble(opts, mode, pool, closeAll);
}

/** Whether the primary answers a trivial query within a second (without blocking the event loop). */
async function answers(client: Client): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([client.execute("SELECT 1"), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("timeout")), 1000)))]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * An embedded replica's connection, synced with its primary. A sync that meets the primary compacting its log
 * ("snapshot not found", for 15-25 ms) is tried again, a few times.
 */
async function openReplica(path: string, opts: DbOptions): Promise<ReplicaSync> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await ReplicaSync.open({ path, syncUrl: opts.syncUrl!, authToken: opts.authToken, syncPeriod: opts.syncIntervalSeconds });
    } catch (err) {
      if (attempt < 4 && transient(err)) {
        await Bun.sleep(25 * 2 ** attempt);
        continue;
      }
      throw openError(opts.syncUrl!, opts.authToken, err);
    }
  }
}

/** A remote client that has answered SELECT 1 within the timeout. */
async function reachPrimary(cfg: Config, timeoutMs: number): Promise<Client> {
  const shownUrl = cfg.url;
  const client = guard(shownUrl, cfg.authToken, () => createClient(cfg));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new DbOpenError(
            `The database at ${describeUrl(shownUrl)} did not answer within ${timeoutMs / 1000}s; check the URL, the network and that the server is up.`,
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
    throw openError(shownUrl, cfg.authToken, err);
  } finally {
    clearTimeout(timer);
  }
}
