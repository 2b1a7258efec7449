// record_payment without group_id: one payment to a friend across the groups both are in, oldest group first, each
// part at most what is owed there; one transaction, one idempotency key, one inbox item, one answer for all parts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { textFor } from "../../cli/answer-text.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { balancesOf, failure, groupOf, inboxItems } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let n = 0;
/** alice and bob in four groups, oldest first: bob owes alice 30.00 EUR, 20.00 EUR and 10.00 USD; alice owes bob 5.00 EUR in the last. */
async function friends() {
  const [alice, bob] = [await s.register(`across${++n}-alice`), await s.register(`across${n}-bob`)];
  const owe = async (payer: Agent, amount: string, currency = "EUR", name = "G") => {
    const g = await groupOf(s, [payer, payer === alice ? bob : alice], currency, name);
    // the payer paid it all, split equally between the two: the other owes half
    await s.ok("add_expense", { group_id: g.group_id, description: "x", amount }, payer.key);
    return g.group_id;
  };
  const g1 = await owe(alice, "60.00", "EUR", "Flat");
  const g2 = await owe(alice, "40.00", "EUR", "Trip");
  const g3 = await owe(alice, "20.00", "USD", "New York");
  const g4 = await owe(bob, "10.00", "EUR", "Lunch");
  return { alice, bob, g1, g2, g3, g4 };
}

test("the payer pays 40.00 EUR across groups: oldest first, one item to confirm, one confirmation for both parts", async () => {
  const { alice, bob, g1, g2, g3, g4 } = await friends();
  const key = `across-${crypto.randomUUID()}`;
  const r = await s.ok("record_payment", { to: alice.handle, amount: "40.00", currency: "EUR", note: "bank transfer", idempotency_key: key }, bob.key);
  expect(r).toMatchObject({ currency: "EUR", total_minor: 4000, total: "40.00", overpayment: null });
  expect(r.parts.map((p: any) => [p.group_id, p.name, p.owed, p.payment.amount, p.payment.state, p.payment.batch_id])).toEqual([
    [g1, "Flat", "30.00", "30.00", "pending", r.batch_id],
    [g2, "Trip", "20.00", "10.00", "pending", r.batch_id],
  ]);
  expect(r.payment.payment_id).toBe(r.parts[0].payment.payment_id);
  // Replayed with the same key: the same answer, nothing recorded twice.
  const again = await s.ok("record_payment", { to: alice.handle, amount: "40.00", currency: "EUR", note: "bank transfer", idempotency_key: key }, bob.key);
  expect(again.batch_id).toBe(r.batch_id);
  expect((await s.ok("list_payments", { group_id: g2 }, alice.key)).payments).toHaveLength(1);

  // Not counted yet; alice has one item for the whole payment.
  expect((await balancesOf(s, alice.key, g1))[bob.handle]).toBe(-3000);
  const [item] = await inboxItems(s, alice.key, "ledger.payment_to_confirm");
  expect(item.summary_md).toContain("paid you 40.00 EUR across your groups (30.00 EUR in “Flat”");
  expect(item.payload).toMatchObject({ batch_id: r.batch_id, amount_minor: 4000 });
  expect(item.payload.parts.map((p: any) => p.amount)).toEqual(["30.00", "10.00"]);
  expect(item.note.untrusted_content).toBe("bank transfer");
  const [logged] = (await s.ok("get_activity", { group_id: g2 }, alice.key)).entries;
  expect(logged.summary_md).toContain(
    `paid @${alice.handle} 10.00 EUR (waiting for @${alice.handle} to confirm, this group's part of one payment across groups)`,
  );

  // Confirming any part confirms them all, in one answer.
  const confirmed = await s.ok("respond_payment", { payment_id: r.parts[1].payment.payment_id, action: "confirm" }, alice.key);
  expect(confirmed.payment.payment_id).toBe(r.parts[1].payment.payment_id);
  expect(confirmed.parts.map((p: any) => p.state)).toEqual(["confirmed", "confirmed"]);
  expect(textFor("respond_payment", "http://x")(confirmed)).toContain("One payment across 2 groups, all its parts confirmed:");
  expect((await balancesOf(s, alice.key, g1))[bob.handle]).toBe(0);
  expect((await balancesOf(s, alice.key, g2))[bob.handle]).toBe(-1000);
  expect((await balancesOf(s, alice.key, g3))[bob.handle]).toBe(-1000);
  expect((await balancesOf(s, alice.key, g4))[bob.handle]).toBe(500);
  expect((await s.ok("get_inbox", { since: "0", include_seen: true }, alice.key)).items.find((i: any) => i.item_id === item.item_id).resolved).toBe(true);
  const told = await inboxItems(s, bob.key, "ledger.payment_confirmed");
  expect(told).toHaveLength(1);
  expect(told[0].summary_md).toContain("confirmed your payment of 40.00 EUR across your groups");

  // Voiding one part voids the whole payment.
  const voided = await s.ok("respond_payment", { payment_id: r.parts[0].payment.payment_id, action: "void" }, bob.key);
  expect(voided.parts.map((p: any) => p.state)).toEqual(["voided", "voided"]);
  expect((await balancesOf(s, alice.key, g1))[bob.handle]).toBe(-3000);
  expect(await inboxItems(s, alice.key, "ledger.payment_voided")).toHaveLength(1);

  // `svc call` at a terminal lists the parts.
  const text = textFor("record_payment", "http://x")(r);
  expect(text).toContain(`${bob.handle} paid ${alice.handle} 40.00 EUR across 2 groups`);
  expect(text).toContain("Trip: 10.00 EUR (owed 20.00)");
});

