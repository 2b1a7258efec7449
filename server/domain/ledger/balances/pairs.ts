// What each pair of members owes the other: an integer cache of the ledger (table ledger_pairs), changed in the
// same transaction as every expense and payment, and complete from a group's creation (ledger_pairs_built).
// Balances and settle-up read it instead of every share of every expense. When the marker is missing (groups
// older than the table, or a repair) a write transaction rebuilds it; a read transaction computes without storing.
import { and, eq, ne, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { isReadOnly, jsonEach, jsonList, prepared, preparedWrite, type Tx } from "../../../../db/client.ts";
import { expenseShares, expenses, groupBalances, ledgerPairs, ledgerPairsBuilt, payments } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { greedyTransfers, type Debt } from "../money/fewest-transfers.ts";
import type { ExpenseKind } from "../../../contract/ledger.ts";
import { noteDebts } from "../events/log.ts";

/** One pair's row: what low owes high (negative: high owes low). */
export interface PairRow {
  lowId: string;
  highId: string;
  lowOwes: bigint;
}

export const pairKey = (p: { lowId: string; highId: string }) => `${p.lowId} ${p.highId}`;

/** An integer read exactly, as text (a value past 2^53 would not survive as a JS number). */
export const exactly = (value: SQLiteColumn | SQL) => sql<string>`CAST(CAST(${value} AS INTEGER) AS TEXT)`;

/**
 * The debts one expense creates: its debtors pay its payers in the fewest transfers (a single payer is owed
 * each other participant's share). Deterministic, so removing an expense removes exactly what adding it added;
 * always the greedy plan, so the pairs stored by earlier versions stay exactly what removing an expense takes away.
 * A refund's are the same expense's reversed: whoever received the money owes it to those whose money it was.
 */
export function expenseDebts(shares: readonly { agentId: string; paidMinor: number; shareMinor: number }[], kind: ExpenseKind = "expense"): Debt[] {
  const debts = greedyTransfers(new Map(shares.map((s) => [s.agentId, BigInt(s.paidMinor - s.shareMinor)])));
  return kind === "refund" ? reversed(debts) : debts;
}

/** A confirmed payment from payer to payee: the payee now owes it back (it cancels the payer's debt). */
export const paymentDebt = (p: { fromId: string; toId: string; amountMinor: number }): Debt => ({
  from: p.toId,
  to: p.fromId,
  amount: BigInt(p.amountMinor),
});

/** The debts as they were: each one reversed (removing debts is adding these). */
export const reversed = (debts: readonly Debt[]): Debt[] => debts.map((d) => ({ from: d.to, to: d.from, amount: d.amount }));

/** Adds (sign 1) or removes (sign -1) debts from a group's pair ledger; what could pass the limit is checked first (limits.ts). */
export async function applyDebts(tx: Tx, groupId: string, debts: readonly Debt[], sign: 1 | -1): Promise<void> {
  noteDebts(tx, groupId, debts, sign);
  await addPairs(tx, groupId, netPairs(debts, sign));
}

// Rows as [low_id, high_id, what low owes as integer text]; WHERE true tells SQLite's parser that ON CONFLICT is
// the upsert's, not a join's.
const upsertPairs = preparedWrite((tx) =>
  tx
    .insert(ledgerPairs)
    .select(sql`SELECT ${sql.placeholder("groupId")}, value ->> 0, value ->> 1, CAST(value ->> 2 AS INTEGER) FROM ${jsonEach("rows")} WHERE true`)
    .onConflictDoUpdate({
      target: [ledgerPairs.groupId, ledgerPairs.lowId, ledgerPairs.highId],
      set: { lowOwesMinor: sql`${ledgerPairs.lowOwesMinor} + excluded.low_owes_minor` },
    })
    .prepare(),
);

/** Adds netted pair rows to a group's pair ledger, each value as exact integer text whatever its size. */
async function addPairs(tx: Tx, groupId: string, rows: readonly PairRow[]): Promise<void> {
  if (!rows.length) return;
  await upsertPairs(tx).run({ groupId, rows: jsonList(rows.map((r) => [r.lowId, r.highId, r.lowOwes.toString()])) });
}

/** Every debt of a group's live expenses and confirmed payments, recomputed from the ledger (unnetted). */
async function ledgerDebts(tx: Tx, groupId: string): Promise<Debt[]> {
  const shares = await tx
    .select({
      expenseId: expenseShares.expenseId,
      kind: expenses.kind,
      agentId: expenseShares.agentId,
      paidMinor: expenseShares.paidMinor,
      shareMinor: expenseShares.shareMinor,
    })
    .from(expenseShares)
    .innerJoin(expenses, eq(expenses.expenseId, expenseShares.expenseId))
    .where(and(eq(expenseShares.groupId, groupId), eq(expenses.deleted, false)))
    .orderBy(expenseShares.expenseId);
  const debts: Debt[] = [];
  for (let i = 0; i < shares.length; ) {
    const id = shares[i]!.expenseId;
    let end = i;
    while (end < shares.length && shares[end]!.expenseId === id) end++;
    debts.push(...expenseDebts(shares.slice(i, end), shares[i]!.kind));
    i = end;
  }
  const paid = await tx
    .select()
    .from(payments)
    .where(and(eq(payments.groupId, groupId), eq(payments.state, "confirmed")));
  debts.push(...paid.map(paymentDebt));
  return debts;
}

/** Recomputes a group's pair ledger from its live expenses and confirmed payments. */
async function rebuild(tx: Tx, groupId: string, now: Date): Promise<void> {
  const debts = await ledgerDebts(tx, groupId);
  await tx.delete(ledgerPairs).where(eq(ledgerPairs.groupId, groupId));
  await addPairs(tx, groupId, netPairs(debts));
  await markBuilt(tx, now, groupId);
}

/** Records that a group's pair ledger is complete; a new group's is (it is empty, and every change keeps it). */
export async function markBuilt(tx: Tx, now: Date, groupId: string): Promise<void> {
  await tx
    .insert(ledgerPairsBuilt)
    .values({ groupId, builtAt: iso(now) })
    .onConflictDoNothing();
}

/** What debts (times sign) net to per pair, low id first: what low owes high; pairs that net to zero are left out. */
export function netPairs(debts: readonly Debt[], sign: 1 | -1 = 1): PairRow[] {
  const byPair = new Map<string, PairRow>();
  for (const d of debts) {
    if (d.from === d.to || d.amount === 0n) continue;
    const [lowId, highId] = d.from < d.to ? [d.from, d.to] : [d.to, d.from];
    const entry = byPair.get(pairKey({ lowId, highId })) ?? { lowId, highId, lowOwes: 0n };
    entry.lowOwes += BigInt(sign) * (d.from === lowId ? d.amount : -d.amount);
    byPair.set(pairKey(entry), entry);
  }
  return [...byPair.values()].filter((p) => p.lowOwes !== 0n);
}

// The groups (all of an agent's, which have no bound) bound as one value.
const inGroups = (column: SQLiteColumn) => sql`${column} IN (SELECT value FROM ${jsonEach("groups")})`;
const builtOf = prepared((tx) => tx.select({ g: ledgerPairsBuilt.groupId }).from(ledgerPairsBuilt).where(inGroups(ledgerPairsBuilt.groupId)).prepare());
const pairsOfGroups = prepared((tx) =>
  tx
    .select({ groupId: ledgerPairs.groupId, lowId: ledgerPairs.lowId, highId: ledgerPairs.highId, lowOwes: exactly(ledgerPairs.lowOwesMinor) })
    .from(ledgerPairs)
    .where(and(inGroups(ledgerPairs.groupId), ne(ledgerPairs.lowOwesMinor, 0)))
    .orderBy(ledgerPairs.groupId, ledgerPairs.lowId, ledgerPairs.highId)
    .prepare(),
);

/**
 * Each pair's net debt (non-zero ones) in each of the groups, by group id, read from the pair ledger in one
 * query for them all; a group's is built first if needed. Pairs come in the pair ledger's key order.
 */
export async function pairDebtsByGroup(tx: Tx, now: Date, groupIds: readonly string[]): Promise<Map<string, Debt[]>> {
  const byGroup = new Map(groupIds.map((id) => [id, [] as Debt[]]));
  if (!groupIds.length) return byGroup;
  const ids = [...byGroup.keys()];
  const built = await builtOf(tx).all({ groups: jsonList(ids) });
  const isBuilt = new Set(built.map((b) => b.g));
  const missing = ids.filter((id) => !isBuilt.has(id));
  // A read transaction writes nothing: there a missing ledger is computed and left unstored, for a write to store.
  const computed = isReadOnly(tx) ? missing : [];
  if (!isReadOnly(tx)) for (const id of missing) await rebuild(tx, id, now);
  const stored = await pairsOfGroups(tx).all({ groups: jsonList(ids) });
  const rows = stored.filter((r) => !computed.includes(r.groupId)).map((r) => ({ ...r, lowOwes: BigInt(r.lowOwes) }));
  for (const id of computed) {
    const pairs = netPairs(await ledgerDebts(tx, id)).sort((a, b) => (pairKey(a) < pairKey(b) ? -1 : 1));
    rows.push(...pairs.map((p) => ({ groupId: id, ...p })));
  }
  for (const r of rows) byGroup.get(r.groupId)!.push(asDebt(r));
  return byGroup;
}

// One group's pairs (what get_balances and every ledger write read): prepared, without the group id in each row.
const groupPairs = prepared((tx) =>
  tx
    .select({ lowId: ledgerPairs.lowId, highId: ledgerPairs.highId, lowOwes: exactly(ledgerPairs.lowOwesMinor) })
    .from(ledgerPairs)
    .where(and(eq(ledgerPairs.groupId, sql.placeholder("groupId")), ne(ledgerPairs.lowOwesMinor, 0)))
    .orderBy(ledgerPairs.lowId, ledgerPairs.highId)
    .prepare(),
);
const groupBuilt = prepared((tx) =>
  tx
    .select({ g: ledgerPairsBuilt.groupId })
    .from(ledgerPairsBuilt)
    .where(eq(ledgerPairsBuilt.groupId, sql.placeholder("groupId")))
    .prepare(),
);

const asDebt = (r: PairRow): Debt =>
  r.lowOwes > 0n ? { from: r.lowId, to: r.highId, amount: r.lowOwes } : { from: r.highId, to: r.lowId, amount: -r.lowOwes };

/** Each pair's net debt in a group (non-zero ones), read from the pair ledger, built first if needed. */
export async function pairDebts(tx: Tx, now: Date, groupId: string): Promise<Debt[]> {
  if (!(await groupBuilt(tx).get({ groupId }))) return (await pairDebtsByGroup(tx, now, [groupId])).get(groupId)!;
  // Rows as drizzle's values (low_id, high_id, low_owes_minor as text): a group has a pair for every two members,
  // and mapping each row to an object costs more than reading it.
  const rows = (await groupPairs(tx).values({ groupId })) as [string, string, string][];
  return rows.map(([lowId, highId, lowOwes]) => asDebt({ lowId, highId, lowOwes: BigInt(lowOwes) }));
}

// Each member's balance in a group, kept by triggers from the pairs (0014): one row per member, not per pair.
const storedBalances = prepared((tx) =>
  tx
    .select({ agentId: groupBalances.agentId, balance: exactly(groupBalances.balanceMinor) })
    .from(groupBalances)
    .where(eq(groupBalances.groupId, sql.placeholder("groupId")))
    .prepare(),
);

/** Each agent's balance in a group (positive: the others owe them), exactly, from the pair ledger, built first if needed. */
export async function pairBalances(tx: Tx, now: Date, groupId: string): Promise<Map<string, bigint>> {
  if (!(await groupBuilt(tx).get({ groupId }))) return balancesFromDebts(await pairDebts(tx, now, groupId));
  const rows = (await storedBalances(tx).values({ groupId })) as [string, string][];
  return new Map(rows.map(([agentId, balance]) => [agentId, BigInt(balance)]));
}

/** A pending payment as settle-up counts it: the debt it cancels once confirmed (paymentDebt), with its id. */
export interface PendingDebt extends Debt {
  paymentId: string;
}

// The pending payments of any number of groups, oldest first.
const pendingOfGroups = prepared((tx) =>
  tx
    .select({ paymentId: payments.paymentId, groupId: payments.groupId, fromId: payments.fromId, toId: payments.toId, amountMinor: payments.amountMinor })
    .from(payments)
    .where(and(inGroups(payments.groupId), eq(payments.state, "pending")))
    .orderBy(sql`payments.rowid`)
    .prepare(),
);

/**
 * Each group's pending payments as the debts they cancel once confirmed, by group id. Settle-up counts them as if
 * confirmed (settlement.ts), so a debt already paid and waiting for the payee is not suggested, nor paid, again.
 */
export async function pendingDebtsByGroup(tx: Tx, groupIds: readonly string[]): Promise<Map<string, PendingDebt[]>> {
  const byGroup = new Map(groupIds.map((id) => [id, [] as PendingDebt[]]));
  if (!groupIds.length) return byGroup;
  for (const p of await pendingOfGroups(tx).all({ groups: jsonList([...byGroup.keys()]) })) {
    byGroup.get(p.groupId)?.push({ ...paymentDebt(p), paymentId: p.paymentId });
  }
  return byGroup;
}

/** Each agent's balance from pair debts (positive: the others owe them), exactly; sums to zero by construction. */
export function balancesFromDebts(debts: readonly Debt[]): Map<string, bigint> {
  const balances = new Map<string, bigint>();
  for (const d of debts) {
    balances.set(d.to, (balances.get(d.to) ?? 0n) + d.amount);
    balances.set(d.from, (balances.get(d.from) ?? 0n) - d.amount);
  }
  return balances;
}
