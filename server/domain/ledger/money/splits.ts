import { invalid } from "../../../errors.ts";
import { currencyExponent } from "../../../contract/currencies.ts";
import { SPLIT_MODES, type SplitMode } from "../../../contract/ledger.ts";
import { checkMinor, formatAmount, parseDecimal, resolveAmount, type AmountInput } from "./amounts.ts";

export interface SplitParticipant {
  handle: string;
  value?: string | number | null | undefined;
}

export interface Share {
  handle: string;
  amount_minor: number;
}

export interface Payer extends AmountInput {
  handle: string;
}

/** Percentages carry at most 4 decimals; they must sum to exactly 100. */
const PERCENT_SCALE = 4;
const HUNDRED_PERCENT = 100n * 10n ** BigInt(PERCENT_SCALE);
/** Share weights ("1.5") carry at most 6 decimals. */
const SHARES_SCALE = 6;

/**
 * Splits `amountMinor` among participants by `mode`; returns shares in input order, each
 * non-negative, summing exactly to the amount. Integer (BigInt) arithmetic only.
 * `path` prefixes error paths, e.g. "split.among[2].value".
 */
export function computeShares(amountMinor: number, mode: SplitMode, among: readonly SplitParticipant[], currency: string, path = "split"): Share[] {
  const amount = BigInt(checkMinor(amountMinor, "amount_minor"));
  const scale = currencyExponent(currency);
  const handles = checkHandles(among, `${path}.among`);
  const valuePath = (i: number) => `${path}.among[${i}].value`;
  const amounts = sharesByMode(amount, mode, among, { scale, currency, path, valuePath });
  return handles.map((handle, i) => ({ handle, amount_minor: Number(amounts[i]) }));
}

interface ModeContext {
  scale: number;
  currency: string;
  path: string;
  valuePath: (i: number) => string;
}

function sharesByMode(amount: bigint, mode: SplitMode, among: readonly SplitParticipant[], ctx: ModeContext): bigint[] {
  const handles = among.map((p) => p.handle);
  switch (mode) {
    case "equal":
      return equalSplit(amount, among, handles, ctx);
    case "exact":
      return exactSplit(amount, among, ctx);
    case "percent":
      return percentSplit(amount, among, handles, ctx);
    case "shares":
      return weightedSplit(amount, among, handles, ctx);
    case "adjustment":
      return adjustmentSplit(amount, among, handles, ctx);
    default:
      throw invalid(`${ctx.path}.mode`, `must be one of ${SPLIT_MODES.join(", ")}`);
  }
}

function equalSplit(amount: bigint, among: readonly SplitParticipant[], handles: string[], ctx: ModeContext): bigint[] {
  among.forEach((p, i) => {
    if (hasValue(p)) throw invalid(ctx.valuePath(i), "leave value out for an equal split");
  });
  return allocate(
    amount,
    handles.map(() => 1n),
    handles,
  );
}

function exactSplit(amount: bigint, among: readonly SplitParticipant[], ctx: ModeContext): bigint[] {
  const amounts = among.map((p, i) => parseAmountValue(p.value, ctx, ctx.valuePath(i), false));
  const sum = amounts.reduce((a, b) => a + b, 0n);
  if (sum !== amount) {
    throw invalid(`${ctx.path}.among`, `exact amounts sum to ${fmt(sum, ctx)}, but the expense is ${fmt(amount, ctx)}`);
  }
  return amounts;
}

function percentSplit(amount: bigint, among: readonly SplitParticipant[], handles: string[], ctx: ModeContext): bigint[] {
  const weights = among.map((p, i) => parseDecimal(numberToText(p.value), { scale: PERCENT_SCALE }, ctx.valuePath(i)));
  const sum = weights.reduce((a, b) => a + b, 0n);
  if (sum !== HUNDRED_PERCENT) {
    throw invalid(`${ctx.path}.among`, `percentages sum to ${scaledText(sum, PERCENT_SCALE)}, they must sum to exactly 100`);
  }
  return allocate(amount, weights, handles);
}

function weightedSplit(amount: bigint, among: readonly SplitParticipant[], handles: string[], ctx: ModeContext): bigint[] {
  const weights = among.map((p, i) => {
    const w = parseDecimal(numberToText(p.value), { scale: SHARES_SCALE }, ctx.valuePath(i));
    if (w <= 0n) throw invalid(ctx.valuePath(i), "must be a positive number of shares");
    return w;
  });
  return allocate(amount, weights, handles);
}

