// Admin commands work on the server's own database directly (the PocketBase way), safely beside a running server:
// SQLite in WAL mode lets them read while it serves, and writes wait on the busy timeout instead of failing. The
// database and the server's code are loaded when a command runs, not when svc starts.
import { type Command, InvalidArgumentError } from "commander";
import type { Db } from "../db/client.ts";
import type { Applied } from "../db/migrate.ts";
import type { AuditEntry } from "../server/contract/audit.ts";
import { writeAudit } from "../server/observability/audit.ts";
import { createLogger } from "../server/observability/logs.ts";
import { authTokenOption, dbOption } from "./commands/serve.ts";

export interface DbFlags {
  db: string;
  authToken?: string;
}

/** --db (SVC_DB) and --auth-token (SVC_AUTH_TOKEN), the same flags and defaults as svc serve. */
export const withDbOptions = (cmd: Command) => cmd.addOption(dbOption()).addOption(authTokenOption());

/**
 * Opens the database and applies pending migrations, so a command never meets an older schema. Only svc migrate
 * creates a database (create): any other admin command pointed at a missing file says where it looked.
 */
export async function openAdminDb(o: DbFlags, create = false): Promise<{ db: Db; applied: Applied[] }> {
  const [{ openDb }, { migrate }] = await Promise.all([import("../db/client.ts"), import("../db/migrate.ts")]);
  const db = await openDb({ url: o.db, authToken: o.authToken, create });
  try {
    return { db, applied: await migrate(db.raw) };
  } catch (err) {
    await db.close();
    throw err;
  }
}

/** Runs fn on the migrated database and closes it; migrations applied on the way are mentioned on stderr. */
export async function withAdminDb<T>(o: DbFlags, fn: (db: Db) => Promise<T>): Promise<T> {
  const { db, applied } = await openAdminDb(o);
  if (applied.length) process.stderr.write(`svc: applied migrations ${applied.map((m) => m.name).join(", ")} to ${o.db}\n`);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** Commander parser for counts; a bad value is a usage error. */
export function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got "${v}"`);
  return n;
}

/**
 * The audit line of an admin command's change to an account (the server's audit trail, docs/operations.md), on
 * stderr: the address is this machine's operator (sudo's user when there is one).
 */
export function auditAdmin(entry: AuditEntry): void {
  const log = createLogger("info", (line) => process.stderr.write(`${line}\n`));
  writeAudit(log, { method: "admin", ...entry }, `local:${process.env.SUDO_USER || process.env.USER || "operator"}`);
}
