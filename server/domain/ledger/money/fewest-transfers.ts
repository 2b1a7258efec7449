/**
 * Settle-up plans for one group in one currency, on exact integers (the ledger's stored totals need not fit a double).
 *
 *   settlePlan(balances, true)          simplify_debts on: the fewest transfers (exact up to EXACT_LIMIT members)
 *   settlePlan(balances, false, debts)  simplify_debts off: the raw debts netted per pair
 *   greedyTransfers(balances)           greedy min-cash-flow alone (the stored debts of one expense)
 *
 * - `balances`: every member's net balance in minor units, by handle or agent id; positive means others owe that
 *   member. They must sum to exactly zero.
 * - `debts` (pairwise mode only): raw debts, read "from owes to", in any order and any number per pair: typically
 *   one per share of each expense towards its payer(s), and one per confirmed payment from payee to payer (a
 *   payment reduces what the payer owes). Self-debts (from === to) and zero amounts are ignored. Their net per
 *   member must equal `balances`, so both modes settle the same group state.
 * - Returns transfers as debts: `from` pays `to`, amount > 0. Paying them all brings every balance to zero.
 *   Simplified: largest amount first, then by `from`, then `to`. Pairwise: at most one per pair, sorted by `from`, then `to`.
 *
 * The fewest transfers: n non-zero members that can be split into k disjoint groups each summing to zero
 * settle in n - k transfers (k - 1 per group of k, and no fewer). So the minimum is n minus the largest number
 * of disjoint zero-sum subsets, found by a search over subsets (bitmasks). Two members with equal and opposite
 * balances are always one such subset in some optimal answer, so they are paired first, and only the members
 * left are searched. Every transfer goes from someone who owes to someone owed, so the money moved is always
 * the least possible: the sum of what is owed. Ties (which optimal grouping) go to handles in code-unit order.
 *
 * Broken invariants (balances not summing to zero, debts not matching balances) throw a
 * plain Error: they come from stored data, so they are server bugs, not bad user input.
 */

/** The ledger's one debt: `from` owes (or, in a plan, pays) `to` `amount` minor units, exactly. */
export interface Debt {
  from: string;
  to: string;
  amount: bigint;
}

/** How a plan was made: the exact fewest transfers, greedy (too many members for the exact search), or each pair's own. */
export type SettleMethod = "exact" | "greedy" | "pairwise";

export interface SettlePlan {
  transfers: Debt[];
  method: SettleMethod;
  /** No plan settles it in fewer transfers: exact, or greedy reaching the lower bound (one transfer per creditor or per debtor). */
  provenMinimal: boolean;
}

/**
 * Members left after pairing equal opposite balances, up to which the fewest transfers are searched exactly (2^n
 * subsets, 17 bytes each): bench/settle.ts measures its worst case at about 30 ms (35 MB) for 20, twice that for 21.
 */
export const EXACT_LIMIT = 20;

/** The transfers that settle `balances` (summing to zero); `debts` (non-negative) only when not simplifying. */
export function settlePlan(balances: ReadonlyMap<string, bigint>, simplify: boolean, debts: readonly Debt[] = []): SettlePlan {
  assertZeroSum(balances);
  if (simplify) return fewestTransfers(balances);
  const transfers = netPairwise(debts);
  assertMatches(transfers, balances);
  return { transfers, method: "pairwise", provenMinimal: false };
}

/** Greedy min-cash-flow over balances summing to zero: at most n - 1 transfers, in the order found. */
export function greedyTransfers(balances: ReadonlyMap<string, bigint>): Debt[] {
  assertZeroSum(balances);
  return greedy(new Map(balances));
}

function assertZeroSum(balances: ReadonlyMap<string, bigint>): void {
  let sum = 0n;
  for (const b of balances.values()) sum += b;
  if (sum !== 0n) throw new Error(`settle: balances sum to ${sum}, not zero`);
}

function fewestTransfers(ledger: ReadonlyMap<string, bigint>): SettlePlan {
  const members = [...ledger].filter(([, b]) => b !== 0n).sort(([a], [b]) => compare(a, b));
  const transfers: Debt[] = [];
  // Equal and opposite balances settle each other in one transfer, paired in handle order.
  const creditors = new Map<bigint, string[]>();
  for (const [handle, b] of members) if (b > 0n) creditors.set(b, [...(creditors.get(b) ?? []), handle]);
  const paired = new Set<string>();
  for (const [handle, b] of members) {
    const match = b < 0n ? creditors.get(-b)?.shift() : undefined;
    if (match === undefined) continue;
    transfers.push({ from: handle, to: match, amount: -b });
    paired.add(handle).add(match);
  }
  const left = members.filter(([handle]) => !paired.has(handle));
  const exact = left.length <= EXACT_LIMIT;
  const groups = exact ? zeroSumGroups(left.map(([, b]) => b)) : [left.map((_, i) => i)];
  for (const g of groups) transfers.push(...greedy(new Map(g.map((i) => left[i]!))));
  // Each creditor receives, and each debtor makes, at least one transfer: a greedy plan that few is the fewest too.
  const owed = left.filter(([, b]) => b > 0n).length;
  const bound = paired.size / 2 + Math.max(owed, left.length - owed);
  transfers.sort((a, b) => (a.amount === b.amount ? 0 : a.amount > b.amount ? -1 : 1) || compare(a.from, b.from) || compare(a.to, b.to));
  return { transfers, method: exact ? "exact" : "greedy", provenMinimal: exact || transfers.length === bound };
}