/** The total minus all adjustments is split equally; each adjustment is then added back. */
function adjustmentSplit(amount: bigint, among: readonly SplitParticipant[], handles: string[], ctx: ModeContext): bigint[] {
  const adjustments = among.map((p, i) => (hasValue(p) ? parseAmountValue(p.value, ctx, ctx.valuePath(i), true) : 0n));
  const rest = amount - adjustments.reduce((a, b) => a + b, 0n);
  const equal = allocate(
    rest,
    handles.map(() => 1n),
    handles,
  );
  const shares = equal.map((e, i) => e + adjustments[i]!);
  const negative = shares.findIndex((s) => s < 0n);
  if (negative >= 0) {
    throw invalid(ctx.valuePath(negative), `the adjustments leave ${handles[negative]} a negative share (${fmt(shares[negative]!, ctx)})`);
  }
  return shares;
}

/**
 * Largest-remainder allocation of `total` (may be negative) in proportion to `weights`
 * (non-negative, sum > 0). Each gets floor(total * w / W); the leftover units go one at a
 * time by largest fractional part, then by handle ascending (code-unit order, locale-free),
 * so the same input always gives the same shares.
 */
export function allocate(total: bigint, weights: readonly bigint[], handles: readonly string[]): bigint[] {
  const weightSum = weights.reduce((a, b) => a + b, 0n);
  if (weightSum <= 0n) throw new RangeError("allocate: weights must sum to a positive number");
  const parts = weights.map((w) => floorDivMod(total * w, weightSum));
  let leftover = total - parts.reduce((a, p) => a + p.quotient, 0n);
  const order = weights.map((_, i) => i).sort((a, b) => compareFraction(parts[a]!.remainder, parts[b]!.remainder) || compareText(handles[a]!, handles[b]!));
  const result = parts.map((p) => p.quotient);
  for (const i of order) {
    if (leftover <= 0n) break;
    result[i]! += 1n;
    leftover -= 1n;
  }
  return result;
}

function floorDivMod(n: bigint, d: bigint): { quotient: bigint; remainder: bigint } {
  let quotient = n / d;
  let remainder = n % d;
  if (remainder < 0n) {
    quotient -= 1n;
    remainder += d;
  }
  return { quotient, remainder };
}

/** Larger fraction first. */
function compareFraction(a: bigint, b: bigint): number {
  return a > b ? -1 : a < b ? 1 : 0;
}

export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Validates payers: each gives exactly one of amount/amount_minor, and they sum to the amount; a payer named alone
 * without an amount paid it all (as the caller does when paid_by is left out).
 */
export function splitPayers(amountMinor: number, paidBy: readonly Payer[], currency: string, path = "paid_by"): Share[] {
  const amount = checkMinor(amountMinor, "amount_minor");
  const handles = checkHandles(paidBy, path);
  const alone = paidBy.length === 1 && paidBy[0]!.amount == null && paidBy[0]!.amount_minor == null;
  const shares = paidBy.map((p, i) => ({ handle: handles[i]!, amount_minor: alone ? amount : resolveAmount(p, currency, `${path}[${i}]`) }));
  const sum = shares.reduce((a, s) => a + BigInt(s.amount_minor), 0n);
  if (sum !== BigInt(amount)) {
    const ctx = { scale: currencyExponent(currency), currency };
    throw invalid(path, `payers' amounts sum to ${fmt(sum, ctx)}, but the expense is ${fmt(BigInt(amount), ctx)}`);
  }
  return shares;
}

function checkHandles(list: readonly { handle: string }[], path: string): string[] {
  if (!Array.isArray(list) || list.length === 0) throw invalid(path, "must list at least one participant");
  const seen = new Set<string>();
  return list.map((p, i) => {
    const handle = p?.handle;
    if (typeof handle !== "string" || handle.length === 0) throw invalid(`${path}[${i}].handle`, "must be a non-empty handle");
    if (seen.has(handle)) throw invalid(`${path}[${i}].handle`, `${handle} is listed twice`);
    seen.add(handle);
    return handle;
  });
}

function hasValue(p: SplitParticipant): boolean {
  return p.value !== undefined && p.value !== null;
}

/** An amount in a split, in the currency's units: a decimal string, or a JSON number read exactly as its decimal. */
function parseAmountValue(value: unknown, ctx: { scale: number; currency: string }, path: string, signed: boolean): bigint {
  const text = numberToText(value);
  if (typeof text !== "string") throw invalid(path, `must be an amount in ${ctx.currency}, e.g. "12.34" or 12.34`);
  return parseDecimal(text, { scale: ctx.scale, signed, unit: ctx.currency }, path);
}

/** Percent and share weights may come as JSON numbers; their shortest text form is parsed exactly. */
function numberToText(value: unknown): unknown {
  return typeof value === "number" && Number.isFinite(value) ? String(value) : value;
}

function fmt(minor: bigint, ctx: { currency: string }): string {
  return `${formatAmount(minor, ctx.currency)} ${ctx.currency}`;
}

function scaledText(n: bigint, scale: number): string {
  const digits = n.toString().padStart(scale + 1, "0");
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`.replace(/\.?0+$/, "");
}
