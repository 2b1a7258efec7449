// What every transport, page and job is handed: the database, the configuration, the rate limiter, the observer of
// finished calls and, in a worker of svc serve --workers, the way to the first process; and the types of a call.
// A module of its own so that no layer reaches into the pipeline for its types.
import type { Db } from "../db/client.ts";
import type { AppError } from "./errors.ts";
import type { ServerConfig } from "./config.ts";
import type { RateLimiter } from "./rate-limit.ts";

export interface Services {
  db: Db;
  config: ServerConfig;
  limiter: RateLimiter;
  /** Signs anonymous browsers' CSRF tokens (server/web/session.ts); made once in the database, read at start. */
  formKey: string;
  /** In a worker of svc serve --workers: how a write tool call reaches the primary, which runs it. */
  forward?: Forward;
  /** Called once per finished call, for logs and metrics. */
  observe?: (e: CallEvent) => void;
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
  /** A call a worker handed over (server/cluster.ts): its limit was taken there, with these headers. */
  rateHeaders?: Record<string, string>;
}

export type CallResult =
  | { ok: true; data: Record<string, unknown>; headers: Record<string, string>; replayed: boolean }
  | { ok: false; error: AppError; headers: Record<string, string> };

/** A call a worker of svc serve --workers hands to the first process: the client's address and limit already known. */
export interface ForwardedCall {
  name: string;
  raw: unknown;
  meta: Omit<CallMeta, "clientAddress"> & { address: string; rateHeaders: Record<string, string> };
}
/** How a worker runs a write tool call: on the first process (server/cluster.ts); null when it cannot be sent there. */
export type Forward = (call: ForwardedCall) => Promise<CallResult | null>;
