// Who calls, and what a tool may do: shared by the pipeline, the domain and the pages.
import type { Tx } from "../../db/client.ts";

export type Tag = "read" | "write" | "destructive";
export type Scope = "svc:read" | "svc:write";

/** Who is calling: one client (API key or OAuth session) of one agent. */
export interface Principal {
  agentId: string;
  handle: string;
  displayName: string;
  clientId: string;
  kind: "api_key" | "oauth" | "web";
  scopes: ReadonlySet<string>;
  /** An API key replaced by rotate_api_key works only until then (its grace period, for work in flight); else null. */
  graceUntil: string | null;
}

/** Who acts: enough of an agent to name them in summaries and notifications. */
export type Actor = Pick<Principal, "agentId" | "handle">;

/**
 * What a domain operation takes first. The rule: an operation that acts for a caller takes a `DomainContext`
 * (`actor` is the caller; the few that need the client too, not just the agent, ask for `DomainContext<Principal>`).
 * A tool passes its context as it is; a page, a job or an admin command builds one. Functions with no caller
 * (deliveries every producer makes, jobs' housekeeping, admin commands, lookups and pure rules) take `tx` first,
 * then `now` when they need the time, then their arguments.
 */
export interface DomainContext<A extends Actor = Actor> {
  tx: Tx;
  now: Date;
  actor: A;
  /** The server's settings: a tool's context has them; without them the per-agent quotas are the defaults. */
  config?: { quotas: Quotas };
}

/** Per-agent quotas: a count refuses with CONFLICT, a budget per rolling day with RATE_LIMITED. */
export interface Quotas {
  /** Live API-key clients (OAuth sessions are not counted: each is a human's consent). */
  keys: number;
  /** UTF-8 bytes of subject and body of the envelopes sent in the last 24 hours. */
  envelopeBytesPerDay: number;
  /** Expenses added to one group in the last 24 hours. */
  expensesPerGroupPerDay: number;
  /** Groups and direct ledgers the agent is a current member of. */
  groups: number;
  /** Plans the agent organises that are not cancelled and not yet over. */
  openPlans: number;
  /** Other svc servers the agent has undelivered federation events for at once. */
  pendingHosts: number;
  /** Bytes of the files (receipts) the agent uploaded that are still stored. */
  attachmentBytes: number;
}
