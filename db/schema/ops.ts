import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0005_ops.sql; the SQL file is the source of truth for the database.
export const jobLeases = sqliteTable("job_leases", {
  name: text("name").primaryKey(),
  holder: text("holder"),
  leaseUntil: text("lease_until").notNull(),
  nextRunAt: text("next_run_at").notNull(),
  lastRunAt: text("last_run_at"),
  lastCount: integer("last_count"),
});

export const instances = sqliteTable("instances", {
  instanceId: text("instance_id").primaryKey(),
  host: text("host").notNull(),
  startedAt: text("started_at").notNull(),
  seenAt: text("seen_at").notNull(),
});

// Mirrors db/migrations/0024_writer_lease.sql: the one writer of instances sharing a database, before every instance
// wrote its own batches (0.13); nothing uses it now.
export const writerLease = sqliteTable("writer_lease", {
  id: integer("id").primaryKey(),
  holder: text("holder").notNull(),
  url: text("url").notNull(),
  leaseUntil: text("lease_until").notNull(),
});

// Mirrors db/migrations/0027_server_settings.sql: what svc serve was started with, for the admin commands.
export const serverSettings = sqliteTable("server_settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: text("updated_at").notNull(),
});

// Mirrors db/migrations/0032_write_conflicts.sql: where a guard of a write call's batch fails it (db/query.ts guard).
export const writeConflicts = sqliteTable("write_conflicts", {
  guard: text("guard"),
});
