// Dates of a recurring expense's occurrences, on plain calendar dates (YYYY-MM-DD, UTC).
import type { Repeat } from "../../../contract/ledger.ts";

const DAY_MS = 86_400_000;

const parts = (date: string) => date.split("-").map(Number) as [number, number, number];
const format = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const daysInMonth = (year: number, month0: number) => new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();

/** Today's date in UTC: occurrences are due from the start of their day. */
export const today = (now: Date) => now.toISOString().slice(0, 10);

/**
 * The k-th occurrence after `start` (k = 0 is `start` itself). Months and years count from the
 * start date, with the day clamped to the month's length: Jan 31 monthly gives Feb 28, Mar 31, Apr 30.
 */
export function occurrence(start: string, repeat: Exclude<Repeat, "none">, k: number): string {
  const [y, m, d] = parts(start);
  if (repeat === "weekly" || repeat === "fortnightly") {
    return format(Date.UTC(y, m - 1, d) + k * (repeat === "weekly" ? 7 : 14) * DAY_MS);
  }
  const months = repeat === "monthly" ? k : 12 * k;
  const year = y + Math.floor((m - 1 + months) / 12);
  const month0 = (m - 1 + months) % 12;
  return format(Date.UTC(year, month0, Math.min(d, daysInMonth(year, month0))));
}

/** The first occurrence of the series starting at `start` that falls after `after`; null for no repeat, or past `until`. */
export function nextOccurrenceAfter(start: string, repeat: Repeat, after: string, until: string | null = null): string | null {
  if (repeat === "none") return null;
  for (let k = 1; ; k++) {
    const date = occurrence(start, repeat, k);
    if (date > after) return until !== null && date > until ? null : date;
  }
}

/** How many occurrences of the series fall after `after` and on or before `upTo` (and `until`): a catch-up's size. */
export function occurrencesBetween(start: string, repeat: Repeat, after: string, upTo: string, until: string | null): number {
  let n = 0;
  for (let d = nextOccurrenceAfter(start, repeat, after, until); d !== null && d <= upTo; d = nextOccurrenceAfter(start, repeat, d, until)) n++;
  return n;
}
