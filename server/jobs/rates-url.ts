// --rates-url's check, apart from the job that fetches it: the flag is parsed by every start of svc (its options are
// read for --help and the settings file), and that must not load the ledger and the database behind the job.
import { fetchUrlProblem } from "../auth/public-addresses.ts";
import { ConfigError } from "../config.ts";

/** --rates-url: fetched through the SSRF guard, so https to a public host only. */
export function parseRatesUrl(v: string): string {
  const problem = fetchUrlProblem(v);
  if (problem) throw new ConfigError(`the rates URL ${problem}: "${v}"`);
  return new URL(v).href;
}
