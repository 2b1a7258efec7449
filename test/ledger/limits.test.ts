// The ledger's bound on totals (MAX_TOTAL_MINOR, 2^53 - 1 minor units of an agent's open debts per currency across
// their groups): writes that would pass it are refused with a CONFLICT naming it, and no read fails, whatever the
// amounts, even on totals stored past it before the bound existed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import fc from "fast-check";
import { createDueOccurrences } from "../../server/domain/ledger/expenses/recurring.ts";
import { formatAmount, MAX_TOTAL_MINOR } from "../../server/domain/ledger/money/amounts.ts";
import { MAX_MINOR } from "../../server/contract/ledger.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { balancesOf, groupOf, type TestGroup } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const MAX_AMOUNT = "9999999999999.99"; // MAX_MINOR in EUR
let counter = 0;
const prefix = () => `lim${++counter}`;

const write = (tool: string, args: Record<string, unknown>, key: string) => s.call(tool, { idempotency_key: crypto.randomUUID(), ...args }, key);
const expenseTo = (groupId: string, by: Agent, to: Agent, amount: string, extra: Record<string, unknown> = {}) =>
  write(
    "add_expense",
    { group_id: groupId, description: "Big", amount, split: { mode: "exact", among: [{ handle: to.handle, value: amount }] }, ...extra },
    by.key,
  );

/** A refusal for the limit: a CONFLICT whose details name it. */
function expectLimit(r: { status: number; body: any }) {
  expect(r.status).toBe(409);
  expect(r.body.error.code).toBe("CONFLICT");
  expect(r.body.error.details.limit_minor).toBe(MAX_TOTAL_MINOR);
  expect(r.body.error.message).toContain(String(MAX_TOTAL_MINOR));
}

/** Every read that shows a balance answers, for each agent; the group's balances are safe integers summing to zero. */
async function readEverything(agents: Agent[], groups: { group_id: string; members: Agent[] }[]) {
  for (const a of agents) {
    for (const tool of ["get_me", "list_groups", "get_balances"]) {
      const r = await s.call(tool, {}, a.key);
      expect(r.status).toBe(200);
    }
  }
  for (const { group_id: groupId, members } of groups) {
    const key = members[0]!.key;
    const b = await s.call("get_balances", { group_id: groupId }, key);
    expect(b.status).toBe(200);
    const balances = b.body.data.members.map((m: any) => m.balance_minor as number);
    for (const v of balances) expect(Number.isSafeInteger(v)).toBe(true);
    expect(balances.reduce((x: number, y: number) => x + y, 0)).toBe(0);
    expect((await s.call("get_balances", { group_id: groupId, by_currency: true }, key)).status).toBe(200);
    expect((await s.call("get_group", { group_id: groupId }, key)).status).toBe(200);
    expect((await s.call("get_activity", { group_id: groupId }, key)).status).toBe(200);
    for (const format of ["csv", "json"]) expect((await s.call("export_group", { group_id: groupId, format }, key)).status).toBe(200);
  }
}

