// The server's settings, and the types of what can be injected into it. Every layer reads it; it reads only leaves.
import { TrustedProxies } from "./client-address.ts";
import type { Clock } from "./clock.ts";
import { EMAIL_PATTERN } from "./contract/email.ts";
import { parseReservedHandles } from "./contract/handles.ts";
import type { Quotas } from "./contract/principal.ts";

export type { Quotas };

// silent logs nothing: the default of an embedded server (tests); svc serve logs at info.
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A document fetched from the web (a client ID metadata document). */
export interface FetchedDocument {
  status: number;
  contentType: string | null;
  cacheControl: string | null;
  /** The Retry-After field, as sent (a 429 or 503 from a federation peer). */
  retryAfter?: string | null;
  body: string;
}
export type ClientMetadataFetcher = (url: string) => Promise<FetchedDocument>;

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
  /** svc serve --workers: how many processes serve (this one included) and the command that starts one more. */
  workers?: { count: number; command: string[] };
  /** How client ID metadata documents are fetched; absent: guardedFetch (server/auth/safe-fetch.ts), the SSRF guard. */
  fetchClientMetadata?: ClientMetadataFetcher;
  /** Handles no one may register, besides server/contract/handles.ts DEFAULT_RESERVED_HANDLES (lowercase). */
  reservedHandles?: string[];
  /** Reverse proxies (addresses and CIDR ranges) whose X-Forwarded-For / Forwarded headers name the client. */
  trustedProxies?: string[];
  /** Seconds a kept-alive connection may stay idle (Bun allows 1 to 255); absent: DEFAULTS.idleTimeoutSeconds. */
  idleTimeoutSeconds?: number;
  /** Connections, and requests in flight, per client socket address (trusted proxies exempt); 0: no cap. */
  maxConnectionsPerAddress?: number;
  /** Calls per minute per agent, all its clients (API keys and OAuth sessions) together. */
  agentRateLimit: number;
  /** What one agent may hold or write (docs/limits.md, "Quotas per agent"). */
  quotas: Quotas;
  /** Log lines as JSON (the default, for a collector) or as readable text (svc serve on a terminal). */
  logFormat?: LogFormat;
  /** Where SMS go (svc POSTs {to, text} JSON): humans may then prove a phone and sign in by it; absent: no phone. */
  smsWebhook?: string;
  /** Text messages the whole server may send in any hour (docs/security.md, "Limits"); absent: DEFAULTS.smsPerHour. */
  smsPerHour?: number;
  /** An eurofxref XML file of reference rates (the ECB's daily file) fetched by a job; absent: every rate is given. */
  ratesUrl?: string;
  /** Bytes of one file kept with an expense, and of all the files of one group; absent: DEFAULTS. */
  attachmentMaxBytes?: number;
  groupAttachmentBytes?: number;
  /** How the rates file is fetched; absent: guardedFetch (server/auth/safe-fetch.ts). Tests serve one on loopback. */
  fetchRates?: ClientMetadataFetcher;
  /** Exchanges with other svc servers (docs/federation.md); absent: off. */
  federation?: FederationConfig;
  /** Scheduled backups of a local database file (--backup-dir); absent: none. */
  backups?: BackupSchedule;
  /**
   * E-mail for people (docs/operations.md "Mail"): the SMTP server (smtp:// or smtps://, credentials in the URL) and
   * the From address; absent: no e-mail, and no page offers it.
   */
  smtpUrl?: string;
  mailFrom?: string;
  /** E-mails the whole server may send in any hour (besides the limits per address); absent: DEFAULTS.mailPerHour. */
  mailPerHour?: number;
}

export const FEDERATION_MODES = ["off", "allowlist", "open"] as const;
/**
 * What --federation-limits sets: per origin host, transactions and events a minute, contact requests and code guesses
 * an hour (counted once the signature verifies); per client address, transactions and key fetches a minute.
 */
export const FEDERATION_LIMITS = ["txns", "events", "contact_requests", "code_guesses", "txns_per_address", "key_fetches_per_address"] as const;
export type FederationLimit = (typeof FEDERATION_LIMITS)[number];

