// get_activity: a group's log of who changed what and when, newest first.
import { and, desc, eq, lt } from "drizzle-orm";
import { preparedInsert, type Tx } from "../../../../db/client.ts";
import { ledgerActivity } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { refsByIds } from "../../agents.ts";
import { decodeCursor, encodeCursor, paginate } from "../../../contract/cursor.ts";
import { requireMember } from "./membership.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import { appendEvent } from "../events/log.ts";

export async function listActivity({ tx, actor: { agentId } }: DomainContext, input: { group_id: string; limit?: number; cursor?: string }) {
  await requireMember(tx, input.group_id, agentId);
  const limit = input.limit ?? 50;
  const before = input.cursor === undefined ? undefined : decodeCursor(input.cursor, ["number"] as const)[0];
  const query = tx
    .select()
    .from(ledgerActivity)
    .where(and(eq(ledgerActivity.groupId, input.group_id), before === undefined ? undefined : lt(ledgerActivity.seq, before)))
    .orderBy(desc(ledgerActivity.seq));
  const { page, next_cursor } = await paginate(
    limit,
    (n) => query.limit(n),
    (last) => encodeCursor([last.seq]),
  );
  const people = await refsByIds(
    tx,
    page.map((r) => r.actorId),
  );
  return {
    entries: page.map((r) => ({
      seq: r.seq,
      actor: people.get(r.actorId)!,
      action: r.action,
      summary_md: r.summary,
      refs: r.refs,
      created_at: r.createdAt,
    })),
    next_cursor,
  };
}

const insertEntry = preparedInsert(ledgerActivity, ["groupId", "actorId", "action", "summary", "refs", "createdAt"]);

/**
 * Appends to a group's activity log (get_activity) and its event chain (events/log.ts: with the balance changes made
 * since its last event, and `data`, the state the change leaves its object in); every ledger change calls this in
 * its transaction, after its balances moved.
 */
export async function logActivity(
  tx: Tx,
  now: Date,
  a: { groupId: string; actorId: string; action: string; summary: string; refs?: Record<string, string>; data?: unknown },
): Promise<void> {
  await appendEvent(tx, now, { groupId: a.groupId, type: a.action, actorId: a.actorId, summary: a.summary, refs: a.refs ?? {}, data: a.data });
  await insertEntry(tx).run({
    groupId: a.groupId,
    actorId: a.actorId,
    action: a.action,
    summary: a.summary,
    refs: a.refs ?? {},
    createdAt: iso(now),
  });
}
