// The Db every caller uses: reads on a snapshot, and each write call as one batch (db/connections.ts Batch) sent as
// one request: one short transaction on a local file, one `batch(..., "write")` to a remote primary. A write reads
// first, without any lock, and what it read and must still hold when it commits is guarded in its batch
// (db/query.ts guard); a batch that meets a write made since is run again from its reads.
import {
  Batch,
  batchHandle,
  type Exec,
  type LocalConnection,
  type Orm,
  type RawSql,
  readHandle,
  readOnlyHandles,
  type Streams,
  streamExec,
} from "./connections.ts";
import { failedAtCommit, transient, WriteConflict, writeConflict } from "./errors.ts";
import { NeedsWrite } from "./query.ts";

/** The handle a call gives to domain code; the only way domain code reaches the database. */
export type Tx = Orm;

export type DbMode = "local" | "remote" | "replica";

export interface Db {
  readonly url: string;
  readonly mode: DbMode;
  /**
   * A write call: fn reads on a snapshot and its writes are sent as one batch when it returns. fn runs again when its
   * batch meets a concurrent write (a guard or a unique key fails), so it does nothing outside the database.
   */
  tx<T>(fn: (tx: Tx) => Promise<T>, o?: TxOptions): Promise<T>;
  /** A read call on a snapshot (an embedded replica's own file); a statement other than a SELECT fails. */
  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** fn with plain SQL where writes go (migrations, backups, admin), commits waiting meanwhile. */
  exclusive<T>(fn: (raw: RawSql) => Promise<T>): Promise<T>;
  /** Plain SQL: exclusive() for one statement. */
  readonly raw: RawSql;
  /** Brings an embedded replica up to its primary now (a no-op in the other modes). */
  sync(): Promise<void>;
  /** Milliseconds a trivial query takes; throws when the database cannot answer. */
  ping(): Promise<number>;
  /** Waits for work in progress, checkpoints a local file's WAL into it, then closes every connection. */
  close(): Promise<void>;
}

export interface TxOptions {
  /**
   * On an embedded replica, fn's first run reads the file as it is instead of waiting for it to have what this
   * instance wrote before: for a call whose every decision is guarded in its batch (db/query.ts guard) and whose every
   * refusal is thrown, so judged again after a sync (a tool declared `guarded`). A guard that fails, or a refusal,
   * runs it again on a caught-up file.
   */
  asItIs?: boolean;
}

export interface PoolOptions {
  url: string;
  /** Called with the duration of every read and write call, for metrics. */
  observeTx?: (ms: number, ok: boolean, kind: "read" | "write") => void;
  /** Called with how each catch-up of an embedded replica with a write ended (CatchUp), for metrics. */
  observeCatchUp?: (outcome: CatchUp) => void;
}

/** How a replica's catch-up with a write ended: synced; behind (reads go to the primary meanwhile); stale. */
export type CatchUp = "synced" | "behind" | "stale";

export const isReadOnly = (tx: Tx): boolean => readOnlyHandles.has(tx);

/**
 * Turns on one connection, so a read transaction has it to itself across awaits; or `width` at once, for batches to a
 * primary, which serializes them itself.
 */
class Turns {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly idle: (() => void)[] = [];
  busy = 0;
  constructor(private readonly width = 1) {}
  async take<T>(fn: () => T | Promise<T>): Promise<T> {
    this.busy++;
    if (this.running < this.width) this.running++;
    else await new Promise<void>((go) => this.waiting.push(go));
    try {
      return await fn();
    } finally {
      this.busy--;
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
      if (!this.busy) for (const done of this.idle.splice(0)) done();
    }
  }
  /** Resolves once nothing runs or waits. */
  drained(): Promise<void> {
    return this.busy ? new Promise((done) => this.idle.push(done)) : Promise.resolve();
  }
}

