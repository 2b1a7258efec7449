// Who calls, and what a tool may do: shared by the pipeline, the domain and the pages.

export type Tag = "read" | "write" | "destructive";
export type Scope = "svc:read" | "svc:write";

/** Who is calling: one client (API key or OAuth session) of one agent. */
export interface Principal {
  agentId: string;
  handle: string;
  displayName: string;
  clientId: string;
  kind: "api_key" | "oauth";
  scopes: ReadonlySet<string>;
  /** An API key replaced by rotate_api_key works only until then (its grace period, for work in flight); else null. */
  graceUntil: string | null;
}

/** Who acts: enough of an agent to name them in summaries and notifications. */
export type Actor = Pick<Principal, "agentId" | "handle">;
