import { Command, Option } from "commander";
import { chmodSync, existsSync, renameSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { describeUrl, localFilePath, openDb } from "../../db/client.ts";
import { migrationStatus } from "../../db/migrate.ts";
import { CliError, EXIT, action, example, usageExits } from "../output.ts";
import { dbOption } from "./serve.ts";

/** The local file behind --db, or a usage error naming what to do instead for a remote database. */
export function localDatabaseFile(url: string, verb: string): string {
  const path = localFilePath(url);
  if (!path) {
    throw new CliError(
      EXIT.usage,
      `svc ${verb} works on a local database file, not ${describeUrl(url)}.`,
      "For Turso use its point-in-time restore or `turso db shell DB .dump`; with an embedded replica, back up the replica's file (--db file:...).",
    );
  }
  return resolve(path);
}

/** Integrity and migrations of a database file; throws a CliError when it is not a usable svc database. */
export async function inspectDatabaseFile(path: string) {
  const db = await openDb({ url: `file:${path}` }).catch((err) => {
    throw new CliError(EXIT.failure, `${path} cannot be opened as a database: ${err instanceof Error ? err.message : String(err)}`);
  });
  try {
    const check = await db.raw.execute("PRAGMA integrity_check").catch((err) => {
      throw new CliError(EXIT.failure, `${path} is not a readable SQLite database (${err instanceof Error ? err.message : String(err)}).`);
    });
    const verdict = check.rows.map((r) => String(r[0])).join("; ");
    if (verdict !== "ok") throw new CliError(EXIT.failure, `${path} failed the integrity check: ${verdict.slice(0, 500)}`);
    return await migrationStatus(db.raw);
  } finally {
    // Closing folds anything in the WAL into the file itself, so the file alone is the whole database.
    await db.close();
  }
}

/**
 * A copy is no server's: the running server's heartbeat (and writer lease) would make a restore of it look in use for
 * five minutes, and another instance wait out a lease nobody holds.
 */
async function forgetInstances(path: string): Promise<void> {
  const copy = await openDb({ url: `file:${path}`, create: false });
  try {
    for (const table of ["instances", "writer_lease"]) {
      const exists = await copy.raw.execute({ sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", args: [table] });
      if (exists.rows.length) await copy.raw.execute(`DELETE FROM ${table}`);
    }
  } finally {
    await copy.close();
  }
}

async function backup(o: { db: string; to: string }): Promise<void> {
  const source = localDatabaseFile(o.db, "backup");
  if (!existsSync(source)) throw new CliError(EXIT.notFound, `There is no database at ${source}.`);
  const target = resolve(o.to);
  if (existsSync(target)) throw new CliError(EXIT.conflict, `${target} already exists; choose a new file name (backups are never overwritten).`);
  // Written beside the target and renamed at the end, so a crash never leaves a half backup under the final name.
  const partial = `${target}.partial-${process.pid}`;
  const db = await openDb({ url: `file:${source}` });
  try {
    // VACUUM INTO reads one snapshot: a consistent copy while a server keeps writing (WAL readers never block it).
    await db.exclusive((client) => client.execute({ sql: "VACUUM INTO ?", args: [partial] }));
    chmodSync(partial, 0o600);
    await forgetInstances(partial);
  } catch (err) {
    rmSync(partial, { force: true });
    throw new CliError(EXIT.failure, `Backup failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await db.close();
  }
  try {
    const status = await inspectDatabaseFile(partial);
    renameSync(partial, target);
    const newest = status.applied[status.applied.length - 1];
    process.stdout.write(`Backed up ${source} to ${target} (${statSync(target).size} bytes; migrations up to ${newest?.name ?? "none"}; integrity ok).\n`);
  } finally {
    for (const f of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(f, { force: true });
  }
}

export function backupCommand(): Command {
  return usageExits(
    new Command("backup")
      .description("Write a consistent copy of the database to a new file while the server keeps running (VACUUM INTO), then check it")
      .addOption(dbOption())
      .addOption(new Option("--to <path>", "the new backup file (must not exist)").makeOptionMandatory())
      .addHelpText("after", example("svc backup --db file:/var/lib/svc/svc.db --to /var/backups/svc/svc-$(date +%F).db"))
      .action(action(backup)),
  );
}
