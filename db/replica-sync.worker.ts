// The thread an embedded replica syncs in (db/replica-sync.ts): libsql's sync is native code that blocks its thread
// until every frame is applied, 60-400 ms a second on a primary taking ~40 writes a second.
import Database from "libsql";

declare const self: Worker;

export type SyncRequest =
  | { id: number; op: "open"; path: string; syncUrl: string; authToken?: string; syncPeriod?: number }
  | { id: number; op: "sync" | "close" };
export type SyncReply = { id: number; ok: true } | { id: number; ok: false; message: string; code?: string };

let db: Database.Database | null = null;

self.onmessage = (e: MessageEvent<SyncRequest>) => {
  const m = e.data;
  try {
    if (m.op === "open") {
      db = new Database(m.path, { syncUrl: m.syncUrl, authToken: m.authToken, syncPeriod: m.syncPeriod } as Database.Options);
      db.sync();
    } else if (m.op === "sync") {
      if (!db) throw new Error("Replication: the replica is not open");
      db.sync();
    } else {
      db?.close();
      db = null;
    }
    postMessage({ id: m.id, ok: true } satisfies SyncReply);
  } catch (err) {
    const e = err as { message?: unknown; code?: unknown };
    if (m.op === "open") {
      db?.close();
      db = null;
    }
    postMessage({ id: m.id, ok: false, message: String(e?.message ?? err), code: typeof e?.code === "string" ? e.code : undefined } satisfies SyncReply);
  }
};
