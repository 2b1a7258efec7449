// Reading a whole database to prove what a call did or did not leave behind, independent of any tool's view.
import type { RawSql } from "../../db/client.ts";

/** Any way to run plain SQL: the server's queued one, or a client of its own on the file. */
type Client = Pick<RawSql, "execute">;

// Bookkeeping a refused or repeated call may legitimately touch.
const BOOKKEEPING = ["idempotency_records", "_migrations"];

async function tables(db: Client): Promise<string[]> {
  const rows = await db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  return rows.rows.map((r) => String(r.name)).filter((n) => !BOOKKEEPING.includes(n));
}

/** Every row of every table as text (clients.last_used_at blanked: authenticating may touch it). */
export async function snapshot(db: Client): Promise<string> {
  const parts: string[] = [];
  for (const name of await tables(db)) {
    const rows = (await db.execute(`SELECT * FROM "${name}"`)).rows.map((r) => JSON.stringify({ ...r, last_used_at: undefined })).sort();
    parts.push(`${name}:${rows.join("\n")}`);
  }
  return parts.join("\n\n");
}

/** How many rows of the whole database carry each match of `marker` (a global regex). */
export async function markerRows(db: Client, marker: RegExp): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const name of await tables(db)) {
    for (const row of (await db.execute(`SELECT * FROM "${name}"`)).rows) {
      for (const m of new Set(JSON.stringify(row).match(marker) ?? [])) counts.set(m, (counts.get(m) ?? 0) + 1);
    }
  }
  return counts;
}
