// The connection pool behind a Db: one writer and a few readers, each taking turns (db/turns.ts), and group commit on
// the writer (a local file's, or a remote primary's stream). How the connections are opened is db/open.ts's; what
// runs on them, db/connections.ts's.
import { type Conn, type Orm, type RawSql, type RemoteStreams, readOnlyHandles, remoteRaw, remoteTransaction, StreamConn, type TxKind } from "./connections.ts";
import type { Client } from "@libsql/client";
import { failedAtCommit, transient } from "./errors.ts";
import { GroupCommit, type GroupConn, Turns } from "./turns.ts";

/** The handle a transaction gives to domain code; the only way domain code reaches the database. */
export type Tx = Orm;

export type DbMode = "local" | "remote" | "replica";

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
  /**
   * Brings an embedded replica up to its primary now (a no-op in the other modes): what another instance committed
   * is then read here (after this instance's own writes, its next read syncs first already).
   */
  sync(): Promise<void>;
  /**
   * Has an embedded replica sync before its next read (a no-op in the other modes): a write this instance asked another
   * to make has committed, and the caller's next read here must see it.
   */
  syncBeforeNextRead(): void;
  /** Milliseconds a trivial query takes; throws when the database cannot answer. */
  ping(): Promise<number>;
  /** Waits for work in progress, checkpoints the WAL of a local file into it, then closes every connection. */
  close(): Promise<void>;
}

/** What the pool takes of the options: where it is (for Db.url) and who observes its transactions. */
export interface PoolOptions {
  url: string;
  /** Called with the duration of every transaction run through tx() or read(), for metrics. */
  observeTx?: (ms: number, ok: boolean, kind: TxKind) => void;
  /** Called with how each catch-up of an embedded replica with a write ended (CatchUp), for metrics. */
  observeCatchUp?: (outcome: CatchUp) => void;
}

/**
 * How an embedded replica's sync after a write ended: synced; behind, its reads going to the primary meanwhile; or
 * stale, the primary not answering and reads left to the file as it is.
 */
export type CatchUp = "synced" | "behind" | "stale";

/** Whether tx is a read transaction of Db.read, where nothing may be written. */
export const isReadOnly = (tx: Tx): boolean => readOnlyHandles.has(tx);

// Readers beside the one writer: enough that a read never waits behind a write, few enough to stay light.
export const READERS = 3;

export interface Pool {
  writer: Conn;
  readers: Conn[];
  /**
   * The writer, when its writes may share commits (readers of their own, so no read sees an open group): a local
   * file's, or a remote primary's stream (there a commit is also a round trip, and sqld's work per commit).
   */
  grouped?: GroupConn;
  /** An embedded replica's sync with its primary. */
  sync?: () => void | Promise<void>;
  /** Run before the first read after committed writes (an embedded replica catches up with them). */
  afterWrite?: () => void | Promise<void>;
  /**
   * An embedded replica's connection to its primary for reads, and whether the primary answers: a read after a write
   * the replica could not catch up with goes there while the primary answers (db/pool.ts assemble).
   */
  primaryReader?: Conn;
  primaryAnswers?: () => Promise<boolean>;
  /** How often to sync in the background (an embedded replica without --sync-interval). */
  syncEveryMs?: number;
}

/**
 * A remote primary: every transaction is one interactive transaction, `readers` reads beside writes. Over WebSockets
 * (streams given) each connection keeps a stream of its own; over HTTP each transaction is one of the client's.
 */
export function remotePool(client: Client, readers = READERS, streams?: RemoteStreams): Pool {
  const conn = (): Conn =>
    streams ? new StreamConn(streams, client) : { run: (kind, fn) => remoteTransaction(client, kind, fn), raw: remoteRaw(client), close() {} };
  // Distinct handles, so that reads take turns apart from the writes (assemble() shares turns only with the writer).
  const writer = conn();
  return { writer, readers: Array.from({ length: readers }, conn), grouped: writer instanceof StreamConn ? writer : undefined };
}

// Waits before each new attempt of a transaction that failed for a reason that passes (db/errors.ts transient): a
// busy lock, a replica's sync that met the primary compacting its log (a window of 15-25 ms, or a second and more
// on a large database: catchUp below), a primary restarting.
const RETRY_DELAYS_MS = [10, 40, 150];

// How often a replica that could not catch up with a write tries again, its reads going to the primary meanwhile.
const CATCH_UP_RETRY_MS = 250;

