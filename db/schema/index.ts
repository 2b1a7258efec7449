// Every table, one file per area; the drizzle client is typed with all of them.
export * from "./core.ts";
export * from "./ledger.ts";
