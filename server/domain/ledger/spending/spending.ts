// Spending totals (get_spending and the group page's chart): what a group, or all of a member's groups, spent by
// category, by month or by member over a date range, in each group's currency: the live expenses, refunds counting
// against them; payments are not spending. Read from totals per day kept by triggers, so any group answers in ms.
import { and, eq, isNull, sql } from "drizzle-orm";
import type { Tx } from "../../../../db/client.ts";
import { jsonList } from "../../../../db/client.ts";
import { groupMembers, groups } from "../../../../db/schema/index.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import type { MemberRef } from "../../../contract/groups.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { invalid } from "../../../errors.ts";
import { refsByIds } from "../../agents.ts";
import { memberRef, requireMember, type GroupRow } from "../groups/membership.ts";
import { formatAmount, totalMinor } from "../money/amounts.ts";
import { compareText } from "../money/splits.ts";

export const SPENDING_BY = ["category", "month", "member"] as const;
export type SpendingBy = (typeof SPENDING_BY)[number];

export interface SpendingInput {
  group_id?: string | undefined;
  by?: SpendingBy | undefined;
  since_date?: string | undefined;
  until_date?: string | undefined;
}

export interface SpendingRow {
  key: string;
  agent?: AgentRef;
  member?: MemberRef;
  amount_minor: number;
  amount: string;
  paid_minor?: number;
  paid?: string;
  count: number;
}

export interface CurrencySpending {
  currency: string;
  groups: { group_id: string; name: string }[];
  total_minor: number;
  total: string;
  count: number;
  rows: SpendingRow[];
}

// Amounts are kept in two parts, units of 10^9 and the rest (0022_refunds_spending_batches.sql), joined exactly as bigint here.
const PART = 1_000_000_000n;
const exact = (hi: unknown, lo: unknown) => BigInt(Number(hi ?? 0)) * PART + BigInt(Number(lo ?? 0));

/** Spending by category, month or member, per currency, over one group of the caller's or all of them. */
export async function spending(ctx: DomainContext, input: SpendingInput) {
  const { tx, actor } = ctx;
  const by = input.by ?? "category";
  if (input.since_date && input.until_date && input.since_date > input.until_date) throw invalid("until_date", "must not be before since_date");
  const mine = input.group_id === undefined ? await groupsOf(tx, actor.agentId) : [await requireMember(tx, input.group_id, actor.agentId)];
  const rows = await spendingRows(tx, mine, by, input.since_date ?? null, input.until_date ?? null);
  return {
    ...(input.group_id === undefined ? {} : { group_id: input.group_id }),
    by,
    since_date: input.since_date ?? null,
    until_date: input.until_date ?? null,
    currencies: rows,
  };
}

/** The caller's current groups, oldest first. */
async function groupsOf(tx: Tx, agentId: string): Promise<GroupRow[]> {
  const rows = await tx
    .select({ g: groups })
    .from(groups)
    .innerJoin(groupMembers, and(eq(groupMembers.groupId, groups.groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)))
    .orderBy(groups.createdAt, sql`groups.rowid`);
  return rows.map((r) => r.g);
}

/** The totals of `groups` per currency (the groups' own), grouped by `by`, from `since` to `until` (inclusive dates). */
export async function spendingRows(tx: Tx, list: GroupRow[], by: SpendingBy, since: string | null, until: string | null): Promise<CurrencySpending[]> {
  if (!list.length) return [];
  const currencyOf = new Map(list.map((g) => [g.groupId, g.currency]));
  // Read from spending_totals (0022_refunds_spending_batches.sql), which triggers keep: a few rows per day, not one per share.
  const where = sql`group_id IN (SELECT value FROM json_each(${jsonList(list.map((g) => g.groupId))}))
    AND (${since} IS NULL OR date >= ${since}) AND (${until} IS NULL OR date <= ${until})`;
  const key = by === "month" ? sql`substr(date, 1, 7)` : by === "member" ? sql`agent_id` : sql`category`;
  const raw = await tx.values<[string, string, unknown, unknown, unknown, unknown, number]>(
    sql`SELECT group_id, ${key}, SUM(amount_hi), SUM(amount_lo), SUM(paid_hi), SUM(paid_lo), SUM(count) FROM spending_totals
        WHERE ${where} AND ${by === "member" ? sql`agent_id != ''` : sql`agent_id = ''`} GROUP BY 1, 2 HAVING SUM(count) != 0`,
  );
  const byCurrency = new Map<string, Map<string, { amount: bigint; paid: bigint; count: number }>>();
  for (const [groupId, k, amountHi, amountLo, paidHi, paidLo, count] of raw) {
    const currency = currencyOf.get(groupId)!;
    const keys = byCurrency.get(currency) ?? byCurrency.set(currency, new Map()).get(currency)!;
    const entry = keys.get(k) ?? keys.set(k, { amount: 0n, paid: 0n, count: 0 }).get(k)!;
    entry.amount += exact(amountHi, amountLo);
    entry.paid += exact(paidHi, paidLo);
    entry.count += Number(count);
  }
  // A member's count is the expenses they are in; the currency's count and total are the expenses', read apart.
  const totals = new Map<string, { amount: bigint; count: number }>();
  if (by === "member") {
    const perGroup = await tx.values<[string, unknown, unknown, number]>(
      sql`SELECT group_id, SUM(amount_hi), SUM(amount_lo), SUM(count) FROM spending_totals WHERE ${where} AND agent_id = '' GROUP BY 1`,
    );
    for (const [groupId, hi, lo, count] of perGroup) {
      const currency = currencyOf.get(groupId)!;
      const t = totals.get(currency) ?? { amount: 0n, count: 0 };
      totals.set(currency, { amount: t.amount + exact(hi, lo), count: t.count + Number(count) });
    }
  }
  const people =
    by === "member"
      ? await refsByIds(
          tx,
          [...byCurrency.values()].flatMap((m) => [...m.keys()]),
        )
      : new Map<string, AgentRef>();
  const currencies = [...new Set(list.map((g) => g.currency))].sort(compareText);
  return currencies.map((currency) => {
    const keys = byCurrency.get(currency) ?? new Map();
    const money = (minor: bigint) => ({ minor: totalMinor(minor), text: formatAmount(minor, currency) });
    const rows: SpendingRow[] = [...keys].map(([key, e]) => {
      const amount = money(e.amount);
      if (by !== "member") return { key, amount_minor: amount.minor, amount: amount.text, count: e.count };
      const paid = money(e.paid);
      const agent = people.get(key)!;
      return {
        key: agent.handle,
        agent,
        member: memberRef(agent),
        amount_minor: amount.minor,
        amount: amount.text,
        paid_minor: paid.minor,
        paid: paid.text,
        count: e.count,
      };
    });
    rows.sort(
      by === "month"
        ? (a, b) => compareText(a.key, b.key)
        : by === "member"
          ? (a, b) => b.paid_minor! - a.paid_minor! || compareText(a.key, b.key)
          : (a, b) => b.amount_minor - a.amount_minor || compareText(a.key, b.key),
    );
    const sum = [...keys.values()].reduce((t, e) => ({ amount: t.amount + e.amount, count: t.count + e.count }), { amount: 0n, count: 0 });
    const { amount: total, count } = by === "member" ? (totals.get(currency) ?? { amount: 0n, count: 0 }) : sum;
    return {
      currency,
      groups: list.filter((g) => g.currency === currency).map((g) => ({ group_id: g.groupId, name: g.name })),
      total_minor: totalMinor(total),
      total: formatAmount(total, currency),
      count,
      rows,
    };
  });
}
