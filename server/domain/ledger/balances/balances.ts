// Balances and settle-up plans, read from the pair ledger (pairs.ts), which every ledger change keeps exact.
import { and, eq, isNull, sql } from "drizzle-orm";
import { prepared, type Tx } from "../../../../db/client.ts";
import {
  agents,
  expenseShares,
  expenses,
  groupBalances as groupBalancesTable,
  groupMembers,
  groups,
  ledgerPairsBuilt,
  payments,
} from "../../../../db/schema/index.ts";
import type { Counterparty, Payment, Transfer } from "../../../contract/ledger.ts";
import type { Debt } from "../money/fewest-transfers.ts";
import type { AgentRef, GroupSummary } from "../../../contract/wire.ts";
import type { StoredSplit } from "../expenses/store.ts";
import { exactly, pairBalances, pairDebts, pairDebtsByGroup, paymentDebt, pendingDebtsByGroup } from "./pairs.ts";
import { groupWithMembers, memberRef, memberRefsByGroup, refsOfMembers, refsWithKnown, type GroupRow } from "../groups/membership.ts";
import { formatAmount, formatBalance, originalOfRow, totalMinor } from "../money/amounts.ts";
import { paymentViews, pendingPayments } from "../payments/payments.ts";
import { settlement, simplifiedSettlement } from "./settlement.ts";
import { compareText, computeShares } from "../money/splits.ts";
import type { DomainContext } from "../../../contract/principal.ts";

/**
 * A group's balances, pending payments and settle-up plan, which counts the pending payments as if confirmed (and
 * names them: settle_up_counts_pending); with `byCurrency`, also what each member paid and owes per currency.
 */
export async function groupBalanceView({ tx, now, actor: { agentId } }: DomainContext, groupId: string, byCurrency = false) {
  const { group, members } = await groupWithMembers(tx, groupId, agentId);
  const refs = refsOfMembers(members);
  const pending = await pendingPayments(tx, [groupId]);
  const pendingDebts = pending.map((p) => ({ ...paymentDebt(p), paymentId: p.paymentId }));
  const { balances, shown, people, plan, method, provenMinimal, counted } = group.simplifyDebts
    ? await simplifiedSettlement(tx, group, refs, await pairBalances(tx, now, groupId), pendingDebts)
    : await settlement(tx, group, refs, await pairDebts(tx, now, groupId), pendingDebts);
  return {
    ...(byCurrency ? { by_currency: await currencyBreakdown(tx, group, people) } : {}),
    group_id: group.groupId,
    currency: group.currency,
    simplify_debts: group.simplifyDebts,
    members: shown
      .map((id) => {
        const b = balances.get(id) ?? 0n;
        const agent = people.get(id)!;
        const placeholder = agent.handle === agent.agent_id;
        return { agent, member: memberRef(agent), member_id: id, placeholder, balance_minor: totalMinor(b), balance: formatBalance(b, group.currency) };
      })
      .sort((a, b) => compareText(a.agent.handle, b.agent.handle)),
    pending_payments: await paymentViews(tx, pending, () => group.currency),
    settle_up: plan.map(
      (t): Transfer => ({
        from: people.get(t.from)!,
        to: people.get(t.to)!,
        from_member: memberRef(people.get(t.from)!),
        to_member: memberRef(people.get(t.to)!),
        amount_minor: totalMinor(t.amount),
        amount: formatAmount(t.amount, group.currency),
      }),
    ),
    settle_up_method: method,
    proven_minimal: provenMinimal,
    settle_up_counts_pending: counted,
  };
}

/**
 * The caller's net with each counterparty per currency across all their groups: what each group's settle-up plan of
 * confirmed payments has them pay to or receive from that counterparty. Positive: the counterparty owes the caller.
 * to_settle is the same once each group's pending payments count as if confirmed (those of the caller are named:
 * settle_up_counts_pending): what is left to pay, so that following it never pays a debt twice.
 */
