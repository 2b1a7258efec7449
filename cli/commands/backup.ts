import { Command, Option } from "commander";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { describeUrl } from "../../db/errors.ts";
import type { MigrationStatus } from "../../db/migrate.ts";
import { CliError, EXIT, action, example, usageExits } from "../output.ts";
import { dbOption } from "./serve.ts";

/** The local file behind --db, or a usage error naming what to do instead for a remote database. */
export async function localDatabaseFile(url: string, verb: string): Promise<string> {
  const { localFilePath } = await import("../../db/client.ts");
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

/** inspectDatabaseFile of db/backup.ts, its refusal as the CLI's failure. */
export async function inspectDatabaseFile(path: string): Promise<MigrationStatus> {
  const { BackupError, inspectDatabaseFile: inspect } = await import("../../db/backup.ts");
  return inspect(path).catch((err) => {
    throw err instanceof BackupError ? new CliError(EXIT.failure, err.message) : err;
  });
}

async function backup(o: { db: string; to: string }): Promise<void> {
  const source = await localDatabaseFile(o.db, "backup");
  if (!existsSync(source)) throw new CliError(EXIT.notFound, `There is no database at ${source}.`);
  const target = resolve(o.to);
  if (existsSync(target)) throw new CliError(EXIT.conflict, `${target} already exists; choose a new file name (backups are never overwritten).`);
  const { BackupError, backupFile } = await import("../../db/backup.ts");
  const { bytes, status } = await backupFile(source, target).catch((err) => {
    throw err instanceof BackupError ? new CliError(EXIT.failure, err.message) : err;
  });
  const newest = status.applied[status.applied.length - 1];
  process.stdout.write(`Backed up ${source} to ${target} (${bytes} bytes; migrations up to ${newest?.name ?? "none"}; integrity ok).\n`);
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
