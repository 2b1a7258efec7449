// Model test: random sequences of ledger operations by random members over HTTP (expenses and payments, in the
// group's currency or another; payments confirmed, rejected or voided). After every step each balance equals a
// naive recomputation from list_expenses and list_payments, the balances sum to zero, the per-currency view adds
// up to them, and the settle-up plan zeroes them once the pending payments count too, as settle-up counts them (in
// exactly the fewest transfers when debts are simplified). A payment repeating a pending one is refused unless it
// says it is a second payment.
// Refunds are mixed in (an expense may be added or changed as a refund, and back), get_spending's kept totals match
// the expenses listed, and a refund is the exact mirror of the same expense.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { formatAmount } from "../../server/domain/ledger/money/amounts.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { bruteForceFewest, groupWith, type TestGroup } from "./ledger-fixtures.ts";

const MEMBERS = 4;
const RUNS = 30;
const MIN_STEPS = 6;
const MAX_STEPS = 14;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

interface Model {
  expenses: { id: string; version: number; deleted: boolean; participants: Set<number> }[];
  payments: { id: string; state: "pending" | "confirmed" | "rejected" | "voided"; from: number; to: number; given: string }[];
}
interface Real {
  g: TestGroup;
  handles: string[];
  keys: string[];
  simplify: boolean;
}
type Cmd = fc.AsyncCommand<Model, Real>;
const command = (c: Cmd) => c;

/** Calls a tool and checks that it succeeds exactly when the model says it should. */
async function expectCall(tool: string, args: Record<string, unknown>, key: string, allowed: boolean): Promise<any> {
  const r = await s.call(tool, { idempotency_key: crypto.randomUUID(), ...args }, key);
  if (allowed) {
    if (r.status !== 200) throw new Error(`${tool} ${JSON.stringify(args)} failed: ${JSON.stringify(r.body.error)}`);
    return r.body.data;
  }
  expect(r.body.error?.code).toBe("CONFLICT");
  return null;
}

/** n non-negative integers summing to total. */
function partition(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  const parts = weights.map((w) => Math.floor((total * w) / sum));
  parts[0]! += total - parts.reduce((a, b) => a + b, 0);
  return parts;
}

const member = fc.integer({ min: 0, max: MEMBERS - 1 });
const subset = fc.uniqueArray(member, { minLength: 1, maxLength: MEMBERS });
const weights = fc.array(fc.integer({ min: 1, max: 9 }), { minLength: MEMBERS, maxLength: MEMBERS });
const splitArb = fc.record({ mode: fc.constantFrom("equal", "exact", "percent", "shares", "adjustment"), among: subset, weights });
const expenseArb = fc.record({
  amount: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 50_000_00 })),
  split: splitArb,
  payers: subset,
  payerWeights: weights,
  foreign: fc.option(fc.constantFrom("0.9", "1.0837", "0.00615", "3"), { nil: undefined }),
  refund: fc.oneof({ arbitrary: fc.constant(false), weight: 2 }, { arbitrary: fc.constant(true), weight: 1 }),
});
type ExpenseSpec = typeof expenseArb extends fc.Arbitrary<infer T> ? T : never;

function expenseArgs(real: Real, e: ExpenseSpec) {
  const currency = e.foreign === undefined ? "EUR" : "USD";
  const among = e.split.among.map((i) => real.handles[i]!);
  const w = e.split.among.map((i) => e.split.weights[i]!);
  const split =
    e.split.mode === "equal"
      ? { mode: "equal", among: among.map((handle) => ({ handle })) }
      : e.split.mode === "exact"
        ? { mode: "exact", among: partition(e.amount, w).map((v, i) => ({ handle: among[i], value: formatAmount(v, currency) })) }
        : e.split.mode === "percent"
          ? { mode: "percent", among: partition(100, w).map((v, i) => ({ handle: among[i], value: String(v) })) }
          : e.split.mode === "shares"
            ? { mode: "shares", among: w.map((v, i) => ({ handle: among[i], value: v })) }
            : {
                mode: "adjustment",
                among: among.map((handle, i) =>
                  i === 0 ? { handle } : { handle, value: formatAmount(-Math.min(w[i]!, Math.floor(e.amount / among.length)), currency) },
                ),
              };
  const payers = e.payers.map((i) => real.handles[i]!);
  const paid = partition(
    e.amount,
    e.payers.map((i) => e.payerWeights[i]!),
  );
  return {
    ...(e.refund ? { kind: "refund" } : {}),
    amount_minor: e.amount,
    split,
    paid_by: payers.map((handle, i) => ({ handle, amount_minor: paid[i]! })).filter((p) => p.amount_minor > 0),
    ...(e.foreign === undefined ? {} : { currency, exchange_rate: e.foreign }),
  };
}

