import type { ClientMetadataFetcher } from "./auth/client-metadata.ts";
import type { Clock } from "./clock.ts";
import type { LogLevel } from "./observability/logs.ts";

export interface ServerConfig {
  host: string;
  port: number;
  dbUrl: string;
  authToken?: string;
  baseUrl: string;
  inviteOnly: boolean;
  /** Calls per minute per credential, and per client address for public tools. */
  rateLimit: number;
  publicRateLimit: number;
  clock: Clock;
  /** Embedded replica: the primary's URL (dbUrl is then the local file) and seconds between background syncs. */
  syncUrl?: string;
  syncIntervalSeconds?: number;
  /** /metrics answers only with this bearer token; without one it is off. */
  metricsToken?: string;
  logLevel?: LogLevel;
  /** Real milliseconds between background job runs; absent or 0 runs none (tests drive the runner themselves). */
  jobIntervalMs?: number;
  /** How long a shutdown waits for requests in flight before closing their connections. */
  shutdownTimeoutMs?: number;
  /** An OpenID Connect provider humans may sign in with on the web pages. */
  oidc?: { issuer: string; clientId: string; clientSecret: string };
  /** How client ID metadata documents are fetched; absent: guardedFetch (server/auth/safe-fetch.ts), the SSRF guard. */
  fetchClientMetadata?: ClientMetadataFetcher;
}

export const DEFAULTS = {
  host: "127.0.0.1",
  port: 8787,
  dbUrl: "file:./data/svc.db",
  rateLimit: 600,
  publicRateLimit: 60,
};