/** --federation-limits: name=value settings separated by commas, names of FEDERATION_LIMITS. */
export function parseFederationLimits(v: string): Partial<Record<FederationLimit, number>> {
  const out: Partial<Record<FederationLimit, number>> = {};
  for (const part of v.split(",").filter((x) => x.trim())) {
    const m = /^\s*([a-z_]+)\s*=\s*(.*)$/.exec(part);
    if (!m || !(FEDERATION_LIMITS as readonly string[]).includes(m[1]!)) {
      throw new ConfigError(`expected name=value with a name of ${FEDERATION_LIMITS.join(", ")}, got "${part}"`);
    }
    out[m[1] as FederationLimit] = parseCount(m[2]!);
  }
  return out;
}
export type FederationMode = (typeof FEDERATION_MODES)[number];

export interface FederationConfig {
  /** off: no exchange; allowlist: only with `peers`; open: with any server not blocked (new hosts greylisted). */
  mode: FederationMode;
  /** Hosts (the authority of their base URL, e.g. b.example or 127.0.0.1:8702) allowed in allowlist mode. */
  peers: string[];
  /** Hosts refused in every mode. */
  blocked: string[];
  /** Limits per origin host replacing the defaults (server/federation/limits.ts HOST_LIMITS): txns, events per minute, ... */
  limits?: Partial<Record<FederationLimit, number>>;
  /** Tests only: plain HTTP to loopback peers; the server must itself listen on loopback. */
  allowLoopback: boolean;
  /** Real milliseconds between outbox sends (default FEDERATION_SEND_MS). */
  sendIntervalMs?: number;
  /** Tests only (--federation-test-timing): the first retry's wait and the sender's lease, shorter than in use. */
  retryBaseMs?: number;
  leaseMs?: number;
}

export type LogFormat = "json" | "text";

/** The --quota names, as operators write them, of each field of Quotas. */
export const QUOTA_NAMES = {
  keys: "keys",
  envelope_bytes_per_day: "envelopeBytesPerDay",
  expenses_per_group_per_day: "expensesPerGroupPerDay",
  groups: "groups",
  open_plans: "openPlans",
  pending_hosts: "pendingHosts",
  attachment_bytes: "attachmentBytes",
} as const satisfies Record<string, keyof Quotas>;

/** Every default of svc serve, in one place (the flags' help shows them). */
export const DEFAULTS = {
  host: "127.0.0.1",
  port: 8787,
  dbUrl: "file:./data/svc.db",
  backupEveryMs: 86_400_000,
  backupKeep: 7,
  rateLimit: 600,
  publicRateLimit: 60,
  logLevel: "info" as LogLevel,
  shutdownTimeoutSeconds: 10,
  /** Real milliseconds between background job runs of svc serve. */
  jobIntervalMs: 30_000,
  idleTimeoutSeconds: 30,
  maxConnectionsPerAddress: 256,
  agentRateLimit: 1200,
  attachmentMaxBytes: 5 * 1024 * 1024,
  groupAttachmentBytes: 100 * 1024 * 1024,
  smsPerHour: 100,
  mailPerHour: 500,
  quotas: {
    keys: 20,
    envelopeBytesPerDay: 5_000_000,
    expensesPerGroupPerDay: 2000,
    groups: 500,
    openPlans: 200,
    pendingHosts: 20,
    attachmentBytes: 1024 * 1024 * 1024,
  } as Readonly<Quotas>,
};

/** A setting that cannot be used; the message says which and what it takes. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** "5s", "500ms", "2m" or plain seconds, as seconds. */
export function parseDuration(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m || Number(m[1]) <= 0) throw new ConfigError(`expected a duration such as 5s, 500ms or 2m, got "${v}"`);
  return Number(m[1]) * ({ ms: 0.001, s: 1, m: 60 } as const)[(m[2] ?? "s") as "ms" | "s" | "m"];
}

/** Scheduled backups of a local database file (svc serve --backup-dir; server/jobs/backups.ts makes them). */
export interface BackupSchedule {
  /** The directory backups are written to (created when missing). */
  dir: string;
  everyMs: number;
  /** How many of the newest backups to keep; older ones are removed after each new one. */
  keep: number;
}

/** A period of minutes, hours or days (30m, 6h, 1d) in milliseconds. */
export function parsePeriod(v: string): number {
  const m = /^(\d+)(m|h|d)$/.exec(v.trim());
  if (!m || Number(m[1]) <= 0) throw new ConfigError(`expected a period such as 30m, 6h or 1d, got "${v}"`);
  return Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "m" | "h" | "d"];
}

/** A whole number of at least 0. */
export function parseCount(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`expected a whole number, got "${v}"`);
  return n;
}