/** Adjustment splits can leave someone a negative share, and conversions can round to nothing: such inputs are refused. */
async function addOrRefuse(real: Real, by: number, args: Record<string, unknown>) {
  const r = await s.call("add_expense", { group_id: real.g.group_id, description: "Random", idempotency_key: crypto.randomUUID(), ...args }, real.keys[by]!);
  if (r.status === 200) return r.body.data.expense;
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  return null;
}

/** Who may confirm or dispute: everyone in the split, and every payer. */
const participantsOf = (e: any, handles: string[]) => new Set<number>([...e.shares, ...e.paid_by].map((x: any) => handles.indexOf(x.handle)));

const commands: fc.Arbitrary<Cmd>[] = [
  fc.record({ by: member, e: expenseArb }).map(({ by, e }) =>
    command({
      check: () => true,
      async run(m: Model, r: Real) {
        const expense = await addOrRefuse(r, by, expenseArgs(r, e));
        if (expense) m.expenses.push({ id: expense.expense_id, version: 1, deleted: false, participants: participantsOf(expense, r.handles) });
      },
      toString: () => `add(${by}, ${JSON.stringify(e)})`,
    }),
  ),
  fc.record({ by: member, pick: fc.nat(), e: expenseArb, stale: fc.boolean() }).map(({ by, pick, e, stale }) =>
    command({
      check: (m: Model) => m.expenses.length > 0,
      async run(m: Model, r: Real) {
        const x = m.expenses[pick % m.expenses.length]!;
        const args = { expense_id: x.id, expected_version: stale ? x.version + 1 : x.version, ...expenseArgs(r, e) };
        const res = await s.call("update_expense", { idempotency_key: crypto.randomUUID(), ...args }, r.keys[by]!);
        if (stale || x.deleted) return void expect(res.body.error.code).toBe("CONFLICT");
        if (res.status !== 200) return void expect(res.body.error.code).toBe("VALIDATION_ERROR");
        const updated = res.body.data.expense;
        x.version = updated.version;
        x.participants = participantsOf(updated, r.handles);
      },
      toString: () => `update(${by}, #${pick}, stale=${stale}, ${JSON.stringify(e)})`,
    }),
  ),
  fc.record({ by: member, pick: fc.nat(), del: fc.boolean() }).map(({ by, pick, del }) =>
    command({
      check: (m: Model) => m.expenses.length > 0,
      async run(m: Model, r: Real) {
        const x = m.expenses[pick % m.expenses.length]!;
        const done = await expectCall(del ? "delete_expense" : "restore_expense", { expense_id: x.id }, r.keys[by]!, x.deleted !== del);
        if (done) {
          x.deleted = del;
          x.version = done.expense.version;
        }
      },
      toString: () => `${del ? "delete" : "restore"}(${by}, #${pick})`,
    }),
  ),
  fc.record({ by: member, pick: fc.nat(), dispute: fc.boolean() }).map(({ by, pick, dispute }) =>
    command({
      check: (m: Model) => m.expenses.length > 0,
      async run(m: Model, r: Real) {
        const x = m.expenses[pick % m.expenses.length]!;
        const args = dispute ? { action: "dispute", reason: "not mine" } : { action: "confirm" };
        await expectCall("respond_expense", { expense_id: x.id, ...args }, r.keys[by]!, !x.deleted && x.participants.has(by));
      },
      toString: () => `respond_expense(${by}, #${pick}, ${dispute ? "dispute" : "confirm"})`,
    }),
  ),
  fc
    .record({
      by: member,
      other: member,
      amount: fc.integer({ min: 1, max: 100_000 }),
      payer: fc.boolean(),
      foreign: fc.option(fc.constantFrom("0.9", "1.0837", "3"), { nil: undefined }),
      second: fc.boolean(),
    })
    .map(({ by, other, amount, payer, foreign, second }) =>
      command({
        check: () => by !== other,
        async run(m: Model, r: Real) {
          const args = {
            group_id: r.g.group_id,
            amount_minor: amount,
            ...(payer ? { to: r.handles[other] } : { from: r.handles[other] }),
            ...(foreign === undefined ? {} : { currency: "USD", exchange_rate: foreign }),
            ...(second ? { second_payment: true } : {}),
          };
          const [from, to, given] = [payer ? by : other, payer ? other : by, `${amount} ${foreign ? "USD" : "EUR"}`];
          // the same amount as given between the same two while one is pending: refused, unless a second payment
          const twice = m.payments.some((p) => p.state === "pending" && p.from === from && p.to === to && p.given === given);
          const done = await expectCall("record_payment", args, r.keys[by]!, second || !twice);
          if (!done) return;
          const { payment, overpayment } = done;
          m.payments.push({ id: payment.payment_id, state: payer ? "pending" : "confirmed", from, to, given });
          expect(payment.state).toBe(m.payments.at(-1)!.state);
          expect(payment.original?.amount_minor ?? payment.amount_minor).toBe(amount);
          if (overpayment) expect(overpayment.owed_minor + overpayment.excess_minor).toBe(payment.amount_minor);
        },
        toString: () => `pay(${by} ${payer ? "to" : "from"} ${other}, ${amount}${foreign ? ` USD at ${foreign}` : ""})`,
      }),
    ),
  fc.record({ by: member, pick: fc.nat() }).map(({ by, pick }) =>
    command({
      check: (m: Model) => m.payments.length > 0,
      async run(m: Model, r: Real) {
        const p = m.payments[pick % m.payments.length]!;
        const ok = (p.state === "pending" || p.state === "confirmed") && (p.from === by || p.to === by);
        const done = await expectCall("respond_payment", { payment_id: p.id, action: "void" }, r.keys[by]!, ok);
        if (done) {
          p.state = "voided";
          expect(done.payment.voided_by.handle).toBe(r.handles[by]);
        }
      },
      toString: () => `void_payment(${by}, #${pick})`,
    }),
  ),
  fc.record({ by: member, pick: fc.nat(), confirm: fc.boolean() }).map(({ by, pick, confirm }) =>
    command({
      check: (m: Model) => m.payments.length > 0,
      async run(m: Model, r: Real) {
        const p = m.payments[pick % m.payments.length]!;
        const ok = p.state === "pending" && p.to === by;
        await expectCall("respond_payment", { payment_id: p.id, action: confirm ? "confirm" : "reject" }, r.keys[by]!, ok);
        if (ok) p.state = confirm ? "confirmed" : "rejected";
      },
      toString: () => `respond_payment(${by}, #${pick}, ${confirm ? "confirm" : "reject"})`,
    }),
  ),
];

