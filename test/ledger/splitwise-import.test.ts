import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseCsv } from "../../server/domain/ledger/csv.ts";
import { parseNameMap, parseSplitwise } from "../../server/domain/ledger/splitwise-import.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, groupWith } from "./ledger-fixtures.ts";

const FIXTURE = join(import.meta.dir, "fixtures", "splitwise.csv");
const fixture = () => Bun.file(FIXTURE).text();
const NAMES = new Map([
  ["Alice Smith", "alice"],
  ["Bob", "bob"],
  ["Carol", "carol"],
]);
const HEADER = "Date,Description,Category,Cost,Currency,Alice Smith,Bob,Carol";
const problemsOf = (rows: string[], names = NAMES, currency = "EUR") => parseSplitwise([HEADER, ...rows].join("\n"), names, currency).problems;

describe("parseCsv", () => {
  test("quoted fields with commas, doubled quotes and line breaks; CRLF or LF; a byte order mark; the line each row starts on", () => {
    expect(parseCsv('\ufeffa,"b,1","c ""q"""\r\n"multi\nline",x,\n\nlast')).toEqual([
      { line: 1, fields: ["a", "b,1", 'c "q"'] },
      { line: 2, fields: ["multi\nline", "x", ""] },
      { line: 4, fields: [""] },
      { line: 5, fields: ["last"] },
    ]);
    expect(() => parseCsv('a,"open')).toThrow("never closed");
  });
});

describe("parseSplitwise", () => {
  test("the fixture: expenses with payers and shares rebuilt from the nets, a payment, a row moving no money skipped", async () => {
    const { plan, problems } = parseSplitwise(await fixture(), NAMES, "EUR");
    expect(problems).toEqual([]);
    expect(plan.expenses).toEqual([
      {
        line: 2,
        date: "2026-10-01",
        description: "Groceries",
        category: "groceries",
        amountMinor: 3000,
        paidBy: [{ handle: "alice", amount_minor: 3000 }],
        shares: [
          { handle: "alice", amount_minor: 1000 },
          { handle: "bob", amount_minor: 1000 },
          { handle: "carol", amount_minor: 1000 },
        ],
      },
      {
        line: 3,
        date: "2026-10-02",
        description: 'Dinner, with "wine"',
        category: "food",
        amountMinor: 4500,
        paidBy: [{ handle: "bob", amount_minor: 4500 }],
        shares: [
          { handle: "bob", amount_minor: 1500 },
          { handle: "alice", amount_minor: 1500 },
          { handle: "carol", amount_minor: 1500 },
        ],
      },
      {
        line: 4,
        date: "2026-10-03",
        description: "Taxi",
        category: "transport",
        amountMinor: 1200,
        paidBy: [
          { handle: "alice", amount_minor: 600 },
          { handle: "bob", amount_minor: 600 },
        ],
        shares: [
          { handle: "alice", amount_minor: 200 },
          { handle: "bob", amount_minor: 200 },
          { handle: "carol", amount_minor: 800 },
        ],
      },
    ]);
    expect(plan.payments).toEqual([{ line: 5, date: "2026-10-04", description: "Bob paid Alice Smith", from: "bob", to: "alice", amountMinor: 1000 }]);
    expect(plan.skipped).toEqual([{ line: 6, reason: "\"Alice's own lunch\" moves no money between people (everyone's amount is zero)" }]);
  });

  test("every problem is reported with its line", () => {
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,EUR,20.00,-10.00,-9.00"])).toEqual([
      "line 2: the people's amounts sum to 1.00 EUR, not zero (Alice Smith 20.00, Bob -10.00, Carol -9.00)",
    ]);
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,USD,20.00,-10.00,-10.00"])[0]).toContain("line 2: the currency USD is not the group's EUR");
    expect(problemsOf(["2026-10-01,Lunch,General,10.00,EUR,20.00,-10.00,-10.00"])[0]).toBe(
      "line 2: the people's debts (20.00 EUR) are more than the cost (10.00 EUR)",
    );
    expect(problemsOf(["2026-10-01,Lunch,General,abc,EUR,20.00,-10.00,-10.00"])[0]).toStartWith('line 2: Cost "abc" is not an amount in EUR');
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,EUR,20.001,-10.00,-10.00"])[0]).toStartWith('line 2: Alice Smith "20.001" is not an amount in EUR');
    expect(problemsOf(["01/10/2026,Lunch,General,30.00,EUR,20.00,-10.00,-10.00"])[0]).toBe('line 2: the date "01/10/2026" is not a date YYYY-MM-DD');
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,EUR,20.00,-10.00"])[0]).toBe("line 2: 7 fields, but the header has 8");
    expect(problemsOf(["2026-10-01,Split,Payment,10.00,EUR,5.00,5.00,-10.00"])[0]).toBe(
      "line 2: a payment needs exactly one person paying (positive) and one paid (negative)",
    );
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,EUR,20.00,-10.00,-10.00", "2026-10-02,Lunch,General,30.00,EUR,20.00,-10.00,-9.00"])).toHaveLength(1);
  });

  test("unmapped names, names mapped that are not columns, and a wrong header are refused", () => {
    const names = new Map([
      ["Alice Smith", "alice"],
      ["Bobby", "bob"],
      ["Carol", "carol"],
    ]);
    expect(problemsOf([], names)).toEqual([
      'line 1: the column "Bob" is not mapped to a handle; add Bob=<handle> to --map',
      '--map: "Bobby" is not a column of the file (columns: Alice Smith, Bob, Carol)',
    ]);
    expect(parseSplitwise("Date,Cost,Alice\n", NAMES, "EUR").problems[0]).toStartWith("line 1: expected the header Date,Description,Category,Cost,Currency");
  });

  test("--map parsing", () => {
    expect([...parseNameMap("Alice Smith=alice, Bob=@bob-2")]).toEqual([
      ["Alice Smith", "alice"],
      ["Bob", "bob-2"],
    ]);
    expect(() => parseNameMap("Alice")).toThrow("is not Name=handle");
    expect(() => parseNameMap("Alice=Not A Handle")).toThrow("is not Name=handle");
    expect(() => parseNameMap("A=abc,A=abd")).toThrow("mapped twice");
    expect(() => parseNameMap(" , ")).toThrow("at least one");
  });
});