/** One --quota setting, name=value, added to those before it; names are QUOTA_NAMES' keys. */
export function parseQuota(v: string, before: Partial<Quotas> = {}): Partial<Quotas> {
  const m = /^\s*([a-z_]+)\s*=\s*(.*)$/.exec(v);
  const field = m && Object.hasOwn(QUOTA_NAMES, m[1]!) ? QUOTA_NAMES[m[1] as keyof typeof QUOTA_NAMES] : undefined;
  if (!m || !field) throw new ConfigError(`expected name=value with a name of ${Object.keys(QUOTA_NAMES).join(", ")}, got "${v}"`);
  return { ...before, [field]: parseCount(m[2]!) };
}

/** SVC_QUOTAS: --quota settings separated by commas, e.g. "keys=5,groups=100". */
export function parseQuotas(v: string): Partial<Quotas> {
  return v
    .split(",")
    .filter((s) => s.trim())
    .reduce<Partial<Quotas>>((q, s) => parseQuota(s, q), {});
}

/** Only 1, true, yes or on (any case) turn a switch on. */
export const isOn = (v: string | undefined) => /^(1|true|yes|on)$/i.test(v ?? "");

/** svc serve's settings as its flags and environment give them (already parsed by the command line). */
export interface ServeSettings {
  host: string;
  port: number;
  db: string;
  authToken?: string;
  baseUrl?: string;
  inviteOnly?: boolean;
  rateLimit: number;
  publicRateLimit: number;
  syncUrl?: string;
  syncInterval?: number;
  metricsToken?: string;
  logLevel: LogLevel;
  shutdownTimeout: number;
  oidcIssuer?: string;
  oidcClientId?: string;
  oidcClientSecret?: string;
  /** --reserved-handles: handles separated by commas. */
  reservedHandles?: string;
  trustedProxy?: string[];
  idleTimeout?: number;
  maxConnectionsPerAddress?: number;
  agentRateLimit: number;
  /** --quota settings; each replaces its default. */
  quota?: Partial<Quotas>;
  smsWebhook?: string;
  smsPerHour?: number;
  /** --peer-secret and --peer-url: taken and ignored (every instance writes its own batches since 0.13). */
  peerSecret?: string;
  peerUrl?: string;
  ratesUrl?: string;
  attachmentMaxBytes?: number;
  groupAttachmentBytes?: number;
  federation?: FederationMode;
  /** --federation-peers and --federation-block: hosts separated by commas. */
  federationPeers?: string;
  federationBlock?: string;
  federationAllowLoopback?: boolean;
  /** Tests only: milliseconds of the first retry's wait; the sender's lease and pass interval shrink with it. */
  federationTestTiming?: number;
  federationLimits?: Partial<Record<FederationLimit, number>>;
  backupDir?: string;
  /** --backup-every in milliseconds, and --backup-keep. */
  backupEvery?: number;
  backupKeep?: number;
  smtpUrl?: string;
  mailFrom?: string;
  mailPerHour?: number;
}

