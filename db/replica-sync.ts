// An embedded replica's own connection, in a thread of its own: it only syncs (reads go through plain connections on
// its file, writes to the primary; db/open.ts), and its sync blocks the thread it runs in until every frame is applied.
// On the event loop that was 60-400 ms of every second under ~40 writes a second, and every call waited behind it.
import type { SyncReply, SyncRequest } from "./replica-sync.worker.ts";

// Listed as an entrypoint of the build too (scripts/build.ts): a compiled svc carries the worker inside, named by its
// path from the build's root; run from source, it is found beside this file.
const WORKER = import.meta.url.includes("$bunfs") ? "./db/replica-sync.worker.ts" : new URL("./replica-sync.worker.ts", import.meta.url).href;

type Ask = { op: "open"; path: string; syncUrl: string; authToken?: string; syncPeriod?: number } | { op: "sync" | "close" };

export class ReplicaSync {
  private readonly worker: Worker;
  private next = 0;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  private failure: Error | null = null;

  private constructor() {
    this.worker = new Worker(WORKER);
    this.worker.onmessage = (e: MessageEvent<SyncReply>) => {
      const r = e.data;
      const w = this.waiting.get(r.id);
      this.waiting.delete(r.id);
      if (r.ok) w?.resolve();
      else w?.reject(Object.assign(new Error(r.message), r.code ? { code: r.code } : {}));
    };
    this.worker.onerror = (e) => {
      // The thread itself failed: every call waiting, and every later one, is told so.
      this.failure = new Error(`Replication: the replica's sync thread failed: ${e.message}`);
      for (const w of this.waiting.values()) w.reject(this.failure);
      this.waiting.clear();
    };
    // The thread alone does not keep the process alive, only while something waits for it.
    this.thread.unref();
  }

  private get thread(): Worker & { ref(): void; unref(): void } {
    return this.worker as Worker & { ref(): void; unref(): void };
  }

  private ask(m: Ask): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const id = ++this.next;
    this.thread.ref();
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...m, id } as SyncRequest);
    }).finally(() => {
      if (!this.waiting.size) this.thread.unref();
    });
  }

  /** Opens the replica at path and syncs it once; throws what libsql threw (message and code). */
  static async open(opts: { path: string; syncUrl: string; authToken?: string; syncPeriod?: number }): Promise<ReplicaSync> {
    const r = new ReplicaSync();
    try {
      await r.ask({ op: "open", ...opts });
      return r;
    } catch (err) {
      r.worker.terminate();
      throw err;
    }
  }

  /** Brings the replica's file up to its primary; the event loop runs meanwhile. */
  sync(): Promise<void> {
    return this.ask({ op: "sync" });
  }

  async close(): Promise<void> {
    await this.ask({ op: "close" }).catch(() => undefined);
    this.worker.terminate();
  }
}