describe("svc import splitwise (the command, against a server's database)", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  const run = (args: string[]) => {
    const p = Bun.spawnSync([
      "bun",
      "run",
      join(import.meta.dir, "../../cli/main.ts"),
      "import",
      "splitwise",
      ...args,
      "--db",
      `file:${join(s.dir, "svc.db")}`,
    ]);
    return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
  };

  test("imports expenses and payments, refuses the same file twice and a file that does not balance", async () => {
    const g = await groupWith(s, ["sw-alice", "sw-bob", "sw-carol"]);
    const [alice, bob, carol] = g.members;
    const map = "Alice Smith=sw-alice,Bob=sw-bob,Carol=sw-carol";

    const bad = join(s.dir, "bad.csv");
    writeFileSync(bad, `${HEADER}\n2026-10-01,Lunch,General,30.00,EUR,20.00,-10.00,-9.00\n2026-10-02,Cab,Taxi,5.00,EUR,5.00,-5.00,0.00\n`);
    const refused = run([bad, "--group", g.group_id, "--map", map]);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("not imported: 1 problem");
    expect(refused.err).toContain("line 2: the people's amounts sum to 1.00 EUR, not zero");
    expect((await s.ok("list_expenses", { group_id: g.group_id }, alice!.key)).expenses).toEqual([]);

    const first = run([FIXTURE, "--group", g.group_id, "--map", map]);
    expect(first.err).toBe("");
    expect(first.code).toBe(0);
    expect(first.out).toContain("Imported 3 expenses and 1 payment into group");
    expect(first.out).toContain("skipped line 6");

    expect(await balancesOf(s, bob!.key, g.group_id)).toEqual({ "sw-alice": -100, "sw-bob": 3400, "sw-carol": -3300 });
    const expenses = (await s.ok("list_expenses", { group_id: g.group_id }, carol!.key)).expenses;
    expect(expenses.map((e: any) => [e.date, e.description.untrusted_content, e.amount, e.category])).toEqual([
      ["2026-10-03", "Taxi", "12.00", "transport"],
      ["2026-10-02", 'Dinner, with "wine"', "45.00", "food"],
      ["2026-10-01", "Groceries", "30.00", "groceries"],
    ]);
    expect(expenses[0].refs.splitwise_line).toBe("4");
    const payments = (await s.ok("list_payments", { group_id: g.group_id }, alice!.key)).payments;
    expect(payments.map((p: any) => [p.from.handle, p.to.handle, p.amount, p.state])).toEqual([["sw-bob", "sw-alice", "10.00", "confirmed"]]);
    const activity = (await s.ok("get_activity", { group_id: g.group_id, limit: 1 }, alice!.key)).entries[0];
    expect(activity.action).toBe("splitwise_imported");
    // imported history tells no one
    expect((await s.ok("get_inbox", { since: "0", include_seen: true }, carol!.key)).items.filter((i: any) => i.app === "ledger")).toEqual([]);

    const again = run([FIXTURE, "--group", g.group_id, "--map", map]);
    expect(again.code).toBe(5);
    expect(again.err).toContain("already imported");

    const notMember = run([FIXTURE, "--group", g.group_id, "--map", "Alice Smith=sw-alice,Bob=sw-bob,Carol=sw-nobody"]);
    expect(notMember.code).toBe(2);
    expect(notMember.err).toContain("@sw-nobody is not a member of the group");
    const noGroup = run([FIXTURE, "--group", crypto.randomUUID(), "--map", map]);
    expect(noGroup.code).toBe(4);
  }, 30_000);
});
