// A debt is not paid twice: settle-up (get_balances with and without group_id) counts pending payments as if confirmed
// and names them; a payment that repeats one still pending (same group, payer, payee, amount and currency) is refused
// unless the caller says it is a second payment; a retry with the same idempotency key is still replayed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, failure, groupWith } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let counter = 0;
/** dana, alice and carl; alice paid 377.88 split equally: dana and carl each owe her 125.96. */
async function trip(simplify = true) {
  const p = `twice${++counter}`;
  const h = { alice: `${p}-alice`, dana: `${p}-dana`, carl: `${p}-carl` };
  const g = await groupWith(s, [h.alice, h.dana, h.carl]);
  const k = { alice: g.by[h.alice]!.key, dana: g.by[h.dana]!.key, carl: g.by[h.carl]!.key };
  if (!simplify) await s.ok("update_group", { group_id: g.group_id, simplify_debts: false }, k.alice);
  await s.ok("add_expense", { group_id: g.group_id, description: "Flat", amount: "377.88" }, k.alice);
  return { id: g.group_id, h, k };
}
/** The settle-up transfers, in payer order (a pairwise plan lists them so; a simplified one largest first). */
const plan = (b: any) => b.settle_up.map((t: any) => [t.from.handle, t.to.handle, t.amount]).sort((x: string[], y: string[]) => (x[0]! < y[0]! ? -1 : 1));

describe("settle-up counts pending payments", () => {
  test.each([
    ["simplified", true],
    ["pairwise", false],
  ])("%s: a pending payment is not suggested again, and the answer names it", async (_name, simplify) => {
    const { id, h, k } = await trip(simplify as boolean);
    expect(plan(await s.ok("get_balances", { group_id: id }, k.dana))).toEqual([
      [h.carl, h.alice, "125.96"],
      [h.dana, h.alice, "125.96"],
    ]);
    const { payment } = await s.ok("record_payment", { group_id: id, to: h.alice, amount: "125.96" }, k.dana);
    expect(payment.state).toBe("pending");
    const after = await s.ok("get_balances", { group_id: id }, k.dana);
    // the balances are what counts now; the plan counts the pending payment as if confirmed, and says so
    expect(after.members.find((m: any) => m.agent.handle === h.dana).balance_minor).toBe(-12596);
    expect(plan(after)).toEqual([[h.carl, h.alice, "125.96"]]);
    expect(after.settle_up_counts_pending).toEqual([payment.payment_id]);
    expect(after.pending_payments.map((p: any) => p.payment_id)).toEqual([payment.payment_id]);
    // a partial pending payment leaves the rest suggested
    await s.ok("record_payment", { group_id: id, to: h.alice, amount: "100.00" }, k.carl);
    expect(plan(await s.ok("get_balances", { group_id: id }, k.alice))).toEqual([[h.carl, h.alice, "25.96"]]);
    // rejected, it is owed again
    await s.ok("respond_payment", { payment_id: payment.payment_id, action: "reject" }, k.alice);
    const rejected = await s.ok("get_balances", { group_id: id }, k.alice);
    expect(plan(rejected)).toEqual([
      [h.carl, h.alice, "25.96"],
      [h.dana, h.alice, "125.96"],
    ]);
    expect(rejected.settle_up_counts_pending).toHaveLength(1);
  });

  test("without group_id: each counterparty's to_settle counts the pending payments; paying across groups again is refused", async () => {
    const { id, h, k } = await trip();
    const paid = (await s.ok("record_payment", { group_id: id, to: h.alice, amount: "125.96" }, k.dana)).payment;
    const mine = await s.ok("get_balances", {}, k.dana);
    // The balance is the confirmed one; what is left to pay, with the pending payment counted, is nothing.
    expect(mine.counterparties.map((c: any) => [c.agent.handle, c.balance, c.to_settle])).toEqual([[h.alice, "-125.96 EUR", "0.00 EUR"]]);
    expect(mine.settle_up_counts_pending).toEqual([paid.payment_id]);
    expect(mine.pending_payments.map((p: any) => p.payment_id)).toEqual([paid.payment_id]);
    // the payee's view too: only carl still owes her
    expect((await s.ok("get_balances", {}, k.alice)).counterparties.map((c: any) => [c.agent.handle, c.to_settle])).toEqual([
      [h.carl, "+125.96 EUR"],
      [h.dana, "0.00 EUR"],
    ]);
    const again = await failure(s, "record_payment", { to: h.alice }, k.dana);
    expect(again.code).toBe("CONFLICT");
    expect(again.message).toContain("owes");
  });
});