/** `host,host` as a list of hosts (lowercase authorities, as in an address handle@host). */
export function parseHosts(v: string | undefined): string[] {
  const hosts = (v ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  for (const h of hosts)
    if (!/^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/.test(h))
      throw new ConfigError(`expected a host such as b.example or 127.0.0.1:8702, got "${h}"`);
  return hosts;
}

/** The server's configuration from svc serve's settings and the environment; the three --oidc-* settings go together. */
export function serveConfig(o: ServeSettings, clock: Clock, env: Record<string, string | undefined> = process.env): ServerConfig {
  const oidcGiven = [o.oidcIssuer, o.oidcClientId, o.oidcClientSecret].filter(Boolean).length;
  if (oidcGiven > 0 && oidcGiven < 3) throw new ConfigError("--oidc-issuer, --oidc-client-id and --oidc-client-secret must be given together");
  if (o.smtpUrl && !o.mailFrom) throw new ConfigError("--smtp-url needs --mail-from, the address e-mails come from (svc <svc@example.org>)");
  if (o.mailFrom && !o.smtpUrl) throw new ConfigError("--mail-from needs --smtp-url, the SMTP server that sends the e-mails");
  return {
    host: o.host,
    port: o.port,
    dbUrl: o.db,
    authToken: o.authToken,
    baseUrl: (o.baseUrl ?? "").replace(/\/+$/, ""),
    inviteOnly: Boolean(o.inviteOnly) || isOn(env.SVC_INVITE_ONLY),
    rateLimit: o.rateLimit,
    publicRateLimit: o.publicRateLimit,
    clock,
    syncUrl: o.syncUrl,
    syncIntervalSeconds: o.syncInterval,
    metricsToken: o.metricsToken,
    logLevel: o.logLevel,
    jobIntervalMs: DEFAULTS.jobIntervalMs,
    shutdownTimeoutMs: o.shutdownTimeout * 1000,
    oidc: oidcGiven ? { issuer: o.oidcIssuer!, clientId: o.oidcClientId!, clientSecret: o.oidcClientSecret! } : undefined,
    reservedHandles: parseReservedHandles(o.reservedHandles),
    trustedProxies: o.trustedProxy,
    idleTimeoutSeconds: o.idleTimeout,
    maxConnectionsPerAddress: o.maxConnectionsPerAddress,
    agentRateLimit: o.agentRateLimit,
    // Flags over SVC_QUOTAS over the defaults, name by name.
    quotas: { ...DEFAULTS.quotas, ...(env.SVC_QUOTAS ? parseQuotas(env.SVC_QUOTAS) : {}), ...o.quota },
    smsWebhook: o.smsWebhook,
    smsPerHour: o.smsPerHour,
    ratesUrl: o.ratesUrl,
    backups: o.backupDir ? { dir: o.backupDir, everyMs: o.backupEvery ?? DEFAULTS.backupEveryMs, keep: o.backupKeep ?? DEFAULTS.backupKeep } : undefined,
    attachmentMaxBytes: o.attachmentMaxBytes,
    groupAttachmentBytes: o.groupAttachmentBytes,
    smtpUrl: o.smtpUrl ? parseSmtpUrl(o.smtpUrl) : undefined,
    mailFrom: o.mailFrom ? parseMailFrom(o.mailFrom) : undefined,
    mailPerHour: o.mailPerHour,
    federation: {
      mode: o.federation ?? "off",
      peers: parseHosts(o.federationPeers),
      blocked: parseHosts(o.federationBlock),
      allowLoopback: Boolean(o.federationAllowLoopback),
      limits: o.federationLimits,
      ...(o.federationTestTiming ? { retryBaseMs: o.federationTestTiming, leaseMs: 3000, sendIntervalMs: 100 } : {}),
    },
  };
}

/** An http or https URL (the SMS webhook): an operator's own gateway, often on loopback, so plain http is allowed. */
export function parseWebhookUrl(v: string): string {
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ConfigError(`expected an http:// or https:// URL, got "${v}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(`expected an http:// or https:// URL, got "${v}"`);
  return url.href;
}

/**
 * --smtp-url: smtp:// (STARTTLS when the server offers it) or smtps:// (TLS from the start), with the user name and
 * password in the URL where the server wants them (percent-encoded). The operator's own server, so loopback and private
 * addresses are allowed. Never logged: it may carry a password.
 */
export function parseSmtpUrl(v: string): string {
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ConfigError("expected an smtp:// or smtps:// URL, e.g. smtps://user:password@mail.example.org");
  }
  if ((url.protocol !== "smtp:" && url.protocol !== "smtps:") || !url.hostname)
    throw new ConfigError(`expected an smtp:// or smtps:// URL with a host, e.g. smtps://user:password@mail.example.org, got a ${url.protocol} URL`);
  return url.href;
}

/** --mail-from: an address, or a name and an address ("svc <svc@example.org>"); one line. */
export function parseMailFrom(v: string): string {
  const text = v.trim();
  const m = /^(?:([^<>\p{Cc}]*?)\s*<([^<>]+)>|([^<>\s]+))$/u.exec(text);
  const address = m ? (m[2] ?? m[3])! : "";
  if (!m || !EMAIL_PATTERN.test(address) || text.length > 200)
    throw new ConfigError(`expected an address such as svc@example.org, or a name and one: "svc <svc@example.org>", got "${v}"`);
  return text;
}

/** `CIDR,...` as its entries, each checked (server/client-address.ts). */
export function parseTrustedProxies(v: string): string[] {
  const entries = v
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);
  try {
    new TrustedProxies(entries);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return entries;
}

/** An idle timeout as Bun takes it: whole seconds from 1 to 255. */
export function parseIdleTimeout(v: string): number {
  const seconds = parseDuration(v);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 255) throw new ConfigError(`expected whole seconds from 1s to 255s, got "${v}"`);
  return seconds;
}
