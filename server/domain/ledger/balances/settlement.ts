// A group's balances and the transfers that settle it, from the pair ledger (pairs.ts): what get_balances
// shows and what record_payment measures a payment against.
import type { Tx } from "../../../../db/client.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { balancesFromDebts, pairDebts } from "./pairs.ts";
import { refsWithKnown, type GroupRow } from "../groups/membership.ts";
import { totalMinor } from "../money/amounts.ts";
import { settlePlan, type Debt, type SettleMethod } from "../money/fewest-transfers.ts";

/** All of it exact (bigint): the ledger's totals are bounded (limits.ts), but ones stored before the bound are not. */
export interface Settlement {
  /** By agent id; positive: the others owe them. */
  balances: Map<string, bigint>;
  /** Current members, plus anyone else the ledger still gives a non-zero balance. */
  shown: string[];
  people: Map<string, AgentRef>;
  /** Transfers by agent id. */
  plan: Debt[];
  method: SettleMethod;
  /** No plan settles the group in fewer transfers. */
  provenMinimal: boolean;
  /** Each pair's own net debt, by agent id, with former members routed around. */
  debts: Debt[];
}

/**
 * A group's balances and the transfers that settle it, from its current members (refs by agent id) and its
 * pair debts: the fewest transfers when simplify_debts (money/fewest-transfers.ts), else each pair's own net debt.
 */
export async function settlement(tx: Tx, group: GroupRow, members: Map<string, AgentRef>, pairLedger: Debt[]): Promise<Settlement> {
  const debts = routeAroundFormerMembers(pairLedger, new Set(members.keys()));
  return { ...(await settle(tx, group, members, balancesFromDebts(debts), debts)), debts };
}

/**
 * As settlement, for a group that simplifies debts: its plan needs only the balances (pairBalances, one row per
 * member), not the pairs. A former member's balance is zero (leaving takes it): they are left out.
 */
export async function simplifiedSettlement(tx: Tx, group: GroupRow, members: Map<string, AgentRef>, balances: Map<string, bigint>) {
  for (const [id, b] of balances) if (b === 0n && !members.has(id)) balances.delete(id);
  return settle(tx, group, members, balances, []);
}

async function settle(tx: Tx, group: GroupRow, members: Map<string, AgentRef>, balances: Map<string, bigint>, debts: Debt[]) {
  const shown = new Set(members.keys());
  for (const [id, b] of balances) if (b !== 0n) shown.add(id);
  const people = await refsWithKnown(tx, [...shown, ...balances.keys()], members);
  const handleOf = (id: string) => people.get(id)!.handle;
  const idOf = new Map([...people.values()].map((p) => [p.handle, p.agent_id]));
  const byHandle = new Map([...balances].map(([id, b]) => [handleOf(id), b]));
  const pairs = group.simplifyDebts ? [] : debts.map((d) => ({ from: handleOf(d.from), to: handleOf(d.to), amount: d.amount }));
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
 */
export async function owedBetween(tx: Tx, now: Date, group: GroupRow, members: Map<string, AgentRef>, fromId: string, toId: string): Promise<number> {
  const { plan, debts } = await settlement(tx, group, members, await pairDebts(tx, now, group.groupId));
  const between = (list: Debt[]) =>
    list.reduce((net, d) => net + (d.from === fromId && d.to === toId ? d.amount : d.from === toId && d.to === fromId ? -d.amount : 0n), 0n);
  const [a, b] = [between(plan), between(debts)];
  return Math.max(0, totalMinor(a > b ? a : b));
}