export async function counterpartyBalances({ tx, now, actor: { agentId } }: DomainContext) {
  const mine = await tx
    .select({ g: groups })
    .from(groups)
    .innerJoin(groupMembers, and(eq(groupMembers.groupId, groups.groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)))
    .orderBy(groups.createdAt, sql`groups.rowid`);
  const groupIds = mine.map(({ g }) => g.groupId);
  const membersOf = await memberRefsByGroup(tx, groupIds);
  const debtsOf = await pairDebtsByGroup(tx, now, groupIds);
  const pendingOf = await pendingDebtsByGroup(tx, groupIds);
  const counted = new Set<string>();
  // Sums are exact (bigint), numbers only in the answer.
  type Part = { net: bigint; left: bigint };
  const byCounterparty = new Map<string, { agent: AgentRef; currency: string; total: Part; groups: Map<string, Part & { name: string }> }>();
  const totals = new Map<string, bigint>();
  const add = (g: GroupRow, people: Map<string, AgentRef>, plan: Debt[], field: keyof Part) => {
    for (const t of plan) {
      if (t.from !== agentId && t.to !== agentId) continue;
      const other = t.from === agentId ? t.to : t.from;
      const signed = t.from === agentId ? -t.amount : t.amount;
      const key = JSON.stringify([g.currency, other]);
      const entry = byCounterparty.get(key) ?? { agent: people.get(other)!, currency: g.currency, total: { net: 0n, left: 0n }, groups: new Map() };
      const part = entry.groups.get(g.groupId) ?? { name: g.name, net: 0n, left: 0n };
      entry.total[field] += signed;
      part[field] += signed;
      entry.groups.set(g.groupId, part);
      byCounterparty.set(key, entry);
    }
  };
  for (const { g } of mine) {
    const confirmed = await settlement(tx, g, membersOf.get(g.groupId)!, debtsOf.get(g.groupId)!, []);
    const pendingHere = pendingOf.get(g.groupId)!;
    // Most groups have no payment waiting: their plan with pending payments is the confirmed one, not computed again.
    const withPending = pendingHere.length ? await settlement(tx, g, membersOf.get(g.groupId)!, debtsOf.get(g.groupId)!, pendingHere) : confirmed;
    for (const id of withPending.counted) counted.add(id);
    totals.set(g.currency, (totals.get(g.currency) ?? 0n) + (confirmed.balances.get(agentId) ?? 0n));
    add(g, confirmed.people, confirmed.plan, "net");
    add(g, withPending.people, withPending.plan, "left");
  }
  const currencyOf = new Map(mine.map(({ g }) => [g.groupId, g.currency]));
  const pending: Payment[] = await paymentViews(tx, await pendingPayments(tx, [...currencyOf.keys()], agentId), (id) => currencyOf.get(id)!);
  const amounts = (p: Part, currency: string) => ({
    balance_minor: totalMinor(p.net),
    balance: formatBalance(p.net, currency),
    to_settle_minor: totalMinor(p.left),
    to_settle: formatBalance(p.left, currency),
  });
  return {
    counterparties: [...byCounterparty.values()]
      .map(
        ({ agent, currency, total, groups: parts }): Counterparty => ({
          agent,
          member: memberRef(agent),
          currency,
          ...amounts(total, currency),
          groups: [...parts].map(([group_id, p]) => ({ group_id, name: p.name, ...amounts(p, currency) })),
        }),
      )
      .sort((a, b) => compareText(a.currency, b.currency) || compareText(a.agent.handle, b.agent.handle)),
    totals: [...totals]
      .sort(([a], [b]) => compareText(a, b))
      .map(([currency, minor]) => ({ currency, balance_minor: totalMinor(minor), balance: formatBalance(minor, currency) })),
    pending_payments: pending,
    settle_up_counts_pending: pending.map((p) => p.payment_id).filter((id) => counted.has(id)),
  };
}

/**
 * One member's part of a group's ledger in one currency, summed exactly: these add up a group's whole history, which
 * no limit bounds, so past MAX_TOTAL_MINOR the *_minor fields read as the limit and the text fields stay exact.
 */
