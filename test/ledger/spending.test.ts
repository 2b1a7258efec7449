// get_spending: totals by category, month or member over a date range, for one group or all of a member's groups
// (one total per currency); refunds count against the spending, deleted expenses and payments not at all.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { textFor } from "../../cli/answer-text.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { failure, groupOf, groupWith } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let n = 0;
const rows = (answer: any, i = 0) => answer.currencies[i].rows.map((r: any) => [r.key, r.amount, r.count]);

test("by category, month and member, refunds subtracted, deleted expenses and payments left out", async () => {
  const g = await groupWith(
    s,
    ["a", "b", "c"].map((x) => `spend${++n}-${x}`),
  );
  const [a, b, c] = g.members;
  const add = (key: string, args: Record<string, unknown>) => s.ok("add_expense", { group_id: g.group_id, description: "x", ...args }, key);
  await add(a!.key, { amount: "90.00", category: "lodging", date: "2026-07-30" });
  await add(b!.key, { amount: "30.00", category: "food", date: "2026-08-02" });
  await add(b!.key, { amount: "12.00", category: "food", date: "2026-08-03", split: { mode: "equal", among: [{ handle: c!.handle }] } });
  await add(a!.key, { amount: "30.00", category: "lodging", date: "2026-08-10", kind: "refund" });
  const gone = (await add(c!.key, { amount: "500.00", category: "shopping", date: "2026-08-04" })).expense;
  await s.ok("delete_expense", { expense_id: gone.expense_id }, c!.key);
  await s.ok("record_payment", { group_id: g.group_id, to: a!.handle, amount: "10.00" }, c!.key);

  const byCategory = await s.ok("get_spending", { group_id: g.group_id }, c!.key);
  expect(byCategory).toMatchObject({ group_id: g.group_id, by: "category", since_date: null, until_date: null });
  expect(byCategory.currencies).toHaveLength(1);
  expect(byCategory.currencies[0]).toMatchObject({ currency: "EUR", total_minor: 10200, total: "102.00", count: 4 });
  expect(byCategory.currencies[0].groups).toEqual([{ group_id: g.group_id, name: "Trip" }]);
  expect(rows(byCategory)).toEqual([
    ["lodging", "60.00", 2],
    ["food", "42.00", 2],
  ]);

  const byMonth = await s.ok("get_spending", { group_id: g.group_id, by: "month" }, a!.key);
  expect(rows(byMonth)).toEqual([
    ["2026-07", "90.00", 1],
    ["2026-08", "12.00", 3],
  ]);

  // a paid 90 and got 30 back, b paid 42; shares: a 30+10-10, b 30+10-10, c 30+10+12-10. Largest payer first.
  const byMember = await s.ok("get_spending", { group_id: g.group_id, by: "member" }, b!.key);
  expect(byMember.currencies[0]).toMatchObject({ total_minor: 10200, count: 4 });
  expect(byMember.currencies[0].rows.map((r: any) => [r.key, r.agent.handle, r.paid, r.amount, r.count])).toEqual([
    [a!.handle, a!.handle, "60.00", "30.00", 3],
    [b!.handle, b!.handle, "42.00", "30.00", 4],
    [c!.handle, c!.handle, "0.00", "42.00", 4],
  ]);

  // A date range, inclusive; changing an expense's category or date moves it.
  const august = await s.ok("get_spending", { group_id: g.group_id, since_date: "2026-08-01", until_date: "2026-08-03" }, a!.key);
  expect(rows(august)).toEqual([["food", "42.00", 2]]);
  const list = (await s.ok("list_expenses", { group_id: g.group_id, since_date: "2026-08-03", until_date: "2026-08-03" }, a!.key)).expenses;
  await s.ok("update_expense", { expense_id: list[0].expense_id, expected_version: 1, category: "groceries", date: "2026-08-01" }, b!.key);
  const moved = await s.ok("get_spending", { group_id: g.group_id, since_date: "2026-08-01", until_date: "2026-08-02" }, a!.key);
  expect(rows(moved)).toEqual([
    ["food", "30.00", 1],
    ["groceries", "12.00", 1],
  ]);

  // `svc call` at a terminal.
  const text = textFor("get_spending", "http://x")(byMember);
  expect(text).toContain("Spending by member in EUR: 102.00 over 4 expenses");
  expect(text).toContain(`${a!.handle}: paid 60.00, share 30.00`);
});

test("without group_id: all the caller's groups, one total per currency", async () => {
  const [a, b] = [await s.register(`spend${++n}-a`), await s.register(`spend${n}-b`)];
  const eur1 = await groupOf(s, [a, b], "EUR", "Flat");
  const eur2 = await groupOf(s, [a, b], "EUR", "Trip");
  const jpy = await groupOf(s, [a], "JPY", "Tokyo");
  const other = await groupOf(s, [b], "EUR", "Not a's");
  await s.ok("add_expense", { group_id: eur1.group_id, description: "x", amount: "10.00", category: "rent" }, a.key);
  await s.ok("add_expense", { group_id: eur2.group_id, description: "x", amount: "5.00", category: "rent" }, b.key);
  await s.ok("add_expense", { group_id: jpy.group_id, description: "x", amount: "3000", category: "food" }, a.key);
  await s.ok("add_expense", { group_id: other.group_id, description: "x", amount: "99.00", category: "rent" }, b.key);
  const all = await s.ok("get_spending", {}, a.key);
  expect(all.group_id).toBeUndefined();
  expect(all.currencies.map((c: any) => [c.currency, c.total, c.groups.map((g: any) => g.name)])).toEqual([
    ["EUR", "15.00", ["Flat", "Trip"]],
    ["JPY", "3000", ["Tokyo"]],
  ]);
  expect(rows(all)).toEqual([["rent", "15.00", 2]]);
});

test("errors: a group the caller is not in is NOT_FOUND; a range ending before it starts and an unknown grouping are refused", async () => {
  const g = await groupWith(s, [`spend${++n}-a`]);
  const outsider = await s.register(`spend${n}-z`);
  expect((await failure(s, "get_spending", { group_id: g.group_id }, outsider.key)).code).toBe("NOT_FOUND");
  const key = g.members[0]!.key;
  expect((await failure(s, "get_spending", { group_id: g.group_id, since_date: "2026-09-01", until_date: "2026-08-01" }, key)).path).toBe("until_date");
  expect((await failure(s, "get_spending", { group_id: g.group_id, by: "week" }, key)).path).toBe("by");
  expect((await s.ok("get_spending", { group_id: g.group_id }, key)).currencies).toEqual([
    { currency: "EUR", groups: [{ group_id: g.group_id, name: "Trip" }], total_minor: 0, total: "0.00", count: 0, rows: [] },
  ]);
});