describe("totals bound", () => {
  test("ten maximal expenses through a direct ledger: the one past the limit is refused, naming it; every read still answers", async () => {
    const p = prefix();
    const [a, b] = await s.contacts(`${p}-a`, `${p}-b`);
    const { group } = await s.ok("open_direct_ledger", { handle: b!.handle, currency: "EUR" }, a.key);
    const accepted = Math.floor(MAX_TOTAL_MINOR / MAX_MINOR); // 9
    for (let i = 0; i < accepted; i++) expect((await expenseTo(group.group_id, a, b!, MAX_AMOUNT)).status).toBe(200);
    expectLimit(await expenseTo(group.group_id, a, b!, MAX_AMOUNT));
    // the other way round it lowers the totals, so it is fine
    expect((await expenseTo(group.group_id, b!, a, MAX_AMOUNT)).status).toBe(200);
    await readEverything([a, b!], [{ group_id: group.group_id, members: [a, b!] }]);
    const me = await s.ok("get_me", {}, b!.key);
    expect(me.groups[0].my_balance_minor).toBe(-(accepted - 1) * MAX_MINOR);
    // a direct ledger cannot be left; the answer is a CONFLICT, not a failure to read
    expect((await write("leave_group", { group_id: group.group_id }, b!.key)).status).toBe(409);
  });

  test("the limit counts an agent's groups of one currency together; another currency is apart", async () => {
    const p = prefix();
    const [a, b, c] = await Promise.all(["a", "b", "c"].map((x) => s.register(`${p}-${x}`)));
    const g1 = await groupOf(s, [a!, b!]);
    const g2 = await groupOf(s, [c!, b!]);
    const usd = await groupOf(s, [a!, b!], "USD");
    for (let i = 0; i < 5; i++) expect((await expenseTo(g1.group_id, a!, b!, MAX_AMOUNT)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await expenseTo(g2.group_id, c!, b!, MAX_AMOUNT)).status).toBe(200);
    // b owes 9 maximal amounts in EUR across two groups: a tenth in either is refused, in USD it is not
    expectLimit(await expenseTo(g2.group_id, c!, b!, MAX_AMOUNT));
    expectLimit(await expenseTo(g1.group_id, a!, b!, MAX_AMOUNT));
    expect((await expenseTo(usd.group_id, a!, b!, MAX_AMOUNT)).status).toBe(200);
    // a confirmed payment (recorded by the payee) lowers b's total; then there is room again
    expect((await write("record_payment", { group_id: g1.group_id, from: b!.handle, amount: MAX_AMOUNT }, a!.key)).status).toBe(200);
    expect((await expenseTo(g2.group_id, c!, b!, MAX_AMOUNT)).status).toBe(200);
    const totals = (await s.ok("get_balances", {}, b!.key)).totals;
    expect(totals).toEqual([
      { currency: "EUR", balance_minor: -9 * MAX_MINOR, balance: "-89999999999999.91 EUR" },
      { currency: "USD", balance_minor: -MAX_MINOR, balance: "-9999999999999.99 USD" },
    ]);
    await readEverything([a!, b!, c!], [g1, g2, usd]);
  });

  test("update_expense is judged on its result; an expense refused for the limit leaves nothing behind", async () => {
    const p = prefix();
    const [a, b] = await Promise.all(["a", "b"].map((x) => s.register(`${p}-${x}`)));
    const g = await groupOf(s, [a!, b!]);
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push((await expenseTo(g.group_id, a!, b!, MAX_AMOUNT)).body.data.expense.expense_id);
    const before = await s.ok("get_balances", { group_id: g.group_id }, a!.key);
    const listed = (await s.ok("list_expenses", { group_id: g.group_id }, a!.key)).expenses.length;
    expectLimit(await expenseTo(g.group_id, a!, b!, MAX_AMOUNT));
    expect((await s.ok("list_expenses", { group_id: g.group_id }, a!.key)).expenses.length).toBe(listed);
    expect(await s.ok("get_balances", { group_id: g.group_id }, a!.key)).toEqual(before);
    // turning one maximal expense round is one change (its old debts out, its new ones in), judged on the result
    const flipped = await write(
      "update_expense",
      {
        expense_id: ids[0],
        expected_version: 1,
        paid_by: [{ handle: b!.handle, amount: MAX_AMOUNT }],
        split: { mode: "exact", among: [{ handle: a!.handle, value: MAX_AMOUNT }] },
      },
      a!.key,
    );
    expect(flipped.status).toBe(200);
    expect((await s.ok("get_balances", { group_id: g.group_id }, a!.key)).members.find((m: any) => m.agent.handle === a!.handle).balance_minor).toBe(
      7 * MAX_MINOR,
    );
  });

  test("deleting an expense or voiding a payment that offset other debts is judged like adding one", async () => {
    const p = prefix();
    const [a, b] = await Promise.all(["a", "b"].map((x) => s.register(`${p}-${x}`)));
    const g = await groupOf(s, [a!, b!]);
    const offset = (await expenseTo(g.group_id, b!, a!, MAX_AMOUNT)).body.data.expense;
    const paid = (await write("record_payment", { group_id: g.group_id, from: b!.handle, amount: MAX_AMOUNT }, a!.key)).body.data.payment;
    // b owes a 11 maximal amounts, less the 2 that offset them: 9, within the limit
    for (let i = 0; i < 11; i++) expect((await expenseTo(g.group_id, a!, b!, MAX_AMOUNT)).status).toBe(200);
    expectLimit(await write("delete_expense", { expense_id: offset.expense_id }, a!.key));
    expectLimit(await write("respond_payment", { payment_id: paid.payment_id, action: "void" }, a!.key));
    expect((await balancesOf(s, a!.key, g.group_id))[a!.handle]).toBe(9 * MAX_MINOR);
    await readEverything([a!, b!], [g]);
  });

  test("a group's whole history may add up past the limit: by_currency still answers, its sums exact in text", async () => {
    const p = prefix();
    const [a, b] = await Promise.all(["a", "b"].map((x) => s.register(`${p}-${x}`)));
    const g = await groupOf(s, [a!, b!]);
    // turn about: the open totals stay at one maximal amount, what each paid grows past 2^53
    for (let i = 0; i < 20; i++) expect((await expenseTo(g.group_id, i % 2 ? b! : a!, i % 2 ? a! : b!, MAX_AMOUNT)).status).toBe(200);
    const r = await s.call("get_balances", { group_id: g.group_id, by_currency: true }, a!.key);
    expect(r.status).toBe(200);
    const mine = r.body.data.by_currency[0].members.find((m: any) => m.agent.handle === a!.handle);
    expect(mine.paid_minor).toBe(MAX_TOTAL_MINOR);
    expect(mine.paid).toBe("99999999999999.90");
    expect(mine.net_minor).toBe(0);
    await readEverything([a!, b!], [g]);
  });

  test("a recurring series whose next occurrence would pass the limit ends instead of failing every run", async () => {
    const p = prefix();
    const [a, b] = await Promise.all(["a", "b"].map((x) => s.register(`${p}-${x}`)));
    const g = await groupOf(s, [a!, b!]);
    for (let i = 0; i < 8; i++) await expenseTo(g.group_id, a!, b!, MAX_AMOUNT);
    const today = s.clock.now().toISOString().slice(0, 10);
    const series = (await expenseTo(g.group_id, a!, b!, MAX_AMOUNT, { repeat: "weekly", date: today })).body.data.expense;
    s.clock.advance(8 * 86_400_000);
    expect(await s.server.db.tx((tx) => createDueOccurrences(tx, s.clock.now()))).toBe(0);
    expect((await s.ok("get_expense", { expense_id: series.expense_id }, a!.key)).expense.next_occurrence).toBeNull();
    const [last] = (await s.ok("get_activity", { group_id: g.group_id, limit: 1 }, a!.key)).entries;
    expect(last.action).toBe("recurring_stopped");
  });

  test("totals stored past the limit before it existed are read, not failed on; a change that lowers them is allowed", async () => {
    const p = prefix();
    const [a, b] = await Promise.all(["a", "b"].map((x) => s.register(`${p}-${x}`)));
    const g = await groupOf(s, [a!, b!]);
    const e = (await expenseTo(g.group_id, a!, b!, MAX_AMOUNT)).body.data.expense;
    // what ten maximal expenses left in the pair ledger before the bound: 10^17 - 10, past 2^53
    const stored = 10n * BigInt(MAX_MINOR);
    await s.server.db.tx((tx) => tx.run(sql`UPDATE ledger_pairs SET low_owes_minor = low_owes_minor * 10 WHERE group_id = ${g.group_id}`));
    const r = await s.call("get_balances", { group_id: g.group_id }, b!.key);
    expect(r.status).toBe(200);
    const mine = r.body.data.members.find((m: any) => m.agent.handle === b!.handle);
    expect(mine.balance_minor).toBe(-MAX_TOTAL_MINOR);
    expect(mine.balance).toBe(`-${stored / 100n}.${String(stored % 100n).padStart(2, "0")} EUR`);
    expect(r.body.data.settle_up[0].amount_minor).toBe(MAX_TOTAL_MINOR);
    await readEverything([a!, b!], [g]);
    expectLimit(await expenseTo(g.group_id, a!, b!, "1.00"));
    expect((await write("delete_expense", { expense_id: e.expense_id }, a!.key)).status).toBe(200);
    expect((await expenseTo(g.group_id, b!, a!, "1.00")).status).toBe(200);
  });
});