/**
 * fn, run again while it fails for a reason that passes, at most RETRY_DELAYS_MS.length times more. A transaction
 * that failed so was rolled back, unless its COMMIT failed: whether that one committed is unknown, and it is left to
 * the caller (who retries with its idempotency key).
 */
export async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= RETRY_DELAYS_MS.length || failedAtCommit(err) || !transient(err)) throw err;
      await Bun.sleep(RETRY_DELAYS_MS[attempt]!);
    }
  }
}

/** The Db over a pool: turns per connection, group commit on a local writer, timing of every transaction. */
export function assemble(opts: PoolOptions, mode: DbMode, pool: Pool, closeAll: () => void): Db {
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
  // After a write an embedded replica syncs before its next read (read-your-writes), in the readers' turn: not at once,
  // since a sync blocks the event loop for a round trip to the primary, and the writes that commit before that read
  // then share one sync (a writer under a load of writes alone synced after each, and spent 40% of its time there).
  // Writes are counted, and so is how many of them the file has caught up with: a sync, in the background too, covers
  // the writes counted before it began.
  let written = 0;
  let synced = 0;
  const behind = () => synced < written;
  const syncedTo = (target: number) => {
    if (target > synced) synced = target;
  };
  const caughtUp = async () => {
    if (pool.afterWrite) written++;
  };
  // A replica that cannot catch up (sqld answers "snapshot not found" for a second or more after it compacts its log,
  // with a large database) must not answer from its file: a key made a moment ago would be refused. While the primary
  // answers, reads go to it, and the replica tries again at most every CATCH_UP_RETRY_MS. A primary that does not
  // answer leaves reads to the file as it is: reads answer with the primary down.
  let nextCatchUp = 0;
  const catchUp = () =>
    readerTurns[0]!.take(async () => {
      if (!behind()) return;
      const target = written;
      let outcome: CatchUp = "synced";
      try {
        await retrying(async () => pool.afterWrite?.());
        syncedTo(target);
      } catch {
        outcome = pool.primaryReader && (await pool.primaryAnswers?.()) ? "behind" : "stale";
        if (outcome === "behind") nextCatchUp = performance.now() + CATCH_UP_RETRY_MS;
        else syncedTo(target);
      }
      opts.observeCatchUp?.(outcome);
    });
  const primaryTurns = new Turns();
  const exclusive = <T>(fn: (raw: RawSql) => Promise<T>) =>
    writerTurns.take(async () => {
      await groups?.commit();
      try {
        return await fn(pool.writer.raw);
      } finally {
        await caughtUp();
      }
    });
  // A replica that only reads must still learn of a revoked key or a disabled agent: it syncs in the background, in
  // the readers' turn; a failure waits for the next round.
  const sync = pool.sync;
  const syncing =
    sync && pool.syncEveryMs
      ? setInterval(
          () =>
            void readerTurns[0]!
              .take(async () => {
                const target = written;
                await sync();
                syncedTo(target);
              })
              .catch(() => {}),
          pool.syncEveryMs,
        )
      : undefined;
  syncing?.unref();
  let closing: Promise<void> | undefined;
  return {
    url: opts.url,
    mode,
    tx: async (fn) => {
      if (groups) {
        const written = await retrying(() => groups.write(fn));
        await caughtUp();
        return written;
      }
      const result = await retrying(() => writerTurns.take(() => timed("write", pool.writer, fn)));
      await caughtUp();
      return result;
    },
    read: (fn) =>
      retrying(async () => {
        if (behind() && performance.now() >= nextCatchUp) await catchUp();
        if (behind() && pool.primaryReader) return primaryTurns.take(() => timed("read", pool.primaryReader!, fn));
        const [conn, turns] = reader();
        return turns.take(() => timed("read", conn, fn));
      }),
    exclusive,
    syncBeforeNextRead: () => void caughtUp(),
    sync: async () => {
      const sync = pool.sync;
      if (!sync) return;
      const target = written;
      await retrying(() => readerTurns[0]!.take(async () => sync()));
      syncedTo(target);
    },
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
      clearInterval(syncing);
      closing ??= (async () => {
        await Promise.all([writerTurns.drain(), primaryTurns.drain(), ...readerTurns.map((t) => t.drain())]);
        await groups?.commit();
        closeAll();
      })();
      return closing;
    },
  };
}
