// The SQL migrations build the database; db/schema/*.ts tells drizzle what it holds. The two are written apart, so
// this applies every migration to a fresh database and compares each table with its drizzle declaration: columns,
// type affinity, nullability, defaults, primary key, AUTOINCREMENT, UNIQUE constraints and indexes (name, columns
// with their order, uniqueness, the WHERE of a partial one). A mismatch is fixed in db/schema, never in a released
// migration.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { is, SQL } from "drizzle-orm";
import { getTableConfig, SQLiteSyncDialect, SQLiteTable } from "drizzle-orm/sqlite-core";
import { type Db, openDb } from "../../db/client.ts";
import { migrate } from "../../db/migrate.ts";
import * as schema from "../../db/schema/index.ts";

interface TableShape {
  columns: Record<string, { affinity: string; notNull: boolean; default: string | null }>;
  primaryKey: string[];
  autoIncrement: string[];
  /** UNIQUE constraints, each as its columns joined by commas. */
  unique: string[];
  indexes: Record<string, { columns: string[]; unique: boolean; where: string | null }>;
}

/** SQLite's rules for the affinity of a declared type (https://sqlite.org/datatype3.html, 3.1). */
function affinity(declared: string): string {
  const t = declared.toUpperCase();
  if (t.includes("INT")) return "integer";
  if (/CHAR|CLOB|TEXT/.test(t)) return "text";
  if (t === "" || t.includes("BLOB")) return "blob";
  if (/REAL|FLOA|DOUB/.test(t)) return "real";
  return "numeric";
}

/** SQL text compared as written by either side: no identifier quotes, one space, keywords in one case. */
const normalized = (text: string) => text.replaceAll('"', "").replace(/\s+/g, " ").trim().toLowerCase();

const dialect = new SQLiteSyncDialect();
// "indexes" renders a column without its table, as an index definition names it.
const rendered = (fragment: SQL) => normalized(dialect.sqlToQuery(fragment, "indexes").sql);

/** A SQL literal as SQLite keeps a column's DEFAULT. */
function literal(value: unknown): string {
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  return String(value);
}

function fromDrizzle(table: SQLiteTable): TableShape {
  const config = getTableConfig(table);
  const columns: TableShape["columns"] = {};
  for (const c of config.columns) {
    const value = c.default;
    columns[c.name] = {
      affinity: affinity(c.getSQLType()),
      notNull: c.notNull,
      default: value === undefined ? null : is(value, SQL) ? rendered(value) : literal(c.mapToDriverValue(value)),
    };
  }
  const composite = config.primaryKeys[0]?.columns.map((c) => c.name);
  return {
    columns,
    primaryKey: composite ?? config.columns.filter((c) => c.primary).map((c) => c.name),
    autoIncrement: config.columns.filter((c) => "autoIncrement" in c && c.autoIncrement === true).map((c) => c.name),
    unique: [
      ...config.columns.filter((c) => c.isUnique).map((c) => c.name),
      ...config.uniqueConstraints.map((u) => u.columns.map((c) => c.name).join(",")),
    ].sort(),
    indexes: Object.fromEntries(
      config.indexes.map((i) => [
        i.config.name,
        {
          // A column written as sql`${t.date} desc` keeps its order; the keyword is compared in upper case.
          columns: i.config.columns.map((c) =>
            is(c, SQL)
              ? rendered(c)
                  .replace(/ desc$/, " DESC")
                  .replace(/ asc$/, "")
              : c.name,
          ),
          unique: i.config.unique,
          where: i.config.where ? rendered(i.config.where) : null,
        },
      ]),
    ),
  };
}

async function fromDatabase(db: Db, table: string): Promise<TableShape> {
  const rows = async (sql: string, args: (string | number)[] = []) => (await db.raw.execute({ sql, args })).rows;
  const info = await rows(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, [table]);
  const columns: TableShape["columns"] = {};
  for (const c of info) {
    // A key column counts as NOT NULL, as drizzle declares it: SQLite alone would take NULL in a key that is not an
    // INTEGER PRIMARY KEY (a historical quirk), but no write here leaves a key out.
    columns[String(c.name)] = {
      affinity: affinity(String(c.type)),
      notNull: c.notnull === 1 || Number(c.pk) > 0,
      default: (c.dflt_value as string | null) ?? null,
    };
  }
  const primaryKey = info
    .filter((c) => Number(c.pk) > 0)
    .sort((a, b) => Number(a.pk) - Number(b.pk))
    .map((c) => String(c.name));
  const [created] = await rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table]);
  const autoIncrement = /\bAUTOINCREMENT\b/i.test(String(created?.sql)) ? primaryKey : [];
  const unique: string[] = [];
  const indexes: TableShape["indexes"] = {};
  for (const index of await rows('SELECT name, "unique", origin FROM pragma_index_list(?)', [table])) {
    const name = String(index.name);
    const keys = await rows('SELECT name, "desc" FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno', [name]);
    if (index.origin === "u") unique.push(keys.map((k) => k.name).join(","));
    if (index.origin !== "c") continue; // the primary key's own index is compared as primaryKey
    const [def] = await rows("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", [name]);
    const where = /\bWHERE\b([\s\S]*)$/i.exec(String(def?.sql))?.[1];
    indexes[name] = {
      columns: keys.map((k) => `${k.name ?? "(expression)"}${k.desc === 1 ? " DESC" : ""}`),
      unique: index.unique === 1,
      where: where === undefined ? null : normalized(where),
    };
  }
  return { columns, primaryKey, autoIncrement, unique: unique.sort(), indexes };
}

const TABLES = new Map(
  Object.values(schema as Record<string, unknown>)
    .filter((v): v is SQLiteTable => is(v, SQLiteTable))
    .map((t) => [getTableConfig(t).name, t]),
);

const dir = mkdtempSync(join(tmpdir(), "svc-schema-"));
let db: Db;
beforeAll(async () => {
  db = await openDb({ url: `file:${join(dir, "svc.db")}` });
  await migrate(db.raw);
});
afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("db/schema matches the migrated database", () => {
  test("the same tables (besides the migrations' own ledger and SQLite's)", async () => {
    const migrated = (await db.raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")).rows
      .map((r) => String(r.name))
      .filter((name) => name !== "_migrations" && !name.startsWith("sqlite_"));
    expect([...TABLES.keys()].sort()).toEqual(migrated);
  });

  for (const [name, table] of TABLES) {
    test(name, async () => {
      expect(fromDrizzle(table)).toEqual(await fromDatabase(db, name));
    });
  }
});
