import { HOUR } from "../clock.ts";
import type { ClientMetadataFetcher } from "../config.ts";
import { guardedFetch } from "../auth/safe-fetch.ts";
import { parseEurofxref, storeRates, type RatesDay } from "../domain/ledger/money/rates.ts";
import type { Job } from "./index.ts";

export { parseRatesUrl } from "./rates-url.ts";

/** The rates file is published once a working day; looking every few hours takes a new one the same day. */
export const RATES_EVERY_MS = 6 * HOUR;

/**
 * Fetches --rates-url (through the SSRF guard unless a test gives its own fetch) and stores its rates; a fetch that
 * fails or a file that does not parse fails the run (logged; the lease spaces out the retries) and stores nothing.
 */
export function fetchExchangeRates(url: string, fetch: ClientMetadataFetcher = guardedFetch): Job<RatesDay[]> {
  return {
    name: "exchange_rates",
    everyMs: RATES_EVERY_MS,
    async prepare() {
      const doc = await fetch(url);
      if (doc.status !== 200) throw new Error(`the rates file answered ${doc.status}`);
      return parseEurofxref(doc.body);
    },
    run: (tx, now, days) => storeRates(tx, days, url, now),
  };
}