test("recorded by the payee without an amount: everything owed in that currency, confirmed at once", async () => {
  const { alice, bob, g3 } = await friends();
  const r = await s.ok("record_payment", { from: bob.handle, currency: "USD" }, alice.key);
  expect(r.parts.map((p: any) => [p.group_id, p.payment.amount, p.payment.state])).toEqual([[g3, "10.00", "confirmed"]]);
  expect((await balancesOf(s, alice.key, g3))[bob.handle]).toBe(0);
  expect((await inboxItems(s, bob.key, "ledger.payment_confirmed"))[0].payload.batch_id).toBe(r.batch_id);
});

test("refused: debts in two currencies without one named, more than is owed (naming the total), nothing owed", async () => {
  const { alice, bob } = await friends();
  const twoCurrencies = await failure(s, "record_payment", { to: alice.handle, amount: "1.00" }, bob.key);
  expect([twoCurrencies.code, twoCurrencies.path]).toEqual(["VALIDATION_ERROR", "currency"]);
  expect(twoCurrencies.message + JSON.stringify(twoCurrencies.details)).toContain("EUR and USD");
  const tooMuch = await failure(s, "record_payment", { to: alice.handle, amount: "50.01", currency: "EUR" }, bob.key);
  expect([tooMuch.code, tooMuch.path]).toEqual(["VALIDATION_ERROR", "amount"]);
  expect(JSON.stringify(tooMuch.details)).toContain("50.00 EUR");
  // alice owes bob only in Lunch (EUR): she can pay that, but nothing in USD.
  const nothing = await failure(s, "record_payment", { to: bob.handle, currency: "USD" }, alice.key);
  expect(nothing.code).toBe("CONFLICT");
  expect(nothing.message).toContain("nothing in USD");
  const stranger = await s.register(`across${n}-carol`);
  const none = await failure(s, "record_payment", { to: stranger.handle, amount: "1.00" }, bob.key);
  expect(none.code).toBe("CONFLICT");
  expect(none.message).toContain(`@${bob.handle} owes @${stranger.handle} nothing in the groups they share`);
  expect((await failure(s, "record_payment", { to: alice.handle, amount: "1.00", currency: "GBP", exchange_rate: "1.1" }, bob.key)).path).toBe("exchange_rate");
  // Nothing was recorded by the refusals.
  expect((await s.ok("get_balances", {}, bob.key)).pending_payments).toEqual([]);
});