interface CurrencyPart {
  /** In minor units of that currency, as given. */
  paid: bigint;
  owes: bigint;
  sent: bigint;
  received: bigint;
  /** The same net converted into the group's currency, as it counts in the balance. */
  converted: bigint;
}

/**
 * What each member paid, owes (their shares) and paid or received in confirmed payments, per currency the amounts
 * were given in, over the group's live expenses and confirmed payments; beside each net, the same converted into
 * the group's currency as it counts. Summed over the currencies, the converted nets are each member's balance; in
 * each currency, the nets sum to zero. Shares in another currency are split again from the amount as given
 * (computeShares), exactly as add_expense split it before converting. The group's currency comes first.
 */
async function currencyBreakdown(tx: Tx, group: GroupRow, known: Map<string, AgentRef>) {
  const rows = await tx
    .select({ e: expenses, agentId: expenseShares.agentId, handle: agents.handle, paidMinor: expenseShares.paidMinor, shareMinor: expenseShares.shareMinor })
    .from(expenses)
    .innerJoin(expenseShares, eq(expenseShares.expenseId, expenses.expenseId))
    .innerJoin(agents, eq(agents.agentId, expenseShares.agentId))
    .where(and(eq(expenses.groupId, group.groupId), eq(expenses.deleted, false)));
  const paid = await tx
    .select()
    .from(payments)
    .where(and(eq(payments.groupId, group.groupId), eq(payments.state, "confirmed")));
  const parts = new Map<string, Map<string, CurrencyPart>>();
  const part = (currency: string, agentId: string) => {
    const byAgent = parts.get(currency) ?? parts.set(currency, new Map()).get(currency)!;
    return byAgent.get(agentId) ?? byAgent.set(agentId, { paid: 0n, owes: 0n, sent: 0n, received: 0n, converted: 0n }).get(agentId)!;
  };
  const originalShares = new Map<string, Map<string, number>>();
  for (const { e, agentId, handle, paidMinor, shareMinor } of rows) {
    const original = originalOfRow(e);
    const p = part(original?.currency ?? group.currency, agentId);
    // A refund counts against what its receivers paid and its sharers owe.
    const sign = e.kind === "refund" ? -1n : 1n;
    p.converted += sign * BigInt(paidMinor - shareMinor);
    if (!original) {
      p.paid += sign * BigInt(paidMinor);
      p.owes += sign * BigInt(shareMinor);
      continue;
    }
    p.paid += sign * BigInt(e.paidBy.find((x) => x.handle === handle)?.amount_minor ?? 0);
    let shares = originalShares.get(e.expenseId);
    if (!shares) {
      const split = e.split as StoredSplit;
      shares = new Map(computeShares(original.amountMinor, split.mode, split.among, original.currency).map((x) => [x.handle, x.amount_minor]));
      originalShares.set(e.expenseId, shares);
    }
    p.owes += sign * BigInt(shares.get(handle) ?? 0);
  }
  for (const r of paid) {
    const original = originalOfRow(r);
    const currency = original?.currency ?? group.currency;
    const amount = BigInt(original?.amountMinor ?? r.amountMinor);
    const payer = part(currency, r.fromId);
    payer.sent += amount;
    payer.converted += BigInt(r.amountMinor);
    const payee = part(currency, r.toId);
    payee.received += amount;
    payee.converted -= BigInt(r.amountMinor);
  }
  const people = await refsWithKnown(
    tx,
    [...parts.values()].flatMap((m) => [...m.keys()]),
    known,
  );
  return [...parts]
    .sort(([a], [b]) => Number(b === group.currency) - Number(a === group.currency) || compareText(a, b))
    .map(([currency, byAgent]) => ({
      currency,
      members: [...byAgent]
        .map(([id, p]) => {
          const money = (minor: bigint) => formatAmount(minor, currency);
          const net = p.paid - p.owes + p.sent - p.received;
          return {
            agent: people.get(id)!,
            member: memberRef(people.get(id)!),
            paid_minor: totalMinor(p.paid),
            paid: money(p.paid),
            owes_minor: totalMinor(p.owes),
            owes: money(p.owes),
            payments_sent_minor: totalMinor(p.sent),
            payments_sent: money(p.sent),
            payments_received_minor: totalMinor(p.received),
            payments_received: money(p.received),
            net_minor: totalMinor(net),
            net: formatBalance(net, currency),
            converted_minor: totalMinor(p.converted),
            converted: formatBalance(p.converted, group.currency),
          };
        })
        .sort((a, b) => compareText(a.agent.handle, b.agent.handle)),
    }));
}

