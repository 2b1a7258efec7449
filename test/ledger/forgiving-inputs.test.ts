// Inputs that forgive, exactly: an amount may come as a JSON number when it converts exactly, an exact split's entry
// may name its amount `amount` as paid_by does, and a wrong field's error names the right one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { failure, groupWith } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let counter = 0;
async function fresh(currency = "EUR") {
  const p = `fg${++counter}`;
  const g = await groupWith(s, [`${p}-a`, `${p}-b`], currency);
  return { id: g.group_id, a: `${p}-a`, b: `${p}-b`, key: g.by[`${p}-a`]!.key };
}
const add = (key: string, args: Record<string, unknown>) => s.ok("add_expense", { description: "Dinner", ...args }, key).then((d) => d.expense);
const shares = (e: any) => Object.fromEntries(e.shares.map((x: any) => [x.handle, x.amount_minor]));

describe("amounts as JSON numbers", () => {
  test("a number converts exactly: 6 and 12.5 in EUR, 1500 in JPY", async () => {
    const g = await fresh();
    expect((await add(g.key, { group_id: g.id, amount: 6 })).amount_minor).toBe(600);
    expect((await add(g.key, { group_id: g.id, amount: 12.5 })).amount).toBe("12.50");
    const jpy = await fresh("JPY");
    expect((await add(jpy.key, { group_id: jpy.id, amount: 1500 })).amount_minor).toBe(1500);
  });

  test("more decimals than the currency has are refused, not rounded: 10.155 EUR, 12.5 JPY", async () => {
    const g = await fresh();
    const f = await failure(s, "add_expense", { group_id: g.id, description: "x", amount: 10.155 }, g.key);
    expect(f).toMatchObject({ code: "VALIDATION_ERROR", path: "amount" });
    expect(f.message).toContain("at most 2 decimals");
    const jpy = await fresh("JPY");
    expect(await failure(s, "add_expense", { group_id: jpy.id, description: "x", amount: 12.5 }, jpy.key)).toMatchObject({
      code: "VALIDATION_ERROR",
      path: "amount",
    });
  });

  test("a number JSON cannot hold exactly as a plain decimal is refused: 0.1 + 0.2, 1e-7", async () => {
    const g = await fresh();
    expect((await failure(s, "add_expense", { group_id: g.id, description: "x", amount: 0.1 + 0.2 }, g.key)).path).toBe("amount");
    expect((await failure(s, "add_expense", { group_id: g.id, description: "x", amount: 1e-7 }, g.key)).path).toBe("amount");
  });

  test("paid_by, exact and adjustment splits, record_payment and exchange_rate take numbers too", async () => {
    const g = await fresh();
    const e = await add(g.key, {
      group_id: g.id,
      amount: 30,
      paid_by: [
        { handle: g.a, amount: 20 },
        { handle: g.b, amount: 10 },
      ],
      split: {
        mode: "exact",
        among: [
          { handle: g.a, value: 12.5 },
          { handle: g.b, value: 17.5 },
        ],
      },
    });
    expect(shares(e)).toEqual({ [g.a]: 1250, [g.b]: 1750 });
    const adj = await add(g.key, { group_id: g.id, amount: "10.00", split: { mode: "adjustment", among: [{ handle: g.a, value: -1 }, { handle: g.b }] } });
    expect(shares(adj)).toEqual({ [g.a]: 450, [g.b]: 550 });
    const usd = await add(g.key, { group_id: g.id, amount: 10, currency: "USD", exchange_rate: 0.9 });
    expect(usd.amount_minor).toBe(900);
    const { payment } = await s.ok("record_payment", { group_id: g.id, to: g.b, amount: 5.25 }, g.key);
    expect(payment.amount_minor).toBe(525);
  });
});

describe("an exact split's entry names its amount value or amount", () => {
  test("amount is the same as value", async () => {
    const g = await fresh();
    const e = await add(g.key, {
      group_id: g.id,
      amount: "30.00",
      split: {
        mode: "exact",
        among: [
          { handle: g.a, amount: "10.00" },
          { handle: g.b, value: "20.00" },
        ],
      },
    });
    expect(shares(e)).toEqual({ [g.a]: 1000, [g.b]: 2000 });
    expect(e.split.among).toMatchObject([
      { handle: g.a, value: "10.00" },
      { handle: g.b, value: "20.00" },
    ]);
    expect(e.split.among.map((x: any) => Object.keys(x).sort())).toEqual([
      ["handle", "member", "value"],
      ["handle", "member", "value"],
    ]);
  });

  test("both at once is refused", async () => {
    const g = await fresh();
    const f = await failure(
      s,
      "add_expense",
      { group_id: g.id, description: "x", amount: "30.00", split: { mode: "exact", among: [{ handle: g.a, value: "10.00", amount: "10.00" }] } },
      g.key,
    );
    expect(f).toMatchObject({ code: "VALIDATION_ERROR", path: "split.among[0].amount" });
  });
});

describe("a wrong field's error names the right one", () => {
  test("a misspelt field: did you mean amount?", async () => {
    const g = await fresh();
    const f = await failure(s, "add_expense", { group_id: g.id, description: "x", amout: "10.00" }, g.key);
    expect(f.details.issues).toContainEqual({ path: "(arguments)", message: 'unknown field "amout": did you mean amount?' });
  });

  test("value in paid_by: did you mean amount?", async () => {
    const g = await fresh();
    const f = await failure(s, "add_expense", { group_id: g.id, description: "x", amount: "10.00", paid_by: [{ handle: g.a, value: "10.00" }] }, g.key);
    expect(f.details.issues).toContainEqual({ path: "paid_by[0]", message: 'unknown field "value": did you mean amount?' });
  });

  test("a field like none here lists the fields there are", async () => {
    const g = await fresh();
    const f = await failure(s, "get_group", { group_id: g.id, colour: "blue" }, g.key);
    expect(f.details.issues).toContainEqual({ path: "(arguments)", message: 'unknown field "colour"; the fields here are group_id' });
  });
});

test("a key named like a built-in (__proto__, constructor) is an unknown field, not a failure", async () => {
  const g = await fresh();
  for (const body of [`{"group_id":"${g.id}","__proto__":{"x":1}}`, `{"group_id":"${g.id}","constructor":1}`]) {
    const res = await s.raw("/v1/tools/get_group", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${g.key}` }, body });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe("VALIDATION_ERROR");
  }
});
