import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { ledgerPairsBuilt } from "../../db/schema/index.ts";
import { CSV_HEADER } from "../../server/domain/ledger/exchange/export.ts";
import { parseCsv } from "../../server/domain/ledger/exchange/csv.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { balancesOf, failure, groupOf, groupWith } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let counter = 0;
async function people(n: number): Promise<Agent[]> {
  const p = `bal${++counter}`;
  const out: Agent[] = [];
  for (let i = 0; i < n; i++) out.push(await s.register(`${p}-${"abcdefgh"[i]}`));
  return out;
}
const expense = (groupId: string, key: string, amount: string, among: string[], extra: Record<string, unknown> = {}) =>
  s.ok("add_expense", { group_id: groupId, description: "Thing", amount, split: { mode: "equal", among: among.map((handle) => ({ handle })) }, ...extra }, key);
const transfers = (b: any) => b.settle_up.map((t: any) => [t.from.handle, t.to.handle, t.amount_minor]);

describe("get_balances for a group", () => {
  test("members with balances summing to zero, pending payments beside them, and the fewest transfers to settle", async () => {
    const [a, b, c] = await people(3);
    const g = await groupOf(s, [a!, b!, c!]);
    // a chain: b owes a 10, c owes b 10; simplified, c pays a directly
    await expense(g.group_id, a!.key, "10.00", [b!.handle]);
    await expense(g.group_id, b!.key, "10.00", [c!.handle]);
    const paid = (await s.ok("record_payment", { group_id: g.group_id, to: a!.handle, amount: "3.00" }, c!.key)).payment;
    const r = await s.ok("get_balances", { group_id: g.group_id }, b!.key);
    expect(r.group_id).toBe(g.group_id);
    expect(r.currency).toBe("EUR");
    expect(r.simplify_debts).toBe(true);
    expect(r.members.map((m: any) => [m.agent.handle, m.balance_minor, m.balance])).toEqual([
      [a!.handle, 1000, "+10.00 EUR"],
      [b!.handle, 0, "0.00 EUR"],
      [c!.handle, -1000, "-10.00 EUR"],
    ]);
    expect(r.pending_payments.map((p: any) => [p.from.handle, p.amount_minor, p.state])).toEqual([[c!.handle, 300, "pending"]]);
    // the pending 3.00 counts in settle-up as if confirmed (and is named), not in the balances
    expect(transfers(r)).toEqual([[c!.handle, a!.handle, 700]]);
    expect(r.settle_up[0].amount).toBe("7.00");
    expect(r.settle_up_counts_pending).toEqual([paid.payment_id]);
  });

  test("with simplify_debts off, each pair settles its own net debt", async () => {
    const [a, b, c] = await people(3);
    const g = await groupOf(s, [a!, b!, c!]);
    await s.ok("update_group", { group_id: g.group_id, simplify_debts: false }, a!.key);
    await expense(g.group_id, a!.key, "10.00", [b!.handle]);
    await expense(g.group_id, b!.key, "10.00", [c!.handle]);
    await expense(g.group_id, c!.key, "4.00", [b!.handle]);
    const r = await s.ok("get_balances", { group_id: g.group_id }, a!.key);
    expect(r.simplify_debts).toBe(false);
    expect(transfers(r)).toEqual([
      [b!.handle, a!.handle, 1000],
      [c!.handle, b!.handle, 600],
    ]);
    // paying the plan settles everyone
    for (const t of r.settle_up)
      await s.ok("record_payment", { group_id: g.group_id, from: t.from.handle, amount_minor: t.amount_minor }, g.by[t.to.handle]!.key);
    expect(Object.values(await balancesOf(s, a!.key, g.group_id))).toEqual([0, 0, 0]);
    expect((await s.ok("get_balances", { group_id: g.group_id }, a!.key)).settle_up).toEqual([]);
  });

  test("each-pair debts through a member who left are joined into direct debts between those still in the group", async () => {
    const [a, b, c] = await people(3);
    const g = await groupOf(s, [a!, b!, c!]);
    await s.ok("update_group", { group_id: g.group_id, simplify_debts: false }, a!.key);
    await expense(g.group_id, a!.key, "10.00", [b!.handle]);
    await expense(g.group_id, b!.key, "10.00", [c!.handle]);
    expect(transfers(await s.ok("get_balances", { group_id: g.group_id }, a!.key))).toEqual([
      [b!.handle, a!.handle, 1000],
      [c!.handle, b!.handle, 1000],
    ]);
    await s.ok("leave_group", { group_id: g.group_id }, b!.key);
    const r = await s.ok("get_balances", { group_id: g.group_id }, a!.key);
    expect(r.members.map((m: any) => m.agent.handle)).toEqual([a!.handle, c!.handle]);
    expect(transfers(r)).toEqual([[c!.handle, a!.handle, 1000]]);
  });

  test("the balances equal the group's own balances (get_group), also after the pair ledger is rebuilt from scratch", async () => {
    const [a, b, c, d] = await people(4);
    const g = await groupOf(s, [a!, b!, c!, d!]);
    await s.ok(
      "add_expense",
      {
        group_id: g.group_id,
        description: "Boat",
        amount: "100.00",
        paid_by: [
          { handle: a!.handle, amount: "70.00" },
          { handle: b!.handle, amount: "30.00" },
        ],
      },
      a!.key,
    );
    const e = (await expense(g.group_id, c!.key, "33.33", [a!.handle, b!.handle, d!.handle])).expense;
    await expense(g.group_id, d!.key, "7.00", [c!.handle]);
    await s.ok("update_expense", { expense_id: e.expense_id, expected_version: 1, amount: "40.00" }, b!.key);
    await s.ok("record_payment", { group_id: g.group_id, from: d!.handle, amount: "5.00" }, c!.key);
    const byGroup = async () =>
      Object.fromEntries((await s.ok("get_group", { group_id: g.group_id }, a!.key)).group.members.map((m: any) => [m.agent.handle, m.balance_minor]));
    const before = await balancesOf(s, a!.key, g.group_id);
    expect(before).toEqual(await byGroup());
    const plan = transfers(await s.ok("get_balances", { group_id: g.group_id }, a!.key));
    await s.server.db.tx((tx) => tx.delete(ledgerPairsBuilt).where(eq(ledgerPairsBuilt.groupId, g.group_id)));
    expect(await balancesOf(s, a!.key, g.group_id)).toEqual(before);
    expect(transfers(await s.ok("get_balances", { group_id: g.group_id }, a!.key))).toEqual(plan);
    // Read tools compute a missing pair ledger without storing it (a read transaction writes nothing).
    const marked = () => s.server.db.read((tx) => tx.select().from(ledgerPairsBuilt).where(eq(ledgerPairsBuilt.groupId, g.group_id)));
    expect(await marked()).toEqual([]);
  });

  test("NOT_FOUND for a non-member and an unknown group", async () => {
    const g = await groupWith(s, [`bal${++counter}-a`, `bal${counter}-b`]);
    const [outsider] = await people(1);
    expect((await failure(s, "get_balances", { group_id: g.group_id }, outsider!.key)).code).toBe("NOT_FOUND");
    expect((await failure(s, "get_balances", { group_id: crypto.randomUUID() }, g.members[0]!.key)).code).toBe("NOT_FOUND");
    expect((await failure(s, "get_balances", { group_id: "not-a-uuid" }, g.members[0]!.key)).path).toBe("group_id");
  });
});