// Sums of up to EXACT_LIMIT safe integers can pass 2^53, so each value is kept as hi * 2^26 + lo, both exact in a double.
const SPLIT = 2 ** 26;

/**
 * The largest number of disjoint subsets of `values` (summing to zero, none zero) that each sum to zero, as lists
 * of indexes covering them all. best[mask] is the most disjoint zero-sum subsets inside mask. A zero-sum mask has
 * one more than mask minus any member (its rest then sums to zero too); any other mask keeps the best of mask minus
 * one member whose sign is the sum's (the part outside its subsets has that sign, so holds such a member).
 */
function zeroSumGroups(values: readonly bigint[]): number[][] {
  const size = 1 << values.length;
  const hiOf = values.map((v) => Number(v / BigInt(SPLIT)));
  const loOf = values.map((v, i) => Number(v - BigInt(hiOf[i]!) * BigInt(SPLIT)));
  let positive = 0;
  values.forEach((v, i) => (positive |= v > 0n ? 1 << i : 0));
  const negative = (size - 1) ^ positive;
  const hi = new Float64Array(size);
  const lo = new Float64Array(size);
  const best = new Uint8Array(size);
  /** Of the members of mask with the sign of its sum: those whose removal keeps best[mask]. */
  const keeping = (mask: number) => mask & (hi[mask]! * SPLIT + lo[mask]! > 0 ? positive : negative);
  const isZero = (mask: number) => hi[mask]! * SPLIT === -lo[mask]!;
  for (let mask = 1; mask < size; mask++) {
    const low = mask & -mask;
    const i = 31 - Math.clz32(low);
    hi[mask] = hi[mask ^ low]! + hiOf[i]!;
    lo[mask] = lo[mask ^ low]! + loOf[i]!;
    if (isZero(mask)) {
      best[mask] = best[mask ^ low]! + 1;
      continue;
    }
    let most = 0;
    for (let rest = keeping(mask); rest; rest &= rest - 1) most = Math.max(most, best[mask ^ (rest & -rest)]!);
    best[mask] = most;
  }
  // Walk back from all members, taking the lowest index that keeps the best count; a zero-sum mask closes a group.
  const groups: number[][] = [];
  let group: number[] = [];
  for (let mask = size - 1; mask; ) {
    let take = mask & -mask;
    if (!isZero(mask)) {
      for (let rest = keeping(mask); rest; rest &= rest - 1) {
        take = rest & -rest;
        if (best[mask ^ take] === best[mask]) break;
      }
    }
    group.push(31 - Math.clz32(take));
    mask ^= take;
    if (isZero(mask)) {
      groups.push(group);
      group = [];
    }
  }
  return groups;
}

/** Greedy min-cash-flow: the largest debtor pays the largest creditor until all are zero. */
function greedy(ledger: Map<string, bigint>): Debt[] {
  const transfers: Debt[] = [];
  for (;;) {
    const creditor = pick(ledger, (a, b) => a > b);
    const debtor = pick(ledger, (a, b) => a < b);
    if (creditor === undefined || debtor === undefined) return transfers;
    const credit = ledger.get(creditor)!;
    const debt = -ledger.get(debtor)!;
    const amount = credit < debt ? credit : debt;
    transfers.push({ from: debtor, to: creditor, amount });
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
function netPairwise(debts: readonly Debt[]): Debt[] {
  const net = new Map<string, { low: string; high: string; lowOwes: bigint }>();
  for (const d of debts) {
    if (d.amount < 0n) throw new Error(`settle: debt ${d.from} -> ${d.to} has an invalid amount ${d.amount}`);
    if (d.from === d.to || d.amount === 0n) continue;
    const [low, high] = d.from < d.to ? [d.from, d.to] : [d.to, d.from];
    const key = JSON.stringify([low, high]);
    const entry = net.get(key) ?? { low, high, lowOwes: 0n };
    entry.lowOwes += d.from === low ? d.amount : -d.amount;
    net.set(key, entry);
  }
  const transfers: Debt[] = [];
  for (const { low, high, lowOwes } of net.values()) {
    if (lowOwes > 0n) transfers.push({ from: low, to: high, amount: lowOwes });
    if (lowOwes < 0n) transfers.push({ from: high, to: low, amount: -lowOwes });
  }
  return transfers.sort((a, b) => compare(a.from, b.from) || compare(a.to, b.to));
}

function assertMatches(transfers: readonly Debt[], ledger: ReadonlyMap<string, bigint>): void {
  const fromDebts = new Map<string, bigint>();
  const add = (handle: string, delta: bigint) => fromDebts.set(handle, (fromDebts.get(handle) ?? 0n) + delta);
  for (const t of transfers) {
    add(t.from, -t.amount);
    add(t.to, t.amount);
  }
  for (const handle of new Set([...ledger.keys(), ...fromDebts.keys()])) {
    if ((ledger.get(handle) ?? 0n) !== (fromDebts.get(handle) ?? 0n)) {
      throw new Error(`settle: pairwise debts do not match the balance of ${handle}`);
    }
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
