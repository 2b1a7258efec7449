/**
 * Settle-up plans for one group in one currency.
 *
 *   settleUp(balances, true)           simplify_debts on: greedy min-cash-flow over net balances
 *   settleUp(balances, false, debts)   simplify_debts off: the raw debts netted per pair
 *
 * - `balances`: every member's net balance in minor units; positive means others owe that
 *   member. They must sum to exactly zero.
 * - `debts` (pairwise mode only): raw debts `{from, to, amount_minor}`, read "from owes to",
 *   in any order and any number per pair: typically one per share of each expense towards
 *   its payer(s), and one per confirmed payment from payee to payer (a payment reduces
 *   what the payer owes). Self-debts (from === to) and zero amounts are ignored. Their net
 *   per member must equal `balances`, so both modes settle the same group state.
 * - Returns transfers `{from, to, amount_minor}`: `from` pays `to`, amount > 0. Paying them
 *   all brings every balance to zero. Simplified: at most n-1 transfers, in the order found.
 *   Pairwise: at most one per pair, sorted by `from`, then `to`.
 *
 * Broken invariants (balances not summing to zero, debts not matching balances) throw a
 * plain Error: they come from stored data, so they are server bugs, not bad user input.
 */

export interface MemberBalance {
  handle: string;
  balance_minor: number;
}

export interface Transfer {
  from: string;
  to: string;
  amount_minor: number;
}

export type Debt = Transfer;

export function settleUp(balances: readonly MemberBalance[], simplify: boolean, debts: readonly Debt[] = []): Transfer[] {
  const ledger = readBalances(balances);
  if (simplify) return simplifyDebts(ledger);
  const transfers = netPairwise(debts);
  assertMatches(transfers, ledger);
  return transfers;
}

/** Greedy min-cash-flow: the largest debtor pays the largest creditor until all are zero. */
function simplifyDebts(ledger: Map<string, bigint>): Transfer[] {
  const transfers: Transfer[] = [];
  for (;;) {
    const creditor = pick(ledger, (a, b) => a > b);
    const debtor = pick(ledger, (a, b) => a < b);
    if (creditor === undefined || debtor === undefined) return transfers;
    const credit = ledger.get(creditor)!;
    const debt = -ledger.get(debtor)!;
    const amount = credit < debt ? credit : debt;
    transfers.push({ from: debtor, to: creditor, amount_minor: Number(amount) });
    ledger.set(creditor, credit - amount);
    ledger.set(debtor, amount - debt);
  }
}

/**
 * The member whose non-zero balance is most extreme under `better` (a > b: largest
 * creditor; a < b: largest debtor); ties go to the handle first in code-unit order.
 */
function pick(ledger: Map<string, bigint>, better: (a: bigint, b: bigint) => boolean): string | undefined {
  let best: string | undefined;
  let bestValue = 0n;
  for (const [handle, value] of ledger) {
    if (!better(value, 0n)) continue;
    if (best === undefined || better(value, bestValue) || (value === bestValue && handle < best)) {
      best = handle;
      bestValue = value;
    }
  }
  return best;
}

/** Nets raw debts per unordered pair; the side that owes more pays the difference. */
export function netPairwise(debts: readonly Debt[]): Transfer[] {
  const net = new Map<string, { low: string; high: string; lowOwes: bigint }>();
  for (const d of debts) {
    const amount = checkAmount(d.amount_minor, `debt ${d.from} -> ${d.to}`);
    if (d.from === d.to || amount === 0n) continue;
    const [low, high] = d.from < d.to ? [d.from, d.to] : [d.to, d.from];
    const key = JSON.stringify([low, high]);
    const entry = net.get(key) ?? { low, high, lowOwes: 0n };
    entry.lowOwes += d.from === low ? amount : -amount;
    net.set(key, entry);
  }
  const transfers: Transfer[] = [];
  for (const { low, high, lowOwes } of net.values()) {
    if (lowOwes > 0n) transfers.push({ from: low, to: high, amount_minor: toSafe(lowOwes) });
    if (lowOwes < 0n) transfers.push({ from: high, to: low, amount_minor: toSafe(-lowOwes) });
  }
  return transfers.sort((a, b) => compare(a.from, b.from) || compare(a.to, b.to));
}

function readBalances(balances: readonly MemberBalance[]): Map<string, bigint> {
  const ledger = new Map<string, bigint>();
  let sum = 0n;
  for (const b of balances) {
    if (ledger.has(b.handle)) throw new Error(`settleUp: ${b.handle} is listed twice`);
    if (!Number.isSafeInteger(b.balance_minor)) throw new Error(`settleUp: balance of ${b.handle} is not a safe integer`);
    ledger.set(b.handle, BigInt(b.balance_minor));
    sum += BigInt(b.balance_minor);
  }
  if (sum !== 0n) throw new Error(`settleUp: balances sum to ${sum}, not zero`);
  return ledger;
}

function assertMatches(transfers: readonly Transfer[], ledger: ReadonlyMap<string, bigint>): void {
  const fromDebts = new Map<string, bigint>();
  const add = (handle: string, delta: bigint) => fromDebts.set(handle, (fromDebts.get(handle) ?? 0n) + delta);
  for (const t of transfers) {
    add(t.from, -BigInt(t.amount_minor));
    add(t.to, BigInt(t.amount_minor));
  }
  for (const handle of new Set([...ledger.keys(), ...fromDebts.keys()])) {
    if ((ledger.get(handle) ?? 0n) !== (fromDebts.get(handle) ?? 0n)) {
      throw new Error(`settleUp: pairwise debts do not match the balance of ${handle}`);
    }
  }
}

function checkAmount(n: number, what: string): bigint {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`settleUp: ${what} has an invalid amount ${n}`);
  return BigInt(n);
}

function toSafe(n: bigint): number {
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error("settleUp: amount exceeds a safe integer");
  return Number(n);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
