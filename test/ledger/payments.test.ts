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

describe("record_payment in another currency", () => {
  test("converted once at exchange_rate; the amount as given is kept, on the payment and in the payee's item", async () => {
    const { k, h, id } = await fresh();
    const { payment, overpayment } = await s.ok("record_payment", { group_id: id, to: h.a, amount: "8.00", currency: "GBP", exchange_rate: "1.1725" }, k.b);
    expect([payment.amount_minor, payment.amount, payment.currency]).toEqual([938, "9.38", "EUR"]);
    expect(payment.original).toEqual({ currency: "GBP", amount_minor: 800, amount: "8.00", exchange_rate: "1.1725" });
    expect(overpayment).toBeNull();
    const [item] = await inboxItems(s, k.a, "ledger.payment_to_confirm");
    expect(item.summary_md).toContain("8.00 GBP (9.38 EUR)");
    expect(item.payload.original).toEqual(payment.original);
    await s.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, k.a);
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 2000 - 938, [h.b]: -1000 + 938, [h.c]: -1000 });
    // JPY has no decimals: 1,500 yen at 0.0061 EUR
    const yen = (await s.ok("record_payment", { group_id: id, from: h.c, amount: "1500", currency: "JPY", exchange_rate: "0.0061" }, k.a)).payment;
    expect([yen.amount, yen.original.amount, yen.state]).toEqual(["9.15", "1500", "confirmed"]);
    const listed = (await s.ok("list_payments", { group_id: id }, k.c)).payments;
    expect(listed.map((p: any) => p.original?.currency ?? null)).toEqual(["JPY", "GBP"]);
    expect((await s.ok("list_payments", { group_id: id, state: "confirmed" }, k.c)).payments.every((p: any) => p.voided_by === null)).toBe(true);
  });

  test.each([
    ["another currency without exchange_rate", { currency: "USD" }, "exchange_rate"],
    ["exchange_rate with the group's own currency", { currency: "EUR", exchange_rate: "1.1" }, "exchange_rate"],
    ["exchange_rate without a currency", { exchange_rate: "1.1" }, "exchange_rate"],
    ["an unknown currency", { currency: "XYZ", exchange_rate: "1.1" }, "currency"],
    ["a currency in lower case", { currency: "usd", exchange_rate: "1.1" }, "currency"],
    ["a rate of zero", { currency: "USD", exchange_rate: "0" }, "exchange_rate"],
    ["a rate converting to nothing", { currency: "USD", exchange_rate: "0.000001", amount: "0.01" }, "exchange_rate"],
    ["more decimals than the given currency has", { currency: "JPY", exchange_rate: "0.0061", amount: "10.5" }, "amount"],
  ])("VALIDATION_ERROR: %s", async (_name, args, path) => {
    const { k, h, id } = await fresh();
    const f = await failure(s, "record_payment", { group_id: id, to: h.a, amount: "1.00", ...args }, k.b);
    expect([f.code, f.path]).toEqual(["VALIDATION_ERROR", path]);
    expect((await s.ok("list_payments", { group_id: id }, k.a)).payments).toEqual([]);
  });
});

describe("record_payment beyond the debt", () => {
  test("recorded all the same; the answer and the payee's item say by how much", async () => {
    const { k, h, id } = await fresh();
    expect((await s.ok("record_payment", { group_id: id, to: h.a, amount: "10.00" }, k.b)).overpayment).toBeNull();
    const { payment, overpayment } = await s.ok("record_payment", { group_id: id, to: h.a, amount: "25.00" }, k.c);
    expect(payment.state).toBe("pending");
    expect(overpayment).toEqual({ owed_minor: 1000, owed: "10.00", excess_minor: 1500, excess: "15.00" });
    const [, item] = await inboxItems(s, k.a, "ledger.payment_to_confirm");
    expect(item.summary_md).toContain("That is 15.00 EUR more than they owed you.");
    // the payee owes the payer nothing: all of it is more than owed
    expect((await s.ok("record_payment", { group_id: id, from: h.a, amount: "1.00" }, k.b)).overpayment).toEqual({
      owed_minor: 0,
      owed: "0.00",
      excess_minor: 100,
      excess: "1.00",
    });
  });

  test("what is owed is what the settle-up plan asks, or the pair's own debt where the plan routes it elsewhere", async () => {
    const { k, h, id, g } = await fresh();
    // a paid 30 for all; now c pays for b: b owes c 5, c's debt to a is what the simplified plan sends
    await s.ok("add_expense", { group_id: g.group_id, description: "Taxi", amount: "5.00", split: { mode: "equal", among: [{ handle: h.b }] } }, k.c);
    const plan = (await s.ok("get_balances", { group_id: id }, k.a)).settle_up.map((t: any) => [t.from.handle, t.to.handle, t.amount_minor]);
    expect(plan).toEqual([
      [h.b, h.a, 1500],
      [h.c, h.a, 500],
    ]);
    expect((await s.ok("record_payment", { group_id: id, to: h.a, amount: "15.00" }, k.b)).overpayment).toBeNull();
    expect((await s.ok("record_payment", { group_id: id, to: h.c, amount: "5.01" }, k.b)).overpayment.excess).toBe("0.01");
    // the pending 5.01 counts as if confirmed: nothing more is owed to c
    expect((await s.ok("record_payment", { group_id: id, to: h.c, amount: "1.00" }, k.b)).overpayment).toMatchObject({ owed_minor: 0, excess: "1.00" });
  });
});

