// Migrations are embedded in the binary as text, applied in this order, forward only.
import core from "./0001_core.sql" with { type: "text" };
import ledger from "./0002_ledger.sql" with { type: "text" };

export const MIGRATIONS: readonly { id: number; name: string; sql: string }[] = [
  { id: 1, name: "0001_core", sql: core },
  { id: 2, name: "0002_ledger", sql: ledger },
];
