// What an operator does to agents from the command line (svc users): list them, and disable or enable one.
// A disabled agent keeps everything it holds; only its credentials stop working (server/auth, server/web/session.ts).
import { asc, eq, isNull, max, sql } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { agents, clients } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { notFound } from "../errors.ts";
import { agentByHandle } from "./agents.ts";

export interface UserRow {
  handle: string;
  display_name: string;
  created_at: string;
  /** Live clients: API keys, OAuth sessions and signed-in browsers not revoked. */
  clients: number;
  /** The latest use of any of its clients, revoked ones included. */
  last_seen_at: string | null;
  disabled_at: string | null;
}

/** Every live agent (handles joined into another one are left out), oldest first. */
export async function listUsers(tx: Tx): Promise<UserRow[]> {
  return tx
    .select({
      handle: agents.handle,
      display_name: agents.displayName,
      created_at: agents.createdAt,
      clients: sql<number>`count(${clients.clientId}) FILTER (WHERE ${clients.revokedAt} IS NULL)`,
      last_seen_at: max(clients.lastUsedAt),
      disabled_at: agents.disabledAt,
    })
    .from(agents)
    .leftJoin(clients, eq(clients.agentId, agents.agentId))
    .where(isNull(agents.retiredAt))
    .groupBy(agents.agentId)
    .orderBy(asc(agents.createdAt), asc(agents.handle));
}

/**
 * Disables (at `at`) or enables (null) the agent with that handle; returns whether anything changed. Disabling twice
 * keeps the first time.
 */
export async function setDisabled(tx: Tx, handle: string, at: Date | null): Promise<{ changed: boolean; disabled_at: string | null }> {
  const agent = await agentByHandle(tx, handle);
  if (!agent) throw notFound(`Agent @${handle}`);
  if (Boolean(agent.disabledAt) === Boolean(at)) return { changed: false, disabled_at: agent.disabledAt };
  const disabledAt = at ? iso(at) : null;
  await tx.update(agents).set({ disabledAt }).where(eq(agents.agentId, agent.agentId));
  return { changed: true, disabled_at: disabledAt };
}
