import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { AppError } from "../../server/errors.ts";
import { CURRENCY_CODES, currencyExponent, isCurrency } from "../../server/contract/currencies.ts";
import { checkMinor, convert, formatAmount, formatBalance, parseAmount, resolveAmount } from "../../server/domain/ledger/money/amounts.ts";
import { MAX_MINOR } from "../../server/contract/ledger.ts";
import { computeShares, splitPayers, type SplitParticipant } from "../../server/domain/ledger/money/splits.ts";
import type { SplitMode } from "../../server/contract/ledger.ts";
import { EXACT_LIMIT, settlePlan } from "../../server/domain/ledger/money/fewest-transfers.ts";
import { greedyTransfers, settleUp, type Transfer } from "./settle-up.ts";
import { bruteForceFewest } from "./ledger-fixtures.ts";

const RUNS = { numRuns: 500 };

function expectInvalid(fn: () => unknown, path?: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AppError);
  const err = caught as AppError;
  expect(err.code).toBe("VALIDATION_ERROR");
  if (path !== undefined) expect((err.details!.issues as { path: string }[])[0]!.path).toBe(path);
}

const sum = (xs: readonly { amount_minor: number }[]) => xs.reduce((a, s) => a + s.amount_minor, 0);
const byHandle = (xs: readonly { handle: string; amount_minor: number }[]) => Object.fromEntries(xs.map((s) => [s.handle, s.amount_minor]));

// ---------- arbitraries ----------

const currencyArb = fc.constantFrom(...CURRENCY_CODES);
const amountArb = fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: MAX_MINOR }));
const handlesArb = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/), { minLength: 1, maxLength: 12 });

/** n non-negative integers summing to `total` (random cut points). */
function partitionArb(total: number, n: number): fc.Arbitrary<number[]> {
  return fc.array(fc.integer({ min: 0, max: total }), { minLength: n - 1, maxLength: n - 1 }).map((cuts) => {
    const points = [0, ...cuts.sort((a, b) => a - b), total];
    return points.slice(1).map((p, i) => p - points[i]!);
  });
}

