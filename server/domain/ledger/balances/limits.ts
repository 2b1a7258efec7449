// The ledger's bound on its totals (MAX_TOTAL_MINOR, 2^53 - 1 minor units), checked before a change is written:
// an agent's open total in a currency, each pair's net debt they are part of taken as a size, over all their
// groups in that currency, may not pass it. That bounds every balance, settle-up transfer and cross-group sum
// (get_balances totals and counterparties, my_balance, exports) and every partial sum on the way to them.
// A change that would take a total past the bound, and raise it, is refused; one that lowers a total always
// passes, so a total stored past the bound before it existed can still be brought down.
import { and, eq, sql } from "drizzle-orm";
import { batchOf, guard, jsonEach, jsonList, prepared, snapshotOf, type Tx } from "../../../../db/client.ts";
import { ledgerPairs, ledgerTotals } from "../../../../db/schema/index.ts";
import { conflict } from "../../../errors.ts";
import { exactly, netPairs, pairKey, type PairRow } from "./pairs.ts";
import type { Debt } from "../money/fewest-transfers.ts";
import type { GroupRow } from "../groups/membership.ts";
import { formatAmount, MAX_TOTAL_MINOR } from "../money/amounts.ts";

const LIMIT = BigInt(MAX_TOTAL_MINOR);

// One row per agent (ledger_totals, kept by triggers) and the pairs a change moves, each by its key.
const totalsOf = prepared((tx) =>
  tx
    .select({ agentId: ledgerTotals.agentId, total: exactly(ledgerTotals.openMinor) })
    .from(ledgerTotals)
    .where(and(eq(ledgerTotals.currency, sql.placeholder("currency")), sql`${ledgerTotals.agentId} IN (SELECT value FROM ${jsonEach("ids")})`))
    .prepare(),
);
const pairsOf = prepared((tx) =>
  tx
    .select({ lowId: ledgerPairs.lowId, highId: ledgerPairs.highId, lowOwes: exactly(ledgerPairs.lowOwesMinor) })
    .from(ledgerPairs)
    .where(
      and(
        eq(ledgerPairs.groupId, sql.placeholder("groupId")),
        sql`(${ledgerPairs.lowId}, ${ledgerPairs.highId}) IN (SELECT value ->> 0, value ->> 1 FROM ${jsonEach("pairs")})`,
      ),
    )
    .prepare(),
);

/** Refuses (CONFLICT naming the limit) adding `debts` to the group when it would take a total past MAX_TOTAL_MINOR. */
export async function checkLimits(tx: Tx, group: GroupRow, debts: readonly Debt[]): Promise<void> {
  const judged = await judge(tx, group, debts);
  if (!judged?.exceeds) {
    // Counted for the next change in the same call, which reads the snapshot without this one.
    if (judged) {
      judged.record();
      await guardRaised(tx, group, judged.raised);
    }
    return;
  }
  const limit = `${formatAmount(MAX_TOTAL_MINOR, group.currency)} ${group.currency}`;
  throw conflict(
    `This would take the open balances in ${group.currency} of someone it involves past ${limit} (${MAX_TOTAL_MINOR} minor units), the most the ledger keeps for one agent in one currency across all their groups. Settle up or delete expenses first, or record a smaller amount.`,
    { limit_minor: MAX_TOTAL_MINOR, limit, currency: group.currency },
  );
}

/**
 * Whether adding `debts` (removals reversed) to the group would take anyone they involve past the limit, and higher.
 */
export async function exceedsLimits(tx: Tx, group: GroupRow, debts: readonly Debt[]): Promise<boolean> {
  return (await judge(tx, group, debts))?.exceeds ?? false;
}

// What a write call has changed of pairs and totals so far, by its batch (an import, a job's run: several changes in
// one call), which its reads of the snapshot do not see.
const changedInCall = new WeakMap<object, Map<string, bigint>>();

async function judge(tx: Tx, group: GroupRow, debts: readonly Debt[]) {
  const rows = netPairs(debts);
  if (!rows.length) return null;
  const ids = [...new Set(rows.flatMap((r) => [r.lowId, r.highId]))];
  const batch = batchOf(tx);
  const changed = batch ? (changedInCall.get(batch) ?? changedInCall.set(batch, new Map()).get(batch)!) : new Map<string, bigint>();
  const totalKey = (id: string) => `total ${group.currency} ${id}`;
  const pairAt = (r: PairRow) => `pair ${group.groupId} ${pairKey(r)}`;
  const read = await readLimits(snapshotOf(tx), group, ids, rows);
  const before = new Map(ids.map((id) => [id, (read.before.get(id) ?? 0n) + (changed.get(totalKey(id)) ?? 0n)]));
  const after = new Map(before);
  const abs = (n: bigint) => (n < 0n ? -n : n);
  const pairs: [string, bigint][] = [];
  for (const r of rows) {
    const was = (read.old.get(pairKey(r)) ?? 0n) + (changed.get(pairAt(r)) ?? 0n);
    const change = abs(was + r.lowOwes) - abs(was);
    pairs.push([pairAt(r), r.lowOwes]);
    for (const id of [r.lowId, r.highId]) after.set(id, after.get(id)! + change);
  }
  return {
    exceeds: ids.some((id) => after.get(id)! > LIMIT && after.get(id)! > before.get(id)!),
    raised: ids.flatMap((id) => (after.get(id)! > before.get(id)! ? [[id, String(after.get(id)! - before.get(id)!)]] : [])),
    record() {
      for (const [key, add] of pairs) changed.set(key, (changed.get(key) ?? 0n) + add);
      for (const id of ids) changed.set(totalKey(id), (changed.get(totalKey(id)) ?? 0n) + after.get(id)! - before.get(id)!);
    },
  };
}

/**
 * Guards, where it stands in the batch (before the change it was judged for), that the totals the change raises stay
 * within the bound over the totals as they are then: a change judged on a snapshot behind them (another call's at
 * the same moment, a replica's file not caught up) runs again, and is judged on them.
 */
async function guardRaised(tx: Tx, group: GroupRow, raised: string[][]): Promise<void> {
  if (!raised.length || !batchOf(tx)) return;
  await guard(
    tx,
    "totals bound",
    sql`NOT EXISTS (SELECT 1 FROM ${ledgerTotals} t, json_each(${jsonList(raised)}) d WHERE t.currency = ${group.currency}
      AND t.agent_id = d.value ->> 0 AND t.open_minor + CAST(d.value ->> 1 AS INTEGER) > ${MAX_TOTAL_MINOR})`,
  );
}

/** The totals of `ids` in the group's currency and the stored pairs of `rows`, by pair key. */
async function readLimits(tx: Tx, group: GroupRow, ids: string[], rows: PairRow[]): Promise<{ before: Map<string, bigint>; old: Map<string, bigint> }> {
  const [totals, stored] = await Promise.all([
    totalsOf(tx).all({ currency: group.currency, ids: jsonList(ids) }),
    pairsOf(tx).all({ groupId: group.groupId, pairs: jsonList(rows.map((r) => [r.lowId, r.highId])) }),
  ]);
  return { before: new Map(totals.map((t) => [t.agentId, BigInt(t.total)])), old: new Map(stored.map((p) => [pairKey(p), BigInt(p.lowOwes)])) };
}