/**
 * Each agent's balance in a group, in minor units: what they paid minus their shares of live expenses, plus
 * confirmed payments made minus received. Read from the members' balances the pair ledger keeps (pairs.ts),
 * in the same transaction as every change: one row per member; they sum to zero by construction.
 */
export async function groupBalances(tx: Tx, groupId: string): Promise<Map<string, bigint>> {
  // The clock only stamps when a missing pair ledger was rebuilt; it changes no balance.
  return pairBalances(tx, new Date(), groupId);
}

/**
 * The caller's groups as summaries with the caller's balance in each, oldest first.
 * `page` (list_groups): only groups after `afterGroupId` in that order, at most `limit` of them.
 */
// The caller's groups, built once for every page: `after` null starts at the first, `limit` -1 takes all.
const summaryRows = prepared((tx) => {
  const agent = sql.placeholder("agentId");
  const after = sql.placeholder("after");
  return tx
    .select({
      group_id: groups.groupId,
      name: groups.name,
      currency: groups.currency,
      kind: groups.kind,
      archived: groups.archived,
      member_count: tx.$count(groupMembers, and(eq(groupMembers.groupId, groups.groupId), isNull(groupMembers.leftAt))),
      // The caller's balance, kept beside the pairs (one row), when the group's pair ledger is complete.
      built: ledgerPairsBuilt.groupId,
      balance: exactly(groupBalancesTable.balanceMinor),
    })
    .from(groups)
    .innerJoin(groupMembers, and(eq(groupMembers.groupId, groups.groupId), eq(groupMembers.agentId, agent), isNull(groupMembers.leftAt)))
    .leftJoin(ledgerPairsBuilt, eq(ledgerPairsBuilt.groupId, groups.groupId))
    .leftJoin(groupBalancesTable, and(eq(groupBalancesTable.groupId, groups.groupId), eq(groupBalancesTable.agentId, agent)))
    .where(
      and(
        sql`(${sql.placeholder("withArchived")} OR ${groups.archived} = 0)`,
        sql`(${after} IS NULL OR (${groups.createdAt}, ${groups.groupId}) > (SELECT a.created_at, a.group_id FROM groups a WHERE a.group_id = ${after}))`,
      ),
    )
    .orderBy(groups.createdAt, groups.groupId)
    .limit(sql.placeholder("limit"))
    .prepare();
});

export async function groupSummaries(
  { tx, actor: { agentId } }: DomainContext,
  includeArchived = true,
  page: { afterGroupId?: string; limit?: number } = {},
): Promise<GroupSummary[]> {
  const rows = await summaryRows(tx).all({
    agentId,
    withArchived: includeArchived ? 1 : 0,
    after: page.afterGroupId ?? null,
    limit: page.limit ?? -1,
  });
  const summaries: GroupSummary[] = [];
  for (const r of rows) {
    // A group whose pair ledger is not built yet (older than it) has it computed; the clock changes no balance.
    const balance = r.built ? BigInt(r.balance ?? 0) : ((await groupBalances(tx, r.group_id)).get(agentId) ?? 0n);
    summaries.push({
      group_id: r.group_id,
      name: r.name,
      currency: r.currency,
      kind: r.kind,
      archived: Boolean(r.archived),
      member_count: Number(r.member_count),
      my_balance_minor: totalMinor(balance),
      my_balance: formatBalance(balance, r.currency),
    });
  }
  return summaries;
}
