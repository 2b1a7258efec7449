// Migrations: status and dry run change nothing, serve applies what is pending, an older binary refuses a newer database.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../db/client.ts";
import { migrate, migrationStatus } from "../../db/migrate.ts";
import { MIGRATIONS } from "../../db/migrations/index.ts";
import { ensureBuilt, svc } from "../cli/bin.ts";
import { startTestServer, walBytes } from "../harness.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-migrations-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
beforeAll(() => ensureBuilt());
let n = 0;
const freshUrl = () => `file:${join(dir, `m${++n}.db`)}`;
const names = MIGRATIONS.map((m) => m.name);

async function withClient<T>(url: string, fn: (c: ReturnType<typeof createClient>) => Promise<T>): Promise<T> {
  const c = createClient({ url });
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

describe("migrationStatus and migrate", () => {
  test("embedded migrations have ascending ids", () => {
    expect(MIGRATIONS.map((m) => m.id)).toEqual([...MIGRATIONS.map((m) => m.id)].sort((a, b) => a - b));
    expect(names).toContain("0005_ops");
  });

  test("a new database: all pending; migrate applies them once; a second run applies nothing", async () => {
    const db = await openDb({ url: freshUrl() });
    try {
      expect((await migrationStatus(db.raw)).pending.map((m) => m.name)).toEqual(names);
      expect((await migrate(db.raw)).map((m) => m.name)).toEqual(names);
      expect(await migrate(db.raw)).toEqual([]);
      const s = await migrationStatus(db.raw);
      expect(s.applied.map((m) => m.name)).toEqual(names);
      expect([s.pending, s.unknown, s.changed]).toEqual([[], [], []]);
    } finally {
      await db.close();
    }
  });

  test("a migration edited after it was applied is refused", async () => {
    const url = freshUrl();
    const db = await openDb({ url });
    try {
      await migrate(db.raw);
      await db.raw.execute("UPDATE _migrations SET checksum = 'edited' WHERE id = 1");
      expect((await migrationStatus(db.raw)).changed.map((m) => m.name)).toEqual(["0001_core"]);
      await expect(migrate(db.raw)).rejects.toThrow("Migration 0001_core was changed after it was applied (checksum differs).");
    } finally {
      await db.close();
    }
  });
});

describe("svc migrate --dry-run / --status (compiled binary)", () => {
  test("on a new database: both list what is pending and apply nothing; after svc migrate both say so", async () => {
    const url = freshUrl();
    const dry = await svc(["migrate", "--dry-run", "--db", url]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toBe(`Would apply ${names.length} migrations to ${url}:\n${names.map((x) => `  ${x}`).join("\n")}\n`);
    const status = await svc(["migrate", "--status", "--db", url]);
    expect(status.code).toBe(0);
    expect(status.stdout).toStartWith(`${url}: 0 applied, ${names.length} pending\n`);
    expect(status.stdout).toContain("  0005_ops  pending");
    expect(await withClient(url, async (c) => (await migrationStatus(c)).applied)).toEqual([]);

    expect((await svc(["migrate", "--db", url])).code).toBe(0);
    // It closed what it opened: the migrations are in the file itself, not left in a write-ahead log.
    expect(walBytes(url.slice("file:".length))).toBe(0);
    expect((await svc(["migrate", "--dry-run", "--db", url])).stdout).toBe(`${url}: nothing to apply.\n`);
    const after = await svc(["migrate", "--status", "--db", url]);
    expect(after.stdout).toStartWith(`${url}: ${names.length} applied, 0 pending\n`);
    expect(after.stdout).toMatch(/ {2}0005_ops {2}applied \d{4}-\d\d-\d\dT/);
  });
});

describe("a binary older than the database", () => {
  const future = async (url: string) => {
    const db = await openDb({ url });
    await migrate(db.raw);
    await db.raw.execute("INSERT INTO _migrations (id, name, checksum, applied_at) VALUES (9999, '9999_from_the_future', 'x', '2030-01-01T00:00:00.000Z')");
    await db.close();
  };
  const message = `The database has migration 9999 but this svc binary knows only up to ${MIGRATIONS.at(-1)!.id}: upgrade svc before opening this database.`;

  test("svc serve refuses to start, with a clear message", async () => {
    const url = freshUrl();
    await future(url);
    await expect(startTestServer({ dbUrl: url, syncUrl: undefined, authToken: undefined })).rejects.toThrow(message);
  });

  test("svc migrate refuses; --status names the unknown migration and exits 5", async () => {
    const url = freshUrl();
    await future(url);
    const run = await svc(["migrate", "--db", url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(message);
    const status = await svc(["migrate", "--status", "--db", url]);
    expect(status.code).toBe(5);
    expect(status.stdout).toContain("  9999_from_the_future  unknown to this svc (newer)");
    expect(status.stderr).toContain(message);
  });
});
