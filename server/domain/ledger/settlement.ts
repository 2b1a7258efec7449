// A group's balances and the transfers that settle it, from the pair ledger (ledger-pairs.ts): what get_balances
// shows and what record_payment measures a payment against.
import type { Tx } from "../../../db/client.ts";
import type { AgentRef } from "../../tools/schemas.ts";
import { balancesFromDebts, pairDebts, type AgentDebt } from "./ledger-pairs.ts";
import { refsWithKnown, type GroupRow } from "./membership.ts";
import { settleUp, type SettleMethod } from "./settle.ts";

export interface Settlement {
  /** By agent id; positive: the others owe them. */
  balances: Map<string, number>;
  /** Current members, plus anyone else the ledger still gives a non-zero balance. */
  shown: string[];
  people: Map<string, AgentRef>;
  /** Transfers by agent id. */
  plan: AgentDebt[];
  method: SettleMethod;
  /** Each pair's own net debt, by agent id, with former members routed around. */
  debts: AgentDebt[];
}

/**
 * A group's balances and the transfers that settle it, from its current members (refs by agent id) and its
 * pair debts: the fewest transfers when simplify_debts (settle.ts), else each pair's own net debt.
 */
export async function settlement(tx: Tx, group: GroupRow, members: Map<string, AgentRef>, pairLedger: AgentDebt[]): Promise<Settlement> {
  const debts = routeAroundFormerMembers(pairLedger, new Set(members.keys()));
  const balances = balancesFromDebts(debts);
  const shown = new Set(members.keys());
  for (const [id, b] of balances) if (b !== 0) shown.add(id);
  const people = await refsWithKnown(tx, [...shown, ...balances.keys()], members);
  const handleOf = (id: string) => people.get(id)!.handle;
  const idOf = new Map([...people.values()].map((p) => [p.handle, p.agent_id]));
  const byHandle = [...balances].map(([id, b]) => ({ handle: handleOf(id), balance_minor: b }));
  const pairs = debts.map((d) => ({ from: handleOf(d.from), to: handleOf(d.to), amount_minor: d.amount_minor }));
  const { transfers, method } = settleUp(byHandle, group.simplifyDebts, group.simplifyDebts ? [] : pairs);
  const plan = transfers.map((t) => ({ from: idOf.get(t.from)!, to: idOf.get(t.to)!, amount_minor: t.amount_minor }));
  return { balances, shown: [...shown], people, plan, method, debts };
}

/**
 * A member who left had a zero balance, but each-pair debts can still run through them (b owes a, c owes b).
 * Those are joined into direct debts between the others (c owes a), so nobody is asked to pay a former member.
 */
function routeAroundFormerMembers(debts: AgentDebt[], members: Set<string>): AgentDebt[] {
  let list = debts;
  for (const gone of new Set(debts.flatMap((d) => [d.from, d.to]).filter((id) => !members.has(id)))) {
    const owedTo = list.filter((d) => d.to === gone).map((d) => ({ ...d }));
    const owedBy = list.filter((d) => d.from === gone).map((d) => ({ ...d }));
    const rest = list.filter((d) => d.to !== gone && d.from !== gone);
    for (let i = 0, j = 0; i < owedTo.length && j < owedBy.length; ) {
      const amount = Math.min(owedTo[i]!.amount_minor, owedBy[j]!.amount_minor);
      rest.push({ from: owedTo[i]!.from, to: owedBy[j]!.to, amount_minor: amount });
      if ((owedTo[i]!.amount_minor -= amount) === 0) i++;
      if ((owedBy[j]!.amount_minor -= amount) === 0) j++;
    }
    list = [...rest, ...owedTo, ...owedBy].filter((d) => d.amount_minor > 0 && d.from !== d.to);
  }
  return list;
}

/**
 * What `fromId` owes `toId` in the group now: the larger of what the settle-up plan has them pay and of the
 * pair's own debt (which a simplified plan may route through others), in minor units of the group's currency.
 */
export async function owedBetween(tx: Tx, group: GroupRow, members: Map<string, AgentRef>, fromId: string, toId: string, now: Date): Promise<number> {
  const { plan, debts } = await settlement(tx, group, members, await pairDebts(tx, group.groupId, now));
  const between = (list: AgentDebt[]) =>
    list.reduce((net, d) => net + (d.from === fromId && d.to === toId ? d.amount_minor : d.from === toId && d.to === fromId ? -d.amount_minor : 0), 0);
  return Math.max(0, between(plan), between(debts));
}