/** A place reads run: a connection (or a remote client), its turns, and its handles, made once. */
export class Slot {
  readonly turns = new Turns();
  readonly reader: Orm;
  readonly writer: Orm;
  private batch = new Batch();
  constructor(
    readonly exec: Exec,
    /** Runs fn in one read transaction where the connection has them (a local one). */
    readonly snapshot: <T>(fn: () => Promise<T>) => Promise<T> = (fn) => fn(),
    /** Moves that read transaction on to what is committed now. */
    readonly renew: () => void = () => {},
  ) {
    this.reader = readHandle(exec);
    this.writer = batchHandle(exec, () => this.batch, this.reader);
  }
  get busy(): number {
    return this.turns.busy;
  }
  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.turns.take(() => this.snapshot(() => fn(this.reader)));
  }
  /**
   * fn as a write call, collecting its batch; send commits it (when fn reads what it wrote, or else after fn), and the
   * reads after that see it. A batch of nothing but reads is answered here.
   */
  collect<T>(batch: Batch, fn: (tx: Tx) => Promise<T>, send: (batch: Batch) => Promise<void>): Promise<T> {
    return this.turns.take(() =>
      this.snapshot(async () => {
        this.batch = batch;
        batch.send = async () => {
          await send(batch);
          this.renew();
        };
        const result = await fn(this.writer);
        if (batch.empty && !batch.sent) {
          batch.settle(await Promise.all(batch.statements.map((s) => this.exec(s.sql, s.args as unknown[], "all") as unknown)).then(rowsOf));
        }
        return result;
      }),
    );
  }
}

const rowsOf = (answers: unknown[]) => answers.map((a) => (a as { rows: unknown[][] }).rows);

/** Connections of a local file: readers beside one writer, which only commits batches and runs exclusive work. */
export function localSlots(readers: LocalConnection[]): Slot[] {
  return readers.map(
    (c) =>
      new Slot(
        c.exec,
        (fn) => c.read(() => fn()),
        () => c.db.exec("COMMIT; BEGIN"),
      ),
  );
}

/** Slots on a remote primary: calls read beside each other, on the streams of the pool. */
export const remoteSlots = (streams: Streams, n: number): Slot[] => Array.from({ length: n }, () => new Slot(streamExec(streams)));

export interface Pool {
  slots: Slot[];
  /** Commits a batch where writes go: results as arrays, one per statement. */
  commit(batch: Batch): unknown[][][] | Promise<unknown[][][]>;
  /** Batches in flight at once: 1 on a local file (one writer connection); more to a primary, which queues them. */
  inFlight?: number;
  /** Plain SQL where writes go. */
  raw: RawSql;
  /** An embedded replica: its sync, slots on its primary for reads while it is behind, and whether that answers. */
  replica?: { sync(): Promise<void>; primary: Slot[]; primaryAnswers(): Promise<boolean>; syncEveryMs?: number };
}

// Runs of a write call whose batch met a concurrent write, before the caller is asked to come back.
const CONFLICT_RUNS = 8;
// Waits before a call that failed for a reason that passes (db/errors.ts transient) is run again.
const RETRY_DELAYS_MS = [10, 40, 150];
// How often a replica that could not catch up with a write tries again, its reads going to the primary meanwhile.
const CATCH_UP_RETRY_MS = 250;

