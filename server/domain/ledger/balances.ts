// Balances and settle-up plans, read from the pair ledger (ledger-pairs.ts), which every ledger change keeps exact.
import { and, eq, isNull, sql } from "drizzle-orm";
import type { Tx } from "../../../db/client.ts";
import { groupMembers, groups } from "../../../db/schema/index.ts";
import type { Counterparty, Payment, Transfer } from "../../tools/expenses/shapes.ts";
import type { AgentRef } from "../../tools/schemas.ts";
import { balancesFromDebts, pairDebts, pairDebtsByGroup, type AgentDebt } from "./ledger-pairs.ts";
import { groupWithMembers, memberRefsByGroup, refsOfMembers, refsWithKnown, type GroupRow } from "./membership.ts";
import { formatAmount, formatBalance } from "./money.ts";
import { paymentViews, pendingPayments } from "./payments.ts";
import { settleUp } from "./settle.ts";
import { compareText } from "./splits.ts";

interface Settlement {
  /** By agent id; positive: the others owe them. */
  balances: Map<string, number>;
  /** Current members, plus anyone else the ledger still gives a non-zero balance. */
  shown: string[];
  people: Map<string, AgentRef>;
  /** Transfers by agent id. */
  plan: AgentDebt[];
}

/**
 * A group's balances and the transfers that settle it, from its current members (refs by agent id) and its
 * pair debts: greedy min-cash-flow when simplify_debts, else each pair's own net debt. Ties in the greedy plan
 * go to handles in code-unit order.
 */
async function settlement(tx: Tx, group: GroupRow, members: Map<string, AgentRef>, pairLedger: AgentDebt[]): Promise<Settlement> {
  const debts = routeAroundFormerMembers(pairLedger, new Set(members.keys()));
  const balances = balancesFromDebts(debts);
  const shown = new Set(members.keys());
  for (const [id, b] of balances) if (b !== 0) shown.add(id);
  const people = await refsWithKnown(tx, [...shown, ...balances.keys()], members);
  const handleOf = (id: string) => people.get(id)!.handle;
  const idOf = new Map([...people.values()].map((p) => [p.handle, p.agent_id]));
  const byHandle = [...balances].map(([id, b]) => ({ handle: handleOf(id), balance_minor: b }));
  const pairs = debts.map((d) => ({ from: handleOf(d.from), to: handleOf(d.to), amount_minor: d.amount_minor }));
  const plan = settleUp(byHandle, group.simplifyDebts, group.simplifyDebts ? [] : pairs);
  return { balances, shown: [...shown], people, plan: plan.map((t) => ({ from: idOf.get(t.from)!, to: idOf.get(t.to)!, amount_minor: t.amount_minor })) };
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

export async function groupBalanceView(tx: Tx, agentId: string, groupId: string, now: Date) {
  const { group, members } = await groupWithMembers(tx, groupId, agentId);
  const { balances, shown, people, plan } = await settlement(tx, group, refsOfMembers(members), await pairDebts(tx, groupId, now));
  const pending = await pendingPayments(tx, [groupId]);
  return {
    group_id: group.groupId,
    currency: group.currency,
    simplify_debts: group.simplifyDebts,
    members: shown
      .map((id) => {
        const b = balances.get(id) ?? 0;
        return { agent: people.get(id)!, balance_minor: b, balance: formatBalance(b, group.currency) };
      })
      .sort((a, b) => compareText(a.agent.handle, b.agent.handle)),
    pending_payments: await paymentViews(tx, pending, () => group.currency),
    settle_up: plan.map((t): Transfer => ({
      from: people.get(t.from)!,
      to: people.get(t.to)!,
      amount_minor: t.amount_minor,
      amount: formatAmount(t.amount_minor, group.currency),
    })),
  };
}

/**
 * The caller's net with each counterparty per currency across all their groups: what each group's
 * settle-up plan has them pay to or receive from that counterparty. Positive: the counterparty owes the caller.
 */
export async function counterpartyBalances(tx: Tx, agentId: string, now: Date) {
  const mine = await tx
    .select({ g: groups })
    .from(groups)
    .innerJoin(groupMembers, and(eq(groupMembers.groupId, groups.groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)))
    .orderBy(groups.createdAt, sql`groups.rowid`);
  const groupIds = mine.map(({ g }) => g.groupId);
  const membersOf = await memberRefsByGroup(tx, groupIds);
  const debtsOf = await pairDebtsByGroup(tx, groupIds, now);
  const byCounterparty = new Map<string, Counterparty>();
  const totals = new Map<string, number>();
  for (const { g } of mine) {
    const { balances, people, plan } = await settlement(tx, g, membersOf.get(g.groupId)!, debtsOf.get(g.groupId)!);
    totals.set(g.currency, (totals.get(g.currency) ?? 0) + (balances.get(agentId) ?? 0));
    for (const t of plan) {
      if (t.from !== agentId && t.to !== agentId) continue;
      const other = t.from === agentId ? t.to : t.from;
      const signed = t.from === agentId ? -t.amount_minor : t.amount_minor;
      const key = JSON.stringify([g.currency, other]);
      const entry = byCounterparty.get(key) ?? { agent: people.get(other)!, currency: g.currency, balance_minor: 0, balance: "", groups: [] };
      entry.balance_minor += signed;
      entry.groups.push({ group_id: g.groupId, name: g.name, balance_minor: signed, balance: formatBalance(signed, g.currency) });
      byCounterparty.set(key, entry);
    }
  }
  const currencyOf = new Map(mine.map(({ g }) => [g.groupId, g.currency]));
  const pending: Payment[] = await paymentViews(tx, await pendingPayments(tx, [...currencyOf.keys()], agentId), (id) => currencyOf.get(id)!);
  return {
    counterparties: [...byCounterparty.values()]
      .map((c) => ({ ...c, balance: formatBalance(c.balance_minor, c.currency) }))
      .sort((a, b) => compareText(a.currency, b.currency) || compareText(a.agent.handle, b.agent.handle)),
    totals: [...totals]
      .sort(([a], [b]) => compareText(a, b))
      .map(([currency, minor]) => ({ currency, balance_minor: minor, balance: formatBalance(minor, currency) })),
    pending_payments: pending,
  };
}
