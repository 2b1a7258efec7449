// Reference exchange rates fetched from --rates-url (the European Central Bank's eurofxref file format): parsed,
// stored by date, and the cross rate between two currencies as the ledger's exchange_rate, exact to its decimals.
import { and, desc, eq, gte, lte } from "drizzle-orm";
import type { Tx } from "../../../../db/client.ts";
import { exchangeRates } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { RATE_MAX_DECIMALS, divideHalfAwayFromZero, parseDecimal } from "./amounts.ts";

/** A rate older than this many days before an expense's date is not used for it (weekends and holidays have none). */
export const RATE_MAX_AGE_DAYS = 7;

/** One day of a rates file: units of each currency per one euro. */
export interface RatesDay {
  date: string;
  perEur: Map<string, string>;
}

const TIME_CUBE = /<Cube\s+time\s*=\s*["'](\d{4}-\d{2}-\d{2})["']\s*>([\s\S]*?)<\/Cube>/g;
const RATE_CUBE = /<Cube\s+currency\s*=\s*["']([A-Z]{3})["']\s+rate\s*=\s*["'](\d{1,12}(?:\.\d{1,12})?)["']\s*\/>/g;

/** The days of an eurofxref XML file (daily, or the 90-day and historical files); throws when it has none. */
export function parseEurofxref(xml: string): RatesDay[] {
  const days: RatesDay[] = [];
  for (const [, date, body] of xml.matchAll(TIME_CUBE)) {
    const perEur = new Map<string, string>();
    for (const [, currency, rate] of body!.matchAll(RATE_CUBE)) if (Number(rate) > 0) perEur.set(currency!, rate!);
    if (perEur.size) days.push({ date: date!, perEur });
  }
  if (!days.length) throw new Error("the rates file holds no <Cube time=...> with rates");
  return days;
}

/** Stores the days fetched from `source` (a day fetched again replaces its rates); returns how many rates. */
export async function storeRates(tx: Tx, days: RatesDay[], source: string, now: Date): Promise<number> {
  let n = 0;
  for (const day of days) {
    for (const [currency, perEur] of day.perEur) {
      const row = { date: day.date, currency, perEur, source, fetchedAt: iso(now) };
      await tx
        .insert(exchangeRates)
        .values(row)
        .onConflictDoUpdate({ target: [exchangeRates.currency, exchangeRates.date], set: row });
      n++;
    }
  }
  return n;
}

/** `to` units per one `from` unit, from the per-euro rates of both: exact, then rounded half away from zero to 12 decimals. */
export function crossRate(fromPerEur: string, toPerEur: string): string {
  const rules = { scale: RATE_MAX_DECIMALS, maxDigits: 2 * RATE_MAX_DECIMALS };
  const from = parseDecimal(fromPerEur, rules, "rate");
  const to = parseDecimal(toPerEur, rules, "rate");
  const scaled = divideHalfAwayFromZero(to * 10n ** BigInt(RATE_MAX_DECIMALS), from);
  const digits = scaled.toString().padStart(RATE_MAX_DECIMALS + 1, "0");
  const text = `${digits.slice(0, -RATE_MAX_DECIMALS)}.${digits.slice(-RATE_MAX_DECIMALS)}`.replace(/\.?0+$/, "");
  return text;
}

const daysBefore = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);

/** The per-euro rate of `currency` on the latest day on or before `date` within RATE_MAX_AGE_DAYS (the euro: 1). */
async function perEurOn(tx: Tx, currency: string, date: string): Promise<{ date: string; perEur: string; source: string } | null> {
  if (currency === "EUR") return { date, perEur: "1", source: "" };
  const row = await tx
    .select()
    .from(exchangeRates)
    .where(and(eq(exchangeRates.currency, currency), lte(exchangeRates.date, date), gte(exchangeRates.date, daysBefore(date, RATE_MAX_AGE_DAYS))))
    .orderBy(desc(exchangeRates.date))
    .limit(1)
    .get();
  return row ? { date: row.date, perEur: row.perEur, source: row.source } : null;
}

/**
 * The fetched rate for an expense of `date` in `from` kept in `to` (units of `to` per one `from`), and where it came
 * from ("<url> of <date>"); null when no rate of both currencies is known for that date.
 */
export async function knownRate(tx: Tx, from: string, to: string, date: string): Promise<{ rate: string; source: string } | null> {
  let a = await perEurOn(tx, from, date);
  let b = a && (await perEurOn(tx, to, date));
  if (!a || !b) return null;
  // Two fetched currencies are taken from one day: the older of their latest days, if both have it.
  if (a.source && b.source && a.date !== b.date) {
    const day = a.date < b.date ? a.date : b.date;
    a = await perEurOn(tx, from, day);
    b = await perEurOn(tx, to, day);
    if (a?.date !== day || b?.date !== day) return null;
  }
  const fetched = a.source ? a : b;
  return { rate: crossRate(a.perEur, b.perEur), source: `${fetched.source} of ${fetched.date}` };
}