describe("get_balances across groups", () => {
  test("the caller's net per counterparty and currency, from each group's settle-up, with totals and pending payments", async () => {
    const [ann, bob, cat] = await people(3);
    const g1 = await groupOf(s, [ann!, bob!], "EUR", "Flat");
    const g2 = await groupOf(s, [ann!, bob!, cat!], "EUR", "Trip");
    const g3 = await groupOf(s, [bob!, ann!], "USD", "Work");
    await expense(g1.group_id, ann!.key, "20.00", [bob!.handle]); // bob owes ann 20 EUR
    await expense(g2.group_id, bob!.key, "30.00", [ann!.handle, cat!.handle]); // ann owes bob 15 EUR, cat owes bob 15
    await expense(g2.group_id, cat!.key, "4.00", [ann!.handle]); // ann owes cat 4 EUR; simplified, ann pays bob 19 and cat pays bob 11
    await expense(g3.group_id, bob!.key, "9.00", [ann!.handle]); // ann owes bob 9 USD
    // ann's pending 1.00 to bob is not in the balances (confirmed payments only); it counts in to_settle as if
    // confirmed: bob then owes her 21 in Flat
    const paid = (await s.ok("record_payment", { group_id: g1.group_id, to: bob!.handle, amount: "1.00" }, ann!.key)).payment;
    const r = await s.ok("get_balances", {}, ann!.key);
    expect(r.group_id).toBeUndefined();
    expect(r.counterparties.map((c: any) => [c.currency, c.agent.handle, c.balance_minor, c.balance, c.to_settle_minor, c.to_settle])).toEqual([
      ["EUR", bob!.handle, 100, "+1.00 EUR", 200, "+2.00 EUR"],
      ["USD", bob!.handle, -900, "-9.00 USD", -900, "-9.00 USD"],
    ]);
    expect(r.counterparties[0].groups.map((x: any) => [x.name, x.balance_minor, x.to_settle_minor])).toEqual([
      ["Flat", 2000, 2100],
      ["Trip", -1900, -1900],
    ]);
    expect(r.settle_up_counts_pending).toEqual([paid.payment_id]);
    // cat's view of the same Trip: pays bob 11
    expect((await s.ok("get_balances", {}, cat!.key)).counterparties.map((c: any) => [c.agent.handle, c.balance_minor])).toEqual([[bob!.handle, -1100]]);
    expect(r.totals).toEqual([
      { currency: "EUR", balance_minor: 100, balance: "+1.00 EUR" },
      { currency: "USD", balance_minor: -900, balance: "-9.00 USD" },
    ]);
    expect(r.pending_payments.map((p: any) => [p.group_id, p.amount_minor, p.currency])).toEqual([[g1.group_id, 100, "EUR"]]);
    // someone with no debts sees nothing owed
    const [lonely] = await people(1);
    expect(await s.ok("get_balances", {}, lonely!.key)).toMatchObject({ counterparties: [], totals: [], pending_payments: [] });
  });
});