describe("a payment that repeats a pending one", () => {
  test("pressed again with a new key it is refused, saying what to do; the same key replays; the debt never flips", async () => {
    const { id, h, k } = await trip();
    const key = `first-${crypto.randomUUID()}`;
    const first = await s.ok("record_payment", { group_id: id, to: h.alice, amount: "125.96", idempotency_key: key }, k.dana);
    const twice = await failure(s, "record_payment", { group_id: id, to: h.alice, amount: "125.96" }, k.dana);
    expect(twice.status).toBe(409);
    expect(twice.code).toBe("CONFLICT");
    expect(twice.details).toEqual({ pending_payment_id: first.payment.payment_id });
    expect(twice.message).toContain("already has a pending payment of 125.96 EUR");
    expect(twice.message).toContain("second_payment: true");
    // amount_minor is the same amount
    expect((await failure(s, "record_payment", { group_id: id, to: h.alice, amount_minor: 12596 }, k.dana)).code).toBe("CONFLICT");
    // the payee recording the same money she is asked to confirm: refused too, pointing at the pending one
    const byPayee = await failure(s, "record_payment", { group_id: id, from: h.dana, amount: "125.96" }, k.alice);
    expect(byPayee.code).toBe("CONFLICT");
    expect(byPayee.message).toContain("confirm that payment with respond_payment");
    // an idempotent retry is replayed, not refused
    const retry = await s.call("record_payment", { group_id: id, to: h.alice, amount: "125.96", idempotency_key: key }, k.dana);
    expect(retry.status).toBe(200);
    expect(retry.body.data.payment.payment_id).toBe(first.payment.payment_id);
    const listed = (await s.ok("list_payments", { group_id: id }, k.alice)).payments;
    expect(listed.map((p: any) => p.payment_id)).toEqual([first.payment.payment_id]);
    // confirmed, dana is settled: not flipped to the other side
    await s.ok("respond_payment", { payment_id: first.payment.payment_id, action: "confirm" }, k.alice);
    expect((await balancesOf(s, k.alice, id))[h.dana]).toBe(0);
  });

  test("said to be a second payment it is recorded; another amount, currency or pair is not a repeat", async () => {
    const { id, h, k } = await trip();
    await s.ok("record_payment", { group_id: id, to: h.alice, amount: "50.00" }, k.dana);
    const second = await s.ok("record_payment", { group_id: id, to: h.alice, amount: "50.00", second_payment: true }, k.dana);
    expect(second.payment.state).toBe("pending");
    await s.ok("record_payment", { group_id: id, to: h.alice, amount: "25.96" }, k.dana);
    await s.ok("record_payment", { group_id: id, to: h.alice, amount: "50.00" }, k.carl);
    // 50.00 USD is not 50.00 EUR
    await s.ok("record_payment", { group_id: id, to: h.alice, amount: "50.00", currency: "USD", exchange_rate: "0.9" }, k.dana);
    // ...but 50.00 USD again is a repeat, whatever the rate
    const usd = await failure(s, "record_payment", { group_id: id, to: h.alice, amount: "50.00", currency: "USD", exchange_rate: "0.95" }, k.dana);
    expect(usd.code).toBe("CONFLICT");
    expect(usd.message).toContain("50.00 USD");
    // a payment no longer pending is not repeated: confirmed, the same amount again is recorded
    const pending = (await s.ok("list_payments", { group_id: id, state: "pending" }, k.alice)).payments;
    for (const p of pending.filter((p: any) => p.from.handle === h.carl))
      await s.ok("respond_payment", { payment_id: p.payment_id, action: "confirm" }, k.alice);
    expect((await s.ok("record_payment", { group_id: id, to: h.alice, amount: "50.00" }, k.carl)).payment.state).toBe("pending");
  });

  test("pressed twice at once with two keys: one payment, the other refused", async () => {
    const { id, h, k } = await trip();
    const both = await Promise.all(
      [1, 2].map(() => s.call("record_payment", { group_id: id, to: h.alice, amount: "125.96", idempotency_key: crypto.randomUUID() }, k.dana)),
    );
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    expect((await s.ok("list_payments", { group_id: id }, k.alice)).payments).toHaveLength(1);
  });

  test("second_payment goes with group_id", async () => {
    const { h, k } = await trip();
    const refused = await failure(s, "record_payment", { to: h.alice, second_payment: true }, k.dana);
    expect([refused.code, refused.path]).toEqual(["VALIDATION_ERROR", "second_payment"]);
  });
});