async function everything(tool: string, args: Record<string, unknown>, key: string, field: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await s.ok(tool, { ...args, limit: 100, ...(cursor ? { cursor } : {}) }, key);
    out.push(...page[field]);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

/** Balances recomputed the naive way, from the lists a member can read. */
async function naiveBalances(r: Real): Promise<Record<string, number>> {
  const b: Record<string, number> = Object.fromEntries(r.handles.map((h) => [h, 0]));
  // get_spending's totals (kept by triggers) match the live expenses too: per member, what they paid and their shares.
  const spent: Record<string, [number, number]> = {};
  let total = 0;
  for (const e of await everything("list_expenses", { group_id: r.g.group_id }, r.keys[0]!, "expenses")) {
    const sign0 = e.kind === "refund" ? -1 : 1;
    total += sign0 * e.amount_minor;
    for (const p of e.paid_by) (spent[p.handle] ??= [0, 0])[0] += sign0 * p.amount_minor;
    for (const x of e.shares) (spent[x.handle] ??= [0, 0])[1] += sign0 * x.amount_minor;
    // A refund: who received it owes it to those whose money it was.
    const sign = e.kind === "refund" ? -1 : 1;
    for (const p of e.paid_by) b[p.handle]! += sign * p.amount_minor;
    for (const x of e.shares) b[x.handle]! -= sign * x.amount_minor;
    expect(e.shares.reduce((a: number, x: any) => a + x.amount_minor, 0)).toBe(e.amount_minor);
  }
  const byMember = (await s.ok("get_spending", { group_id: r.g.group_id, by: "member" }, r.keys[0]!)).currencies[0];
  expect(byMember.total_minor).toBe(total);
  const kept = Object.fromEntries(byMember.rows.map((x: any) => [x.key, [x.paid_minor, x.amount_minor]]));
  for (const [h, v] of Object.entries(spent)) expect(kept[h] ?? [0, 0]).toEqual(v.map((m) => 0 + m));
  for (const [h, v] of Object.entries(kept)) expect(spent[h] ?? [0, 0]).toEqual(v as number[]);
  for (const p of await everything("list_payments", { group_id: r.g.group_id, state: "confirmed" }, r.keys[0]!, "payments")) {
    b[p.from.handle]! += p.amount_minor;
    b[p.to.handle]! -= p.amount_minor;
  }
  return b;
}

async function checkInvariants(r: Real, by: number): Promise<any> {
  const got = await s.ok("get_balances", { group_id: r.g.group_id, by_currency: true }, r.keys[by]!);
  const balances = Object.fromEntries(got.members.map((m: any) => [m.agent.handle, m.balance_minor]));
  expect(Object.values(balances).reduce((a: number, b) => a + (b as number), 0)).toBe(0);
  expect(balances).toEqual(await naiveBalances(r));
  // per currency the nets sum to zero, as given and converted; over the currencies the converted nets are the balances
  const converted: Record<string, number> = Object.fromEntries(r.handles.map((h) => [h, 0]));
  for (const c of got.by_currency) {
    expect(c.members.reduce((a: number, m: any) => a + m.net_minor, 0)).toBe(0);
    expect(c.members.reduce((a: number, m: any) => a + m.converted_minor, 0)).toBe(0);
    for (const m of c.members) {
      expect(m.net_minor).toBe(m.paid_minor - m.owes_minor + m.payments_sent_minor - m.payments_received_minor);
      converted[m.agent.handle]! += m.converted_minor;
    }
  }
  expect(converted).toEqual(balances);
  // settle-up counts every pending payment (all between members) as if confirmed, and names them
  expect(got.settle_up_counts_pending).toEqual(got.pending_payments.map((p: any) => p.payment_id));
  const after = { ...balances };
  for (const p of got.pending_payments) {
    after[p.from.handle] += p.amount_minor;
    after[p.to.handle] -= p.amount_minor;
  }
  const planned = { ...after };
  for (const t of got.settle_up) {
    expect(t.amount_minor).toBeGreaterThan(0);
    after[t.from.handle] += t.amount_minor;
    after[t.to.handle] -= t.amount_minor;
  }
  expect(Object.values(after).every((v) => v === 0)).toBe(true);
  if (r.simplify) {
    expect(got.settle_up_method).toBe("exact");
    expect(got.settle_up.length).toBe(bruteForceFewest(Object.values(planned) as number[]));
  } else {
    expect(got.settle_up_method).toBe("pairwise");
  }
  return got;
}

let runNo = 0;
test("balances always sum to zero, match a naive recomputation, and the settle-up plan zeroes them", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.oneof({ arbitrary: commands[0]!, weight: 3 }, ...commands.slice(1)), { minLength: MIN_STEPS, maxLength: MAX_STEPS }),
      fc.boolean(),
      member,
      async (cmds, simplify, viewer) => {
        const g = await groupWith(
          s,
          Array.from({ length: MEMBERS }, (_, i) => `prop${++runNo}-${i}`),
        );
        const real: Real = { g, handles: g.members.map((m) => m.handle), keys: g.members.map((m) => m.key), simplify };
        if (!simplify) await s.ok("update_group", { group_id: g.group_id, simplify_debts: false }, real.keys[0]!);
        const model: Model = { expenses: [], payments: [] };
        for (const cmd of cmds) {
          if (!cmd.check(model)) continue;
          await cmd.run(model, real);
          await checkInvariants(real, viewer);
        }
        // settle up: each transfer recorded by its payee (confirmed at once), then the pending payments it counted
        // confirmed by their payees, brings everyone to zero
        const plan = await checkInvariants(real, viewer);
        for (const t of plan.settle_up) {
          await s.ok(
            "record_payment",
            { group_id: g.group_id, from: t.from.handle, amount_minor: t.amount_minor, second_payment: true },
            real.keys[real.handles.indexOf(t.to.handle)]!,
          );
        }
        for (const p of plan.pending_payments) {
          await s.ok("respond_payment", { payment_id: p.payment_id, action: "confirm" }, real.keys[real.handles.indexOf(p.to.handle)]!);
        }
        const settled = await checkInvariants(real, viewer);
        expect(settled.members.every((m: any) => m.balance_minor === 0)).toBe(true);
        expect(settled.settle_up).toEqual([]);
      },
    ),
    { numRuns: RUNS },
  );
}, 60_000);

