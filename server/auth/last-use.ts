// When each client was last used (list_clients' last_used_at), written in batches: a call only notes it in this
// process, and the notes are written every FLUSH_MS in one write transaction of one statement, and when the server
// stops. A call never writes for it, so a read stays a read: at scale (a million agents polling every 30 s) a write
// per client and minute would be ~16.7k write transactions a second, the first thing to break. The cost is that
// last_used_at may lag the last call by FLUSH_MS, beside its resolution of a minute (touchDue).
import { sql } from "drizzle-orm";
import { type Db, jsonList } from "../../db/client.ts";

const FLUSH_MS = 10_000;

export class LastUse {
  private pending = new Map<string, string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private flushing: Promise<number> | undefined;

  constructor(private readonly db: Db) {}

  /** Notes a use of the client at `at` (written at the next flush). */
  note(clientId: string, at: Date): void {
    const iso = at.toISOString();
    const known = this.pending.get(clientId);
    if (!known || known < iso) this.pending.set(clientId, iso);
  }

  /** Writes the uses noted so far in one transaction; the count of clients. A failure keeps them for the next flush. */
  flush(): Promise<number> {
    this.flushing ??= this.write().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async write(): Promise<number> {
    if (!this.pending.size) return 0;
    const batch = this.pending;
    this.pending = new Map();
    try {
      const uses = jsonList([...batch]);
      // Never back in time: another process may have written a later use of the same client.
      await this.db.tx((tx) =>
        tx.run(sql`UPDATE clients SET last_used_at = u.value ->> 1 FROM json_each(${uses}) AS u
          WHERE clients.client_id = u.value ->> 0 AND (clients.last_used_at IS NULL OR clients.last_used_at < u.value ->> 1)`),
      );
      return batch.size;
    } catch (err) {
      for (const [id, at] of batch) this.note(id, new Date(at));
      throw err;
    }
  }

  /** Flushes every FLUSH_MS (not keeping the process alive); failures are passed to onError. */
  start(onError: (err: unknown) => void, everyMs = FLUSH_MS): void {
    this.timer = setInterval(() => void this.flush().catch(onError), everyMs);
    this.timer.unref();
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
