import { Command, Option } from "commander";
import { chmodSync, copyFileSync, existsSync, renameSync, rmSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { CliError, EXIT, action, example, usageExits } from "../output.ts";
import { inspectDatabaseFile, localDatabaseFile } from "./backup.ts";
import { dbOption } from "./serve.ts";

const SIDE_FILES = ["-wal", "-shm"];

/** Refuses while a server seems to be using the target: its heartbeat row is fresh. */
async function assertNotInUse(target: string): Promise<void> {
  const [{ openDb }, { liveInstances }] = await Promise.all([import("../../db/client.ts"), import("../../server/jobs/runner.ts")]);
  const db = await openDb({ url: `file:${target}` });
  try {
    const hasTable = await db.raw.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'instances'");
    const live = hasTable.rows.length ? await liveInstances(db, new Date()) : [];
    if (live.length) {
      throw new CliError(
        EXIT.conflict,
        `${target} looks in use: ${live.map((i) => `svc on ${i.host} (last seen ${i.seenAt})`).join(", ")}.`,
        "Stop every svc serve on this database first (a stopped server removes its mark at once; a crashed one is taken as gone after 5 minutes), or pass --force.",
      );
    }
  } finally {
    // Closing folds the WAL into the file, so the file set aside below is the whole database.
    await db.close();
  }
}

async function restore(o: { db: string; from: string; force?: boolean }): Promise<void> {
  const target = await localDatabaseFile(o.db, "restore");
  const source = resolve(o.from);
  if (!existsSync(source)) throw new CliError(EXIT.notFound, `There is no backup at ${source}.`);
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  // Checks run on a copy beside the target: the backup is never touched, and the final rename stays on one file system.
  const staged = resolve(dirname(target), `.svc-restore-${stamp}.db`);
  copyFileSync(source, staged);
  chmodSync(staged, 0o600);
  // A backup that was opened since may hold its last writes in its WAL.
  if (existsSync(`${source}-wal`)) copyFileSync(`${source}-wal`, `${staged}-wal`);
  try {
    const status = await inspectDatabaseFile(staged);
    const { refusal } = await import("../../db/migrate.ts");
    const refused = refusal(status);
    if (refused) throw new CliError(EXIT.conflict, `Not restoring ${source}: ${refused}`);
    if (!status.applied.length) throw new CliError(EXIT.failure, `Not restoring ${source}: it holds no svc migrations, so it is not an svc database.`);
    let keptAs: string | null = null;
    if (existsSync(target)) {
      if (!o.force) await assertNotInUse(target);
      keptAs = `${target}.before-restore-${stamp}`;
      renameSync(target, keptAs);
      for (const side of SIDE_FILES) if (existsSync(target + side)) renameSync(target + side, keptAs + side);
    }
    renameSync(staged, target);
    const pending = status.pending.length;
    process.stdout.write(
      `Restored ${source} into ${target} (integrity ok; ${status.applied.length} migrations${pending ? `, ${pending} to apply at the next svc serve` : ""}).\n` +
        (keptAs ? `The database it replaced is kept as ${keptAs}.\n` : ""),
    );
  } finally {
    for (const f of [staged, ...SIDE_FILES.map((s) => staged + s)]) rmSync(f, { force: true });
  }
}

export function restoreCommand(): Command {
  return usageExits(
    new Command("restore")
      .description("Replace the database with a backup after checking its integrity and that this svc knows all its migrations; the old file is kept beside it")
      .addOption(dbOption())
      .addOption(new Option("--from <path>", "the backup file (made by svc backup)").makeOptionMandatory())
      .addOption(new Option("--force", "restore even though a server seems to be running on the database"))
      .addHelpText("after", example("svc restore --from /var/backups/svc/svc-2026-11-22.db --db file:/var/lib/svc/svc.db"))
      .action(action(restore)),
  );
}