describe("respond_payment void", () => {
  test("a confirmed payment voided by its payer leaves the balances at once, stays listed as voided, and the payee is told", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, from: h.b, amount: "10.00" }, k.a);
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 1000, [h.b]: 0, [h.c]: -1000 });
    s.clock.advance(60_000);
    const voided = (await s.ok("respond_payment", { payment_id: payment.payment_id, action: "void" }, k.b)).payment;
    expect(voided.state).toBe("voided");
    expect(voided.voided_by.handle).toBe(h.b);
    expect(voided.voided_at).toBe(s.clock.now().toISOString());
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 2000, [h.b]: -1000, [h.c]: -1000 });
    const listed = await s.ok("list_payments", { group_id: id, state: "voided" }, k.c);
    expect(listed.payments).toEqual([voided]);
    expect((await s.ok("list_payments", { group_id: id, state: "confirmed" }, k.c)).payments).toEqual([]);
    const [told] = await inboxItems(s, k.a, "ledger.payment_voided");
    expect(told.from.handle).toBe(h.b);
    expect(told.requires_action).toBe(false);
    expect(told.refs).toEqual({ group_id: id, payment_id: payment.payment_id });
    expect(told.payload).toMatchObject({ from: h.b, to: h.a, amount: "10.00", state: "voided", was: "confirmed", voided_by: h.b });
    expect(told.summary_md).toContain("it no longer counts in the balances");
    expect(await inboxItems(s, k.b, "ledger.payment_voided")).toEqual([]);
    const activity = (await s.ok("get_activity", { group_id: id, limit: 1 }, k.c)).entries[0];
    expect([activity.action, activity.refs.payment_id]).toEqual(["payment_voided", payment.payment_id]);
  });

  test("a pending payment voided: nothing left to confirm for the payee; the payee may void too", async () => {
    const { k, h, id } = await fresh();
    const first = (await s.ok("record_payment", { group_id: id, to: h.a, amount: "10.00" }, k.b)).payment;
    await s.ok("respond_payment", { payment_id: first.payment_id, action: "void" }, k.b);
    const [item] = await inboxItems(s, k.a, "ledger.payment_to_confirm");
    expect(item.resolved).toBe(true);
    expect((await inboxItems(s, k.a, "ledger.payment_voided"))[0].payload.was).toBe("pending");
    expect((await s.ok("get_balances", { group_id: id }, k.a)).pending_payments).toEqual([]);
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 2000, [h.b]: -1000, [h.c]: -1000 });
    const second = (await s.ok("record_payment", { group_id: id, to: h.a, amount: "10.00" }, k.c)).payment;
    expect((await s.ok("respond_payment", { payment_id: second.payment_id, action: "void" }, k.a)).payment.voided_by.handle).toBe(h.a);
    expect((await inboxItems(s, k.c, "ledger.payment_voided"))[0].from.handle).toBe(h.a);
  });

  test("a retry with the same idempotency key voids once and tells once", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, from: h.b, amount: "10.00" }, k.a);
    const args = { payment_id: payment.payment_id, action: "void", idempotency_key: `void-${payment.payment_id}` };
    const once = await s.call("respond_payment", args, k.a);
    const twice = await s.call("respond_payment", args, k.a);
    expect(twice.body.data).toEqual(once.body.data);
    expect(await inboxItems(s, k.b, "ledger.payment_voided")).toHaveLength(1);
    expect(await balancesOf(s, k.a, id)).toEqual({ [h.a]: 2000, [h.b]: -1000, [h.c]: -1000 });
  });

  test("CONFLICT: a member who is neither party, a payment already voided or rejected, confirming a voided one, an archived group, a party who left", async () => {
    const { k, h, id } = await fresh();
    const { payment } = await s.ok("record_payment", { group_id: id, from: h.b, amount: "10.00" }, k.a);
    expect((await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "void" }, k.c)).message).toContain("Only the payer or the payee");
    await s.ok("respond_payment", { payment_id: payment.payment_id, action: "void" }, k.a);
    const again = await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "void" }, k.b);
    expect([again.code, again.message]).toEqual(["CONFLICT", "The payment is already voided; only a pending or confirmed payment can be voided."]);
    expect((await failure(s, "respond_payment", { payment_id: payment.payment_id, action: "confirm" }, k.a)).code).toBe("CONFLICT");
    const rejected = (await s.ok("record_payment", { group_id: id, to: h.a, amount: "1.00" }, k.c)).payment;
    await s.ok("respond_payment", { payment_id: rejected.payment_id, action: "reject" }, k.a);
    expect((await failure(s, "respond_payment", { payment_id: rejected.payment_id, action: "void" }, k.c)).message).toContain("already rejected");
    const outsider = await s.register(`pay${++counter}-out`);
    expect((await failure(s, "respond_payment", { payment_id: rejected.payment_id, action: "void" }, outsider.key)).code).toBe("NOT_FOUND");

    // b settles up and leaves: a cannot void b's payment, which would leave b a balance
    const settled = (await s.ok("record_payment", { group_id: id, from: h.b, amount: "10.00" }, k.a)).payment;
    await s.ok("leave_group", { group_id: id }, k.b);
    const left = await failure(s, "respond_payment", { payment_id: settled.payment_id, action: "void" }, k.a);
    expect([left.code, left.message]).toEqual([
      "CONFLICT",
      `@${h.b} has left the group, so the payment cannot leave the balances; record a payment back instead.`,
    ]);
    const pending = (await s.ok("record_payment", { group_id: id, to: h.a, amount: "1.00" }, k.c)).payment;
    await s.ok("archive_group", { group_id: id, archived: true }, k.a);
    expect((await failure(s, "respond_payment", { payment_id: pending.payment_id, action: "void" }, k.c)).code).toBe("CONFLICT");
  });
});