/** The Db over a pool: write calls as batches, reads on the least busy slot, a replica's read-your-writes. */
export function assemble(opts: PoolOptions, mode: DbMode, pool: Pool, closeAll: () => void): Db {
  const writes = new Turns(pool.inFlight);
  const timed = async <T>(kind: "read" | "write", fn: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    let ok = false;
    try {
      const r = await fn();
      ok = true;
      return r;
    } finally {
      opts.observeTx?.(performance.now() - started, ok, kind);
    }
  };
  const leastBusy = <T extends { busy: number }>(all: T[]): T => all.reduce((best, t) => (t.busy < best.busy ? t : best));
  const slot = (): Slot => leastBusy(pool.slots);
  // An embedded replica after a write: its next read syncs first (read-your-writes); while it cannot, reads go to the
  // primary if it answers, else to the file as it is (reads answer with the primary down).
  const replica = pool.replica;
  let written = 0;
  let synced = 0;
  let nextCatchUp = 0;
  let catching: Promise<void> | null = null;
  // The syncs under way: the replica's connection closes only once none is (close); one still running in its thread
  // as the process ends brings the native driver down.
  const syncs = new Set<Promise<void>>();
  const syncTo = async () => {
    const target = written;
    const sync = replica!.sync();
    syncs.add(sync);
    try {
      await sync;
    } finally {
      syncs.delete(sync);
    }
    if (target > synced) synced = target;
  };
  const catchUp = () =>
    (catching ??= (async () => {
      const target = written;
      let outcome: CatchUp = "synced";
      try {
        await retrying(syncTo);
      } catch {
        outcome = (await replica!.primaryAnswers()) ? "behind" : "stale";
        if (outcome === "behind") nextCatchUp = performance.now() + CATCH_UP_RETRY_MS;
        else if (target > synced) synced = target;
      }
      opts.observeCatchUp?.(outcome);
    })().finally(() => (catching = null)));
  // A call needs the writes committed before it began, not those committed while it waits (under steady writes the
  // file is always a little behind the newest).
  const readSlot = async (): Promise<Slot> => {
    const need = written;
    if (!replica || synced >= need) return slot();
    while (synced < need && performance.now() >= nextCatchUp) await catchUp();
    return synced < need ? leastBusy(replica.primary) : slot();
  };
  const syncing = replica?.syncEveryMs ? setInterval(() => void syncTo().catch(() => {}), replica.syncEveryMs) : undefined;
  syncing?.unref();

  const exclusive = <T>(fn: (raw: RawSql) => Promise<T>) => writes.take(() => fn(pool.raw));
  const commit = async (batch: Batch) => {
    batch.sent = true;
    if (batch.empty) return;
    batch.settle(await writes.take(() => pool.commit(batch)));
    written++;
  };
  // Sent in the middle of a call, which reads what it wrote next: on a replica, once its file has it, or from the
  // primary while it cannot catch up.
  const sendNow = async (batch: Batch) => {
    await commit(batch);
    if (replica) await retrying(syncTo).catch(() => (batch.readsAfterSend = leastBusy(replica.primary).exec));
  };
  // On a replica, a write call reads as a read call does, once the file has what this instance wrote before it
  // began (read-your-writes), unless it reads the file as it is (TxOptions.asItIs).
  const writeOnce = async <T>(fn: (tx: Tx) => Promise<T>, asItIs: boolean): Promise<T> => {
    const batch = new Batch();
    try {
      // Chosen and taken in one turn where nothing is to wait for: calls at once go to slots of their own.
      const at = replica && synced < written && !asItIs ? await readSlot() : slot();
      const result = await at.collect(batch, fn, sendNow);
      if (!batch.sent) await commit(batch);
      return result;
    } catch (err) {
      batch.fail(err);
      throw err;
    }
  };
  // On a replica, a call that fails may have read before what another instance changed since its file's last sync
  // (an invite code made there a moment ago): it is judged again, once, after a sync, or on the primary while the
  // file cannot catch up.
  const judgedAgain = async <T>(run: (again: boolean) => Promise<T>): Promise<T> => {
    try {
      return await run(false);
    } catch (err) {
      if (!replica || transient(err) || err instanceof NeedsWrite || err instanceof WriteConflict) throw err;
      const synced = await syncTo().then(
        () => true,
        () => false,
      );
      if (!synced && !(await replica.primaryAnswers())) throw err;
      return run(true);
    }
  };
  let closing: Promise<void> | undefined;
  return {
    url: opts.url,
    mode,
    tx: (fn, o) =>
      timed("write", () =>
        judgedAgain(async (again) => {
          for (let run = 1; ; run++) {
            try {
              // Judged again, or run again after a guard failed: on what this instance wrote.
              return await retrying(() => writeOnce(fn, run === 1 && !again && o?.asItIs === true));
            } catch (err) {
              if (!writeConflict(err)) throw err;
              if (run >= CONFLICT_RUNS) throw new WriteConflict(err);
              // What it read changed: read again, on a replica once it has what the primary has.
              if (replica) await syncTo().catch(() => {});
              await Bun.sleep(Math.random() * run * 2);
            }
          }
        }),
      ),
    read: (fn) => timed("read", () => judgedAgain(() => retrying(async () => (await readSlot()).read(fn)))),
    exclusive,
    raw: {
      execute: (stmt, args) => exclusive((raw) => raw.execute(stmt, args)),
      executeMultiple: (sql) => exclusive((raw) => raw.executeMultiple(sql)),
      transaction: (fn) => exclusive((raw) => raw.transaction(fn)),
    },
    sync: async () => {
      if (replica) await retrying(syncTo);
    },
    ping: () => {
      const s = slot();
      return s.turns.take(async () => {
        const started = performance.now();
        await s.exec("SELECT 1", [], "all");
        return performance.now() - started;
      });
    },
    close() {
      clearInterval(syncing);
      closing ??= (async () => {
        await Promise.all([writes.drained(), ...pool.slots.map((s) => s.turns.drained())]);
        await Promise.allSettled([...syncs]);
        closeAll();
      })();
      return closing;
    },
  };
}

/**
 * fn, run again while it fails for a reason that passes, at most RETRY_DELAYS_MS.length times more. A batch that
 * failed on the way may have committed: that one is not run again (db/errors.ts atCommit), and the caller retries
 * with its idempotency key.
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
