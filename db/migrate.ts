import type { RawSql } from "./client.ts";
import { MIGRATIONS } from "./migrations/index.ts";

export interface Applied {
  id: number;
  name: string;
}

export interface MigrationStatus {
  /** Recorded in the database and known to this binary with the same checksum. */
  applied: (Applied & { appliedAt: string })[];
  /** Known to this binary, not yet in the database: what `migrate` would apply, in order. */
  pending: Applied[];
  /** Recorded in the database but newer than this binary: the binary is too old for it. */
  unknown: Applied[];
  /** Recorded with a checksum other than this binary's: the file was edited after it was applied. */
  changed: Applied[];
}

const LEDGER = "CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)";

/** The SHA-256 of a migration's text, recorded in _migrations; test/ops/released-migrations.test.ts pins the released ones. */
export async function checksum(sql: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(sql));
  return Buffer.from(digest).toString("hex");
}

/** Compares the database's migration record with the migrations embedded in this binary; changes nothing. */
export async function migrationStatus(client: RawSql): Promise<MigrationStatus> {
  const exists = await client.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'");
  const rows = exists.rows.length ? (await client.execute("SELECT id, name, checksum, applied_at FROM _migrations ORDER BY id")).rows : [];
  const known = new Map(MIGRATIONS.map((m) => [m.id, m]));
  const recorded = new Set<number>();
  const status: MigrationStatus = { applied: [], pending: [], unknown: [], changed: [] };
  for (const r of rows) {
    const id = Number(r.id);
    recorded.add(id);
    const m = known.get(id);
    const entry = { id, name: String(r.name) };
    if (!m) status.unknown.push(entry);
    else if ((await checksum(m.sql)) !== String(r.checksum)) status.changed.push(entry);
    else status.applied.push({ ...entry, appliedAt: String(r.applied_at) });
  }
  status.pending = MIGRATIONS.filter((m) => !recorded.has(m.id)).map((m) => ({ id: m.id, name: m.name }));
  return status;
}

/** The reason this binary must not use a database with this status, or null when it may. */
export function refusal(s: MigrationStatus): string | null {
  if (s.unknown.length) {
    const newest = MIGRATIONS[MIGRATIONS.length - 1]?.id ?? 0;
    return `The database has migration ${Math.max(...s.unknown.map((u) => u.id))} but this svc binary knows only up to ${newest}: upgrade svc before opening this database.`;
  }
  const first = s.changed[0];
  if (first) return `Migration ${first.name} was changed after it was applied (checksum differs).`;
  return null;
}

/** Applies pending migrations, each in its own transaction with its checksum; refuses a database newer than this binary. */
export async function migrate(client: RawSql): Promise<Applied[]> {
  await client.execute(LEDGER);
  const status = await migrationStatus(client);
  const refused = refusal(status);
  if (refused) throw new Error(refused);
  const applied: Applied[] = [];
  for (const p of status.pending) {
    const m = MIGRATIONS.find((x) => x.id === p.id)!;
    const done = await client.transaction(async (tx) => {
      // Another instance may have applied it since the status was read; the ledger row decides.
      const again = await tx.execute({ sql: "SELECT 1 FROM _migrations WHERE id = ?", args: [m.id] });
      if (again.rows.length) return false;
      await tx.executeMultiple(m.sql);
      await tx.execute({
        sql: "INSERT INTO _migrations (id, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
        args: [m.id, m.name, await checksum(m.sql), new Date().toISOString()],
      });
      return true;
    });
    if (done) applied.push(p);
  }
  return applied;
}
