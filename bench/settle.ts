// The fewest-transfers search (server/domain/ledger/money/fewest-transfers.ts) at its largest exact size: EXACT_LIMIT members left
// after pairing, with no zero-sum subset but the whole group (the search's worst case, as many transfers as it gets),
// and, for scale, the same group one member larger (greedy) and a typical 8-member group. Prints median and worst times.
// Run: bun run bench/settle.ts [runs=50]
import { EXACT_LIMIT, greedyTransfers, settlePlan } from "../server/domain/ledger/money/fewest-transfers.ts";

type MemberBalance = { handle: string; balance_minor: number };

const RUNS = Number(process.argv[2] ?? 50);

/** n members: n - 1 creditors owed distinct amounts and one debtor owing them all (only the whole sums to zero). */
function worstCase(n: number): MemberBalance[] {
  const owed = Array.from({ length: n - 1 }, (_, i) => ({ handle: `m${String(i).padStart(2, "0")}`, balance_minor: 1_000_003 * (i + 1) + i * i }));
  return [...owed, { handle: "debtor", balance_minor: -owed.reduce((a, b) => a + b.balance_minor, 0) }];
}

/** A trip: amounts in whole euros, where zero-sum subsets (and greedy's extra transfers) are common. */
function trip(n: number, seed: number): MemberBalance[] {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31);
  const values = Array.from({ length: n - 1 }, () => ((next() % 41) - 20) * 500);
  return [...values, -values.reduce((a, b) => a + b, 0)].map((balance_minor, i) => ({ handle: `t${i}`, balance_minor }));
}

function time(label: string, make: (run: number) => MemberBalance[]): void {
  const times: number[] = [];
  let transfers = 0;
  let greedy = 0;
  let method = "";
  for (let run = 0; run < RUNS; run++) {
    const balances = new Map(make(run).map((b) => [b.handle, BigInt(b.balance_minor)]));
    const start = performance.now();
    const plan = settlePlan(balances, true);
    times.push(performance.now() - start);
    transfers += plan.transfers.length;
    greedy += greedyTransfers(balances).length;
    method = plan.method;
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  console.log(
    `${label.padEnd(44)} ${method.padEnd(6)} median ${median.toFixed(3).padStart(8)} ms   worst ${times.at(-1)!.toFixed(3).padStart(8)} ms   transfers ${(transfers / RUNS).toFixed(2)} (greedy alone ${(greedy / RUNS).toFixed(2)})`,
  );
}

console.log(`settlePlan, simplified, ${RUNS} runs each (first runs include JIT warm-up)\n`);
time(`${EXACT_LIMIT} members, worst case (largest exact)`, () => worstCase(EXACT_LIMIT));
time(`${EXACT_LIMIT + 1} members, worst case (greedy beyond)`, () => worstCase(EXACT_LIMIT + 1));
time(`${EXACT_LIMIT} members, trip amounts`, (run) => trip(EXACT_LIMIT, run + 1));
time("8 members, trip amounts", (run) => trip(8, run + 1));
