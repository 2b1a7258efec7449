import { invalid } from "../../../errors.ts";
import { currencyExponent } from "../../../contract/currencies.ts";
import { MAX_DIGITS, MAX_MINOR } from "../../../contract/ledger.ts";

/**
 * The most the ledger's totals may reach, in minor units: 2^53 - 1, so that each is exact as a JSON number.
 * Bounded (balances/limits.ts): an agent's open debts and credits in one currency across all their groups; every balance,
 * settle-up transfer and sum of them shown is at most that.
 */
export const MAX_TOTAL_MINOR = Number.MAX_SAFE_INTEGER;
/** Exchange rates carry at most this many decimals (and as many integer digits). */
export const RATE_MAX_DECIMALS = 12;

const DECIMAL = /^([+-]?)(\d+)(?:\.(\d+))?$/;

export interface DecimalRules {
  /** Number of decimals the result is scaled by; more decimals in the text are rejected. */
  scale: number;
  /** Allow a leading "+" or "-". */
  signed?: boolean;
  /** Maximum number of digits in the text (integer and fraction together). */
  maxDigits?: number;
  /** Shown in messages, e.g. "EUR". */
  unit?: string;
}

/**
 * Parses a plain decimal string ("12", "12.3", "-0.5") into an integer scaled by 10^scale.
 * No exponents, spaces, thousands separators or bare points (".5", "5.").
 */
export function parseDecimal(text: unknown, rules: DecimalRules, path: string): bigint {
  const example = rules.scale > 0 ? `"12.${"3".repeat(Math.min(rules.scale, 2))}"` : `"12"`;
  const m = typeof text === "string" ? DECIMAL.exec(text) : null;
  if (!m) throw invalid(path, `must be a decimal string such as ${example}`);
  const [, sign = "", int = "", frac = ""] = m;
  if (sign && !rules.signed) throw invalid(path, "must not carry a sign");
  const maxDigits = rules.maxDigits ?? MAX_DIGITS;
  if (int.length + frac.length > maxDigits) throw invalid(path, `must have at most ${maxDigits} digits`);
  if (frac.length > rules.scale) throw invalid(path, tooManyDecimals(rules));
  const magnitude = BigInt(int + frac.padEnd(rules.scale, "0"));
  return sign === "-" ? -magnitude : magnitude;
}

function tooManyDecimals({ scale, unit }: DecimalRules): string {
  const where = unit ? ` for ${unit}` : "";
  return scale === 0 ? `must be a whole number${where}` : `must have at most ${scale} decimals${where}`;
}

/** Decimal string -> positive integer minor units of `currency` ("12.3" EUR -> 1230). */
export function parseAmount(text: string, currency: string, path = "amount"): number {
  const scale = currencyExponent(currency);
  const minor = parseDecimal(text, { scale, unit: currency }, path);
  return checkMinor(Number(minor), path);
}

/** A positive safe integer amount in minor units of at most 15 digits. */
export function checkMinor(n: unknown, path = "amount_minor"): number {
  if (typeof n !== "number" || !Number.isInteger(n)) throw invalid(path, "must be an integer number of minor units");
  if (n <= 0) throw invalid(path, "must be greater than zero");
  if (n > MAX_MINOR) throw invalid(path, `must have at most ${MAX_DIGITS} digits in minor units`);
  return n;
}

export interface AmountInput {
  amount?: string | undefined;
  amount_minor?: number | undefined;
}

/**
 * Exactly one of `amount` (decimal string) or `amount_minor` (integer) -> minor units.
 * `path` is the object holding them ("" at top level, e.g. "paid_by[1]").
 */
export function resolveAmount(input: AmountInput, currency: string, path = ""): number {
  const at = (field: string) => (path ? `${path}.${field}` : field);
  const hasAmount = input.amount !== undefined && input.amount !== null;
  const hasMinor = input.amount_minor !== undefined && input.amount_minor !== null;
  if (hasAmount === hasMinor) throw invalid(at("amount"), "give exactly one of amount (decimal string) or amount_minor (integer)");
  if (hasAmount) return parseAmount(input.amount as string, currency, at("amount"));
  currencyExponent(currency);
  return checkMinor(input.amount_minor, at("amount_minor"));
}

/** An amount as given in another currency, and the rate it was converted at once. */
export interface Original {
  currency: string;
  amountMinor: number;
  /** Units of the group's currency per one unit of `currency`. */
  exchangeRate: string;
}

/** The columns of an expense or payment row that keep an Original. */
interface OriginalColumns {
  originalCurrency: string | null;
  originalAmountMinor: number | null;
  exchangeRate: string | null;
}

export const originalColumns = (o: Original | null): OriginalColumns => ({
  originalCurrency: o?.currency ?? null,
  originalAmountMinor: o?.amountMinor ?? null,
  exchangeRate: o?.exchangeRate ?? null,
});

export const originalOfRow = (r: OriginalColumns): Original | null =>
  r.originalCurrency === null ? null : { currency: r.originalCurrency, amountMinor: r.originalAmountMinor!, exchangeRate: r.exchangeRate! };

/** An Original as the wire shows it (`original` of expenses and payments). */
export const originalWire = (o: Original | null) =>
  o && { currency: o.currency, amount_minor: o.amountMinor, amount: formatAmount(o.amountMinor, o.currency), exchange_rate: o.exchangeRate };

