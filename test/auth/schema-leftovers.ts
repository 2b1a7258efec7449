// Where a deleted person's id is left in the database: every table of the schema (sqlite_master), every column,
// searched for the id as text, outside the rows where the former member must remain (ALLOWED).
import { expect } from "bun:test";
import { sql, type SQL } from "drizzle-orm";
import type { TestServer } from "../harness.ts";

/** The rows of a raw query, each as its values in column order. */
export const rawRows = (s: TestServer, q: SQL) => s.server.db.read((tx) => tx.all(q)) as Promise<unknown[][]>;

/**
 * Where the former member must remain, by table: the rows that may still hold their id. Every other table holds it
 * nowhere. Ledger tables whole: the group's balances and history name them (a removed group is checked apart).
 */
export const ALLOWED: Record<string, (id: string) => SQL> = {
  // Their own row (handle and name for the ledger), and placeholders they took over.
  agents: (id) => sql`agent_id = ${id} OR (handle = agent_id AND merged_into = ${id})`,
  groups: () => sql`1`,
  group_members: () => sql`1`,
  group_placeholders: () => sql`1`,
  expenses: () => sql`1`,
  expense_shares: () => sql`1`,
  expense_history: () => sql`1`,
  expense_responses: () => sql`1`,
  expense_attachments: () => sql`1`,
  ledger_pairs: () => sql`1`,
  ledger_totals: () => sql`1`,
  group_balances: () => sql`1`,
  spending_totals: () => sql`1`,
  payments: () => sql`1`,
  ledger_activity: () => sql`1`,
  // The group's event chain names them as its events did (a hash chain is not rewritten), and so do a copy's rows.
  group_events: () => sql`1`,
  group_homes: () => sql`1`,
  group_home_agents: () => sql`1`,
  // Invitations they made to their groups stay the groups'; none aimed at them.
  group_invites: (id) => sql`created_by = ${id} AND coalesce(target_id, '') <> ${id}`,
  // Others' ledger items, the news of the deletion, and envelopes others hold.
  inbox_items: (id) =>
    sql`agent_id <> ${id} AND (app = 'ledger' OR type = 'network.account_deleted' OR (app = 'mail' AND json_extract(refs, '$.envelope_id') IN (SELECT envelope_id FROM envelopes)))`,
  // Mail another person holds: what they sent to the person, or received from them.
  envelopes: (id) => sql`sender_id <> ${id} OR envelope_id IN (SELECT envelope_id FROM envelope_recipients WHERE agent_id <> ${id} AND delivered = 1)`,
  envelope_recipients: () => sql`envelope_id IN (SELECT envelope_id FROM envelopes)`,
  // Others' stored answers, replayed to their retries for a day (jobs/expiry.ts), name them as their answers did.
  idempotency_records: (id) => sql`agent_id <> ${id}`,
};

/** Every (table, column, rows) of the schema where `needle` is found outside the allowed rows. */
export async function leftovers(s: TestServer, needle: string, allowed: Record<string, (id: string) => SQL> = ALLOWED) {
  const read = (q: SQL) => rawRows(s, q);
  const found: { table: string; column: string; rows: number }[] = [];
  const tables = await read(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`);
  expect(tables.length).toBeGreaterThan(40);
  for (const [name] of tables as [string][]) {
    const columns = (await read(sql`SELECT name FROM pragma_table_info(${name})`)) as [string][];
    for (const [column] of columns) {
      const allow = allowed[name]?.(needle) ?? sql`0`;
      const [[n]] = (await read(
        sql`SELECT count(*) FROM ${sql.identifier(name)} WHERE instr(CAST(${sql.identifier(column)} AS TEXT), ${needle}) > 0 AND NOT (${allow})`,
      )) as [[number]];
      if (Number(n)) found.push({ table: name, column, rows: Number(n) });
    }
  }
  return found;
}
