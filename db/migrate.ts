import type { Client } from "@libsql/client";
import { MIGRATIONS } from "./migrations/index.ts";

export interface Applied {
  id: number;
  name: string;
}

async function checksum(sql: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(sql));
  return Buffer.from(digest).toString("hex");
}

/** Applies pending migrations, each in its own transaction with its checksum; refuses a database newer than this binary. */
export async function migrate(client: Client): Promise<Applied[]> {
  await client.execute(
    "CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const rows = await client.execute("SELECT id, name, checksum FROM _migrations ORDER BY id");
  const done = new Map(rows.rows.map((r) => [Number(r.id), String(r.checksum)]));
  const newest = MIGRATIONS[MIGRATIONS.length - 1]?.id ?? 0;
  const unknown = [...done.keys()].filter((id) => id > newest);
  if (unknown.length) {
    throw new Error(
      `The database has migration ${Math.max(...unknown)} but this svc binary knows only up to ${newest}: upgrade svc before opening this database.`,
    );
  }
  const applied: Applied[] = [];
  for (const m of MIGRATIONS) {
    const sum = await checksum(m.sql);
    const seen = done.get(m.id);
    if (seen !== undefined) {
      if (seen !== sum) throw new Error(`Migration ${m.name} was changed after it was applied (checksum differs).`);
      continue;
    }
    const tx = await client.transaction("write");
    try {
      await tx.executeMultiple(m.sql);
      await tx.execute({
        sql: "INSERT INTO _migrations (id, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
        args: [m.id, m.name, sum, new Date().toISOString()],
      });
      await tx.commit();
    } finally {
      tx.close();
    }
    applied.push({ id: m.id, name: m.name });
  }
  return applied;
}