test("a refund is the exact mirror of the same expense: balances, per currency, and settle-up reversed", async () => {
  await fc.assert(
    fc.asyncProperty(expenseArb, member, async (e, by) => {
      const g = await groupWith(
        s,
        Array.from({ length: MEMBERS }, (_, i) => `mirror${++runNo}-${i}`),
      );
      const real: Real = { g, handles: g.members.map((m) => m.handle), keys: g.members.map((m) => m.key), simplify: true };
      const { kind: _, ...args } = expenseArgs(real, e);
      const read = async () => {
        const got = await checkInvariants(real, by);
        const nets = got.by_currency.flatMap((c: any) => c.members.map((m: any) => [c.currency, m.agent.handle, m.net_minor, m.converted_minor]));
        return { balances: got.members.map((m: any) => m.balance_minor), nets, plan: got.settle_up };
      };
      const expense = await addOrRefuse(real, by, args);
      if (!expense) return;
      const asExpense = await read();
      await s.ok("delete_expense", { expense_id: expense.expense_id }, real.keys[by]!);
      const refund = await addOrRefuse(real, by, { ...args, kind: "refund" });
      // The same input, the same amounts and shares: only the direction differs.
      expect(refund).toMatchObject({ kind: "refund", amount_minor: expense.amount_minor, paid_by: expense.paid_by, shares: expense.shares });
      const asRefund = await read();
      expect(asRefund.balances).toEqual(asExpense.balances.map((b: number) => 0 - b));
      expect(asRefund.nets).toEqual(asExpense.nets.map(([c, h, net, conv]: any[]) => [c, h, 0 - net, 0 - conv]));
      expect(asRefund.plan.map((t: any) => [t.to.handle, t.from.handle, t.amount_minor]).sort()).toEqual(
        asExpense.plan.map((t: any) => [t.from.handle, t.to.handle, t.amount_minor]).sort(),
      );
      // Both at once cancel out exactly.
      await s.ok("restore_expense", { expense_id: expense.expense_id }, real.keys[by]!);
      const both = await read();
      expect(both.balances.every((b: number) => b === 0)).toBe(true);
      expect(both.plan).toEqual([]);
    }),
    { numRuns: RUNS },
  );
}, 60_000);
