// Refunds: money that came back, recorded with add_expense kind "refund" (a positive amount) and shown as a refund in
// every answer that shows an expense: the expense itself, its history, the activity log, the inbox, the CSV and `svc`.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { parseCsv } from "../../server/domain/ledger/exchange/csv.ts";
import { CSV_HEADER } from "../../server/domain/ledger/exchange/export.ts";
import { textFor } from "../../cli/answer-text.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, failure, groupWith, inboxItems } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let n = 0;
const trio = () =>
  groupWith(
    s,
    ["a", "b", "c"].map((x) => `refund${++n}-${x}`),
  );

test("a refund moves the balances the other way, and is said to be one everywhere", async () => {
  const g = await trio();
  const [a, b, c] = g.members;
  // a paid the 90.00 deposit for three; a got 60.00 of it back: each is owed 20.00 of it.
  await s.ok("add_expense", { group_id: g.group_id, description: "Deposit", amount: "90.00" }, a!.key);
  const { expense: refund } = await s.ok(
    "add_expense",
    { group_id: g.group_id, description: "Deposit back", amount: "60.00", kind: "refund", notes: "less the cleaning fee" },
    a!.key,
  );
  expect(refund).toMatchObject({ kind: "refund", amount_minor: 6000, paid_by: [{ handle: a!.handle, amount_minor: 6000 }] });
  expect(await balancesOf(s, b!.key, g.group_id)).toEqual({ [a!.handle]: 2000, [b!.handle]: -1000, [c!.handle]: -1000 });

  // Shown as a refund in the list, the history, the activity log and the participants' inbox.
  const listed = (await s.ok("list_expenses", { group_id: g.group_id }, b!.key)).expenses;
  expect(listed.map((e: any) => e.kind)).toEqual(["refund", "expense"]);
  const got = await s.ok("get_expense", { expense_id: refund.expense_id }, c!.key);
  expect(got.history.map((h: any) => h.expense.kind)).toEqual(["refund"]);
  const activity = (await s.ok("get_activity", { group_id: g.group_id }, b!.key)).entries;
  expect(activity[0].summary_md).toContain("added refund “Deposit back”");
  expect(activity[0].summary_md).toContain(`received by @${a!.handle}`);
  const [item] = (await inboxItems(s, b!.key, "ledger.expense_added")).filter((i: any) => i.refs.expense_id === refund.expense_id);
  expect(item.payload.kind).toBe("refund");
  expect(item.summary_md).toContain("added refund “Deposit back”");

  // The CSV says so in its kind column, with the notes.
  const csv = (await s.ok("export_group", { group_id: g.group_id, format: "csv" }, c!.key)).content.untrusted_content;
  const rows = parseCsv(csv).map((x) => x.fields);
  const col = (name: string) => CSV_HEADER.indexOf(name);
  const refundRows = rows.filter((r) => r[1] === refund.expense_id);
  expect(refundRows).toHaveLength(3);
  expect(refundRows.every((r) => r[col("kind")] === "refund" && r[col("notes")] === "less the cleaning fee")).toBe(true);
  expect(rows.filter((r) => r[col("kind")] === "expense")).toHaveLength(3);

  // `svc call` at a terminal says it too.
  const text = textFor("get_expense", "http://x")(got);
  expect(text).toContain("Refund: Deposit back: 60.00 EUR");
  expect(text).toContain(`received by ${a!.handle} 60.00`);
});

test("update_expense turns an expense into a refund and back; deleting a refund takes it out of the balances", async () => {
  const g = await trio();
  const [a, b, c] = g.members;
  const { expense } = await s.ok("add_expense", { group_id: g.group_id, description: "Tickets", amount: "30.00" }, a!.key);
  const flipped = await s.ok("update_expense", { expense_id: expense.expense_id, expected_version: 1, kind: "refund" }, a!.key);
  expect(flipped.changed_fields).toEqual(["kind"]);
  expect(flipped.expense.kind).toBe("refund");
  expect(await balancesOf(s, a!.key, g.group_id)).toEqual({ [a!.handle]: -2000, [b!.handle]: 1000, [c!.handle]: 1000 });
  const activity = (await s.ok("get_activity", { group_id: g.group_id }, b!.key)).entries;
  expect(activity[0].summary_md).toContain("changed refund “Tickets”");
  await s.ok("delete_expense", { expense_id: expense.expense_id }, a!.key);
  expect(Object.values(await balancesOf(s, a!.key, g.group_id))).toEqual([0, 0, 0]);
  await s.ok("restore_expense", { expense_id: expense.expense_id }, a!.key);
  const back = await s.ok("update_expense", { expense_id: expense.expense_id, expected_version: 4, kind: "expense" }, a!.key);
  expect(back.expense.kind).toBe("expense");
  expect(await balancesOf(s, a!.key, g.group_id)).toEqual({ [a!.handle]: 2000, [b!.handle]: -1000, [c!.handle]: -1000 });
  const history = (await s.ok("get_expense", { expense_id: expense.expense_id }, b!.key)).history;
  expect(history.map((h: any) => [h.action, h.expense.kind])).toEqual([
    ["created", "expense"],
    ["updated", "refund"],
    ["deleted", "refund"],
    ["restored", "refund"],
    ["updated", "expense"],
  ]);
  expect((await failure(s, "add_expense", { group_id: g.group_id, description: "x", amount: "1.00", kind: "rebate" }, a!.key)).path).toBe("kind");
});

test("the CSV keeps an amount given in another currency: its currency, amount and rate", async () => {
  const g = await trio();
  const [a] = g.members;
  const { expense } = await s.ok("add_expense", { group_id: g.group_id, description: "Taxi", amount: "12.00", currency: "GBP", exchange_rate: "1.17" }, a!.key);
  const csv = (await s.ok("export_group", { group_id: g.group_id, format: "csv" }, a!.key)).content.untrusted_content;
  const row = parseCsv(csv)
    .map((x) => x.fields)
    .find((r) => r[1] === expense.expense_id)!;
  const col = (name: string) => row[CSV_HEADER.indexOf(name)];
  expect([col("amount"), col("kind"), col("original_currency"), col("original_amount"), col("exchange_rate"), col("notes")]).toEqual([
    "14.04",
    "expense",
    "GBP",
    "12.00",
    "1.17",
    "",
  ]);
});