function scaledText(n: number, scale: number): string {
  const digits = n.toString().padStart(scale + 1, "0");
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

interface SplitCase {
  amount: number;
  currency: string;
  mode: SplitMode;
  among: SplitParticipant[];
}

function amongArb(mode: SplitMode, amount: number, currency: string, handles: string[]): fc.Arbitrary<SplitParticipant[]> {
  const n = handles.length;
  const withValues = (values: (string | number | undefined)[]) => handles.map((handle, i) => ({ handle, value: values[i] }));
  switch (mode) {
    case "equal":
      return fc.constant(handles.map((handle) => ({ handle })));
    case "exact":
      return partitionArb(amount, n).map((parts) => withValues(parts.map((p) => formatAmount(p, currency))));
    case "percent":
      return partitionArb(1_000_000, n).map((parts) => withValues(parts.map((p) => scaledText(p, 4))));
    case "shares":
      return fc
        .array(
          fc.oneof(
            fc.integer({ min: 1, max: 1000 }),
            fc.integer({ min: 1, max: 10_000_000 }).map((w) => scaledText(w, 6)),
          ),
          { minLength: n, maxLength: n },
        )
        .map(withValues);
    case "adjustment": {
      // Adjustments within ±amount/(2n) can never leave a share negative.
      const k = Math.floor(amount / (2 * n));
      return fc
        .array(fc.option(fc.integer({ min: -k, max: k }), { nil: undefined }), { minLength: n, maxLength: n })
        .map((adj) => withValues(adj.map((a) => (a === undefined ? undefined : (a > 0 ? "+" : "") + formatAmount(a, currency)))));
    }
  }
}

const modeArb = fc.constantFrom<SplitMode>("equal", "exact", "percent", "shares", "adjustment");
const splitCaseArb: fc.Arbitrary<SplitCase> = fc
  .tuple(amountArb, currencyArb, modeArb, handlesArb)
  .chain(([amount, currency, mode, handles]) => amongArb(mode, amount, currency, handles).map((among) => ({ amount, currency, mode, among })));

// ---------- currencies ----------

describe("currencies", () => {
  test("exponents", () => {
    const expected: Record<string, number> = {
      JPY: 0,
      EUR: 2,
      USD: 2,
      GBP: 2,
      KWD: 3,
      BHD: 3,
      JOD: 3,
      OMR: 3,
      TND: 3,
      CLP: 0,
      ISK: 0,
      KRW: 0,
      VND: 0,
      CLF: 4,
      UYW: 4,
    };
    for (const [code, exp] of Object.entries(expected)) expect(currencyExponent(code)).toBe(exp);
    expect(CURRENCY_CODES.length).toBeGreaterThan(150);
  });

  test("unknown codes", () => {
    for (const code of ["eur", "XXX", "XAU", "ABC", "", "EURO", "toString", "__proto__"]) {
      expect(isCurrency(code)).toBe(false);
      expectInvalid(() => currencyExponent(code), "currency");
    }
    expectInvalid(() => parseAmount("1", "ZZZ"), "currency");
  });
});

// ---------- parse / format ----------

describe("parseAmount and formatAmount", () => {
  test("accepted examples", () => {
    expect(parseAmount("12", "EUR")).toBe(1200);
    expect(parseAmount("12.3", "EUR")).toBe(1230);
    expect(parseAmount("12.34", "EUR")).toBe(1234);
    expect(parseAmount("0.01", "EUR")).toBe(1);
    expect(parseAmount("1250", "JPY")).toBe(1250);
    expect(parseAmount("1.234", "KWD")).toBe(1234);
    expect(parseAmount("9999999999999.99", "EUR")).toBe(999_999_999_999_999);
    expect(parseAmount("999999999999999", "JPY")).toBe(999_999_999_999_999);
  });

  test("rejected examples", () => {
    const bad = [
      "12.345",
      "0",
      "0.00",
      "-1",
      "-1.00",
      "+1",
      "1e3",
      "1E3",
      " 1",
      "1 ",
      "1 000",
      "1,00",
      "",
      ".5",
      "5.",
      "abc",
      "0x10",
      "Infinity",
      "NaN",
      "1234567890123456",
      "99999999999999",
      "１２",
    ];
    for (const text of bad) expectInvalid(() => parseAmount(text, "EUR", "amount"), "amount");
    expectInvalid(() => parseAmount("12.0", "JPY"), "amount");
    expectInvalid(() => parseAmount("1.2345", "KWD"), "amount");
    expectInvalid(() => parseAmount(12 as unknown as string, "EUR"), "amount");
    expectInvalid(() => parseAmount("1.001", "EUR", "paid_by[0].amount"), "paid_by[0].amount");
    expectInvalid(() => parseAmount("1", "XYZ", "paid_by[0].amount"), "currency");
  });

  test("more decimals than the exponent are rejected", () => {
    fc.assert(
      fc.property(currencyArb, fc.integer({ min: 1, max: 999_999 }), (currency, n) => {
        const exp = currencyExponent(currency);
        expectInvalid(() => parseAmount(`${n}.${"1".repeat(exp + 1)}`, currency), "amount");
      }),
      RUNS,
    );
  });

  test("format examples", () => {
    expect(formatAmount(1250, "EUR")).toBe("12.50");
    expect(formatAmount(1250, "JPY")).toBe("1250");
    expect(formatAmount(-300, "EUR")).toBe("-3.00");
    expect(formatAmount(5, "EUR")).toBe("0.05");
    expect(formatAmount(-5, "KWD")).toBe("-0.005");
    expect(formatAmount(0, "EUR")).toBe("0.00");
    expect(formatBalance(1250, "EUR")).toBe("+12.50 EUR");
    expect(formatBalance(-300, "EUR")).toBe("-3.00 EUR");
    expect(formatBalance(0, "EUR")).toBe("0.00 EUR");
    expect(formatBalance(0, "JPY")).toBe("0 JPY");
  });

  test("format then parse round-trips", () => {
    fc.assert(
      fc.property(currencyArb, fc.integer({ min: 1, max: MAX_MINOR }), (currency, minor) => {
        expect(parseAmount(formatAmount(minor, currency), currency)).toBe(minor);
      }),
      RUNS,
    );
  });

  test("parse then format gives the padded text", () => {
    fc.assert(
      fc.property(currencyArb, fc.integer({ min: 1, max: 999_999_999 }), fc.nat({ max: 9999 }), (currency, int, frac) => {
        const exp = currencyExponent(currency);
        const fracText =
          exp === 0
            ? ""
            : String(frac % 10 ** exp)
                .padStart(exp, "0")
                .slice(0, 1 + (frac % exp));
        const text = fracText ? `${int}.${fracText}` : String(int);
        const expected = exp === 0 ? String(int) : `${int}.${fracText.padEnd(exp, "0")}`;
        expect(formatAmount(parseAmount(text, currency), currency)).toBe(expected);
      }),
      RUNS,
    );
  });

  test("checkMinor", () => {
    expect(checkMinor(1)).toBe(1);
    expect(checkMinor(MAX_MINOR)).toBe(MAX_MINOR);
    for (const n of [0, -1, 1.5, Number.NaN, Infinity, 1e15, "5", null]) expectInvalid(() => checkMinor(n, "x"), "x");
  });

  test("resolveAmount wants exactly one of amount and amount_minor", () => {
    expect(resolveAmount({ amount: "1.50" }, "EUR")).toBe(150);
    expect(resolveAmount({ amount_minor: 150 }, "EUR")).toBe(150);
    expectInvalid(() => resolveAmount({}, "EUR"), "amount");
    expectInvalid(() => resolveAmount({ amount: "1.50", amount_minor: 150 }, "EUR"), "amount");
    expectInvalid(() => resolveAmount({ amount: "1.505" }, "EUR", "paid_by[1]"), "paid_by[1].amount");
    expectInvalid(() => resolveAmount({ amount_minor: 0 }, "EUR", "paid_by[1]"), "paid_by[1].amount_minor");
    expectInvalid(() => resolveAmount({ amount_minor: 1 }, "QQQ"), "currency");
  });
});

// ---------- convert ----------

describe("convert", () => {
  test("known answers", () => {
    expect(convert(10000, "EUR", "USD", "1.0825")).toBe(10825); // 100.00 EUR -> 108.25 USD
    expect(convert(1000, "JPY", "EUR", "0.0061")).toBe(610); // 1000 JPY -> 6.10 EUR
    expect(convert(100, "EUR", "JPY", "161.235")).toBe(161); // 1.00 EUR -> 161.235 -> 161 JPY
    expect(convert(12345, "KWD", "EUR", "2.99")).toBe(3691); // 12.345 KWD -> 36.91155 EUR
    expect(convert(1234, "EUR", "JPY", "1")).toBe(12); // 12.34 -> 12
    expect(convert(1250, "JPY", "BHD", "0.0025")).toBe(3125); // 1250 JPY -> 3.125 BHD
    expect(convert(1, "EUR", "EUR", "0.000000000001")).toBe(0);
  });

  test("rounds half away from zero", () => {
    expect(convert(100, "EUR", "JPY", "0.5")).toBe(1); // 0.5 JPY
    expect(convert(-100, "EUR", "JPY", "0.5")).toBe(-1);
    expect(convert(100, "EUR", "JPY", "1.5")).toBe(2);
    expect(convert(100, "EUR", "JPY", "2.5")).toBe(3); // not banker's rounding
    expect(convert(100, "EUR", "KWD", "0.3345")).toBe(335); // 334.5 fils
    expect(convert(-100, "EUR", "KWD", "0.3345")).toBe(-335);
    expect(convert(100, "EUR", "KWD", "0.33449")).toBe(334);
    expect(convert(1, "JPY", "BHD", "0.0025")).toBe(3); // 2.5 fils
    expect(convert(1, "JPY", "BHD", "0.0024999")).toBe(2);
  });

  test("rejects bad rates", () => {
    for (const rate of ["0", "0.000", "-1", "+1", "1e3", "abc", "", " 1", "1.0000000000001", ".5", "1."]) {
      expectInvalid(() => convert(100, "EUR", "USD", rate), "exchange_rate");
    }
    expectInvalid(() => convert(100, "EUR", "USD", 1 as unknown as string), "exchange_rate");
    expectInvalid(() => convert(100, "EUR", "NOPE", "1"), "currency");
    expectInvalid(() => convert(MAX_MINOR, "EUR", "USD", "1000"), "exchange_rate");
  });

  test("properties: identity, scaling, symmetry", () => {
    fc.assert(
      fc.property(currencyArb, fc.integer({ min: -1e12, max: 1e12 }), (currency, minor) => {
        expect(convert(minor, currency, currency, "1")).toBe(minor);
        expect(convert(minor, currency, currency, "2.000")).toBe(2 * minor);
        expect(convert(-minor, currency, "EUR", "1.2345") + 0).toBe(-convert(minor, currency, "EUR", "1.2345") + 0);
      }),
      RUNS,
    );
  });
});

// ---------- splits ----------

describe("computeShares examples", () => {
  const eq = (handles: string[]) => handles.map((handle) => ({ handle }));

  test("equal: the extra cent goes to the handle first alphabetically", () => {
    expect(computeShares(10000, "equal", eq(["carol", "alice", "bob"]), "EUR")).toEqual([
      { handle: "carol", amount_minor: 3333 },
      { handle: "alice", amount_minor: 3334 },
      { handle: "bob", amount_minor: 3333 },
    ]);
    expect(computeShares(100, "equal", eq(["a", "b", "c"]), "JPY").map((s) => s.amount_minor)).toEqual([34, 33, 33]);
    expect(computeShares(1000, "equal", eq(["a", "b", "c"]), "KWD").map((s) => s.amount_minor)).toEqual([334, 333, 333]);
    expect(computeShares(5, "equal", eq(["d", "c", "b", "a"]), "EUR").map((s) => s.amount_minor)).toEqual([1, 1, 1, 2]);
    expect(computeShares(2, "equal", eq(["x", "y", "z"]), "EUR").map((s) => s.amount_minor)).toEqual([1, 1, 0]);
  });

  test("exact", () => {
    const among = [
      { handle: "alice", value: "60.00" },
      { handle: "bob", value: "40" },
    ];
    expect(byHandle(computeShares(10000, "exact", among, "EUR"))).toEqual({ alice: 6000, bob: 4000 });
    expectInvalid(() => computeShares(10001, "exact", among, "EUR"), "split.among");
    expectInvalid(() => computeShares(10000, "exact", [{ handle: "a", value: "100.001" }], "EUR"), "split.among[0].value");
    // a JSON number is read exactly as its decimal: 100 EUR fits, 100.001 has too many decimals
    expect(byHandle(computeShares(10000, "exact", [{ handle: "a", value: 100 }], "EUR"))).toEqual({ a: 10000 });
    expectInvalid(() => computeShares(10000, "exact", [{ handle: "a", value: 100.001 }], "EUR"), "split.among[0].value");
    expectInvalid(() => computeShares(10000, "exact", [{ handle: "a", value: "-100" }], "EUR"), "split.among[0].value");
  });

  test("percent: largest fractional part gets the remainder", () => {
    const among = [
      { handle: "alice", value: "33.3333" },
      { handle: "bob", value: "33.3333" },
      { handle: "carol", value: "33.3334" },
    ];
    expect(byHandle(computeShares(10000, "percent", among, "EUR"))).toEqual({ alice: 3333, bob: 3333, carol: 3334 });
    expect(
      byHandle(
        computeShares(
          999,
          "percent",
          [
            { handle: "b", value: 50 },
            { handle: "a", value: "50" },
          ],
          "EUR",
        ),
      ),
    ).toEqual({ a: 500, b: 499 });
    expectInvalid(() => computeShares(100, "percent", [{ handle: "a", value: "99.9999" }], "EUR"), "split.among");
    expectInvalid(() => computeShares(100, "percent", [{ handle: "a", value: "100.00001" }], "EUR"), "split.among[0].value");
    expectInvalid(() => computeShares(100, "percent", [{ handle: "a", value: "-100" }], "EUR"), "split.among[0].value");
    expectInvalid(() => computeShares(100, "percent", [{ handle: "a", value: 1e21 }], "EUR"), "split.among[0].value");
  });

  test("shares", () => {
    expect(
      byHandle(
        computeShares(
          10000,
          "shares",
          [
            { handle: "alice", value: "2" },
            { handle: "bob", value: 1 },
          ],
          "EUR",
        ),
      ),
    ).toEqual({ alice: 6667, bob: 3333 });
    expect(
      byHandle(
        computeShares(
          1001,
          "shares",
          [
            { handle: "bob", value: "1.5" },
            { handle: "alice", value: "0.5" },
          ],
          "EUR",
        ),
      ),
    ).toEqual({ bob: 751, alice: 250 });
    expectInvalid(() => computeShares(100, "shares", [{ handle: "a", value: "0" }], "EUR"), "split.among[0].value");
    expectInvalid(() => computeShares(100, "shares", [{ handle: "a", value: -1 }], "EUR"), "split.among[0].value");
    expectInvalid(() => computeShares(100, "shares", [{ handle: "a" }], "EUR"), "split.among[0].value");
  });

  test("adjustment", () => {
    const among = [{ handle: "alice", value: "+10.00" }, { handle: "bob" }, { handle: "carol", value: "-4.00" }];
    // 100.00 - 6.00 = 94.00 split equally: 31.34 (alice), 31.33, 31.33; then adjustments added.
    expect(byHandle(computeShares(10000, "adjustment", among, "EUR"))).toEqual({ alice: 4134, bob: 3133, carol: 2733 });
    // Adjustments above the total are fine while no share goes negative: -2.00 split, +6.00 each.
    expect(
      byHandle(
        computeShares(
          1000,
          "adjustment",
          [
            { handle: "a", value: "6" },
            { handle: "b", value: "6" },
          ],
          "EUR",
        ),
      ),
    ).toEqual({ a: 500, b: 500 });
    expectInvalid(() => computeShares(1000, "adjustment", [{ handle: "a", value: "-20.00" }, { handle: "b" }], "EUR"), "split.among[0].value");
    expectInvalid(() => computeShares(1000, "adjustment", [{ handle: "a", value: "1.001" }], "EUR"), "split.among[0].value");
  });

  test("invalid participant lists and modes", () => {
    expectInvalid(() => computeShares(100, "equal", [], "EUR"), "split.among");
    expectInvalid(() => computeShares(100, "equal", [{ handle: "a" }, { handle: "a" }], "EUR"), "split.among[1].handle");
    expectInvalid(() => computeShares(100, "equal", [{ handle: "" }], "EUR"), "split.among[0].handle");
    expectInvalid(() => computeShares(100, "equal", [{ handle: "a", value: "1" }], "EUR"), "split.among[0].value");
    expectInvalid(() => computeShares(100, "halves" as SplitMode, [{ handle: "a" }], "EUR"), "split.mode");
    expectInvalid(() => computeShares(0, "equal", [{ handle: "a" }], "EUR"), "amount_minor");
    expectInvalid(() => computeShares(100, "equal", [{ handle: "a" }], "EURO"), "currency");
  });
});

describe("computeShares properties", () => {
  test("shares sum to the amount, are non-negative, deterministic, in input order", () => {
    fc.assert(
      fc.property(splitCaseArb, ({ amount, currency, mode, among }) => {
        const shares = computeShares(amount, mode, among, currency);
        expect(shares.map((s) => s.handle)).toEqual(among.map((p) => p.handle));
        expect(sum(shares)).toBe(amount);
        for (const s of shares) {
          expect(Number.isSafeInteger(s.amount_minor)).toBe(true);
          expect(s.amount_minor).toBeGreaterThanOrEqual(0);
        }
        expect(computeShares(amount, mode, structuredClone(among), currency)).toEqual(shares);
      }),
      RUNS,
    );
  });

  test("shares per handle do not depend on the input order", () => {
    fc.assert(
      fc.property(splitCaseArb, fc.nat(), ({ amount, currency, mode, among }, seed) => {
        const rotated = [...among.slice(seed % among.length), ...among.slice(0, seed % among.length)].reverse();
        expect(byHandle(computeShares(amount, mode, rotated, currency))).toEqual(byHandle(computeShares(amount, mode, among, currency)));
      }),
      RUNS,
    );
  });

  test("equal shares differ by at most one minor unit; extras go to the first handles", () => {
    fc.assert(
      fc.property(amountArb, currencyArb, handlesArb, (amount, currency, handles) => {
        const shares = computeShares(
          amount,
          "equal",
          handles.map((handle) => ({ handle })),
          currency,
        );
        const values = shares.map((s) => s.amount_minor);
        expect(Math.max(...values) - Math.min(...values)).toBeLessThanOrEqual(1);
        const base = Math.floor(amount / handles.length);
        const extra = new Set([...handles].sort().slice(0, amount % handles.length));
        for (const s of shares) expect(s.amount_minor).toBe(base + (extra.has(s.handle) ? 1 : 0));
      }),
      RUNS,
    );
  });

  test("percent and shares stay within one minor unit of the exact proportion", () => {
    fc.assert(
      fc.property(
        splitCaseArb.filter((c) => c.mode === "percent" || c.mode === "shares"),
        ({ amount, currency, mode, among }) => {
          const scale = mode === "percent" ? 4 : 6;
          const weights = among.map((p) => {
            const [int, frac = ""] = String(p.value).split(".");
            return BigInt(int! + frac.padEnd(scale, "0"));
          });
          const total = weights.reduce((a, b) => a + b, 0n);
          computeShares(amount, mode, among, currency).forEach((s, i) => {
            const exactTimesTotal = BigInt(amount) * weights[i]!;
            const diff = BigInt(s.amount_minor) * total - exactTimesTotal;
            expect(diff < total && diff > -total).toBe(true);
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("splitPayers", () => {
  test("payers must sum to the amount", () => {
    expect(
      splitPayers(
        10000,
        [
          { handle: "alice", amount: "60.00" },
          { handle: "bob", amount_minor: 4000 },
        ],
        "EUR",
      ),
    ).toEqual([
      { handle: "alice", amount_minor: 6000 },
      { handle: "bob", amount_minor: 4000 },
    ]);
    expectInvalid(() => splitPayers(10000, [{ handle: "alice", amount: "60.00" }], "EUR"), "paid_by");
    expectInvalid(() => splitPayers(10000, [{ handle: "alice", amount: "100", amount_minor: 10000 }], "EUR"), "paid_by[0].amount");
    // One payer named alone without an amount paid it all; one of several must say how much.
    expect(splitPayers(10000, [{ handle: "alice" }], "EUR")).toEqual([{ handle: "alice", amount_minor: 10000 }]);
    expectInvalid(() => splitPayers(10000, [{ handle: "alice" }, { handle: "bob", amount: "50" }], "EUR"), "paid_by[0].amount");
    expectInvalid(() => splitPayers(10000, [], "EUR"), "paid_by");
    expectInvalid(
      () =>
        splitPayers(
          10000,
          [
            { handle: "a", amount_minor: 5000 },
            { handle: "a", amount_minor: 5000 },
          ],
          "EUR",
        ),
      "paid_by[1].handle",
    );
  });

  test("random payer partitions are accepted", () => {
    fc.assert(
      fc.property(
        fc.tuple(amountArb, currencyArb, handlesArb).chain(([rawAmount, currency, handles]) => {
          const amount = Math.max(rawAmount, handles.length); // every payer pays at least one minor unit
          return partitionArb(amount - handles.length, handles.length).map((parts) => ({
            amount,
            currency,
            payers: handles.map((handle, i) => ({ handle, amount_minor: parts[i]! + 1 })),
          }));
        }),
        ({ amount, currency, payers }) => {
          expect(sum(splitPayers(amount, payers, currency))).toBe(amount);
        },
      ),
      { numRuns: 200 },
    );
  });
});

// ---------- settle up ----------

function applyTransfers(balances: { handle: string; balance_minor: number }[], transfers: Transfer[]): Map<string, number> {
  const left = new Map(balances.map((b) => [b.handle, b.balance_minor]));
  for (const t of transfers) {
    expect(t.amount_minor).toBeGreaterThan(0);
    expect(t.from).not.toBe(t.to);
    left.set(t.from, left.get(t.from)! + t.amount_minor);
    left.set(t.to, left.get(t.to)! - t.amount_minor);
  }
  return left;
}

const zeroSumBalancesArb = handlesArb.chain((handles) =>
  fc.array(fc.integer({ min: -1e12, max: 1e12 }), { minLength: handles.length - 1, maxLength: handles.length - 1 }).map((values) => {
    const last = -values.reduce((a, b) => a + b, 0);
    return handles.map((handle, i) => ({ handle, balance_minor: i < values.length ? values[i]! : last + 0 }));
  }),
);

const named = (values: number[]) => values.map((balance_minor, i) => ({ handle: `m${String(i).padStart(2, "0")}`, balance_minor }));
const simplified = (balances: { handle: string; balance_minor: number }[]) => settleUp(balances, true).transfers;

/** Balances of up to `n` members summing to zero, made from a few amounts so that zero-sum subsets are common. */
const structuredBalancesArb = (n: number) =>
  fc.array(fc.constantFrom(500, 1000, 1500, 2000, 2500, 5900, 3333), { minLength: 1, maxLength: n - 1 }).chain((amounts) =>
    fc.array(fc.boolean(), { minLength: amounts.length, maxLength: amounts.length }).map((signs) => {
      const values = amounts.map((a, i) => (signs[i] ? a : -a));
      return [...values, 0 - values.reduce((a, b) => a + b, 0)];
    }),
  );

describe("settleUp", () => {
  test("simplified examples", () => {
    expect(
      simplified([
        { handle: "alice", balance_minor: 3000 },
        { handle: "bob", balance_minor: -1000 },
        { handle: "carol", balance_minor: -2000 },
      ]),
    ).toEqual([
      { from: "carol", to: "alice", amount_minor: 2000 },
      { from: "bob", to: "alice", amount_minor: 1000 },
    ]);
    expect(
      simplified([
        { handle: "c", balance_minor: -2000 },
        { handle: "b", balance_minor: 1000 },
        { handle: "a", balance_minor: 1000 },
      ]),
    ).toEqual([
      { from: "c", to: "a", amount_minor: 1000 },
      { from: "c", to: "b", amount_minor: 1000 },
    ]);
    expect(settleUp([{ handle: "a", balance_minor: 0 }], true)).toEqual({ transfers: [], method: "exact" });
    expect(() => settleUp([{ handle: "a", balance_minor: 1 }], true)).toThrow();
  });

  test("the fewest transfers where the greedy plan takes more; equal opposite balances paired", () => {
    // The issue's example: greedy would use 4 transfers; -20 = -15 ... pairs +15/-15 and then +10, +10 / -20.
    const plan = settleUp(named([-2000, 1500, 1000, 1000, -1500]), true);
    expect(plan.method).toBe("exact");
    expect(plan.transfers).toEqual([
      { from: "m04", to: "m01", amount_minor: 1500 },
      { from: "m00", to: "m02", amount_minor: 1000 },
      { from: "m00", to: "m03", amount_minor: 1000 },
    ]);
    expect(greedyTransfers(named([-2000, 1500, 1000, 1000, -1500]))).toHaveLength(4);
    // -59.00 is paid straight to +59.00, though larger balances are about
    const paired = simplified(named([10000, -5900, 5900, -10000, 3000, -3000]));
    expect(paired).toEqual([
      { from: "m03", to: "m00", amount_minor: 10000 },
      { from: "m01", to: "m02", amount_minor: 5900 },
      { from: "m05", to: "m04", amount_minor: 3000 },
    ]);
  });

  test("balances summing past 2^53 in a subset are still exact", () => {
    const big = 4_000_000_000_000_000;
    const plan = settleUp(named([big, big, -big, -big + 1, -1, 3, -3]), true);
    expect(plan.method).toBe("exact");
    expect(plan.transfers).toHaveLength(4);
    for (const v of applyTransfers(named([big, big, -big, -big + 1, -1, 3, -3]), plan.transfers).values()) expect(v).toBe(0);
  });

  test("exactly the fewest transfers, against a brute-force search, on small groups", () => {
    let greedyTakesMore = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          structuredBalancesArb(9),
          zeroSumBalancesArb.filter((b) => b.length <= 9).map((b) => b.map((x) => x.balance_minor)),
        ),
        (values) => {
          const balances = named(values);
          const { transfers, method } = settleUp(balances, true);
          expect(method).toBe("exact");
          expect(transfers.length).toBe(bruteForceFewest(values));
          for (const v of applyTransfers(balances, transfers).values()) expect(v).toBe(0);
          if (greedyTransfers(balances).length > transfers.length) greedyTakesMore++;
        },
      ),
      RUNS,
    );
    // the cases tried include those the greedy plan gets wrong
    expect(greedyTakesMore).toBeGreaterThan(0);
  });

  test("every transfer goes from someone owing to someone owed, so the money moved is what is owed; the same plan in any order of members", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          structuredBalancesArb(14),
          zeroSumBalancesArb.map((b) => b.map((x) => x.balance_minor)),
        ),
        fc.nat(),
        (values, seed) => {
          const balances = named(values);
          const transfers = simplified(balances);
          const of = new Map(balances.map((b) => [b.handle, b.balance_minor]));
          for (const t of transfers) {
            expect(of.get(t.from)!).toBeLessThan(0);
            expect(of.get(t.to)!).toBeGreaterThan(0);
          }
          const owed = values.filter((v) => v > 0).reduce((a, b) => a + b, 0);
          expect(transfers.reduce((a, t) => a + t.amount_minor, 0)).toBe(owed);
          const shuffled = [...balances].sort((a, b) => ((a.balance_minor * 31 + seed) % 7) - ((b.balance_minor * 31 + seed) % 7));
          expect(simplified(shuffled)).toEqual(transfers);
          expect(simplified([...balances].reverse())).toEqual(transfers);
        },
      ),
      RUNS,
    );
  });

  test(`exact up to ${EXACT_LIMIT} members left after pairing; beyond, greedy and said so, still settling everyone`, () => {
    // 1..n-1 and their sum: no zero-sum subset but the whole, and no equal opposite pair.
    const chain = (n: number) => {
      const values = Array.from({ length: n - 1 }, (_, i) => 1000 + i);
      return named([...values, -values.reduce((a, b) => a + b, 0)]);
    };
    const exact = settleUp(chain(EXACT_LIMIT), true);
    expect(exact.method).toBe("exact");
    expect(exact.transfers).toHaveLength(EXACT_LIMIT - 1);
    const greedy = settleUp(chain(EXACT_LIMIT + 1), true);
    expect(greedy.method).toBe("greedy");
    expect(greedy.transfers).toHaveLength(EXACT_LIMIT);
    for (const v of applyTransfers(chain(EXACT_LIMIT + 1), greedy.transfers).values()) expect(v).toBe(0);
    // pairs do not count towards the limit
    const withPairs = [...chain(EXACT_LIMIT), ...named(Array.from({ length: 10 }, (_, i) => (i % 2 ? -7 : 7))).map((b) => ({ ...b, handle: `p${b.handle}` }))];
    const paired = settleUp(withPairs, true);
    expect(paired.method).toBe("exact");
    expect(paired.transfers).toHaveLength(EXACT_LIMIT - 1 + 5);
  });

  test("proven_minimal: always when exact; a greedy plan only when it reaches one transfer per creditor or per debtor", () => {
    const plan = (values: number[]) => settlePlan(new Map(values.map((v, i) => [`m${String(i).padStart(2, "0")}`, BigInt(v)])), true);
    // The issue's case: 19 members that greedy settled in 17 transfers where 13 do; now searched exactly.
    const trip = [-4500, 3000, -1500, 2500, 4000, -3500, 1000, -2000, 500, 3500, -3000, 2000, -2500, 1500, -1000, 4500, -500, -4000];
    const exact = plan([...trip, -trip.reduce((a, b) => a + b, 0)]);
    expect(exact).toMatchObject({ method: "exact", provenMinimal: true });
    // One debtor owing EXACT_LIMIT creditors: greedy, and one transfer per creditor is the least possible.
    const creditors = Array.from({ length: EXACT_LIMIT }, (_, i) => 1000 + i);
    expect(plan([...creditors, -creditors.reduce((a, b) => a + b, 0)])).toMatchObject({ method: "greedy", provenMinimal: true });
    // Many creditors and debtors with no zero-sum subset but the whole: greedy takes more than the bound, not proven.
    const owed = Array.from({ length: 12 }, (_, i) => 1_000_003 * (i + 1) + i * i);
    const total = owed.reduce((a, b) => a + b, 0);
    const owing = Array.from({ length: 10 }, (_, i) => -Math.floor(total / 10) - (i === 0 ? total % 10 : 0));
    const greedy = plan([...owed, ...owing]);
    expect(greedy.method).toBe("greedy");
    expect(greedy.transfers.length).toBeGreaterThan(12);
    expect(greedy.provenMinimal).toBe(false);
    expect(
      settlePlan(
        new Map([
          ["a", 5n],
          ["b", -5n],
        ]),
        false,
        [{ from: "b", to: "a", amount: 5n }],
      ).provenMinimal,
    ).toBe(false);
  });

  test("pairwise example: each pair netted", () => {
    const debts: Transfer[] = [
      { from: "bob", to: "alice", amount_minor: 3000 },
      { from: "alice", to: "bob", amount_minor: 1000 },
      { from: "carol", to: "bob", amount_minor: 500 },
      { from: "carol", to: "carol", amount_minor: 700 },
      { from: "alice", to: "carol", amount_minor: 500 },
    ];
    const balances = [
      { handle: "alice", balance_minor: 1500 },
      { handle: "bob", balance_minor: -1500 },
      { handle: "carol", balance_minor: 0 },
    ];
    expect(settleUp(balances, false, debts)).toEqual({
      method: "pairwise",
      transfers: [
        { from: "alice", to: "carol", amount_minor: 500 },
        { from: "bob", to: "alice", amount_minor: 2000 },
        { from: "carol", to: "bob", amount_minor: 500 },
      ],
    });
    expect(() => settleUp(balances, false, [])).toThrow();
  });

  test("simplified transfers zero every balance in at most n-1 transfers, deterministically", () => {
    fc.assert(
      fc.property(zeroSumBalancesArb, (balances) => {
        const transfers = simplified(balances);
        const nonZero = balances.filter((b) => b.balance_minor !== 0).length;
        expect(transfers.length).toBeLessThanOrEqual(Math.max(0, nonZero - 1));
        for (const v of applyTransfers(balances, transfers).values()) expect(v).toBe(0);
        expect(simplified([...balances].reverse())).toEqual(transfers);
      }),
      RUNS,
    );
  });

  test("pairwise transfers zero every balance, one per pair at most", () => {
    const debtsArb = handlesArb
      .filter((h) => h.length >= 2)
      .chain((handles) =>
        fc
          .array(fc.record({ from: fc.constantFrom(...handles), to: fc.constantFrom(...handles), amount_minor: fc.integer({ min: 0, max: 1e9 }) }), {
            maxLength: 40,
          })
          .map((debts) => ({ handles, debts })),
      );
    fc.assert(
      fc.property(debtsArb, ({ handles, debts }) => {
        const net = new Map(handles.map((h) => [h, 0]));
        for (const d of debts) {
          net.set(d.from, net.get(d.from)! - d.amount_minor);
          net.set(d.to, net.get(d.to)! + d.amount_minor);
        }
        const balances = handles.map((handle) => ({ handle, balance_minor: net.get(handle)! + 0 }));
        const { transfers } = settleUp(balances, false, debts);
        for (const v of applyTransfers(balances, transfers).values()) expect(v).toBe(0);
        const pairs = transfers.map((t) => [t.from, t.to].sort().join("|"));
        expect(new Set(pairs).size).toBe(pairs.length);
        expect(settleUp(balances, false, [...debts].reverse()).transfers).toEqual(transfers);
      }),
      RUNS,
    );
  });
});
