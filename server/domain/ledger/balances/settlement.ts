// A group's balances and the transfers that settle it, from the pair ledger (pairs.ts): what get_balances
// shows and what record_payment measures a payment against.
import type { Tx } from "../../../../db/client.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { balancesFromDebts, pairDebts, pendingDebtsByGroup, type PendingDebt } from "./pairs.ts";
import { refsWithKnown, type GroupRow } from "../groups/membership.ts";
import { totalMinor } from "../money/amounts.ts";
import { settlePlan, type Debt, type SettleMethod } from "../money/fewest-transfers.ts";

/** All of it exact (bigint): the ledger's totals are bounded (limits.ts), but ones stored before the bound are not. */
export interface Settlement {
  /** By agent id; positive: the others owe them. What counts now: confirmed payments only. */
  balances: Map<string, bigint>;
  /** Current members, plus anyone else the ledger still gives a non-zero balance. */
  shown: string[];
  people: Map<string, AgentRef>;
  /** Transfers by agent id, counting pending payments as if confirmed. */
  plan: Debt[];
  method: SettleMethod;
  /** No plan settles the group in fewer transfers. */
  provenMinimal: boolean;
  /** Each pair's own net debt, by agent id, with former members routed around and pending payments counted. */
  debts: Debt[];
  /** The pending payments the plan counts (those between current members), by payment id, oldest first. */
  counted: string[];
}

/**
 * The pending payments settle-up counts: those between two current members (only they can still be confirmed). A
 * pending payment is counted as if confirmed, so a debt already paid, waiting for the payee, is not suggested (or
 * measured, owedBetween) again; if the payee rejects it or either side voids it, the plan shows the debt again.
 */
const countable = (pending: readonly PendingDebt[], members: Map<string, AgentRef>) => pending.filter((p) => members.has(p.from) && members.has(p.to));

/**
 * A group's balances and the transfers that settle it, from its current members (refs by agent id), its pair debts
 * and its pending payments (pairs.ts pendingDebtsByGroup): the fewest transfers when simplify_debts
 * (money/fewest-transfers.ts), else each pair's own net debt. The balances are what counts now; the plan counts
 * the pending payments too.
 */
export async function settlement(
  tx: Tx,
  group: GroupRow,
  members: Map<string, AgentRef>,
  pairLedger: Debt[],
  pending: readonly PendingDebt[],
): Promise<Settlement> {
  const now = routeAroundFormerMembers(pairLedger, new Set(members.keys()));
  const counted = countable(pending, members);
  const debts = counted.length ? [...now, ...counted.map(({ from, to, amount }) => ({ from, to, amount }))] : now;
  const planned = { balances: balancesFromDebts(debts), debts };
  return { ...(await settle(tx, group, members, balancesFromDebts(now), planned)), debts, counted: counted.map((p) => p.paymentId) };
}

/**
 * As settlement, for a group that simplifies debts: its plan needs only the balances (pairBalances, one row per
 * member), not the pairs. A former member's balance is zero (leaving takes it): they are left out.
 */
export async function simplifiedSettlement(
  tx: Tx,
  group: GroupRow,
  members: Map<string, AgentRef>,
  balances: Map<string, bigint>,
  pending: readonly PendingDebt[],
) {
  for (const [id, b] of balances) if (b === 0n && !members.has(id)) balances.delete(id);
  const counted = countable(pending, members);
  const planBalances = new Map(balances);
  for (const p of counted) {
    planBalances.set(p.to, (planBalances.get(p.to) ?? 0n) + p.amount);
    planBalances.set(p.from, (planBalances.get(p.from) ?? 0n) - p.amount);
  }
  return { ...(await settle(tx, group, members, balances, { balances: planBalances, debts: [] })), counted: counted.map((p) => p.paymentId) };
}

/** Who is shown comes from the balances as they count; the plan from `planned` (pending payments counted). */
async function settle(
  tx: Tx,
  group: GroupRow,
  members: Map<string, AgentRef>,
  balances: Map<string, bigint>,
  planned: { balances: Map<string, bigint>; debts: Debt[] },
) {
  const shown = new Set(members.keys());
  for (const [id, b] of balances) if (b !== 0n) shown.add(id);
  const people = await refsWithKnown(tx, [...shown, ...balances.keys(), ...planned.balances.keys()], members);
  const handleOf = (id: string) => people.get(id)!.handle;
  const idOf = new Map([...people.values()].map((p) => [p.handle, p.agent_id]));
  const byHandle = new Map([...planned.balances].map(([id, b]) => [handleOf(id), b]));
  const pairs = group.simplifyDebts ? [] : planned.debts.map((d) => ({ from: handleOf(d.from), to: handleOf(d.to), amount: d.amount }));
  const { transfers, method, provenMinimal } = settlePlan(byHandle, group.simplifyDebts, pairs);
  const plan = transfers.map((t) => ({ from: idOf.get(t.from)!, to: idOf.get(t.to)!, amount: t.amount }));
  return { balances, shown: [...shown], people, plan, method, provenMinimal };
}

/**
 * A member who left had a zero balance, but each-pair debts can still run through them (b owes a, c owes b).
 * Those are joined into direct debts between the others (c owes a), so nobody is asked to pay a former member.
 */
function routeAroundFormerMembers(debts: Debt[], members: Set<string>): Debt[] {
  let list = debts;
  for (const gone of new Set(debts.flatMap((d) => [d.from, d.to]).filter((id) => !members.has(id)))) {
    const owedTo = list.filter((d) => d.to === gone).map((d) => ({ ...d }));
    const owedBy = list.filter((d) => d.from === gone).map((d) => ({ ...d }));
    const rest = list.filter((d) => d.to !== gone && d.from !== gone);
    for (let i = 0, j = 0; i < owedTo.length && j < owedBy.length; ) {
      const amount = owedTo[i]!.amount < owedBy[j]!.amount ? owedTo[i]!.amount : owedBy[j]!.amount;
      rest.push({ from: owedTo[i]!.from, to: owedBy[j]!.to, amount });
      if ((owedTo[i]!.amount -= amount) === 0n) i++;
      if ((owedBy[j]!.amount -= amount) === 0n) j++;
    }
    list = [...rest, ...owedTo, ...owedBy].filter((d) => d.amount > 0n && d.from !== d.to);
  }
  return list;
}

/**
 * What `fromId` owes `toId` in the group now: the larger of what the settle-up plan has them pay and of the
 * pair's own debt (which a simplified plan may route through others), in minor units of the group's currency.
 * Pending payments count as if confirmed (as in the plan): what they pay is not owed again.
 */
export async function owedBetween(tx: Tx, now: Date, group: GroupRow, members: Map<string, AgentRef>, fromId: string, toId: string): Promise<number> {
  const pending = (await pendingDebtsByGroup(tx, [group.groupId])).get(group.groupId)!;
  const { plan, debts } = await settlement(tx, group, members, await pairDebts(tx, now, group.groupId), pending);
  const between = (list: Debt[]) =>
    list.reduce((net, d) => net + (d.from === fromId && d.to === toId ? d.amount : d.from === toId && d.to === fromId ? -d.amount : 0n), 0n);
  const [a, b] = [between(plan), between(debts)];
  return Math.max(0, totalMinor(a > b ? a : b));
}
