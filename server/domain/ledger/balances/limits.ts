// The ledger's bound on its totals (MAX_TOTAL_MINOR, 2^53 - 1 minor units), checked before a change is written:
// an agent's open total in a currency, each pair's net debt they are part of taken as a size, over all their
// groups in that currency, may not pass it. That bounds every balance, settle-up transfer and cross-group sum
// (get_balances totals and counterparties, my_balance, exports) and every partial sum on the way to them.
// A change that would take a total past the bound, and raise it, is refused; one that lowers a total always
// passes, so a total stored past the bound before it existed can still be brought down.
import { and, eq, isNull, sql } from "drizzle-orm";
import { jsonEach, jsonList, prepared, type Tx } from "../../../../db/client.ts";
import { groupMembers, groups, ledgerPairs, ledgerTotals } from "../../../../db/schema/index.ts";
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

// Read ahead (readLimitsAhead): every current member's total in the group's currency (0 without a row), and the
// group's pairs with one agent in them, found by their keys (the other side among the current members).
const memberTotals = prepared((tx) =>
  tx
    .select({ agentId: groupMembers.agentId, total: exactly(sql`coalesce(${ledgerTotals.openMinor}, 0)`) })
    .from(groupMembers)
    .leftJoin(
      ledgerTotals,
      and(
        eq(ledgerTotals.agentId, groupMembers.agentId),
        eq(ledgerTotals.currency, sql`(SELECT ${groups.currency} FROM ${groups} WHERE ${groups.groupId} = ${sql.placeholder("groupId")})`),
      ),
    )
    .where(and(eq(groupMembers.groupId, sql.placeholder("groupId")), isNull(groupMembers.leftAt)))
    .prepare(),
);
const pairsWith = prepared((tx) => {
  const columns = { lowId: ledgerPairs.lowId, highId: ledgerPairs.highId, lowOwes: exactly(ledgerPairs.lowOwesMinor) };
  const inGroup = eq(ledgerPairs.groupId, sql.placeholder("groupId"));
  const members = sql`(SELECT ${groupMembers.agentId} FROM ${groupMembers} WHERE ${groupMembers.groupId} = ${sql.placeholder("groupId")} AND ${groupMembers.leftAt} IS NULL)`;
  return tx
    .select(columns)
    .from(ledgerPairs)
    .where(and(inGroup, eq(ledgerPairs.lowId, sql.placeholder("agentId"))))
    .unionAll(
      tx
        .select(columns)
        .from(ledgerPairs)
        .where(and(inGroup, sql`${ledgerPairs.lowId} IN ${members}`, eq(ledgerPairs.highId, sql.placeholder("agentId")))),
    )
    .prepare();
});

/**
 * What the limits check of a change in one group reads, read before the change is known: enough for any change
 * whose pairs all have `agentId` in them and whose agents are all current members (an expense paid by that agent
 * alone). Asked with a call's first reads, it spares the check a round trip of its own to a remote primary.
 */
export interface LimitsAhead {
  agentId: string;
  totals: Map<string, bigint>;
  pairs: Map<string, bigint>;
}

/** The limits check's reads for changes by agentId in the group (LimitsAhead), asked now; membership is the caller's check. */
export async function readLimitsAhead(tx: Tx, groupId: string, agentId: string): Promise<LimitsAhead> {
  const [totals, pairs] = await Promise.all([memberTotals(tx).all({ groupId }), pairsWith(tx).all({ groupId, agentId })]);
  return {
    agentId,
    totals: new Map(totals.map((t) => [t.agentId, BigInt(t.total)])),
    pairs: new Map(pairs.map((p) => [pairKey(p), BigInt(p.lowOwes)])),
  };
}

/** Refuses (CONFLICT naming the limit) adding `debts` to the group when it would take a total past MAX_TOTAL_MINOR. */
export async function checkLimits(tx: Tx, group: GroupRow, debts: readonly Debt[], ahead?: LimitsAhead): Promise<void> {
  if (!(await exceedsLimits(tx, group, debts, ahead))) return;
  const limit = `${formatAmount(MAX_TOTAL_MINOR, group.currency)} ${group.currency}`;
  throw conflict(
    `This would take the open balances in ${group.currency} of someone it involves past ${limit} (${MAX_TOTAL_MINOR} minor units), the most the ledger keeps for one agent in one currency across all their groups. Settle up or delete expenses first, or record a smaller amount.`,
    { limit_minor: MAX_TOTAL_MINOR, limit, currency: group.currency },
  );
}

/**
 * Whether adding `debts` (removals reversed) to the group would take anyone they involve past the limit, and higher.
 * What `ahead` holds is used when it covers every pair and agent the debts involve; else they are read.
 */
export async function exceedsLimits(tx: Tx, group: GroupRow, debts: readonly Debt[], ahead?: LimitsAhead): Promise<boolean> {
  const rows = netPairs(debts);
  if (!rows.length) return false;
  const ids = [...new Set(rows.flatMap((r) => [r.lowId, r.highId]))];
  const covered = ahead && rows.every((r) => r.lowId === ahead.agentId || r.highId === ahead.agentId) && ids.every((id) => ahead.totals.has(id));
  const { before, old } = covered ? { before: ahead.totals, old: ahead.pairs } : await readLimits(tx, group, ids, rows);
  const after = new Map(ids.map((id) => [id, before.get(id) ?? 0n]));
  const abs = (n: bigint) => (n < 0n ? -n : n);
  for (const r of rows) {
    const was = old.get(pairKey(r)) ?? 0n;
    const change = abs(was + r.lowOwes) - abs(was);
    for (const id of [r.lowId, r.highId]) after.set(id, after.get(id)! + change);
  }
  return ids.some((id) => after.get(id)! > LIMIT && after.get(id)! > (before.get(id) ?? 0n));
}

/** The totals of `ids` in the group's currency and the stored pairs of `rows`, by pair key. */
async function readLimits(tx: Tx, group: GroupRow, ids: string[], rows: PairRow[]): Promise<{ before: Map<string, bigint>; old: Map<string, bigint> }> {
  // Asked together: on a remote primary the second goes out without waiting for the first's answer.
  const [totals, stored] = await Promise.all([
    totalsOf(tx).all({ currency: group.currency, ids: jsonList(ids) }),
    pairsOf(tx).all({ groupId: group.groupId, pairs: jsonList(rows.map((r) => [r.lowId, r.highId])) }),
  ]);
  return { before: new Map(totals.map((t) => [t.agentId, BigInt(t.total)])), old: new Map(stored.map((p) => [pairKey(p), BigInt(p.lowOwes)])) };
}
