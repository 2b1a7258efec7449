import { and, eq, isNull, sql } from "drizzle-orm";
import { jsonEach, jsonList, prepared, type Tx } from "../../db/client.ts";
import { agents } from "../../db/schema/index.ts";
import type { Agent, AgentRef } from "../contract/wire.ts";
import type { DomainContext } from "../contract/principal.ts";

export type AgentRow = typeof agents.$inferSelect;

/** What a human who tries to sign in as a disabled agent (svc users disable) is told. */
export const DISABLED_MESSAGE = "This handle is disabled on this server. Ask the server's operator.";

export const toAgent = (a: AgentRow): Agent => ({
  agent_id: a.agentId,
  handle: a.handle,
  display_name: a.displayName,
  description: a.description,
  created_at: a.createdAt,
});

export const toRef = (a: Pick<AgentRow, "agentId" | "handle" | "displayName">): AgentRef => ({
  agent_id: a.agentId,
  handle: a.handle,
  display_name: a.displayName,
});

const byId = prepared((tx) =>
  tx
    .select()
    .from(agents)
    .where(eq(agents.agentId, sql.placeholder("agentId")))
    .prepare(),
);

export async function agentById(tx: Tx, agentId: string): Promise<AgentRow | undefined> {
  return byId(tx).get({ agentId });
}

const byHandle = prepared((tx) =>
  tx
    .select()
    .from(agents)
    .where(and(eq(agents.handle, sql.placeholder("handle")), isNull(agents.retiredAt)))
    .prepare(),
);

/** The agent with that handle; a handle joined into another one (retired) is found by no one. */
export async function agentByHandle(tx: Tx, handle: string): Promise<AgentRow | undefined> {
  return byHandle(tx).get({ handle: handle.toLowerCase() });
}

const refsOf = prepared((tx) =>
  tx
    .select({ agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
    .from(agents)
    .where(sql`${agents.agentId} IN (SELECT value FROM ${jsonEach("ids")})`)
    .prepare(),
);

export async function refsByIds(tx: Tx, ids: string[]): Promise<Map<string, AgentRef>> {
  if (!ids.length) return new Map();
  const rows = await refsOf(tx).all({ ids: jsonList([...new Set(ids)]) });
  return new Map(rows.map((r) => [r.agentId, toRef(r)]));
}

const refsOfHandles = prepared((tx) =>
  tx
    .select({ agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
    .from(agents)
    .where(sql`${agents.handle} IN (SELECT value FROM ${jsonEach("handles")}) AND ${agents.retiredAt} IS NULL`)
    .prepare(),
);

/** The refs of agents by handle (those that exist), keyed by handle. */
export async function refsByHandles(tx: Tx, handles: string[]): Promise<Map<string, AgentRef>> {
  if (!handles.length) return new Map();
  const rows = await refsOfHandles(tx).all({ handles: jsonList([...new Set(handles.map((h) => h.toLowerCase()))]) });
  return new Map(rows.map((r) => [r.handle, toRef(r)]));
}

export async function updateProfile(
  { tx, actor: { agentId } }: DomainContext,
  patch: { display_name?: string; description?: string | null },
): Promise<AgentRow> {
  const set: Partial<AgentRow> = {};
  if (patch.display_name !== undefined) set.displayName = patch.display_name;
  if (patch.description !== undefined) set.description = patch.description;
  const row = (await agentById(tx, agentId))!;
  if (Object.keys(set).length) await tx.update(agents).set(set).where(eq(agents.agentId, agentId));
  return { ...row, ...set };
}
