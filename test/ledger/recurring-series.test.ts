// Recurring expenses that stop: an end date, list_recurring and stop_recurring, and a bound on catch-up.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { DAY } from "../../server/clock.ts";
import { createDueOccurrences } from "../../server/domain/ledger/expenses/recurring.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { failure, groupWith } from "./ledger-fixtures.ts";

// Each test moves the clock: each has its own server, starting on 2026-11-22.
let s: TestServer;
beforeEach(async () => {
  s = await startTestServer();
});
afterEach(() => s.stop());

const runJob = () => s.server.db.tx((tx) => createDueOccurrences(tx, s.clock.now()));
const occurrences = async (key: string, groupId: string, seriesId: string) =>
  (await s.ok("list_expenses", { group_id: groupId, limit: 100 }, key)).expenses
    .filter((e: any) => e.refs.recurring_of === seriesId)
    .map((e: any) => e.date)
    .sort();

test("repeat_until ends a series on its date; the expense shows it", async () => {
  const g = await groupWith(s, ["ru-a", "ru-b"]);
  const [a] = g.members;
  const { expense } = await s.ok(
    "add_expense",
    { group_id: g.group_id, description: "Gym", amount: "20.00", repeat: "weekly", repeat_until: "2026-12-06" },
    a!.key,
  );
  expect(expense.repeat_until).toBe("2026-12-06");
  s.clock.advance(60 * DAY);
  await runJob();
  expect(await occurrences(a!.key, g.group_id, expense.expense_id)).toEqual(["2026-11-29", "2026-12-06"]);
  expect((await s.ok("get_expense", { expense_id: expense.expense_id }, a!.key)).expense.next_occurrence).toBeNull();
  // an end before the start, or without a repeat, is refused
  expect(
    (await failure(s, "add_expense", { group_id: g.group_id, description: "X", amount: "1.00", repeat: "weekly", repeat_until: "2026-01-01" }, a!.key)).path,
  ).toBe("repeat_until");
  expect((await failure(s, "add_expense", { group_id: g.group_id, description: "X", amount: "1.00", repeat_until: "2027-01-01" }, a!.key)).path).toBe(
    "repeat_until",
  );
});

test("a back-dated series says how many past occurrences it makes, and past 52 is refused with the number", async () => {
  const g = await groupWith(s, ["cu-a", "cu-b"]);
  const [a] = g.members;
  const ok = await s.ok("add_expense", { group_id: g.group_id, description: "Rent", amount: "500.00", repeat: "monthly", date: "2026-06-22" }, a!.key);
  expect(ok.past_occurrences).toBe(5);
  expect(await runJob()).toBe(5);
  const refused = await failure(
    s,
    "add_expense",
    { group_id: g.group_id, description: "Coffee", amount: "3.00", repeat: "weekly", date: "2019-01-01" },
    a!.key,
  );
  expect(refused.code).toBe("VALIDATION_ERROR");
  expect(refused.path).toBe("date");
  expect(refused.message).toContain("would add 411 past occurrences");
  // the same series with an end close enough is taken
  const bounded = await s.ok(
    "add_expense",
    { group_id: g.group_id, description: "Coffee", amount: "3.00", repeat: "weekly", date: "2019-01-01", repeat_until: "2019-06-30" },
    a!.key,
  );
  expect(bounded.past_occurrences).toBe(25);
  expect(bounded.expense.next_occurrence).toBe("2019-01-08");
  // moving back the date of a series that made nothing yet is bounded alike
  const fresh = await s.ok("add_expense", { group_id: g.group_id, description: "Gym", amount: "20.00", repeat: "weekly" }, a!.key);
  const moved = await failure(s, "update_expense", { expense_id: fresh.expense.expense_id, expected_version: 1, date: "2016-01-01" }, a!.key);
  expect(moved.message).toContain("past occurrences");
  // an ordinary expense makes none
  expect((await s.ok("add_expense", { group_id: g.group_id, description: "Lunch", amount: "9.00" }, a!.key)).past_occurrences).toBe(0);
});

test("list_recurring lists the active series; stop_recurring ends one and keeps what it made", async () => {
  const g = await groupWith(s, ["ls-a", "ls-b"]);
  const [a, b] = g.members;
  const add = async (description: string, repeat: string) =>
    (await s.ok("add_expense", { group_id: g.group_id, description, amount: "10.00", repeat }, a!.key)).expense.expense_id;
  const weekly = await add("Cleaner", "weekly");
  const monthly = await add("Internet", "monthly");
  await add("Once", "none");
  const listed = await s.ok("list_recurring", { group_id: g.group_id }, b!.key);
  expect(listed.expenses.map((e: any) => e.expense_id)).toEqual([weekly, monthly]);

  s.clock.advance(15 * DAY);
  await runJob();
  expect(await occurrences(a!.key, g.group_id, weekly)).toEqual(["2026-11-29", "2026-12-06"]);
  const stopped = await s.ok("stop_recurring", { expense_id: weekly }, b!.key);
  expect(stopped.expense.repeat_until).toBe("2026-12-06");
  expect(stopped.expense.next_occurrence).toBeNull();
  expect((await s.ok("list_recurring", { group_id: g.group_id }, a!.key)).expenses.map((e: any) => e.expense_id)).toEqual([monthly]);
  s.clock.advance(30 * DAY);
  await runJob();
  expect(await occurrences(a!.key, g.group_id, weekly)).toEqual(["2026-11-29", "2026-12-06"]);
  // stopped already: CONFLICT; someone outside the group learns nothing
  expect((await failure(s, "stop_recurring", { expense_id: weekly }, a!.key)).code).toBe("CONFLICT");
  const stranger = await s.register("ls-x");
  expect((await failure(s, "stop_recurring", { expense_id: monthly }, stranger.key)).code).toBe("NOT_FOUND");
  expect((await failure(s, "list_recurring", { group_id: g.group_id }, stranger.key)).code).toBe("NOT_FOUND");
});
