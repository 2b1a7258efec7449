// The dashboard's "Record paying it": one payment to a friend across the groups both are in (record_payment without
// group_id), through real HTTP with a cookie jar; the friend confirms it once.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, groupOf } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode } from "./page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** The dashboard (`/` for a signed-in browser), read with the browser's cookies. */
async function dashboard(b: PageClient, query = ""): Promise<string> {
  const res = await fetch(`${s.url}/${query}`, { headers: { accept: "text/html", cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; ") } });
  expect(res.status).toBe(200);
  const html = await res.text();
  b.csrf = html.match(/name="csrf" value="([^"]+)"/)?.[1] ?? b.csrf;
  return html;
}

test("bob pays alice what he owes her in two groups with one button; she confirms both parts at once", async () => {
  const [alice, bob] = [await s.register("pa-alice"), await s.register("pa-bob")];
  const flat = await groupOf(s, [alice, bob], "EUR", "Flat");
  const trip = await groupOf(s, [alice, bob], "EUR", "Trip");
  await s.ok("add_expense", { group_id: flat.group_id, description: "Rent", amount: "60.00" }, alice.key);
  await s.ok("add_expense", { group_id: trip.group_id, description: "Hotel", amount: "40.00" }, alice.key);
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", "pa-bob", bob.key);

  const html = await dashboard(b);
  expect(html).toContain("you owe PA-ALICE 50.00 EUR");
  const form = html.match(/<form method="post" action="\/payments\/across"[^>]*>([\s\S]*?)<\/form>/)![1]!;
  const fields = Object.fromEntries([...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
  expect(fields).toMatchObject({ to: "pa-alice", currency: "EUR" });
  const res = await b.post("/payments/across", fields, fields.csrf ?? b.csrf);
  expect(res.status).toBe(303);
  expect(res.location).toBe("/?done=paid-2");
  expect(await dashboard(b, "?done=paid-2")).toContain("Payment recorded across 2 groups. It counts once they confirm it.");

  const [pending] = (await s.ok("get_balances", {}, alice.key)).pending_payments;
  expect(pending.batch_id).toBeTruthy();
  const answer = await s.ok("respond_payment", { payment_id: pending.payment_id, action: "confirm" }, alice.key);
  expect(answer.parts.map((p: any) => [p.group_id, p.amount])).toEqual([
    [flat.group_id, "30.00"],
    [trip.group_id, "20.00"],
  ]);
  expect((await balancesOf(s, alice.key, flat.group_id))["pa-bob"]).toBe(0);
  expect((await balancesOf(s, alice.key, trip.group_id))["pa-bob"]).toBe(0);
  // Settled up: no button is left to press.
  expect(await dashboard(b)).not.toContain('action="/payments/across"');
});
