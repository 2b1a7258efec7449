// Who runs on a connection when: transactions take turns on it, and on the writer, writes that queue up while one
// runs share one COMMIT (group commit).
import type { Orm, TxKind } from "./connections.ts";

/** A writer connection that group commit can drive: a local file's (at once) or a remote primary's (awaited). */
export interface GroupConn {
  readonly inTransaction: boolean;
  /** Statements run that may have written. */
  readonly writesRun: number;
  /** The handle of a write transaction begun with begin(). */
  readonly writeOrm: Orm;
  begin(): void;
  /**
   * The write whose statements the connection may hold back now (db/query.ts preparedWrite), to name it if one
   * fails; a connection that runs each statement at once holds nothing back, and leaves both out.
   */
  owner?: unknown;
  /** A held-back statement that failed in the open transaction, and whose write it was part of. */
  readonly laterFailure?: { owner: unknown; err: unknown } | null;
  commit(): void | Promise<void>;
  rollback(): void | Promise<void>;
}

/** Turns: a queue per connection, so a transaction has its connection to itself across awaits. */
export class Turns {
  private tail: Promise<unknown> = Promise.resolve();
  private busy = 0;
  take<T>(fn: () => Promise<T>): Promise<T> {
    this.busy++;
    const run = this.tail.then(fn).finally(() => this.busy--);
    this.tail = run.catch(() => undefined);
    return run;
  }
  get load(): number {
    return this.busy;
  }
  drain(): Promise<unknown> {
    return this.tail;
  }
}

// A group is committed once this many writes are in it, or this long after it began, even while more queue up. The
// limits bind only while writes queue faster than they run: a group otherwise ends when none waits. Under such a
// load a write waits for the queue before it mostly, and bigger groups empty it sooner: at 20 ms, a group of a
// remote primary's writes (~10 ms each) ended at its second or third write; at 100 ms, two trees loaded at once
// wrote 1.11x through a remote primary, 1.08x through an embedded replica (which applies every page each commit
// writes) and 1.05x on a local file (bench/README.md).
const GROUP_MAX_WRITES = 64;
const GROUP_MAX_MS = 100;

interface Write {
  fn: (tx: Orm) => Promise<unknown>;
  result?: unknown;
  commit(): void;
  fail(err: unknown): void;
}

/**
 * Group commit on the writer connection (a local file's, or a remote primary's stream, where a COMMIT is also a
 * round trip and the pages it writes are the primary's work and its replicas'). Writes that reach the writer while a
 * transaction is open run in it, one after the other; it is committed once no write is waiting, and each write is
 * answered only then, so nothing is acknowledged before it is durable. A commit costs mostly the pages it writes to
 * the WAL, and writes close in time change the same pages (an expense told to 19 members writes ~150 pages, most of
 * them the index pages the next expense in that group changes too), so one COMMIT for a group writes far fewer
 * pages than one for each of its writes.
 *
 * A write that fails having changed nothing leaves the group as it was. One that fails after writing takes the
 * transaction back, and the writes before it in the group run again at once, in a new one: a write's function may
 * therefore run more than once, and must do nothing outside the database (the contract of db.tx).
 * Savepoints would undo the failed write alone, but SQLite copies every page a savepoint changes.
 */
export class GroupCommit {
  private group: Write[] = [];
  private began = 0;
  private commitQueued = false;

  constructor(
    private readonly conn: GroupConn,
    private readonly turns: Turns,
    private readonly observe?: (ms: number, ok: boolean, kind: TxKind) => void,
  ) {}

  write<T>(fn: (tx: Orm) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const queued = performance.now();
      const settle = (ok: boolean) => this.observe?.(performance.now() - queued, ok, "write");
      const w: Write = {
        fn,
        commit: () => (settle(true), resolve(w.result as T)),
        fail: (err) => (settle(false), reject(err)),
      };
      void this.turns.take(() => this.run([w]));
    });
  }

  /** Commits the open group now; the caller holds the writer's turn (exclusive work, closing). */
  async commit(): Promise<void> {
    for (;;) {
      if (!this.conn.inTransaction) {
        this.group = [];
        return;
      }
      try {
        await this.conn.commit();
      } catch (err) {
        if (!this.conn.laterFailure) {
          for (const w of await this.takeBack()) w.fail(err);
          return;
        }
        // A statement held back until the COMMIT failed, so the COMMIT did not run: the others run again and commit.
        await this.runAll(await this.dropFailedWrite());
        continue;
      }
      const group = this.group;
      this.group = [];
      for (const w of group) w.commit();
      return;
    }
  }

  // Rolls the open transaction back and hands over its group's writes, to run again or to fail: every write is
  // answered, even when the rollback itself fails (the next write's BEGIN then reports what is wrong).
  private async takeBack(): Promise<Write[]> {
    const group = this.group;
    this.group = [];
    try {
      await this.conn.rollback();
    } catch {}
    return group;
  }

  // After a held-back statement failed: its write fails, and the transaction, which holds part of it, is taken back;
  // the group's other writes are handed over to run again.
  private async dropFailedWrite(): Promise<Write[]> {
    const failed = this.conn.laterFailure!;
    const again = (await this.takeBack()).filter((w) => w !== failed.owner);
    (failed.owner as Write | undefined)?.fail(failed.err);
    return again;
  }

  // In the writer's turn: the writes, then the group's commit now or in a turn of its own.
  private async run(todo: Write[]): Promise<void> {
    await this.runAll(todo);
    if (this.group.length >= GROUP_MAX_WRITES || performance.now() - this.began >= GROUP_MAX_MS) await this.commit();
    else this.queueCommit();
  }

  // The writes in order, in the open transaction (todo is consumed).
  private async runAll(todo: Write[]): Promise<void> {
    for (let w = todo.shift(); w; w = todo.shift()) {
      const before = this.conn.writesRun;
      let failure: { err: unknown } | null = null;
      try {
        if (!this.conn.inTransaction) {
          this.conn.begin();
          this.began = performance.now();
        }
        this.conn.owner = w;
        w.result = await w.fn(this.conn.writeOrm);
      } catch (err) {
        failure = { err };
      }
      const failed = this.conn.laterFailure;
      if (failed) {
        // A statement held back (this write's, or an earlier one's in the group, sent with this write's next) failed.
        todo.unshift(...(await this.dropFailedWrite()), ...(failed.owner === w ? [] : [w]));
      } else if (!failure) this.group.push(w);
      else {
        w.fail(failure.err);
        // SQLite may have rolled the whole transaction back itself (a full disk, an interrupted statement).
        if (this.conn.inTransaction && this.conn.writesRun === before) continue;
        todo.unshift(...(await this.takeBack()));
      }
    }
  }

  // The commit takes a turn after the writes already waiting for one, and after the requests that arrived while the
  // last of them ran have reached theirs: those join the group. One commit waits at a time: with one queued by each
  // write, commits landed between the writes still waiting and cut their groups short (on a remote primary under
  // load, ~1.0 write a group where one commit at a time gives ~2.1).
  private queueCommit(): void {
    if (this.commitQueued) return;
    this.commitQueued = true;
    setImmediate(() =>
      this.turns.take(async () => {
        this.commitQueued = false;
        await this.commit();
      }),
    );
  }
}
