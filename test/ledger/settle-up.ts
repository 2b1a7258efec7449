// settlePlan and greedyTransfers on safe-integer balances given as a list, as the tests write them: a list can name
// a member twice or hold a non-integer, which the domain's Map of bigints cannot, so those checks live here.
import { greedyTransfers as greedyExact, settlePlan, type Debt, type SettleMethod } from "../../server/domain/ledger/money/fewest-transfers.ts";

export interface MemberBalance {
  handle: string;
  balance_minor: number;
}

/** A transfer or debt in safe-integer minor units. */
export interface Transfer {
  from: string;
  to: string;
  amount_minor: number;
}

function exactBalances(balances: readonly MemberBalance[]): Map<string, bigint> {
  const ledger = new Map<string, bigint>();
  for (const b of balances) {
    if (ledger.has(b.handle)) throw new Error(`settleUp: ${b.handle} is listed twice`);
    if (!Number.isSafeInteger(b.balance_minor)) throw new Error(`settleUp: balance of ${b.handle} is not a safe integer`);
    ledger.set(b.handle, BigInt(b.balance_minor));
  }
  return ledger;
}

function toNumbers(t: Debt): Transfer {
  if (t.amount > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error("settleUp: amount exceeds a safe integer");
  return { from: t.from, to: t.to, amount_minor: Number(t.amount) };
}

export function settleUp(
  balances: readonly MemberBalance[],
  simplify: boolean,
  debts: readonly Transfer[] = [],
): { transfers: Transfer[]; method: SettleMethod } {
  const exact = debts.map((d) => {
    if (!Number.isSafeInteger(d.amount_minor) || d.amount_minor < 0)
      throw new Error(`settleUp: debt ${d.from} -> ${d.to} has an invalid amount ${d.amount_minor}`);
    return { from: d.from, to: d.to, amount: BigInt(d.amount_minor) };
  });
  const { transfers, method } = settlePlan(exactBalances(balances), simplify, exact);
  return { transfers: transfers.map(toNumbers), method };
}

export const greedyTransfers = (balances: readonly MemberBalance[]): Transfer[] => greedyExact(exactBalances(balances)).map(toNumbers);
