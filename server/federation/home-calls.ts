// POST /fed/v1/ledger/{call_id}: a member's server sends the write of one of its agents to a group kept here
// (forward.ts), signed as a transaction is and checked by the same steps, within the origin's limits. The call runs
// through the one pipeline as the agent's row here (its alias), with the caller's idempotency key: a server speaks
// only for its own agents, and the tools themselves check that the agent is a member and may do it. The answer
// carries the group's events since the copy's last one.
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { agents, groupMembers, remoteAgents } from "../../db/schema/index.ts";
import type { Principal } from "../contract/principal.ts";
import type { CallMeta, CallResult, Services } from "../services.ts";
import { ensureRemoteAgent, parseAddress } from "../domain/federation.ts";
import { homeOf } from "../domain/ledger/events/home.ts";
import { EVENTS_PAGE, eventsAfter, headOf } from "../domain/ledger/events/log.ts";
import { FORWARDED_TOOLS } from "./forward.ts";
import { verifySigned } from "./transactions.ts";

const LedgerCall = z.object({
  origin: z.string().max(300),
  destination: z.string().max(300),
  from: z.string().max(300),
  tool: z.string().max(64),
  arguments: z.record(z.string(), z.unknown()),
  /** Absent for join_group: the code names the group. */
  group_id: z.uuid().optional(),
  after_seq: z.number().int().min(0),
});

/** Events an answer carries at most; a copy further behind asks for the rest (group-events.ts). */
const EVENTS_IN_ANSWER = 2 * EVENTS_PAGE;

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });

export type Invoke = (svc: Services, name: string, raw: unknown, meta: CallMeta) => Promise<CallResult>;

export async function receiveLedgerCall(svc: Services, req: Request, callId: string, clientAddress: string, invoke: Invoke): Promise<Response> {
  const checked = await verifySigned(svc, req, `/fed/v1/ledger/${encodeURIComponent(callId)}`, clientAddress, LedgerCall, "memory");
  if (checked instanceof Response) return checked;
  const { body, origin } = checked;
  const address = parseAddress(body.from);
  // A server speaks only for its own agents, and only the ledger's writes come this way.
  if (!address || address.host !== origin) return json(403, { error: "an agent of another server" });
  if (!FORWARDED_TOOLS.has(body.tool)) return json(400, { error: "not a tool a member's server sends" });
  // A code may be used by an agent this server never met: it gets its row here, as a contact request's sender does.
  if (body.tool === "join_group") await svc.db.tx((tx) => ensureRemoteAgent(tx, checked.now, `${address.handle}@${address.host}`));
  const alias = await svc.db.read(async (tx) => {
    if (body.group_id !== undefined && (await homeOf(tx, body.group_id))) return undefined;
    const row = await tx
      .select({ agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
      .from(remoteAgents)
      .innerJoin(agents, eq(agents.agentId, remoteAgents.agentId))
      .where(eq(remoteAgents.address, `${address.handle}@${address.host}`))
      .get();
    if (body.group_id === undefined) return body.tool === "join_group" ? row : undefined;
    const member =
      row &&
      (await tx
        .select({ id: groupMembers.agentId })
        .from(groupMembers)
        .where(and(eq(groupMembers.groupId, body.group_id), eq(groupMembers.agentId, row.agentId)))
        .get());
    return member ? row : undefined;
  });
  const requestId = crypto.randomUUID();
  if (!alias) {
    const error = { code: "NOT_FOUND", message: "Group not found." };
    return json(200, { ok: false, error, head_seq: 0, events: [] });
  }
  const principal: Principal = {
    ...alias,
    clientId: `federation:${origin}`,
    kind: "api_key",
    scopes: new Set(["svc:read", "svc:write"]),
    graceUntil: null,
  };
  const result = await invoke(svc, body.tool, body.arguments, { requestId, token: null, principal, clientAddress: () => `federation:${origin}` });
  const groupId = body.group_id ?? (result.ok ? String((result.data.group as { group_id?: unknown } | undefined)?.group_id ?? "") : "");
  const { head, events } = groupId
    ? await svc.db.read(async (tx) => ({ head: await headOf(tx, groupId), events: await eventsAfter(tx, groupId, body.after_seq, EVENTS_IN_ANSWER) }))
    : { head: { seq: 0 }, events: [] };
  const ev = events.map((e) => ({ body: e.body, hash: e.hash }));
  if (!result.ok) return json(200, { ok: false, error: result.error.envelope(requestId).error, head_seq: head.seq, events: ev });
  return json(200, { ok: true, data: result.data, head_seq: head.seq, events: ev });
}
