// Balances and settle-up plans, computed from the ledger on every read (groupBalances sums it in SQL).
import { and, eq, isNull, sql } from "drizzle-orm";
import type { Tx } from "../../../db/client.ts";
import { groupMembers, groups } from "../../../db/schema/index.ts";
import type { Counterparty, Payment, Transfer } from "../../tools/expenses/shapes.ts";
import type { AgentRef } from "../../tools/schemas.ts";
import { refsByIds } from "../agents.ts";
import { groupBalances, memberIds, requireMember, type GroupRow } from "./membership.ts";
import { formatAmount, formatBalance } from "./money.ts";
import { paymentViews, pendingPayments } from "./payments.ts";
import { compareText } from "./splits.ts";
import { settleUp, type Debt } from "./settle.ts";

/** Transfers that settle a group, by agent id: greedy min-cash-flow when simplify_debts, else each pair's own debts netted. */
async function settlement(tx: Tx, group: GroupRow, balances: Map<string, number>, people: Map<string, AgentRef>): Promise<Debt[]> {
  const handleOf = (id: string) => people.get(id)!.handle;
  const idOf = new Map([...people.values()].map((p) => [p.handle, p.agent_id]));
  const byHandle = [...balances].map(([id, b]) => ({ handle: handleOf(id), balance_minor: b }));
  const plan = settleUp(byHandle, group.simplifyDebts, group.simplifyDebts ? [] : await pairDebts(tx, group.groupId, handleOf));
  return plan.map((t) => ({ from: idOf.get(t.from)!, to: idOf.get(t.to)!, amount_minor: t.amount_minor }));
}

/**
 * Who owes whom before any simplification: within each live expense its debtors pay its payers (the
 * fewest transfers that settle that one expense), and each confirmed payment is owed back by its payee.
 */
async function pairDebts(tx: Tx, groupId: string, handleOf: (id: string) => string): Promise<Debt[]> {
  const rows = await tx.all<{ expense_id: string; agent_id: string; net: number }>(sql`
    SELECT s.expense_id, s.agent_id, s.paid_minor - s.share_minor AS net
      FROM expense_shares s JOIN expenses e ON e.expense_id = s.expense_id
     WHERE s.group_id = ${groupId} AND e.deleted = 0
     ORDER BY s.expense_id`);
  const debts: Debt[] = [];
  for (let i = 0; i < rows.length; ) {
    const nets = [];
    const id = rows[i]!.expense_id;
    for (; i < rows.length && rows[i]!.expense_id === id; i++) nets.push({ handle: handleOf(rows[i]!.agent_id), balance_minor: Number(rows[i]!.net) });
    debts.push(...settleUp(nets, true));
  }
  const paid = await tx.all<{ from_id: string; to_id: string; amount_minor: number }>(sql`
    SELECT from_id, to_id, amount_minor FROM payments WHERE group_id = ${groupId} AND state = 'confirmed'`);
  for (const p of paid) debts.push({ from: handleOf(p.to_id), to: handleOf(p.from_id), amount_minor: Number(p.amount_minor) });
  return debts;
}

/** Who a group's balances show (current members, plus anyone else the ledger still gives a non-zero balance) and everyone they name. */
async function balancePeople(tx: Tx, groupId: string, balances: Map<string, number>) {
  const shown = new Set(await memberIds(tx, groupId));
  for (const [id, b] of balances) if (b !== 0) shown.add(id);
  return { shown: [...shown], people: await refsByIds(tx, [...shown, ...balances.keys()]) };
}

export async function groupBalanceView(tx: Tx, agentId: string, groupId: string) {
  const group = await requireMember(tx, groupId, agentId);
  const balances = await groupBalances(tx, groupId);
  const { shown, people } = await balancePeople(tx, groupId, balances);
  const plan = await settlement(tx, group, balances, people);
  const pending = await pendingPayments(tx, [groupId]);
  const amount = (minor: number) => ({ amount_minor: minor, amount: formatAmount(minor, group.currency) });
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
    settle_up: plan.map((t): Transfer => ({ from: people.get(t.from)!, to: people.get(t.to)!, ...amount(t.amount_minor) })),
  };
}

/**
 * The caller's net with each counterparty per currency across all their groups: what each group's
 * settle-up plan has them pay to or receive from that counterparty. Positive: the counterparty owes the caller.
 */
export async function counterpartyBalances(tx: Tx, agentId: string) {
  const mine = await tx
    .select({ g: groups })
    .from(groups)
    .innerJoin(groupMembers, and(eq(groupMembers.groupId, groups.groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)))
    .orderBy(groups.createdAt, groups.groupId);
  const byCounterparty = new Map<string, Counterparty>();
  const totals = new Map<string, number>();
  for (const { g } of mine) {
    const balances = await groupBalances(tx, g.groupId);
    const own = balances.get(agentId) ?? 0;
    totals.set(g.currency, (totals.get(g.currency) ?? 0) + own);
    if (own === 0) continue;
    const { people } = await balancePeople(tx, g.groupId, balances);
    for (const t of await settlement(tx, g, balances, people)) {
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
  const counterparties = [...byCounterparty.values()]
    .map((c) => ({ ...c, balance: formatBalance(c.balance_minor, c.currency) }))
    .sort((a, b) => compareText(a.currency, b.currency) || compareText(a.agent.handle, b.agent.handle));
  const currencyOf = new Map(mine.map(({ g }) => [g.groupId, g.currency]));
  const pending: Payment[] = await paymentViews(tx, await pendingPayments(tx, [...currencyOf.keys()], agentId), (id) => currencyOf.get(id)!);
  return {
    counterparties,
    totals: [...totals]
      .sort(([a], [b]) => compareText(a, b))
      .map(([currency, minor]) => ({ currency, balance_minor: minor, balance: formatBalance(minor, currency) })),
    pending_payments: pending,
  };
}