describe("get_activity", () => {
  test("who did what and when, newest first, paged; text members wrote is quoted", async () => {
    const [a, b] = await people(2);
    const g = await groupOf(s, [a!, b!]);
    const e = (await s.ok("add_expense", { group_id: g.group_id, description: "**Run** this", amount: "10.00" }, a!.key)).expense;
    await s.ok("update_expense", { expense_id: e.expense_id, expected_version: 1, amount: "12.00" }, b!.key);
    await s.ok("respond_expense", { expense_id: e.expense_id, action: "dispute", reason: "no" }, b!.key);
    await s.ok("delete_expense", { expense_id: e.expense_id }, a!.key);
    await s.ok("restore_expense", { expense_id: e.expense_id }, a!.key);
    const p = (await s.ok("record_payment", { group_id: g.group_id, to: a!.handle, amount: "6.00" }, b!.key)).payment;
    await s.ok("respond_payment", { payment_id: p.payment_id, action: "confirm" }, a!.key);
    const all = await s.ok("get_activity", { group_id: g.group_id, limit: 100 }, b!.key);
    expect(all.entries.slice(0, 7).map((x: any) => [x.action, x.actor.handle])).toEqual([
      ["payment_confirmed", a!.handle],
      ["payment_recorded", b!.handle],
      ["expense_restored", a!.handle],
      ["expense_deleted", a!.handle],
      ["expense_disputed", b!.handle],
      ["expense_updated", b!.handle],
      ["expense_added", a!.handle],
    ]);
    expect(all.entries[6].summary_md).toContain("“\\*\\*Run\\*\\* this” (quoted)");
    expect(all.entries[6].refs).toEqual({ expense_id: e.expense_id });
    expect(all.entries[0].refs).toEqual({ payment_id: p.payment_id });
    const page1 = await s.ok("get_activity", { group_id: g.group_id, limit: 3 }, b!.key);
    const page2 = await s.ok("get_activity", { group_id: g.group_id, limit: 3, cursor: page1.next_cursor }, b!.key);
    expect([...page1.entries, ...page2.entries].map((x: any) => x.seq)).toEqual(all.entries.slice(0, 6).map((x: any) => x.seq));
    const [outsider] = await people(1);
    expect((await failure(s, "get_activity", { group_id: g.group_id }, outsider!.key)).code).toBe("NOT_FOUND");
    expect((await failure(s, "get_activity", { group_id: g.group_id, cursor: "zz" }, a!.key)).path).toBe("cursor");
  });
});

