// Every table, one file per area; the drizzle client is typed with all of them. Each mirrors its migrations,
// indexes included: test/ops/schema-matches-migrations.test.ts compares every table with the migrated database.
export * from "./auth.ts";
export * from "./core.ts";
export * from "./ledger.ts";
export * from "./mail-plans.ts";
export * from "./ops.ts";
export * from "./federation.ts";
export * from "./email.ts";
export * from "./group-events.ts";
