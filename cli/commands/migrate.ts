import { Command, Option } from "commander";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { openAdminDb, withDbOptions, type DbFlags } from "../admin-db.ts";
import { CliError, EXIT, EXIT_CODES_SEE, action, example, usageExits } from "../output.ts";

/** --status lists every migration; --dry-run only what would be applied. Neither changes the database. */
async function report(o: DbFlags & { dryRun?: boolean; status?: boolean }): Promise<void> {
  const [{ localFilePath, openDb }, { migrationStatus, refusal }] = await Promise.all([import("../../db/client.ts"), import("../../db/migrate.ts")]);
  // A database not made yet is reported as an empty one (all pending), and is not made: only svc migrate makes it.
  const path = localFilePath(o.db);
  const missing = path !== null && !existsSync(path);
  if (missing) process.stderr.write(`svc: there is no database at ${resolve(path)} yet; svc migrate --db ${o.db} creates it.\n`);
  const db = await openDb(missing ? { url: "file::memory:" } : { url: o.db, authToken: o.authToken, create: false });
  const s = await migrationStatus(db.raw).finally(() => db.close());
  const refused = refusal(s);
  if (o.status) {
    const rows = [
      ...s.applied.map((m) => ({ ...m, state: `applied ${m.appliedAt}` })),
      ...s.pending.map((m) => ({ ...m, state: "pending" })),
      ...s.unknown.map((m) => ({ ...m, state: "unknown to this svc (newer)" })),
      ...s.changed.map((m) => ({ ...m, state: "changed after it was applied" })),
    ].sort((a, b) => a.id - b.id);
    process.stdout.write(`${o.db}: ${s.applied.length} applied, ${s.pending.length} pending\n${rows.map((r) => `  ${r.name}  ${r.state}`).join("\n")}\n`);
  } else if (!refused) {
    process.stdout.write(
      s.pending.length
        ? `Would apply ${s.pending.length} migration${s.pending.length === 1 ? "" : "s"} to ${o.db}:\n${s.pending.map((m) => `  ${m.name}`).join("\n")}\n`
        : `${o.db}: nothing to apply.\n`,
    );
  }
  if (refused) throw new CliError(EXIT.conflict, refused);
}

async function applyPending(o: DbFlags & { dryRun?: boolean; status?: boolean }): Promise<void> {
  if (o.dryRun || o.status) return report(o);
  const { db, applied } = await openAdminDb(o, true);
  await db.close();
  process.stdout.write(
    applied.length
      ? `Applied ${applied.length} migration${applied.length === 1 ? "" : "s"} to ${o.db}:\n${applied.map((m) => `  ${m.name}`).join("\n")}\n`
      : `${o.db}: nothing to apply.\n`,
  );
}

export function migrateCommand(): Command {
  return usageExits(
    withDbOptions(new Command("migrate"))
      .description("Apply pending database migrations (svc serve also applies them at start) and report what was applied")
      .addOption(new Option("--dry-run", "list the migrations that would be applied, apply none"))
      .addOption(new Option("--status", "list every migration as applied, pending, unknown (database newer than svc) or changed"))
      .addHelpText("after", example("svc migrate --db file:/var/lib/svc/svc.db", "svc migrate --status") + EXIT_CODES_SEE)
      .action(action(applyPending)),
  );
}
