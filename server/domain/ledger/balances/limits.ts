// The ledger's bound on its totals (MAX_TOTAL_MINOR, 2^53 - 1 minor units), checked before a change is written:
// an agent's open total in a currency, each pair's net debt they are part of taken as a size, over all their
// groups in that currency, may not pass it. That bounds every balance, settle-up transfer and cross-group sum
// (get_balances totals and counterparties, my_balance, exports) and every partial sum on the way to them.
// A change that would take a total past the bound, and raise it, is refused; one that lowers a total always
// passes, so a total stored past the bound before it existed can still be brought down.
import { and, eq, sql } from "drizzle-orm";
import { jsonEach, jsonList, prepared, type Tx } from "../../../../db/client.ts";
import { ledgerPairs, ledgerTotals } from "../../../../db/schema/index.ts";
import { conflict } from "../../../errors.ts";
import { exactly, netPairs, pairKey } from "./pairs.ts";
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
  if (!(await exceedsLimits(tx, group, debts))) return;
  const limit = `${formatAmount(MAX_TOTAL_MINOR, group.currency)} ${group.currency}`;
  throw conflict(
    `This would take the open balances in ${group.currency} of someone it involves past ${limit} (${MAX_TOTAL_MINOR} minor units), the most the ledger keeps for one agent in one currency across all their groups. Settle up or delete expenses first, or record a smaller amount.`,
    { limit_minor: MAX_TOTAL_MINOR, limit, currency: group.currency },
  );
}

/** Whether adding `debts` (removals reversed) to the group would take anyone they involve past the limit, and higher. */
export async function exceedsLimits(tx: Tx, group: GroupRow, debts: readonly Debt[]): Promise<boolean> {
  const rows = netPairs(debts);
  if (!rows.length) return false;
  const ids = [...new Set(rows.flatMap((r) => [r.lowId, r.highId]))];
  const before = new Map<string, bigint>(ids.map((id) => [id, 0n]));
  // Asked together: on a remote primary the second goes out without waiting for the first's answer.
  const [totals, stored] = await Promise.all([
    totalsOf(tx).all({ currency: group.currency, ids: jsonList(ids) }),
    pairsOf(tx).all({ groupId: group.groupId, pairs: jsonList(rows.map((r) => [r.lowId, r.highId])) }),
  ]);
  for (const t of totals) before.set(t.agentId, BigInt(t.total));
  const old = new Map(stored.map((p) => [pairKey(p), BigInt(p.lowOwes)]));
  const after = new Map(before);
  const abs = (n: bigint) => (n < 0n ? -n : n);
  for (const r of rows) {
    const was = old.get(pairKey(r)) ?? 0n;
    const change = abs(was + r.lowOwes) - abs(was);
    for (const id of [r.lowId, r.highId]) after.set(id, after.get(id)! + change);
  }
  return ids.some((id) => after.get(id)! > LIMIT && after.get(id)! > before.get(id)!);
}
