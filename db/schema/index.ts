// Every table, one file per area; the drizzle client is typed with all of them.
export * from "./auth.ts";
export * from "./core.ts";
export * from "./ledger.ts";
export * from "./mail-plans.ts";
export * from "./ops.ts";
