import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseCsv } from "../../server/domain/ledger/exchange/csv.ts";
import { parseSplitwise as parseFile, type SplitwiseExpense } from "../../server/domain/ledger/exchange/splitwise-import.ts";
import { parseNameMap, parseRate, problemText } from "../../cli/commands/import.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, groupWith } from "./ledger-fixtures.ts";

const FIXTURE = join(import.meta.dir, "fixtures", "splitwise.csv");
const fixture = () => Bun.file(FIXTURE).text();
// A real export's shape: a blank line after the header, EUR and GBP rows, a dated Total balance row per currency.
const TRIP = join(import.meta.dir, "fixtures", "splitwise-trip.csv");
/** A trip with Dana, who has no account: mapped to a new placeholder member ("Dana=+Dana"). */
const DANA = join(import.meta.dir, "fixtures", "splitwise-dana.csv");
const trip = () => Bun.file(TRIP).text();
const TRIP_NAMES = new Map([
  ["Alice Smith", "alice"],
  ["Bob", "bob"],
  ["Chen, Li", "chen"],
  ["Zoë Müller", "zoe"],
]);
const NAMES = new Map([
  ["Alice Smith", "alice"],
  ["Bob", "bob"],
  ["Carol", "carol"],
]);
const HEADER = "Date,Description,Category,Cost,Currency,Alice Smith,Bob,Carol";
/** Amounts by handle, in the order the import lists them: one row of a table stays on one line. */
type Amounts = Record<string, number>;
const byHandle = (amounts: Amounts) => Object.entries(amounts).map(([handle, amount_minor]) => ({ handle, amount_minor }));
/** The domain's parse, its problems as the CLI words them (naming --map and --rate where the fix is a flag). */
const parseSplitwise = (...args: Parameters<typeof parseFile>) => {
  const parsed = parseFile(...args);
  return { ...parsed, problems: parsed.problems.map(problemText) };
};
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
    // line, date, description, category, amount, who paid, whose share
    const expected: [number, string, string, SplitwiseExpense["category"], number, Amounts, Amounts][] = [
      [2, "2026-10-01", "Groceries", "groceries", 3000, { alice: 3000 }, { alice: 1000, bob: 1000, carol: 1000 }],
      [3, "2026-10-02", 'Dinner, with "wine"', "food", 4500, { bob: 4500 }, { bob: 1500, alice: 1500, carol: 1500 }],
      [4, "2026-10-03", "Taxi", "transport", 1200, { alice: 600, bob: 600 }, { alice: 200, bob: 200, carol: 800 }],
    ];
    expect(plan.expenses).toEqual(
      expected.map(([line, date, description, category, amountMinor, paid, shares]) => ({
        line,
        date,
        description,
        category,
        currency: "EUR",
        amountMinor,
        paidBy: byHandle(paid),
        shares: byHandle(shares),
      })),
    );
    expect(plan.payments).toEqual([
      { line: 5, date: "2026-10-04", description: "Bob paid Alice Smith", currency: "EUR", from: "bob", to: "alice", amountMinor: 1000 },
    ]);
    expect(plan.skipped).toEqual([{ line: 6, reason: "\"Alice's own lunch\" (8.00 EUR) moves no money between people (everyone's amount is zero)" }]);
    expect(plan.skippedTotals).toEqual(new Map([["EUR", 800n]]));
  });

  test("a real export: two currencies converted at their rates, quoted and UTF-8 names, several payers, dated Total balance rows checked and skipped", async () => {
    const { plan, problems } = parseSplitwise(await trip(), TRIP_NAMES, "EUR", new Map([["GBP", "1.17"]]));
    expect(problems).toEqual([]);
    // line, description, currency, amount, who paid, whose share
    const expected: [number, string, string, number, Amounts, Amounts][] = [
      [3, "Flights, Lisbon", "EUR", 40000, { alice: 40000 }, { alice: 10000, bob: 10000, chen: 10000, zoe: 10000 }],
      [4, "Hotel", "EUR", 36000, { alice: 22000, bob: 14000 }, { alice: 11000, bob: 7000, chen: 9000, zoe: 9000 }],
      [5, "Fish & chips", "GBP", 4800, { chen: 4800 }, { chen: 1200, alice: 1200, bob: 1200, zoe: 1200 }],
      [6, "Museum", "GBP", 3000, { zoe: 3000 }, { zoe: 1000, alice: 1000, bob: 1000 }],
    ];
    expect(plan.expenses.map((e) => [e.line, e.description, e.currency, e.amountMinor, e.paidBy, e.shares])).toEqual(
      expected.map(([line, description, currency, amount, paid, shares]) => [line, description, currency, amount, byHandle(paid), byHandle(shares)]),
    );
    expect(plan.payments).toEqual([
      { line: 7, date: "2026-08-06", description: "Zoë M. paid Alice S.", currency: "EUR", from: "zoe", to: "alice", amountMinor: 5000 },
      { line: 8, date: "2026-08-07", description: "Bob paid Chen, L.", currency: "GBP", from: "bob", to: "chen", amountMinor: 2200 },
    ]);
    expect(plan.skipped.map((x) => x.line)).toEqual([9, 10]);
    expect(plan.skippedTotals).toEqual(
      new Map([
        ["EUR", 1500n],
        ["GBP", 350n],
      ]),
    );
  });

  test("a currency without its rate, and bad rates, are refused", async () => {
    expect(parseSplitwise(await trip(), TRIP_NAMES, "EUR").problems).toEqual([
      "lines 5, 6, 8: in GBP, not the group's EUR; give the rate with --rate GBP=<EUR per 1 GBP>",
    ]);
    const rated = (rates: [string, string][]) => parseSplitwise(FIXTURE_TEXT, NAMES, "EUR", new Map(rates)).problems;
    const FIXTURE_TEXT = await fixture();
    expect(rated([["GBP", "0"]])).toEqual(["--rate GBP=0: must be greater than zero"]);
    expect(rated([["GBP", "1,17"]])).toEqual(['--rate GBP=1,17: must be a decimal string such as "12.33"']);
    expect(rated([["EUR", "1"]])).toEqual(["--rate EUR=1: EUR is the group's own currency"]);
    expect(rated([["ABC", "1"]])).toEqual(['--rate ABC=1: unknown currency "ABC": use an ISO 4217 code such as EUR']);
  });

  test("a Total balance that disagrees with the rows is refused, naming each difference", async () => {
    const text = (await trip()).replace("EUR,360.00,-30.00,-190.00,-140.00", "EUR,360.00,-31.00,-190.00,-139.00");
    expect(parseSplitwise(text, TRIP_NAMES, "EUR", new Map([["GBP", "1.17"]])).problems).toEqual([
      "line 12: the Total balance in EUR gives Bob (@bob) -31.00, but the rows imported give -30.00 (a difference of -1.00 EUR); is a row missing or changed?",
      "line 12: the Total balance in EUR gives Zoë Müller (@zoe) -139.00, but the rows imported give -140.00 (a difference of 1.00 EUR); is a row missing or changed?",
    ]);
    // a row lost from the file
    const lost = (await trip()).replace(/^2026-08-04,Museum.*\n/m, "");
    expect(parseSplitwise(lost, TRIP_NAMES, "EUR", new Map([["GBP", "1.17"]])).problems).toHaveLength(3);
    // two totals for one currency
    const twice = `${await trip()}2026-09-01,Total balance, , ,GBP,-22.00,0.00,14.00,8.00\n`;
    expect(parseSplitwise(twice, TRIP_NAMES, "EUR", new Map([["GBP", "1.17"]])).problems).toEqual(["line 14: a second Total balance row in GBP"]);
  });

  test("lines before the header (a friend export's note) are not data", async () => {
    const { plan, problems } = parseSplitwise(`Note: does not include group expenses\n\n${await fixture()}`, NAMES, "EUR");
    expect(problems).toEqual([]);
    expect(plan.expenses.map((e) => e.line)).toEqual([4, 5, 6]);
  });

  test("every problem is reported with its line", () => {
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,EUR,20.00,-10.00,-9.00"])).toEqual([
      "line 2: the people's amounts sum to 1.00 EUR, not zero (Alice Smith 20.00, Bob -10.00, Carol -9.00)",
    ]);
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,USD,20.00,-10.00,-10.00"])).toEqual([
      "line 2: in USD, not the group's EUR; give the rate with --rate USD=<EUR per 1 USD>",
    ]);
    expect(problemsOf(["2026-10-01,Lunch,General,30.00,XYZ,20.00,-10.00,-10.00"])).toEqual(['line 2: the currency "XYZ" is not an ISO 4217 code such as EUR']);
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
    expect(parseSplitwise(`${HEADER},"Chen, Li"\n`, NAMES, "EUR").problems).toEqual([
      'line 1: the column "Chen, Li" is not mapped to a handle; add {"Chen, Li":"<handle>"} to --map (as JSON: the name holds a comma or =)',
    ]);
  });

  test("--map parsing, also as a JSON object for names with commas; --rate parsing", () => {
    expect([...parseNameMap("Alice Smith=alice, Bob=@bob-2")]).toEqual([
      ["Alice Smith", "alice"],
      ["Bob", "bob-2"],
    ]);
    expect([...parseNameMap('{"Chen, Li": "chen", "Zoë Müller": "@zoe", "A=B": "ab-c"}')]).toEqual([
      ["Chen, Li", "chen"],
      ["Zoë Müller", "zoe"],
      ["A=B", "ab-c"],
    ]);
    expect(() => parseNameMap('{"Chen, Li": 3}')).toThrow("must be a string");
    expect(() => parseNameMap('{"Chen, Li": "Not A Handle"}')).toThrow("is not Name=handle");
    expect(() => parseNameMap("{nope")).toThrow("not a JSON object");
    expect(() => parseNameMap('{"a": "abc"} x')).toThrow("not a JSON object");
    expect(() => parseNameMap("{}")).toThrow("at least one");
    expect([...parseRate("USD=0.92", parseRate("GBP=1.17"))]).toEqual([
      ["GBP", "1.17"],
      ["USD", "0.92"],
    ]);
    expect(() => parseRate("gbp=1.17")).toThrow("is not CUR=RATE");
    expect(() => parseRate("GBP")).toThrow("is not CUR=RATE");
    expect(() => parseRate("GBP=2", parseRate("GBP=1.17"))).toThrow("given twice");
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

  const run = async (args: string[]) => {
    const p = Bun.spawnSync(["bun", "run", join(import.meta.dir, "../../cli/main.ts"), "import", "splitwise", ...args, ...s.dbFlags]);
    // An embedded replica reads what the command wrote on its primary once it syncs.
    await s.server.db.sync();
    return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
  };

  test("imports expenses and payments, refuses the same file twice and a file that does not balance", async () => {
    const g = await groupWith(s, ["sw-alice", "sw-bob", "sw-carol"]);
    const [alice, bob, carol] = g.members;
    const map = "Alice Smith=sw-alice,Bob=sw-bob,Carol=sw-carol";

    const bad = join(s.dir, "bad.csv");
    writeFileSync(bad, `${HEADER}\n2026-10-01,Lunch,General,30.00,EUR,20.00,-10.00,-9.00\n2026-10-02,Cab,Taxi,5.00,EUR,5.00,-5.00,0.00\n`);
    const refused = await run([bad, "--group", g.group_id, "--map", map]);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("not imported: 1 problem");
    expect(refused.err).toContain("line 2: the people's amounts sum to 1.00 EUR, not zero");
    expect((await s.ok("list_expenses", { group_id: g.group_id }, alice!.key)).expenses).toEqual([]);

    const first = await run([FIXTURE, "--group", g.group_id, "--map", map]);
    expect(first.err).toBe("");
    expect(first.code).toBe(0);
    expect(first.out).toContain("Imported 3 expenses and 1 payment into group");
    expect(first.out).toContain("Skipped 1 row moving no money, 8.00 EUR in all:\n  line 6:");

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

    const again = await run([FIXTURE, "--group", g.group_id, "--map", map]);
    expect(again.code).toBe(5);
    expect(again.err).toContain("already imported");

    const notMember = await run([FIXTURE, "--group", g.group_id, "--map", "Alice Smith=sw-alice,Bob=sw-bob,Carol=sw-nobody"]);
    expect(notMember.code).toBe(2);
    expect(notMember.err).toContain("@sw-nobody is not a member of the group");
    const noGroup = await run([FIXTURE, "--group", crypto.randomUUID(), "--map", map]);
    expect(noGroup.code).toBe(4);
  }, 30_000);

  test("a two-currency export: --map as JSON, --rate repeated, amounts kept as given, its totals checked; per currency the balances are Splitwise's", async () => {
    const g = await groupWith(s, ["tr-alice", "tr-bob", "tr-chen", "tr-zoe"]);
    const key = g.members[0]!.key;
    const map = JSON.stringify({ "Alice Smith": "tr-alice", Bob: "tr-bob", "Chen, Li": "tr-chen", "Zoë Müller": "tr-zoe" });

    const noRate = await run([TRIP, "--group", g.group_id, "--map", map]);
    expect(noRate.code).toBe(2);
    expect(noRate.err).toContain("lines 5, 6, 8: in GBP, not the group's EUR; give the rate with --rate GBP=<EUR per 1 GBP>");
    const badFlag = await run([TRIP, "--group", g.group_id, "--map", map, "--rate", "GBP:1.17"]);
    expect(badFlag.code).toBe(2);
    expect(badFlag.err).toContain("is not CUR=RATE");
    const edited = join(s.dir, "edited.csv");
    writeFileSync(
      edited,
      (await trip()).replace("Museum,Entertainment,30.00,GBP,-10.00,-10.00,0.00,20.00", "Museum,Entertainment,30.00,GBP,-10.00,0.00,-10.00,20.00"),
    );
    const disagrees = await run([edited, "--group", g.group_id, "--map", map, "--rate", "GBP=1.17"]);
    expect(disagrees.code).toBe(2);
    expect(disagrees.err).toContain("the Total balance in GBP gives Bob (@tr-bob) 0.00, but the rows imported give 10.00 (a difference of -10.00 GBP)");
    expect((await s.ok("list_expenses", { group_id: g.group_id }, key)).expenses).toEqual([]);

    const done = await run([TRIP, "--group", g.group_id, "--map", map, "--rate", "GBP=1.17", "--rate", "USD=0.92", "--json"]);
    expect(done.err).toBe("");
    expect(done.code).toBe(0);
    const result = JSON.parse(done.out);
    expect([result.expenses, result.payments, result.skipped.map((x: any) => x.line)]).toEqual([4, 2, [9, 10]]);
    expect(result.skipped_total).toEqual([
      { currency: "EUR", amount_minor: 1500, amount: "15.00" },
      { currency: "GBP", amount_minor: 350, amount: "3.50" },
    ]);
    const text = await run([
      TRIP,
      "--group",
      (await groupWith(s, ["tr2-alice", "tr2-bob", "tr2-chen", "tr2-zoe"])).group_id,
      "--map",
      map.replaceAll("tr-", "tr2-"),
      "--rate",
      "GBP=1.17",
    ]);
    expect(text.out).toContain('Skipped 2 rows moving no money, 15.00 EUR + 3.50 GBP in all:\n  line 9: "Alice\'s own souvenir" (15.00 EUR)');

    expect(await balancesOf(s, key, g.group_id)).toEqual({ "tr-alice": 33426, "tr-bob": -3000, "tr-chen": -17362, "tr-zoe": -13064 });
    const fish = (await s.ok("list_expenses", { group_id: g.group_id }, key)).expenses.find((e: any) => e.description.untrusted_content === "Fish & chips");
    expect([fish.amount, fish.currency, fish.original]).toEqual([
      "56.16",
      "EUR",
      { currency: "GBP", amount_minor: 4800, amount: "48.00", exchange_rate: "1.17" },
    ]);
    const [gbpPayment, eurPayment] = (await s.ok("list_payments", { group_id: g.group_id }, key)).payments;
    expect([gbpPayment.from.handle, gbpPayment.to.handle, gbpPayment.amount, gbpPayment.original?.amount, gbpPayment.state]).toEqual([
      "tr-bob",
      "tr-chen",
      "25.74",
      "22.00",
      "confirmed",
    ]);
    expect([eurPayment.amount, eurPayment.original]).toEqual(["50.00", null]);
    expect((await s.ok("get_activity", { group_id: g.group_id, limit: 1 }, key)).entries[0].summary_md).toContain("(GBP at 1.17 EUR)");

    // what each paid and owes per currency: the nets are the export's own Total balance rows
    const { by_currency } = await s.ok("get_balances", { group_id: g.group_id, by_currency: true }, key);
    const nets = (c: any) => Object.fromEntries(c.members.map((m: any) => [m.agent.handle, [m.net, m.converted]]));
    expect(by_currency.map((c: any) => c.currency)).toEqual(["EUR", "GBP"]);
    expect(nets(by_currency[0])).toEqual({
      "tr-alice": ["+360.00 EUR", "+360.00 EUR"],
      "tr-bob": ["-30.00 EUR", "-30.00 EUR"],
      "tr-chen": ["-190.00 EUR", "-190.00 EUR"],
      "tr-zoe": ["-140.00 EUR", "-140.00 EUR"],
    });
    expect(nets(by_currency[1])).toEqual({
      "tr-alice": ["-22.00 GBP", "-25.74 EUR"],
      "tr-bob": ["0.00 GBP", "0.00 EUR"],
      "tr-chen": ["+14.00 GBP", "+16.38 EUR"],
      "tr-zoe": ["+8.00 GBP", "+9.36 EUR"],
    });
    const chen = by_currency[1].members.find((m: any) => m.agent.handle === "tr-chen");
    expect([chen.paid, chen.owes, chen.payments_sent, chen.payments_received]).toEqual(["48.00", "12.00", "0.00", "22.00"]);
  }, 60_000);

  test("a member with no account imports as a new placeholder (--map Dana=+Dana), and whoever claims it gets exactly its balance", async () => {
    const g = await groupWith(s, ["swd-alice", "swd-bob"]);
    const [alice, bob] = g.members;
    const dana = await s.register("swd-dana");
    expect(parseNameMap("Alice Smith=swd-alice,Dana=+Dana")).toEqual(
      new Map([
        ["Alice Smith", "swd-alice"],
        ["Dana", "+Dana"],
      ]),
    );
    expect(() => parseNameMap("Dana=+")).toThrow("is not Name=handle");
    // refused for another reason: the placeholder is not kept
    const refused = await run([DANA, "--group", g.group_id, "--map", "Alice Smith=swd-alice,Bob=swd-nobody,Dana=+Dana"]);
    expect(refused.code).toBe(2);
    expect((await s.ok("get_group", { group_id: g.group_id }, alice!.key)).group.member_count).toBe(2);

    const done = await run([DANA, "--group", g.group_id, "--map", JSON.stringify({ "Alice Smith": "swd-alice", Bob: "swd-bob", Dana: "+Dana" }), "--json"]);
    expect(done.err).toBe("");
    expect(done.code).toBe(0);
    const result = JSON.parse(done.out);
    expect([result.expenses, result.payments]).toEqual([2, 1]);
    expect(result.placeholders).toHaveLength(1);
    const p = result.placeholders[0];
    expect(p).toMatchObject({ column: "Dana", name: "Dana" });
    expect(p.claim_path).toBe(`/claim/${p.claim_code}`);
    const members = (await s.ok("get_group", { group_id: g.group_id }, bob!.key)).group.members;
    expect(members.find((m: any) => m.member_id === p.member_id)).toMatchObject({ agent: null, name: "Dana", balance_minor: -400 });
    expect(await balancesOf(s, bob!.key, g.group_id)).toEqual({ "swd-alice": 4200, "swd-bob": -3800, [p.member_id]: -400 });
    const payments = (await s.ok("list_payments", { group_id: g.group_id }, alice!.key)).payments;
    expect(payments.map((x: any) => [x.from.agent_id, x.to.handle, x.amount])).toEqual([[p.member_id, "swd-alice", "10.00"]]);

    await s.ok("join_group", { invite_code: p.claim_code }, dana.key);
    expect(await balancesOf(s, bob!.key, g.group_id)).toEqual({ "swd-alice": 4200, "swd-bob": -3800, "swd-dana": -400 });
    const claimed = (await s.ok("list_payments", { group_id: g.group_id }, dana.key)).payments;
    expect(claimed.map((x: any) => [x.from.handle, x.to.handle])).toEqual([["swd-dana", "swd-alice"]]);
  }, 30_000);
});