/**
 * An amount given in `currency` (exactly one of amount or amount_minor) for a group keeping its accounts in
 * `groupCurrency`: `given` in minor units of `currency`, and `amountMinor` in the group's. Another currency
 * needs `exchangeRate` and is converted once (convert); the group's own takes none.
 */
export function inGroupCurrency(
  d: AmountInput & { currency: string; exchangeRate: string | null },
  groupCurrency: string,
): { given: number; amountMinor: number; original: Original | null } {
  currencyExponent(d.currency, "currency");
  const foreign = d.currency !== groupCurrency;
  if (!foreign && d.exchangeRate !== null) {
    throw invalid("exchange_rate", `give exchange_rate only with a currency other than the group's (${groupCurrency})`);
  }
  if (foreign && d.exchangeRate === null) {
    throw invalid("exchange_rate", `required with currency ${d.currency}: units of ${groupCurrency} per 1 ${d.currency}, e.g. "1.08"`);
  }
  const given = resolveAmount(d, d.currency);
  if (!foreign) return { given, amountMinor: given, original: null };
  const amountMinor = convert(given, d.currency, groupCurrency, d.exchangeRate!);
  if (amountMinor < 1) {
    throw invalid("exchange_rate", `converts ${formatAmount(given, d.currency)} ${d.currency} to less than one minor unit of ${groupCurrency}`);
  }
  return { given, amountMinor, original: { currency: d.currency, amountMinor: given, exchangeRate: d.exchangeRate! } };
}

/** Minor units -> plain decimal string: 1250 EUR -> "12.50", 1250 JPY -> "1250", -300 EUR -> "-3.00". */
export function formatAmount(minor: number | bigint, currency: string): string {
  if (typeof minor === "number" && !Number.isSafeInteger(minor)) throw new TypeError(`formatAmount: not a safe integer: ${minor}`);
  const scale = currencyExponent(currency);
  const big = BigInt(minor);
  const digits = (big < 0n ? -big : big).toString().padStart(scale + 1, "0");
  const sign = big < 0n ? "-" : "";
  if (scale === 0) return sign + digits;
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/**
 * A total read exactly as a JSON number. Totals never pass MAX_TOTAL_MINOR since the limit exists; one written
 * before it reads as the limit here, while its text (formatAmount, formatBalance) stays exact.
 */
export function totalMinor(minor: bigint): number {
  const max = BigInt(MAX_TOTAL_MINOR);
  return Number(minor > max ? max : minor < -max ? -max : minor);
}

/** Balance text: "+12.50 EUR", "-3.00 EUR", "0.00 EUR" (positive: others owe this member). */
export function formatBalance(minor: number | bigint, currency: string): string {
  const plus = minor > 0 ? "+" : "";
  return `${plus}${formatAmount(minor, currency)} ${currency}`;
}

/**
 * Converts minor units of `fromCurrency` into minor units of `toCurrency` at `rate`
 * (units of `toCurrency` per one unit of `fromCurrency`, as a decimal string).
 *
 * Exact: result = minor * rate * 10^exp(to) / 10^exp(from), computed in BigInt, then
 * rounded to the nearest minor unit with ties rounded HALF AWAY FROM ZERO
 * (2.5 -> 3, -2.5 -> -3), the usual commercial rule, symmetric for refunds and debts.
 */
export function convert(minor: number, fromCurrency: string, toCurrency: string, rate: string, path = "exchange_rate"): number {
  if (!Number.isSafeInteger(minor)) throw invalid("amount_minor", "must be an integer number of minor units");
  const fromExp = currencyExponent(fromCurrency, "currency");
  const toExp = currencyExponent(toCurrency, "currency");
  const scaledRate = parseRate(rate, path);
  const numerator = BigInt(minor) * scaledRate * 10n ** BigInt(toExp);
  const denominator = 10n ** BigInt(fromExp + RATE_MAX_DECIMALS);
  const result = divideHalfAwayFromZero(numerator, denominator);
  if (result > BigInt(MAX_MINOR) || result < -BigInt(MAX_MINOR)) {
    throw invalid(path, `the converted amount exceeds ${MAX_DIGITS} digits in minor units`);
  }
  return Number(result);
}

/** A positive rate -> integer scaled by 10^RATE_MAX_DECIMALS. */
function parseRate(rate: unknown, path: string): bigint {
  const scaled = parseDecimal(rate, { scale: RATE_MAX_DECIMALS, maxDigits: 2 * RATE_MAX_DECIMALS }, path);
  if (scaled <= 0n) throw invalid(path, "must be greater than zero");
  return scaled;
}

/** n / d rounded to nearest, ties away from zero; d > 0. */
export function divideHalfAwayFromZero(n: bigint, d: bigint): bigint {
  const q = n / d; // truncates toward zero
  const r = n % d; // same sign as n
  const twiceAbsR = (r < 0n ? -r : r) * 2n;
  if (twiceAbsR < d) return q;
  return n < 0n ? q - 1n : q + 1n;
}

/** "12.50 EUR": an amount as summaries and messages show it. */
export const moneyText = (minor: number | bigint, currency: string) => `${formatAmount(minor, currency)} ${currency}`;
