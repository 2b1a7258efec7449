// A consistent copy of a local database file, checked before it gets its name: what `svc backup` and the server's
// scheduled backups (--backup-dir) both make.
import { chmodSync, renameSync, rmSync, statSync } from "node:fs";
import { openDb } from "./open.ts";
import { migrationStatus, type MigrationStatus } from "./migrate.ts";

/** A file that is not a usable database: unreadable, or failing the integrity check. */
export class BackupError extends Error {
  override name = "BackupError";
}

/**
 * Integrity and migrations of a database file; throws a BackupError when it is not a readable, intact database.
 * forgetInstances: first remove the heartbeat and writer lease of the server it was copied from (a copy is no server's).
 */
export async function inspectDatabaseFile(path: string, forgetInstances = false): Promise<MigrationStatus> {
  const db = await openDb({ url: `file:${path}`, create: false }).catch((err) => {
    throw new BackupError(`${path} cannot be opened as a database: ${err instanceof Error ? err.message : String(err)}`);
  });
  try {
    if (forgetInstances) {
      const tables = await db.raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('instances', 'writer_lease')");
      const has = new Set(tables.rows.map((r) => String(r[0])));
      if (has.has("instances")) await db.raw.execute("DELETE FROM instances");
      if (has.has("writer_lease")) await db.raw.execute("DELETE FROM writer_lease");
    }
    const check = await db.raw.execute("PRAGMA integrity_check").catch((err) => {
      throw new BackupError(`${path} is not a readable SQLite database (${err instanceof Error ? err.message : String(err)}).`);
    });
    const verdict = check.rows.map((r) => String(r[0])).join("; ");
    if (verdict !== "ok") throw new BackupError(`${path} failed the integrity check: ${verdict.slice(0, 500)}`);
    return await migrationStatus(db.raw);
  } finally {
    // Closing folds anything in the WAL into the file itself, so the file alone is the whole database.
    await db.close();
  }
}

/**
 * Copies `source` into `target` (which must not exist) while writers go on: VACUUM INTO reads one snapshot, so no
 * writer is blocked. The copy is written beside the target, made the owner's alone, stripped of the live server's
 * heartbeat and writer lease (a copy is no server's: a restore of it must not look in use), checked, then renamed,
 * so a crash never leaves half a backup under the final name.
 */
export async function backupFile(source: string, target: string): Promise<{ bytes: number; status: MigrationStatus }> {
  const partial = `${target}.partial-${process.pid}`;
  try {
    const db = await openDb({ url: `file:${source}`, create: false });
    try {
      await db.exclusive((client) => client.execute({ sql: "VACUUM INTO ?", args: [partial] }));
    } catch (err) {
      throw new BackupError(`Backup failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      await db.close();
    }
    chmodSync(partial, 0o600);
    const status = await inspectDatabaseFile(partial, true);
    renameSync(partial, target);
    return { bytes: statSync(target).size, status };
  } finally {
    for (const f of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(f, { force: true });
  }
}
