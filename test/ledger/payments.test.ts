import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, failure, groupWith, inboxItems } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let counter = 0;
/** A group of three (a owns it) in which a paid 30.00 split equally: b and c each owe a 10.00. */
async function fresh() {
  const p = `pay${++counter}`;
  const g = await groupWith(
    s,
    ["a", "b", "c"].map((l) => `${p}-${l}`),
  );
  const k = { a: g.members[0]!.key, b: g.members[1]!.key, c: g.members[2]!.key };
  const h = { a: `${p}-a`, b: `${p}-b`, c: `${p}-c` };
  await s.ok("add_expense", { group_id: g.group_id, description: "Groceries", amount: "30.00" }, k.a);
  return { g, k, h, id: g.group_id };
}

describe("record_payment", () => {
  test("recorded by the payer it is pending, does not count yet, and asks the payee to confirm", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, to: h.a, amount: "10.00", note: "cash" }, k.b);
    expect(payment.state).toBe("pending");
    expect(payment.from.handle).toBe(h.b);
    expect(payment.to.handle).toBe(h.a);
    expect(payment.amount_minor).toBe(1000);
    expect(payment.amount).toBe("10.00");
    expect(payment.currency).toBe("EUR");
    expect(payment.note).toEqual({ untrusted_content: "cash", source: `payment note written by @${h.b}` });
    expect(payment.created_by.handle).toBe(h.b);
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 2000, [h.b]: -1000, [h.c]: -1000 });
    const balances = await s.ok("get_balances", { group_id: id }, k.c);
    expect(balances.pending_payments.map((p: any) => p.payment_id)).toEqual([payment.payment_id]);
    const [item] = await inboxItems(s, k.a, "ledger.payment_to_confirm");
    expect(item.requires_action).toBe(true);
    expect(item.suggested_tools).toEqual(["respond_payment"]);
    expect(item.refs).toEqual({ group_id: id, payment_id: payment.payment_id });
    expect(item.payload).toMatchObject({ from: h.b, to: h.a, amount_minor: 1000, amount: "10.00", currency: "EUR", state: "pending" });
    expect(item.note).toEqual({ untrusted_content: "cash", source: `payment note written by @${h.b}` });
  });

  test("recorded by the payee it is confirmed at once, counts, and the payer is told", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, from: h.c, amount_minor: 1000 }, k.a);
    expect(payment.state).toBe("confirmed");
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 1000, [h.b]: -1000, [h.c]: 0 });
    const [item] = await inboxItems(s, k.c, "ledger.payment_confirmed");
    expect(item.requires_action).toBe(false);
    expect(item.refs.payment_id).toBe(payment.payment_id);
    expect(await inboxItems(s, k.a, "ledger.payment_to_confirm")).toEqual([]);
  });

  test("both handles given, the caller being one of them; a payment beyond the debt is allowed", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, from: h.b, to: h.a, amount: "25.00" }, k.a);
    expect(payment.state).toBe("confirmed");
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: -500, [h.b]: 1500, [h.c]: -1000 });
  });

  test.each([
    ["neither from nor to", {}, "to"],
    ["the caller neither payer nor payee", { from: "$b", to: "$c" }, "from"],
    ["payer and payee the same", { to: "$a" }, "to"],
    ["a payee who is not a member", { to: "$outsider" }, "to"],
    ["a payer who is not a member", { from: "$outsider" }, "from"],
    ["both amount and amount_minor", { to: "$b", amount: "1.00", amount_minor: 100 }, "amount"],
    ["more decimals than the currency has", { to: "$b", amount: "1.001" }, "amount"],
    ["a zero amount", { to: "$b", amount: "0" }, "amount"],
    ["a note over 500 chars", { to: "$b", amount: "1.00", note: "x".repeat(501) }, "note"],
    ["a malformed handle", { to: "No Such", amount: "1.00" }, "to"],
  ])("VALIDATION_ERROR: %s", async (_name, args, path) => {
    const { k, h, id } = await fresh();
    const outsider = await s.register(`${h.a}-x`);
    const named = JSON.parse(
      JSON.stringify({ amount: "1.00", ...args })
        .replaceAll("$outsider", outsider.handle)
        .replaceAll("$a", h.a)
        .replaceAll("$b", h.b)
        .replaceAll("$c", h.c),
    );
    const f = await failure(s, "record_payment", { group_id: id, ...named }, k.a);
    expect(f.code).toBe("VALIDATION_ERROR");
    expect(f.path).toBe(path);
    expect((await s.ok("list_payments", { group_id: id }, k.a)).payments).toEqual([]);
  });

  test("NOT_FOUND for a non-member; CONFLICT in an archived group", async () => {
    const { k, h, id } = await fresh();
    const outsider = await s.register(`pay${++counter}-out`);
    expect((await failure(s, "record_payment", { group_id: id, to: h.a, amount: "1.00" }, outsider.key)).code).toBe("NOT_FOUND");
    await s.ok("archive_group", { group_id: id, archived: true }, k.a);
    expect((await failure(s, "record_payment", { group_id: id, to: h.a, amount: "1.00" }, k.b)).code).toBe("CONFLICT");
  });
});

