// What every transport, page and job is handed: the database, the configuration, the rate limiter and the observer of
// finished calls; and the types of a call.
// A module of its own so that no layer reaches into the pipeline for its types.
import type { Db, Tx } from "../db/client.ts";
import type { AppError } from "./errors.ts";
import type { ServerConfig } from "./config.ts";
import type { RateDecision, RateLimiter } from "./rate-limit.ts";
import type { AuditEntry } from "./contract/audit.ts";
import type { Principal } from "./contract/principal.ts";

export interface Services {
  db: Db;
  config: ServerConfig;
  limiter: RateLimiter;
  /** Signs anonymous browsers' CSRF tokens (server/web/session.ts); made once in the database, read at start. */
  formKey: string;
  /** Where a call notes its client's use; written in batches (server/auth/last-use.ts). */
  lastUse: { note(clientId: string, at: Date): void };
  /**
   * Sends the e-mail outbox soon (svc serve --smtp-url, in the process that runs the jobs): after a page wrote an
   * e-mail a person waits for (a sign-in link). Absent elsewhere: the job's next run sends it.
   */
  wakeEmail?: () => void;
  /** Called once per finished call, for logs and metrics. */
  observe?: (e: CallEvent) => void;
  /** Writes an audit line (server/observability/audit.ts) for an event with the client's address. */
  audit?: (entry: AuditEntry, clientAddress: string) => void;
  /**
   * Tells an agent, in the transaction that connected it, that a new app connected to its handle
   * (server/domain/clients.ts): handed to the OAuth endpoints, which sit below the domain.
   */
  clientConnected: (
    tx: Tx,
    now: Date,
    c: { agentId: string; clientId: string; name: string; kind: "api_key" | "oauth"; via: "join_network" | "oauth" | "account_page" },
  ) => Promise<void>;
}

export interface CallEvent {
  tool: string;
  requestId: string;
  agentId: string | null;
  code: string;
  ms: number;
  /** For server errors only: what went wrong, without query parameters (describeCause). */
  cause?: string;
  /** For STORAGE_UNAVAILABLE: the SQLite code the database answered (SQLITE_FULL, SQLITE_IOERR_WRITE, ...). */
  sqliteCode?: string;
  /** A write tool's effects were committed (not a replay, not the sandbox): the database takes writes. */
  wrote?: boolean;
  /** The caller's address (through trusted proxies), for the call's log line and the audit trail: read only if one is written. */
  clientAddress?: () => string;
  /** What the call did that the audit trail records (ToolSpec.audit), once, when it is not a replay. */
  audit?: AuditEntry;
}

export interface CallMeta {
  requestId: string;
  /** The raw bearer token, if any. */
  token: string | null;
  /** Idempotency-Key header, if any. */
  idempotencyKey?: string | null;
  /** The client's address, looked up only when a limit by address applies. */
  clientAddress: () => string;
  /** Validate only: nothing is stored or sent, no credential needed. */
  sandbox?: boolean;
  /** A page acting for its signed-in browser: the token is the browser's session secret (server/web/actions.ts). */
  page?: boolean;
  /**
   * An agent of another server, for whom its server sent the call to this one (a write to a group kept here), that
   * server's signature checked (server/federation/home-calls.ts): it stands for the credential.
   */
  principal?: Principal;
}

export type CallResult =
  | { ok: true; data: Record<string, unknown>; headers: Record<string, string>; replayed: boolean }
  | { ok: false; error: AppError; headers: Record<string, string> };

/** A call as the pipeline (server/tools/invoke.ts) has taken it so far: found, rate limited, its values checked. */
export interface Call {
  name: string;
  raw: unknown;
  meta: CallMeta;
  /** Hashed once: the rate limiter's key and the API key lookup both use it (null without a credential). */
  tokenHash: string | null;
  /** The RateLimit headers of the tighter limit taken so far. */
  headers: Record<string, string>;
  /** What the credential's limit left, to compare with the agent's (null: none taken). */
  keyRemaining: number | null;
  /** The agent's limit, taken once per call however many times it runs (null: not yet). */
  agentLimit: RateDecision | null;
}