describe("property: extreme amounts never break a read", () => {
  const RUNS = 10;
  const big = fc.oneof(
    { arbitrary: fc.constant(MAX_MINOR), weight: 4 },
    { arbitrary: fc.integer({ min: MAX_MINOR - 1000, max: MAX_MINOR }), weight: 2 },
    { arbitrary: fc.integer({ min: 1, max: MAX_MINOR }), weight: 1 },
    { arbitrary: fc.integer({ min: 1, max: 10_000 }), weight: 1 },
  );
  const who = fc.integer({ min: 0, max: 2 });
  const group = fc.integer({ min: 0, max: 1 });
  const op = fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant("expense" as const), group, by: who, to: who, amount: big, equal: fc.boolean() }), weight: 6 },
    { arbitrary: fc.record({ kind: fc.constant("payment" as const), group, by: who, to: who, amount: big }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant("void" as const), pick: fc.nat() }), weight: 1 },
  );

  /** Each member's balance recomputed from the group's live expenses and confirmed payments, exactly. */
  async function ledgerBalances(g: TestGroup): Promise<Record<string, number>> {
    const key = g.members[0]!.key;
    const net = new Map<string, bigint>(g.members.map((m) => [m.handle, 0n]));
    const add = (h: string, v: number) => net.set(h, net.get(h)! + BigInt(v));
    for (const e of (await s.ok("list_expenses", { group_id: g.group_id, limit: 100 }, key)).expenses) {
      for (const p of e.paid_by) add(p.handle, p.amount_minor);
      for (const sh of e.shares) add(sh.handle, -sh.amount_minor);
    }
    for (const p of (await s.ok("list_payments", { group_id: g.group_id, state: "confirmed", limit: 100 }, key)).payments) {
      add(p.from.handle, p.amount_minor);
      add(p.to.handle, -p.amount_minor);
    }
    return Object.fromEntries([...net].map(([h, v]) => [h, Number(v)]));
  }

  test("random maximal expenses, payments, deletes and voids over two groups: writes answer 200 or the limit's CONFLICT; balances stay exact", async () => {
    let refused = 0;
    await fc.assert(
      // first `near` maximal expenses of a's to b, so that the random ones play around the limit
      fc.asyncProperty(fc.integer({ min: 5, max: 9 }), fc.array(op, { minLength: 6, maxLength: 14 }), async (near, ops) => {
        const p = prefix();
        const people = await Promise.all(["a", "b", "c"].map((x) => s.register(`${p}-${x}`)));
        const groups = [await groupOf(s, people), await groupOf(s, [people[1]!, people[2]!, people[0]!])];
        for (let i = 0; i < near; i++) await expenseTo(groups[0]!.group_id, people[0]!, people[1]!, MAX_AMOUNT);
        const live: { id: string; by: Agent }[] = [];
        const confirmed: { id: string; by: Agent }[] = [];
        for (const o of ops) {
          let r: { status: number; body: any };
          if (o.kind === "delete" || o.kind === "void") {
            const list = o.kind === "delete" ? live : confirmed;
            if (!list.length) continue;
            const [e] = list.splice(o.pick % list.length, 1);
            r =
              o.kind === "delete"
                ? await write("delete_expense", { expense_id: e!.id }, e!.by.key)
                : await write("respond_payment", { payment_id: e!.id, action: "void" }, e!.by.key);
            if (r.status !== 200) list.push(e!);
          } else {
            const g = groups[o.group]!;
            const by = people[o.by]!;
            const to = people[o.to === o.by ? (o.to + 1) % 3 : o.to]!;
            if (o.kind === "expense") {
              // equal among all three (the default), or all of it to one other member
              const split = o.equal ? {} : { split: { mode: "exact", among: [{ handle: to.handle, value: formatAmount(o.amount, "EUR") }] } };
              r = await write("add_expense", { group_id: g.group_id, description: "Big", amount_minor: o.amount, ...split }, by.key);
              if (r.status === 200) live.push({ id: r.body.data.expense.expense_id, by });
            } else {
              // recorded by the payee: confirmed at once
              r = await write("record_payment", { group_id: g.group_id, from: by.handle, amount_minor: o.amount }, to.key);
              if (r.status === 200) confirmed.push({ id: r.body.data.payment.payment_id, by: to });
            }
          }
          if (r.status !== 200) {
            expectLimit(r);
            refused++;
          }
          await readEverything(people, groups);
        }
        for (const g of groups) expect(await balancesOf(s, g.members[0]!.key, g.group_id)).toEqual(await ledgerBalances(g));
        // every agent's total over both groups is within the bound
        for (const a of people) {
          let total = 0n;
          for (const g of groups) total += BigInt(Math.abs((await balancesOf(s, a.key, g.group_id))[a.handle]!));
          expect(total <= BigInt(MAX_TOTAL_MINOR)).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
    // the runs reached the limit, or they proved little
    expect(refused).toBeGreaterThan(0);
  }, 120_000);
});