describe("respond_payment", () => {
  test("confirm: it counts, the payee's item is resolved, the payer is told", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, to: h.a, amount: "10.00" }, k.b);
    const r = await s.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, k.a);
    expect(r.payment.state).toBe("confirmed");
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 1000, [h.b]: 0, [h.c]: -1000 });
    expect((await inboxItems(s, k.a, "ledger.payment_to_confirm"))[0].resolved).toBe(true);
    const [told] = await inboxItems(s, k.b, "ledger.payment_confirmed");
    expect(told.from.handle).toBe(h.a);
    expect(told.payload.state).toBe("confirmed");
    expect((await s.ok("get_balances", { group_id: id }, k.a)).pending_payments).toEqual([]);
  });

  test("reject: it never counts, the payer is told", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, to: h.a, amount: "10.00" }, k.b);
    const r = await s.ok("respond_payment", { payment_id: payment.payment_id, action: "reject" }, k.a);
    expect(r.payment.state).toBe("rejected");
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 2000, [h.b]: -1000, [h.c]: -1000 });
    expect((await inboxItems(s, k.b, "ledger.payment_rejected"))[0].refs.payment_id).toBe(payment.payment_id);
    expect((await inboxItems(s, k.a, "ledger.payment_to_confirm"))[0].resolved).toBe(true);
  });

  test("CONFLICT: the payer answering, answering twice, an archived group; NOT_FOUND for others; VALIDATION_ERROR for an unknown action", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, to: h.a, amount: "10.00" }, k.b);
    expect((await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "confirm" }, k.b)).code).toBe("CONFLICT");
    expect((await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "confirm" }, k.c)).code).toBe("CONFLICT");
    expect((await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "accept" }, k.a)).path).toBe("action");
    const outsider = await s.register(`pay${++counter}-out`);
    expect((await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "confirm" }, outsider.key)).code).toBe("NOT_FOUND");
    expect((await failure(s, "respond_payment", { payment_id: crypto.randomUUID(), action: "confirm" }, k.a)).code).toBe("NOT_FOUND");
    await s.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, k.a);
    const twice = await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "reject" }, k.a);
    expect(twice.code).toBe("CONFLICT");
    expect(twice.message).toContain("confirmed");
    const { payment: other } = await s.ok("record_payment", { group_id: id, to: h.a, amount: "1.00" }, k.c);
    await s.ok("archive_group", { group_id: id, archived: true }, k.a);
    expect((await failure(s, "respond_payment", { payment_id: other.payment_id, action: "confirm" }, k.a)).code).toBe("CONFLICT");
  });
});

describe("list_payments", () => {
  test("newest first, paged, filtered by state; NOT_FOUND for a non-member", async () => {
    const { k, h, id } = await fresh();
    const p1 = (await s.ok("record_payment", { group_id: id, to: h.a, amount: "1.00" }, k.b)).payment;
    const p2 = (await s.ok("record_payment", { group_id: id, from: h.c, amount: "2.00" }, k.a)).payment;
    const p3 = (await s.ok("record_payment", { group_id: id, to: h.a, amount: "3.00" }, k.c)).payment;
    await s.ok("respond_payment", { payment_id: p3.payment_id, action: "reject" }, k.a);
    const ids = (list: any[]) => list.map((p) => p.payment_id);
    const page1 = await s.ok("list_payments", { group_id: id, limit: 2 }, k.b);
    expect(ids(page1.payments)).toEqual([p3.payment_id, p2.payment_id]);
    const page2 = await s.ok("list_payments", { group_id: id, limit: 2, cursor: page1.next_cursor }, k.b);
    expect(ids(page2.payments)).toEqual([p1.payment_id]);
    expect(page2.next_cursor).toBeNull();
    expect(ids((await s.ok("list_payments", { group_id: id, state: "pending" }, k.b)).payments)).toEqual([p1.payment_id]);
    expect(ids((await s.ok("list_payments", { group_id: id, state: "confirmed" }, k.b)).payments)).toEqual([p2.payment_id]);
    expect(ids((await s.ok("list_payments", { group_id: id, state: "rejected" }, k.b)).payments)).toEqual([p3.payment_id]);
    expect((await failure(s, "list_payments", { group_id: id, state: "lost" }, k.b)).path).toBe("state");
    expect((await failure(s, "list_payments", { group_id: id, cursor: "x" }, k.b)).path).toBe("cursor");
    const outsider = await s.register(`pay${++counter}-out`);
    expect((await failure(s, "list_payments", { group_id: id }, outsider.key)).code).toBe("NOT_FOUND");
  });
});