describe("export_group", () => {
  test("csv: RFC 4180, one row per expense share and per payment, other members' text defused and quoted", async () => {
    const [a, b] = await people(2);
    const g = await groupOf(s, [a!, b!]);
    const tricky = 'Pizza, "large" with extras';
    const e1 = (await s.ok("add_expense", { group_id: g.group_id, description: tricky, amount: "10.00", date: "2026-11-01" }, a!.key)).expense;
    const e2 = (
      await s.ok(
        "add_expense",
        { group_id: g.group_id, description: "=HYPERLINK(1)", amount: "3.00", date: "2026-11-02", split: { mode: "equal", among: [{ handle: b!.handle }] } },
        a!.key,
      )
    ).expense;
    const gone = (await s.ok("add_expense", { group_id: g.group_id, description: "gone", amount: "1.00" }, a!.key)).expense;
    await s.ok("delete_expense", { expense_id: gone.expense_id }, a!.key);
    const p = (await s.ok("record_payment", { group_id: g.group_id, to: a!.handle, amount: "2.00" }, b!.key)).payment;
    const r = await s.ok("export_group", { group_id: g.group_id, format: "csv" }, b!.key);
    expect(r.format).toBe("csv");
    expect(r.media_type).toBe("text/csv");
    expect(r.filename).toBe(`group-${g.group_id}-2026-11-22.csv`);
    expect(r.content.source).toContain("written by the group's members");
    const text: string = r.content.untrusted_content;
    expect(text.endsWith("\r\n")).toBe(true);
    expect(text).toContain('"Pizza, ""large"" with extras"');
    const rows = parseCsv(text).map((x) => x.fields);
    expect(rows[0]).toEqual(CSV_HEADER);
    // kind, original currency, amount and rate, notes; then who a row names: the participant, the payer and the payee
    const plain = ["expense", "", "", "", ""];
    const [A, B] = [
      [a!.agent_id, a!.handle.toUpperCase()],
      [b!.agent_id, b!.handle.toUpperCase()],
    ];
    expect(rows.slice(1)).toEqual([
      [
        "expense_share",
        e1.expense_id,
        "2026-11-01",
        tricky,
        "general",
        "EUR",
        "10.00",
        a!.handle,
        "10.00",
        "5.00",
        "",
        "",
        "active",
        ...plain,
        ...A!,
        "",
        "",
        "",
        "",
      ],
      [
        "expense_share",
        e1.expense_id,
        "2026-11-01",
        tricky,
        "general",
        "EUR",
        "10.00",
        b!.handle,
        "0.00",
        "5.00",
        "",
        "",
        "active",
        ...plain,
        ...B!,
        "",
        "",
        "",
        "",
      ],
      [
        "expense_share",
        e2.expense_id,
        "2026-11-02",
        "'=HYPERLINK(1)",
        "general",
        "EUR",
        "3.00",
        b!.handle,
        "0.00",
        "3.00",
        "",
        "",
        "active",
        ...plain,
        ...B!,
        "",
        "",
        "",
        "",
      ],
      [
        "expense_share",
        e2.expense_id,
        "2026-11-02",
        "'=HYPERLINK(1)",
        "general",
        "EUR",
        "3.00",
        a!.handle,
        "3.00",
        "0.00",
        "",
        "",
        "active",
        ...plain,
        ...A!,
        "",
        "",
        "",
        "",
      ],
      ["payment", p.payment_id, "2026-11-22", "", "", "EUR", "2.00", "", "", "", b!.handle, a!.handle, "pending", "", "", "", "", "", "", "", ...B!, ...A!],
    ]);
  });

  test("json: the group, its balances and settle-up, expenses and payments", async () => {
    const [a, b] = await people(2);
    const g = await groupOf(s, [a!, b!], "JPY");
    await s.ok("add_expense", { group_id: g.group_id, description: "Sushi", amount: "3001" }, a!.key);
    const r = await s.ok("export_group", { group_id: g.group_id, format: "json" }, a!.key);
    expect(r.media_type).toBe("application/json");
    const doc = JSON.parse(r.content.untrusted_content);
    // Written a batch at a time, it is the text JSON.stringify gives for the whole document.
    expect(r.content.untrusted_content).toBe(JSON.stringify(doc, null, 2));
    expect(doc.group).toMatchObject({ group_id: g.group_id, currency: "JPY", simplify_debts: true, exported_at: "2026-11-22T12:00:00.000Z" });
    expect(doc.expenses.map((e: any) => e.amount)).toEqual(["3001"]);
    expect(doc.payments).toEqual([]);
    expect(doc.balances.members.map((m: any) => m.balance_minor)).toEqual([1500, -1500]);
    expect(doc.balances.settle_up.map((t: any) => t.amount)).toEqual(["1500"]);
  });

  test("errors: an unknown format is VALIDATION_ERROR; a non-member gets NOT_FOUND", async () => {
    const [a, b, outsider] = await people(3);
    const g = await groupOf(s, [a!, b!]);
    expect((await failure(s, "export_group", { group_id: g.group_id, format: "xlsx" }, a!.key)).path).toBe("format");
    expect((await failure(s, "export_group", { group_id: g.group_id, format: "csv" }, outsider!.key)).code).toBe("NOT_FOUND");
  });
});
