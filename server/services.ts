// What every transport, page and job is handed: the database, the configuration, the rate limiter and the
// observer of finished calls. A module of its own so that no layer reaches into the pipeline for its types.
import type { Db } from "../db/client.ts";
import type { ServerConfig } from "./config.ts";
import type { RateLimiter } from "./rate-limit.ts";

export interface Services {
  db: Db;
  config: ServerConfig;
  limiter: RateLimiter;
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
